"""Load test: many clients mixing local and web research, feedback and promotion, while hostile
clients send expensive raw FTS5 questions and a 100 MB body.

Starts the offline fake provider server and a real ``datasette serve`` over a fresh demo brain,
then runs ``--clients`` concurrent clients for ``--seconds``:

- research:  plain local research (the latency that must stay low), JSON API
- web:       ``external=always`` (Brave, then Exa), through the fake with 50 ms latency
- feedback:  a 👍 / 👎 on a row of an earlier run
- promote:   one web row of an earlier run into the brain (JSON POST as root)
- raw:       three hostile clients (one actor, whose limit is one costly question in flight)
             sending expensive ``syntax=raw`` questions without pause
- body:      one hostile client posting a 100 MB chunked body over and over

Then it checks the brain: every promotion answered "created" or "already there" has exactly one
``sources`` row (no duplicate, none lost). Reports errors (5xx, dropped connections, unexpected
statuses), p50/p99 of plain research and throughput. Prints; never fails on speed, but exits
non-zero when there were errors or duplicate/lost promotions (the load test's correctness bar).

    python bench/bench_load.py [--clients 20] [--seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import random
import sqlite3
import time
from pathlib import Path

import httpx

# Run as a script, so this folder is on sys.path and the sibling benchmark's helpers import.
from bench_research import pct, web_served
from itsdangerous import URLSafeSerializer

SECRET = "bench-load-secret"
QUESTIONS = [
    "sqlite fts5 bm25",
    "tokio runtime scheduler",
    "espresso grinder burrs",
    "cold climate heat pump",
    "kubernetes network policy",
    "sourdough starter hydration",
    "datasette plugins",
    "lattice qcd",
]
WEB_QUESTIONS = ["lattice qcd", "quantum chromodynamics lattice", "sqlite fts5 bm25"]
RAW = [
    'NEAR(com* pro* sta*, 50) OR "e* f*" OR gal*',
    "sta* OR tra* OR uni* OR ver* OR walk OR example",
    "a* NOT b* OR c* NOT d* OR e*",  # refused: one-letter prefixes (prefix_too_short)
]
BODY_MB = 100
# Share of each ordinary client's requests, by kind.
MIX = {"research": 0.55, "web": 0.15, "feedback": 0.15, "promote": 0.15}


class Tally:
    """What every client saw, shared (one event loop, so no locks)."""

    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = collections.defaultdict(list)
        self.statuses: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.errors: list[str] = []
        self.runs: list[dict] = []  # web runs with rows to mark and promote
        self.promoted: list[dict] = []

    def saw(self, kind: str, status: int, seconds: float, expected: tuple[int, ...]) -> None:
        self.statuses[kind][status] += 1
        self.latency[kind].append(seconds * 1000)
        if status not in expected:
            self.errors.append(f"{kind}: HTTP {status}")


async def ordinary(client: httpx.AsyncClient, tally: Tally, until: float, seed: int) -> None:
    rng = random.Random(seed)
    headers = await csrf_headers(client)
    kinds, weights = zip(*MIX.items(), strict=True)
    # Every client asks one plain question first, however short the run: even a starved
    # machine measures the latency that matters.
    first = True
    while first or time.monotonic() < until:
        kind = "research" if first else rng.choices(kinds, weights)[0]
        first = False
        if kind in ("feedback", "promote") and not tally.runs:
            kind = "web"
        try:
            await ACTIONS[kind](client, tally, rng, headers)
        except httpx.HTTPError as exc:
            tally.errors.append(f"{kind}: {type(exc).__name__}")


async def research(client, tally, rng, headers) -> None:
    started = time.monotonic()
    r = await client.get("/-/research.json", params={"q": rng.choice(QUESTIONS)})
    # 503 with Retry-After: a question that ran out of time on a loaded server, shed.
    tally.saw("research", r.status_code, time.monotonic() - started, (200, 503))


async def web(client, tally, rng, headers) -> None:
    started = time.monotonic()
    params = {"q": rng.choice(WEB_QUESTIONS), "external": "always"}
    r = await client.get("/-/research.json", params=params)
    tally.saw("web", r.status_code, time.monotonic() - started, (200, 503))
    if r.status_code == 200 and r.json()["external_evidence"]:
        pack = r.json()
        tally.runs.append(
            {
                "run_id": pack["run_id"],
                "external": [row["source_key"] for row in pack["external_evidence"]],
                "local": [row["source_key"] for row in pack["evidence"]],
            }
        )


async def feedback(client, tally, rng, headers) -> None:
    run = rng.choice(tally.runs)
    key = rng.choice(run["external"] + run["local"])
    started = time.monotonic()
    r = await client.post(
        f"/-/research/runs/{run['run_id']}/feedback",
        json={"feedback": [{"key": key, "value": rng.choice(["more", "less"])}]},
        headers=headers,
    )
    tally.saw("feedback", r.status_code, time.monotonic() - started, (200,))


async def promote(client, tally, rng, headers) -> None:
    run = rng.choice(tally.runs)
    key = rng.choice(run["external"])
    started = time.monotonic()
    r = await client.post(
        "/-/research/promote",
        json={"run_id": run["run_id"], "source_keys": [key]},
        headers=headers,
    )
    tally.saw("promote", r.status_code, time.monotonic() - started, (200,))
    if r.status_code == 200:
        tally.promoted.extend(r.json()["results"])


ACTIONS = {"research": research, "web": web, "feedback": feedback, "promote": promote}


async def raw_questions(client: httpx.AsyncClient, tally: Tally, until: float) -> None:
    """Expensive raw questions, back to back: answered, cut by the time limit, or refused."""
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            r = await client.get(
                "/-/research.json", params={"q": random.choice(RAW), "syntax": "raw"}
            )
        except httpx.HTTPError as exc:
            tally.errors.append(f"raw: {type(exc).__name__}")
            continue
        tally.saw("raw", r.status_code, time.monotonic() - started, (200, 400, 429, 503))
        if r.status_code == 429:
            await asyncio.sleep(0.05)


async def huge_bodies(client: httpx.AsyncClient, tally: Tally, until: float) -> None:
    """A 100 MB chunked body to the promotion endpoint, refused (413) as soon as it passes the
    cap; the connection may be closed on the rest of the upload, which counts as refused."""
    headers = await csrf_headers(client)
    chunk = b"x" * (1024 * 1024)

    async def body():
        for _ in range(BODY_MB):
            yield chunk

    while time.monotonic() < until:
        started = time.monotonic()
        try:
            r = await client.post(
                "/-/research/promote",
                content=body(),
                headers={**headers, "content-type": "application/json"},
            )
            tally.saw("body", r.status_code, time.monotonic() - started, (413,))
        except (httpx.RemoteProtocolError, httpx.WriteError, httpx.ReadError):
            tally.saw("body", 413, time.monotonic() - started, (413,))
        await asyncio.sleep(0.2)


async def csrf_headers(client: httpx.AsyncClient) -> dict[str, str]:
    """0.65 wants the ds_csrftoken double submit on a JSON POST that carries cookies."""
    page = await client.get("/-/research")
    token = page.cookies.get("ds_csrftoken") or client.cookies.get("ds_csrftoken")
    return {"x-csrftoken": token} if token else {}


async def load(base: str, clients: int, seconds: float) -> tuple[Tally, float]:
    tally = Tally()
    root = URLSafeSerializer(SECRET, "actor").dumps({"a": {"id": "root"}})
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)

    def new_client() -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=base, timeout=60, cookies={"ds_actor": root}, limits=limits
        )

    pool = [new_client() for _ in range(clients + 4)]
    started = time.monotonic()
    until = started + seconds
    try:
        await asyncio.gather(
            *(ordinary(pool[i], tally, until, seed=i) for i in range(clients)),
            *(raw_questions(pool[clients + i], tally, until) for i in range(3)),
            huge_bodies(pool[clients + 3], tally, until),
        )
    finally:
        for client in pool:
            await client.aclose()
    return tally, time.monotonic() - started


def check_promotions(brain: Path, tally: Tally) -> tuple[int, int]:
    """Duplicate ``sources`` rows for one URL, and promotions whose row is missing."""
    conn = sqlite3.connect(brain)
    try:
        duplicates = conn.execute(
            "select count(*) from (select canonical_url from sources "
            "group by canonical_url having count(*) > 1)"
        ).fetchone()[0]
        keys = {r["local_source_key"] for r in tally.promoted}
        lost = sum(
            1
            for key in keys
            if not conn.execute("select 1 from sources where source_key = ?", [key]).fetchone()
        )
    finally:
        conn.close()
    return duplicates, lost


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=30)
    args = parser.parse_args()

    root_only = {"id": "root"}
    with web_served(50, root_only, {"dbrain-promote": root_only}, SECRET) as (base, brain):
        tally, elapsed = asyncio.run(load(base, args.clients, args.seconds))
        duplicates, lost = check_promotions(brain, tally)
    report(args, tally, elapsed, duplicates, lost)
    if tally.errors or duplicates or lost:
        raise SystemExit(1)


def report(args, tally: Tally, elapsed: float, duplicates: int, lost: int) -> None:
    print()
    print(
        f"{args.clients} clients + 3 raw-query clients + 1 client posting {BODY_MB} MB bodies, "
        f"{elapsed:.1f} s"
    )
    print(f"{'':12}{'requests':>10}{'per s':>8}{'p50 ms':>10}{'p99 ms':>10}  statuses")
    for kind in ("research", "web", "feedback", "promote", "raw", "body"):
        times = tally.latency.get(kind, [])
        if not times:
            continue
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(tally.statuses[kind].items()))
        print(
            f"{kind:12}{len(times):>10}{len(times) / elapsed:>8.1f}"
            f"{pct(times, 0.5):>10.1f}{pct(times, 0.99):>10.1f}  {statuses}"
        )
    research = tally.latency.get("research", [])
    if research:
        ratio = pct(research, 0.99) / max(pct(research, 0.5), 0.001)
        print()
        print(f"plain research p99 / p50 = {ratio:.1f}x under hostile load")
    print(f"promotions answered: {len(tally.promoted)}; duplicate rows: {duplicates}; lost: {lost}")
    errors = collections.Counter(tally.errors)
    print(f"errors: {sum(errors.values())}" + "".join(f"\n  {e}: {n}" for e, n in errors.items()))


if __name__ == "__main__":
    main()
