"""Benchmark: /-/research.json against its floor, against Datasette's built-in search, and
under load.

Builds (or reuses) a large synthetic brain with ``datasette dbrain-demo --size`` (and, with
``--scales 1,8``, one 8 times larger), starts a real ``datasette serve`` on loopback, and for 20+
questions drawn from the brain's own titles reports p50/p95 latency of:

- research:  GET /-/research.json?q=...                          (local only)
- floor:     the question as a raw FTS5 query (its words quoted: every word required), ten rows
             a table by bm25, run in-process with sqlite3, + an empty Datasette request
- OR floor:  the same with the words OR-ed (what a ranked search of any word reads)
- built-in:  GET /<db>/items.json?_search=q + GET /<db>/sources.json?_search=q

then ``--clients`` concurrent clients ask those questions for ``--seconds`` (fairness), and the
same number of clients ask ``/-/versions.json`` for as long (what the server itself can serve).

Targets: research p50 <= 1.5x the floor (<= 1.2x on the 8x brain), the built-in pair >= 10x
slower than research, and under load research p99 <= 10x its p50. Prints ratios; never fails on
them (speed is a benchmark, not a test).

With ``--collection cranfield,squad,hotpotqa`` the brains are instead the shared public
collections (``corpora``), indexed as users index them, asked their own judged questions, at the
page's 10 rows and at 100 (``limit=100``) beside FTS5's OR of the question's words at as many
rows, + an empty request. Targets: <= 1.3x at 10 rows, <= 2.5x at 100.

    python bench/bench_research.py [--size 100000] [--scales 1] [--reps 5] [--builtin-reps 1]
                                   [--questions 24] [--clients 32] [--seconds 10] [--rebuild]
    python bench/bench_research.py --collection cranfield,squad,hotpotqa [--questions 60]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import httpx

from datasette_dbrain_websearch.brain import FTS_TABLE, KINDS

WORD = re.compile(r"\w+")

HERE = Path(__file__).resolve().parent
DATASETTE = shutil.which("datasette", path=str(Path(sys.executable).parent)) or "datasette"
# The built-in search needs fts_table (dbrain's FTS tables have no content=); a broad word on
# the 8x brain takes longer than research's default 3 s time limit, and this measures speed.
METADATA = """
databases:
  {name}:
    tables:
      items: {{fts_table: items_fts, fts_pk: id}}
      sources: {{fts_table: sources_fts, fts_pk: id}}
plugins:
  datasette-dbrain-websearch:
    time_limit_ms: 60000
    max_limit: 100
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


# Ordinary questions: title words inside the sentences people type (--ordinary).
TEMPLATES = (
    "what did I save about {}?",
    "how does {} work",
    "notes on {} and why it matters",
    "anything about {} from last year",
)


def pick_questions(path: Path, count: int, ordinary: bool = False) -> list[str]:
    """Deterministic, varied questions: 1-3 words taken from titles spread across the brain
    (with ``ordinary``, inside a sentence: the floor then ORs the sentence's words too)."""
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
        if ordinary:
            question = TEMPLATES[len(questions) % len(TEMPLATES)].format(question)
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
            "datasette_dbrain_websearch.demo.fakeweb",
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


def datasette_1() -> bool:
    """Is the Datasette next to this Python a 1.0 release (alpha or not)?"""
    from datasette.version import __version__

    return __version__.startswith("1.")


@contextmanager
def web_served(
    latency_ms: float, allow: Any, permissions: dict | None = None, secret: str = ""
) -> Iterator[tuple[str, Path]]:
    """The demo brain served with web search through the offline fake Brave and Exa, which
    answer after ``latency_ms``; yields the server's base URL and the brain, and stops both.

    ``allow`` is who may search the web; ``secret`` signs actor cookies the caller makes.
    """
    keys = {"BENCH_BRAVE_KEY": "bench-brave", "BENCH_EXA_KEY": "bench-exa"}
    env = {**os.environ, **keys, **({"DATASETTE_SECRET": secret} if secret else {})}
    with tempfile.TemporaryDirectory() as tmp:
        brain = Path(tmp) / "brain.db"
        subprocess.run([DATASETTE, "dbrain-demo", str(brain)], check=True, capture_output=True)
        fake_port, port = free_port(), free_port()
        fake = start_fakeweb(fake_port, latency_ms, keys["BENCH_BRAVE_KEY"], keys["BENCH_EXA_KEY"])
        fake_url = f"http://127.0.0.1:{fake_port}"
        web = {
            "enabled": True,
            "providers": ["brave", "exa"],
            "cache_ttl": 0,
            "allow": allow,
            "brave": {
                "api_key": {"$env": "BENCH_BRAVE_KEY"},
                "base_url": f"{fake_url}/brave/res/v1",
            },
            "exa": {"api_key": {"$env": "BENCH_EXA_KEY"}, "base_url": f"{fake_url}/exa"},
        }
        config = {"plugins": {"datasette-dbrain-websearch": {"external_search": web}}}
        if permissions:
            config["permissions"] = permissions
        settings = Path(tmp) / "settings.json"
        settings.write_text(json.dumps(config))
        # 1.0 reads plugin config and permissions from -c; 0.65 from metadata (-m).
        flag = "-c" if datasette_1() else "-m"
        server = subprocess.Popen(
            [DATASETTE, "serve", str(brain), flag, str(settings), "-p", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(f"http://127.0.0.1:{port}/-/versions.json", server)
            yield f"http://127.0.0.1:{port}", brain
        finally:
            for process in (server, fake):
                process.terminate()
                process.wait(10)


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
    parser.add_argument(
        "--scales", default="1", help="brains of size x each scale, e.g. 1,8 (default 1)"
    )
    parser.add_argument("--reps", type=int, default=5, help="timed repetitions per question")
    parser.add_argument(
        "--builtin-reps", type=int, default=1, help="reps of the slow built-in (0: skip it)"
    )
    parser.add_argument("--questions", type=int, default=24)
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (0: no load)")
    parser.add_argument("--seconds", type=float, default=10, help="length of each load phase")
    parser.add_argument("--db", type=Path, default=HERE / "bench.db")
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument(
        "--ordinary", action="store_true", help="questions as sentences, not 1-3 title words"
    )
    parser.add_argument(
        "--no-semantic", action="store_true", help="do not build the semantic index first"
    )
    parser.add_argument(
        "--collection", help="shared collections to use as brains instead, comma-separated"
    )
    args = parser.parse_args()
    if args.collection:
        for name in args.collection.split(","):
            collection_run(args, name)
        return

    for scale in (int(s) for s in args.scales.split(",")):
        size = args.size * scale
        path = args.db if scale == 1 else args.db.with_stem(f"{args.db.stem}-x{scale}")
        build(path, size, args.rebuild)
        if not args.no_semantic:  # the lane is on, as in a brain whose owner ran `index`
            indexed = subprocess.run([DATASETTE, "dbrain-websearch", "index", str(path)])
            if indexed.returncode:
                print("semantic lane off: no index (is the [semantic] extra installed?)")
        questions = pick_questions(path, args.questions, args.ordinary)
        with served(path) as port:
            results = run(args, path, questions, port)
            load = under_load(port, questions, args.clients, args.seconds) if args.clients else None
            version = httpx.get(f"http://127.0.0.1:{port}/-/versions.json").json()
        report(args, size, questions, results, load, version["datasette"]["version"])


COLLECTION_TARGETS = {10: 1.3, 100: 2.5}


def collection_run(args, name: str) -> None:
    """One shared collection as a brain: research.json at 10 and 100 rows against FTS5's OR
    at as many rows (+ an empty request), question by question, interleaved."""
    import corpora

    shared = corpora.load(name)
    questions = [q.text for q in shared.questions[: args.questions]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.db"
        corpora.build_brain(path, name, shared.documents)
        if not args.no_semantic:
            subprocess.run(
                [DATASETTE, "dbrain-websearch", "index", str(path)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        with (
            served(path) as port,
            httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client,
        ):
            results = {
                rows: collection_rows(args, conn, client, questions, rows) for rows in (10, 100)
            }
            version = httpx.get(f"http://127.0.0.1:{port}/-/versions.json").json()
        conn.close()
    print()
    print(
        f"{name}: {len(shared.documents):,} documents, {len(questions)} questions x {args.reps} "
        f"reps; semantic lane {'off' if args.no_semantic else 'on'}; Datasette "
        f"{version['datasette']['version']}, {os.cpu_count()} cores"
    )
    print(f"{'rows':>6}{'research p50':>14}{'FTS5 OR p50':>13}{'+ empty':>10}{'ratio':>8}  target")
    for rows, found in results.items():
        research, fts, empty = (statistics.median(found[k]) for k in ("research", "fts", "empty"))
        ratio = research / (fts + empty)
        target = COLLECTION_TARGETS[rows]
        print(
            f"{rows:>6}{research:>14.2f}{fts:>13.2f}{fts + empty:>10.2f}{ratio:>7.2f}x"
            f"  <= {target}x {'OK' if ratio <= target else 'MISSED'}"
        )


def collection_rows(
    args, conn: sqlite3.Connection, client: httpx.Client, questions: list[str], rows: int
) -> dict[str, list[float]]:
    """research.json at ``rows`` rows, and its floor, for every question ``args.reps`` times."""
    sql = [
        f"select rowid from [{fts}] where [{fts}] match ? order by bm25([{fts}]) limit {rows}"
        for fts in (FTS_TABLE[kind] for kind in KINDS)
    ]
    found: dict[str, list[float]] = {"research": [], "fts": [], "empty": []}
    for question in questions:  # warm the caches once per question
        client.get("/-/research.json", params={"q": question, "limit": rows})
    for _ in range(args.reps):
        for question in questions:
            words = ['"' + w.replace('"', '""') + '"' for w in WORD.findall(question.lower())]
            match = " OR ".join(dict.fromkeys(words))

            def fts_or(match: str = match) -> None:
                for query in sql:
                    conn.execute(query, [match]).fetchall()

            def research(question: str = question) -> None:
                client.get(
                    "/-/research.json", params={"q": question, "limit": rows}
                ).raise_for_status()

            found["empty"].append(timed(lambda: client.get("/-/actor.json")))
            found["fts"].append(timed(fts_or) if words else 0.0)
            found["research"].append(timed(research))
            time.sleep(0.02)  # the run's trace is written after its answer
    return found


@contextmanager
def served(path: Path) -> Iterator[int]:
    """A ``datasette serve`` of the brain on a free loopback port, stopped afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        metadata = Path(tmp) / "metadata.yml"
        metadata.write_text(METADATA.format(name=path.stem))
        port = free_port()
        server = serve(path, port, metadata)
        try:
            yield port
        finally:
            server.terminate()
            server.wait(10)


def run(args, path: Path, questions: list[str], port: int) -> dict[str, list[float]]:
    base = f"http://127.0.0.1:{port}"
    name = path.stem
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    # The floors' query: plain FTS5, every word quoted (AND, or OR-ed), by bm25, ten rows a table.
    lanes = [
        f"select rowid from [{fts}] where [{fts}] match ? order by bm25([{fts}]) limit 10"
        for fts in (FTS_TABLE[kind] for kind in KINDS)
    ]
    results: dict[str, list[float]] = {
        "research": [],
        "floor": [],
        "or_floor": [],
        "builtin": [],
        "empty": [],
    }
    cut: list[str] = []
    with httpx.Client(base_url=base, timeout=120) as client:
        for question in questions:  # warm the page cache and the server once per question
            client.get("/-/research.json", params={"q": question})
        for rep in range(args.reps):
            for question in questions:
                words = ['"' + w.replace('"', '""') + '"' for w in WORD.findall(question.lower())]
                match = " ".join(dict.fromkeys(words))
                either = " OR ".join(dict.fromkeys(words))

                def sqlite_floor(match: str = match) -> None:
                    for sql in lanes:
                        conn.execute(sql, [match]).fetchall()

                def research(question: str = question) -> None:
                    r = client.get("/-/research.json", params={"q": question})
                    r.raise_for_status()

                def builtin(question: str = question) -> None:
                    for table in ("items", "sources"):
                        r = client.get(f"/{name}/{table}.json", params={"_search": question})
                        if r.status_code == 400 and "too long" in r.text:
                            cut.append(question)  # stopped at sql_time_limit_ms: a lower bound
                        else:
                            r.raise_for_status()

                empty = timed(lambda: client.get("/-/actor.json"))
                results["empty"].append(empty)
                results["floor"].append(timed(sqlite_floor) + empty)
                results["or_floor"].append(timed(lambda m=either: sqlite_floor(m)) + empty)
                results["research"].append(timed(research))
                # The run's trace is written after its answer: let that finish before the next
                # timed request, as between two questions of one person.
                time.sleep(0.05)
                if rep < args.builtin_reps:  # seconds per call: a few samples are plenty
                    results["builtin"].append(timed(builtin))
    conn.close()
    if cut:
        print(f"built-in: {len(cut)} searches stopped at sql_time_limit_ms (lower bounds)")
    return results


@dataclass
class Load:
    """One load phase: every request's latency, its answers and how long it ran."""

    clients: int
    latencies: list[float]
    answers: Counter[str]
    seconds: float

    @property
    def errors(self) -> int:
        return sum(n for answer, n in self.answers.items() if answer != "200")

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds


async def hammer(
    port: int, target: Callable[[int, int], tuple[str, dict]], clients: int, seconds: float
) -> Load:
    """``clients`` clients, each sending its next request as soon as the last was answered,
    each from its own loopback address (127.0.0.2, 127.0.0.3, ...): as many people, each
    under the plugin's per-person limits."""
    load = Load(clients, [], Counter(), 0.0)
    people = [
        httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}",
            timeout=300,
            transport=httpx.AsyncHTTPTransport(local_address=f"127.0.0.{2 + n}"),
        )
        for n in range(clients)
    ]
    async with contextlib.AsyncExitStack() as stack:
        for person in people:
            await stack.enter_async_context(person)
        deadline = time.perf_counter() + seconds

        async def one(n: int) -> None:
            client = people[n]
            i = 0
            # Every client's first request is made however short the phase (a starved machine
            # still reports a latency).
            while not i or time.perf_counter() < deadline:
                path, params = target(n, i)
                i += 1
                started = time.perf_counter()
                try:
                    response = await client.get(path, params=params)
                except httpx.TransportError:  # a dropped connection is an error, not a crash
                    load.answers["dropped"] += 1
                    continue
                load.latencies.append((time.perf_counter() - started) * 1000)
                load.answers[str(response.status_code)] += 1

        started = time.perf_counter()
        await asyncio.gather(*(one(n) for n in range(clients)))
        load.seconds = time.perf_counter() - started
    return load


def under_load(port: int, questions: list[str], clients: int, seconds: float) -> dict[str, Load]:
    """Plain local research from many clients at once, then an empty request the same way."""

    def ask(n: int, i: int) -> tuple[str, dict]:
        return "/-/research.json", {"q": questions[(n * 7 + i) % len(questions)]}

    return {
        "research": asyncio.run(hammer(port, ask, clients, seconds)),
        "versions": asyncio.run(
            hammer(port, lambda n, i: ("/-/versions.json", {}), clients, seconds)
        ),
    }


def report(
    args,
    size: int,
    questions: list[str],
    results: dict[str, list[float]],
    load: dict[str, Load] | None,
    datasette_version: str,
) -> None:
    p50 = {k: statistics.median(v) for k, v in results.items() if v}
    print()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}, Datasette "
        f"{datasette_version}, {date.today().isoformat()}"
    )
    print(
        f"brain: {size:,} items + {size // 2:,} sources; {len(questions)} questions "
        f"x {args.reps} reps (built-in: {min(args.reps, args.builtin_reps)})"
    )
    print(f"{'':24}{'p50 ms':>10}{'p95 ms':>10}")
    for key, label in (
        ("research", "research.json"),
        ("floor", "floor (raw FTS5 + empty)"),
        ("or_floor", "OR floor (FTS5 + empty)"),
        ("builtin", "built-in _search pair"),
        ("empty", "empty request"),
    ):
        if key in p50:
            print(f"{label:24}{p50[key]:>10.2f}{pct(results[key], 0.95):>10.2f}")
    floor_ratio = p50["research"] / p50["floor"]
    target = 1.5 if size <= args.size else 1.2
    print()
    print(
        f"research / floor    = {floor_ratio:.2f}x   (target <= {target}x)"
        f"  {'OK' if floor_ratio <= target else 'MISSED'}"
    )
    print(f"research / OR floor = {p50['research'] / p50['or_floor']:.2f}x")
    if "builtin" in p50:
        builtin_ratio = p50["builtin"] / p50["research"]
        print(
            f"built-in / research = {builtin_ratio:.2f}x   (target >= 10x)"
            f"  {'OK' if builtin_ratio >= 10 else 'MISSED'}"
        )
    if load:
        report_load(load)


def report_load(load: dict[str, Load]) -> None:
    print()
    print(f"under load: {load['research'].clients} clients, {load['research'].seconds:.0f} s each")
    print(f"{'':24}{'requests':>10}{'req/s':>9}{'p50 ms':>10}{'p99 ms':>10}{'errors':>8}")
    for key, label in (("research", "research.json"), ("versions", "/-/versions.json")):
        phase = load[key]
        print(
            f"{label:24}{len(phase.latencies):>10}{phase.throughput:>9.1f}"
            f"{statistics.median(phase.latencies):>10.2f}{pct(phase.latencies, 0.99):>10.2f}"
            f"{phase.errors:>8}"
        )
    for key in ("research", "versions"):
        if load[key].errors:
            answers = ", ".join(f"{a}: {n}" for a, n in sorted(load[key].answers.items()))
            print(f"{key} answers: {answers}")
    research = load["research"].latencies
    spread = pct(research, 0.99) / statistics.median(research)
    print(
        f"research p99 / p50  = {spread:.2f}x   (target <= 10x)"
        f"  {'OK' if spread <= 10 else 'MISSED'}"
    )
    print(
        f"research throughput = {load['research'].throughput / load['versions'].throughput:.1%}"
        " of /-/versions.json's at the same concurrency"
    )


if __name__ == "__main__":
    main()
