"""Locks (issue 31): what research answers, and how fast, while another program holds the brain
or the plugin's own database locked.

Builds the demo brain (``datasette dbrain-demo``) with its semantic index, serves it with the
default settings, and asks the demo's questions:

- calm:           nothing locked;
- plugin locked:  another connection holds ``BEGIN EXCLUSIVE`` on the plugin database (the runs
                  and the semantic index; it is in WAL mode, so readers go on): research must
                  still answer, with the semantic lane, and say ``trace_not_saved`` with no
                  ``trace_url`` (no dead link);
- brain written:  another connection holds a write transaction on the brain (WAL, as dbrain
                  opens it): readers go on, research answers as calm;
- released:       the next run saves again (its ``trace_url`` answers 200);
- brain locked:   the same brain in rollback-journal mode, served again, with a writer's lock
                  (which keeps readers out): the JSON and the page must answer ``503`` with
                  ``Retry-After`` within about a second (``BUSY_WAIT_MS``).

Prints each phase's statuses, codes and p50/max time. Never fails on times; exits non-zero when
an answer breaks the rules above.

    python bench/bench_locks.py [--reps 3] [--questions 6]
"""

from __future__ import annotations

import argparse
import collections
import sqlite3
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from bench_research import DATASETTE, free_port, serve

from datasette_dbrain_websearch.demo import DEMO_QUESTIONS

WAIT_TARGET_S = 1.2  # the documented second, and the request around it


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Another program's exclusive write transaction on a database file, held until the block
    ends (in WAL mode readers go on; in rollback-journal mode they wait)."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    conn.execute("begin exclusive")
    try:
        yield
    finally:
        conn.execute("rollback")
        conn.close()


def ask(client: httpx.Client, path: str, question: str) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = client.get(path, params={"q": question})
    return response, time.perf_counter() - started


def phase(
    client: httpx.Client, name: str, questions: list[str], reps: int, path: str = "/-/research.json"
) -> tuple[list[httpx.Response], list[float]]:
    """Every question ``reps`` times; prints statuses, codes and times."""
    answers, times = [], []
    for _ in range(reps):
        for question in questions:
            response, took = ask(client, path, question)
            answers.append(response)
            times.append(took)
    seen: collections.Counter[str] = collections.Counter()
    for r in answers:
        code = ""
        if r.headers.get("content-type", "").startswith("application/json"):
            body = r.json()
            code = body.get("code", "") or ",".join(
                w["code"] for w in body.get("warnings", []) if w["code"] == "trace_not_saved"
            )
        seen[f"{r.status_code} {code}".strip()] += 1
    print(
        f"{name:26}{len(answers):>4}{statistics.median(times) * 1000:>10.1f}"
        f"{max(times) * 1000:>10.1f}  {dict(seen)}"
    )
    return answers, times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--questions", type=int, default=6, help="of the demo's questions")
    args = parser.parse_args()
    problems: list[str] = []
    questions = [q["q"] for q in DEMO_QUESTIONS][: args.questions]
    with tempfile.TemporaryDirectory() as tmp:
        brain = Path(tmp) / "brain.db"
        subprocess.run([DATASETTE, "dbrain-demo", str(brain)], check=True, capture_output=True)
        subprocess.run(
            [DATASETTE, "dbrain-websearch", "index", str(brain)], check=True, capture_output=True
        )
        plugin_db = Path(tmp) / "research_runs.db"
        print(f"{'phase':26}{'n':>4}{'p50 ms':>10}{'max ms':>10}  statuses")
        with served(brain, questions) as client:  # WAL, as dbrain opens its brain
            calm, _ = phase(client, "calm", questions, args.reps)
            time.sleep(0.2)  # the last calm run's save, beside its answer, is done
            with locked(plugin_db):
                answers, _ = phase(client, "plugin database locked", questions, args.reps)
            problems += [p for r, c in zip(answers, calm, strict=True) for p in unsaved(r, c)]
            with locked(brain):
                answers, _ = phase(client, "brain written (WAL)", questions, args.reps)
            problems += [
                f"brain written: {r.status_code}"
                for r in answers
                if r.status_code != 200 and not out_of_time(r)
            ]
            answers, _ = phase(client, "released", questions[:2], 1)
            for r in answers:
                if out_of_time(r):
                    continue
                trace = r.json().get("trace_url", "")
                if not trace or client.get(trace + ".json").status_code != 200:
                    problems.append("released: the run was not saved")
        # A brain in rollback-journal mode: a writer's lock keeps readers out.
        sqlite3.connect(brain).execute("pragma journal_mode = delete").fetchall()
        with served(brain, questions) as client, locked(brain):
            answers, times = phase(client, "brain locked (JSON)", questions, args.reps)
            pages, page_times = phase(
                client, "brain locked (page)", questions, args.reps, "/-/research"
            )
        problems += [
            f"brain locked: {r.status_code}"
            for r in answers + pages
            if r.status_code != 503 or "retry-after" not in r.headers
        ]
    # How long a locked brain takes to say so is a target, printed; the rules above fail the run.
    for name, took in (("JSON", times), ("page", page_times)):
        p50 = statistics.median(took)
        print(
            f"brain locked ({name}): 503 in {p50:.2f} s p50, {max(took):.2f} s at most "
            f"(target <= {WAIT_TARGET_S} s p50)  {'OK' if p50 <= WAIT_TARGET_S else 'MISSED'}"
        )
    if problems:
        raise SystemExit("broken: " + "; ".join(sorted(set(problems))))
    print("every answer kept the rules (trace_not_saved without a link; 503 + Retry-After)")


@contextmanager
def served(brain: Path, questions: list[str]) -> Iterator[httpx.Client]:
    """The brain served with the default settings, its caches warmed by the questions."""
    metadata = brain.with_name("metadata.yml")
    metadata.write_text("{}\n")
    port = free_port()
    server = serve(brain, port, metadata)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for question in questions:
                client.get("/-/research.json", params={"q": question})
            yield client
    finally:
        server.terminate()
        server.wait(10)


def semantic_lane(response: httpx.Response) -> dict:
    lanes = (response.json().get("query_plan") or {}).get("retrieval_lanes", [])
    return {lane["name"]: lane for lane in lanes}.get("semantic", {})


def out_of_time(response: httpx.Response) -> bool:
    """Stopped at ``time_limit_ms`` (a busy machine: the suite runs this under load), which
    says nothing of how locks are handled: counted in the statuses, not judged."""
    json_answer = response.headers.get("content-type", "").startswith("application/json")
    code = response.json().get("code", "") if json_answer else ""
    return code in ("time_limit", "exceeds_time_limit")


def unsaved(response: httpx.Response, calm: httpx.Response) -> list[str]:
    """What an answer given while the plugin database was locked broke: it must answer, say
    ``trace_not_saved`` without a ``trace_url``, and use the semantic lane as the same question
    did calm (its index is read, not written)."""
    if out_of_time(response):
        return []
    body = response.json()
    codes = {w["code"] for w in body.get("warnings", [])}
    problems = []
    if response.status_code != 200 or "trace_url" in body or "trace_not_saved" not in codes:
        problems.append(f"plugin locked: {response.status_code} {sorted(codes)}")
    if calm.status_code == 200 and (
        semantic_lane(response).get("status") != semantic_lane(calm).get("status")
    ):
        problems.append(f"plugin locked: semantic lane {semantic_lane(response)}")
    return problems


if __name__ == "__main__":
    main()
