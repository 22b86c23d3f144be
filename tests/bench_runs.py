"""Short runs of the benchmark scripts, in the background of the suite.

The suite runs one test at a time, so one of the machine's cores sits mostly idle; the
benchmarks' smoke runs (each a Python process that builds a brain, and for the speed ones
starts servers and drives clients: ~50 s of CPU) use it. The runs the selected tests read start
when the session starts, one after another at a lower priority, so the tests in the foreground
keep their core; the tests that read them run last (see ``conftest``).
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from functools import cache
from pathlib import Path
from subprocess import CompletedProcess

BENCH = Path(__file__).resolve().parent.parent / "bench"
DATA = Path(__file__).resolve().parent / "data"
IR_TINY = {"DBRAIN_IR_DATA": str(DATA / "ir-tiny")}  # a six-document collection, BEIR's layout

# Each on its own brain and ports; sizes and durations as small as still exercise every phase.
SCRIPTS = {
    "research": (
        "bench_research.py",
        "--size", "600", "--reps", "1", "--questions", "4", "--clients", "4", "--seconds", "1",
        "--no-semantic", "--db", "{tmp}/tiny.db",
    ),
    "speed_collections": (
        "bench_research.py", "--collection", "squad", "--questions", "3", "--reps", "1",
        "--no-semantic",
    ),
    "known_item": ("bench_known_item.py", "--size", "1500", "--items", "30"),
    "web": ("bench_web.py", "--latency-ms", "20", "--reps", "1"),
    "answer": ("bench_answer.py", "--reps", "1", "--questions", "2"),
    "fairness": (
        "bench_fairness.py",
        "--size", "600", "--hostile", "3", "--seconds", "1", "--db", "{tmp}/tiny.db",
    ),
    "limits": (
        "bench_limits.py",
        "--size", "600", "--reps", "1", "--clients", "2", "--seconds", "1", "--db", "{tmp}/tiny.db",
    ),
    "locks": ("bench_locks.py", "--reps", "1", "--questions", "2"),
    "load": ("bench_load.py", "--clients", "4", "--seconds", "2"),
    "relevance": ("bench_ir.py", "--collection", "ir-tiny"),
    "feedback": ("bench_feedback.py", "--collection", "ir-tiny"),
    "answer_quality": ("bench_answer_quality.py", str(DATA / "qa-tiny.json"), "--no-semantic"),
    # The shared collections (../shared/data), a few questions of each set.
    "verdict": (
        "bench_verdict.py", "--collections", "squad,hotpotqa", "--limit-questions", "15",
        "--workdir", "{tmp}/verdict",
    ),
    "spelling": ("bench_spelling.py", "--smoke", "--collections", "squad"),
    "deep": ("bench_deep.py", "--limit-questions", "3", "--modes", "quick,deep"),
    "abstain": (
        "bench_abstain.py", "--limit-questions", "6", "--no-semantic", "--workdir", "{tmp}/abstain",
    ),
}  # fmt: skip
# What a run needs in its environment beside the suite's.
ENV = {"relevance": IR_TINY, "feedback": IR_TINY}
# The runs that read the shared collections, which lie beside the checkout and are never copied
# into it (``corpora.data_dir``): a clone somewhere else has none, and skips these runs.
SHARED = {"speed_collections", "verdict", "spelling", "deep", "abstain"}


@cache
def _shared_data() -> Path:
    """Where the benchmarks look for the shared collections (``corpora.data_dir``)."""
    spec = importlib.util.spec_from_file_location("bench_corpora", BENCH / "corpora.py")
    assert spec is not None and spec.loader is not None
    corpora = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpora)
    found: Path = corpora.data_dir()
    return found


def missing(name: str) -> str | None:
    """Why the named run cannot be made here (its data is not where it is looked for), or
    None."""
    if name in SHARED and not (data := _shared_data()).is_dir():
        return f"the shared collections are not at {data} (DBRAIN_SHARED_DATA names them)"
    return None


# Below the tests' priority: the benchmarks take what the foreground leaves. Once a test waits
# for one, the runs not started yet start at the usual priority (on a loaded machine, a niced
# run left to the end would barely move).
NICENESS = 10

_runs: dict[str, Future[CompletedProcess]] = {}
_waited = threading.Event()


def _run(name: str, folder: Path) -> CompletedProcess:
    script, *args = SCRIPTS[name]
    command = [sys.executable, str(BENCH / script), *(a.format(tmp=folder) for a in args)]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
        env={**os.environ, **ENV.get(name, {})},
        preexec_fn=None if _waited.is_set() else lambda: os.nice(NICENESS),
    )


def start(names: list[str]) -> None:
    """Queue the named benchmarks (once per session), one at a time in a background thread."""
    names = [name for name in names if name not in _runs]
    if not names:
        return
    folder = Path(tempfile.mkdtemp(prefix="dbrain-bench-"))
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench")
    for name in names:
        (folder / name).mkdir()
        _runs[name] = pool.submit(_run, name, folder / name)
    pool.shutdown(wait=False)
    atexit.register(shutil.rmtree, folder, ignore_errors=True)


def stop() -> None:
    """Drop the runs not started yet (an interrupted session does not wait for them)."""
    for run in _runs.values():
        run.cancel()


def finished(name: str) -> CompletedProcess:
    """The named benchmark's run, waiting for it (started now if the session did not)."""
    start([name])
    _waited.set()
    return _runs[name].result(timeout=900)
