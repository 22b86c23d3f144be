"""Benchmark: /-/research.json against its floor and against Datasette's built-in search.

Builds (or reuses) a large synthetic brain with ``datasette dbrain-demo --size``, starts a real
``datasette serve`` on loopback, and for 20+ questions drawn from the brain's own titles reports
p50/p95 latency of:

- research:  GET /-/research.json?q=...                          (local only)
- floor:     the same FTS5 lane queries run in-process with sqlite3 + an empty Datasette request
- built-in:  GET /<db>/items.json?_search=q + GET /<db>/sources.json?_search=q

Targets: research p50 <= 1.5x the floor, and the built-in pair >= 5x slower than research.
Prints ratios; never fails on them (speed is a benchmark, not a test).

    python bench/bench_research.py [--size 100000] [--reps 5] [--builtin-reps 1]
                                   [--questions 24] [--rebuild]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from datasette_dbrain_websearch.brain import KINDS, Filters, brain_shape, lane_sql
from datasette_dbrain_websearch.fts import plan_query

HERE = Path(__file__).resolve().parent
DATASETTE = shutil.which("datasette", path=str(Path(sys.executable).parent)) or "datasette"
METADATA = """
databases:
  {name}:
    tables:
      items: {{fts_table: items_fts, fts_pk: id}}
      sources: {{fts_table: sources_fts, fts_pk: id}}
"""


def build(path: Path, size: int, rebuild: bool) -> None:
    if path.exists() and not rebuild:
        conn = sqlite3.connect(path)
        have = conn.execute("select count(*) from items").fetchone()[0]
        conn.close()
        if have == size:
            print(f"reusing {path} ({have:,} items)")
            return
    subprocess.run(
        [DATASETTE, "dbrain-demo", str(path), "--size", str(size), "--force"], check=True
    )


def pick_questions(path: Path, count: int) -> list[str]:
    """Deterministic, varied questions: 1-3 words taken from titles spread across the brain."""
    rng = random.Random(20261130)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    titles: list[str] = []
    for table in ("items", "sources"):
        rows = conn.execute(f"select count(*) from {table}").fetchone()[0]
        step = max(1, rows // 400)
        sql = f"select title from {table} where (id - 1) % ? = 0 limit 400"
        titles += [r[0] for r in conn.execute(sql, [step])]
    conn.close()
    questions: list[str] = []
    for _ in range(count * 50):  # bounded: a tiny brain may not hold enough distinct questions
        if len(questions) == count or not titles:
            break
        words = [w for w in titles[rng.randrange(len(titles))].split() if len(w) > 3]
        if not words:
            continue
        n = min(len(words), 1 + len(questions) % 3)
        question = " ".join(rng.sample(words, n)).lower()
        if question not in questions:
            questions.append(question)
    return questions


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(path: Path, port: int, metadata: Path) -> subprocess.Popen:
    process = subprocess.Popen(
        [
            DATASETTE,
            "serve",
            str(path),
            "-m",
            str(metadata),
            "-p",
            str(port),
            "--setting",
            "sql_time_limit_ms",
            "20000",
            "--setting",
            "facet_time_limit_ms",
            "1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(f"http://127.0.0.1:{port}/-/versions.json", process)
    return process


def start_fakeweb(port: int, latency_ms: float, brave_key: str, exa_key: str) -> subprocess.Popen:
    """The offline fake Brave/Exa/SearXNG on loopback, answering after ``latency_ms``."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "datasette_dbrain_websearch.fakeweb",
            "--port",
            str(port),
            "--latency-ms",
            str(latency_ms),
            "--brave-key",
            brave_key,
            "--exa-key",
            exa_key,
        ],
        stdout=subprocess.DEVNULL,
    )


def wait_for(url: str, process: subprocess.Popen, seconds: float = 60) -> None:
    """Poll until the server answers; stop it and give up after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"{url} did not answer")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="items (sources = size/2)")
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions per question")
    parser.add_argument("--builtin-reps", type=int, default=1, help="reps of the slow built-in")
    parser.add_argument("--questions", type=int, default=24)
    parser.add_argument("--db", type=Path, default=HERE / "bench.db")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args()

    build(args.db, args.size, args.rebuild)
    name = args.db.stem
    questions = pick_questions(args.db, args.questions)
    with tempfile.TemporaryDirectory() as tmp:
        metadata = Path(tmp) / "metadata.yml"
        metadata.write_text(METADATA.format(name=name))
        port = free_port()
        server = serve(args.db, port, metadata)
        try:
            results = run(args, name, questions, port)
        finally:
            server.terminate()
            server.wait(10)
    report(args, questions, results)


def run(args, name: str, questions: list[str], port: int) -> dict[str, list[float]]:
    base = f"http://127.0.0.1:{port}"
    conn = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    shape = brain_shape(conn)
    depth = 40  # the lane depth research uses for the default limit of 10
    lanes = {kind: lane_sql(kind, Filters(), shape) for kind in KINDS}
    results: dict[str, list[float]] = {"research": [], "floor": [], "builtin": [], "empty": []}
    with httpx.Client(base_url=base, timeout=60) as client:
        for question in questions:  # warm the page cache and the server once per question
            client.get("/-/research.json", params={"q": question})
        for rep in range(args.reps):
            for question in questions:
                match = plan_query(question).fts_query

                def sqlite_floor(match: str = match) -> None:
                    for sql, params in lanes.values():
                        conn.execute(sql, [match, *params, depth]).fetchall()

                def research(question: str = question) -> None:
                    r = client.get("/-/research.json", params={"q": question})
                    r.raise_for_status()

                def builtin(question: str = question) -> None:
                    for table in ("items", "sources"):
                        r = client.get(f"/{name}/{table}.json", params={"_search": question})
                        r.raise_for_status()

                empty = timed(lambda: client.get("/-/actor.json"))
                results["empty"].append(empty)
                results["floor"].append(timed(sqlite_floor) + empty)
                results["research"].append(timed(research))
                if rep < args.builtin_reps:  # seconds per call: a few samples are plenty
                    results["builtin"].append(timed(builtin))
    conn.close()
    return results


def report(args, questions: list[str], results: dict[str, list[float]]) -> None:
    p50 = {k: statistics.median(v) for k, v in results.items()}
    print()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )
    print(
        f"brain: {args.size:,} items + {args.size // 2:,} sources; {len(questions)} questions "
        f"x {args.reps} reps (built-in: {min(args.reps, args.builtin_reps)})"
    )
    print(f"{'':24}{'p50 ms':>10}{'p95 ms':>10}")
    for key, label in (
        ("research", "research.json"),
        ("floor", "floor (sqlite + empty)"),
        ("builtin", "built-in _search pair"),
        ("empty", "empty request"),
    ):
        print(f"{label:24}{p50[key]:>10.2f}{pct(results[key], 0.95):>10.2f}")
    floor_ratio = p50["research"] / p50["floor"]
    builtin_ratio = p50["builtin"] / p50["research"]
    print()
    print(
        f"research / floor    = {floor_ratio:.2f}x   (target <= 1.5x)"
        f"  {'OK' if floor_ratio <= 1.5 else 'MISSED'}"
    )
    print(
        f"built-in / research = {builtin_ratio:.2f}x   (target >= 5x)"
        f"  {'OK' if builtin_ratio >= 5 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
