"""Memory with many people reading pages at once (issue 42): the server's peak, and whether it
gives memory back after the burst.

Serves a small synthetic brain (``datasette dbrain-demo --size``) with web search on, the offline
fake Brave (``demo.fakeweb``) answering with pages on a loopback page server, every one of them
a 4.9 MB nested page (small nested blocks: what costs an extractor most). ``--people`` clients,
each from its own loopback address (127.0.0.10, ...), each ask at the same moment for a deep run
that reads pages (``depth=deep&external=always&read=10``), ``--rounds`` times. Datasette and its
extraction workers are sampled every 0.1 s (their resident memory together).

Targets: memory after the burst (``--idle`` seconds later) within 100 MB of before it, and a
peak that does not grow with the number of people (the global caps: ``reading.MAX_READING``
pages read at once, ``fetch.MAX_HELD_BYTES`` of bodies held). Prints the figures, every
status and the verdict; exits non-zero only on errors (5xx, dropped connections), never on
the figures.

    python bench/bench_memory.py [--people 30] [--rounds 1] [--idle 10]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from bench_research import DATASETTE, build, free_port, wait_for

from datasette_dbrain_websearch.demo.corpus import Page
from datasette_dbrain_websearch.demo.fakeweb.pages import PageServer, nested_page
from datasette_dbrain_websearch.demo.fakeweb.server import FakeWeb

PAGE_HOST = "127.0.0.2"
BRAVE_KEY = "bench-memory-brave"
BOUND_MB = 100
QUESTION = "lattice qcd gluon grid notes"


def tree_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants, in MB."""
    return sum(tree(pid).values())


def tree(pid: int) -> dict[int, float]:
    """Resident memory in MB of a process and each of its descendants."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                children[parent].append(int(entry))
    sizes: dict[int, float] = {}
    todo = [pid]
    while todo:
        current = todo.pop()
        todo.extend(children.get(current, ()))
        with contextlib.suppress(OSError):
            with open(f"/proc/{current}/statm") as statm:
                pages = int(statm.read().split()[1])
            sizes[current] = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    return sizes


async def person(base: str, address: str, rounds: int, seen: collections.Counter) -> None:
    transport = httpx.AsyncHTTPTransport(local_address=address)
    params = {"q": QUESTION, "depth": "deep", "external": "always", "read": "10"}
    async with httpx.AsyncClient(base_url=base, timeout=300, transport=transport) as client:
        for _ in range(rounds):
            try:
                r = await client.get("/-/research.json", params=params)
                seen[r.status_code] += 1
            except httpx.HTTPError as exc:
                seen[type(exc).__name__] += 1


async def burst(base: str, people: int, rounds: int, pid: int) -> tuple[float, Any]:
    seen: collections.Counter = collections.Counter()
    peak = 0.0
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_mb(pid))
            await asyncio.sleep(0.1)

    sampler = asyncio.create_task(sample())
    await asyncio.gather(*(person(base, f"127.0.0.{10 + i}", rounds, seen) for i in range(people)))
    done.set()
    await sampler
    return peak, seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--idle", type=float, default=10)
    parser.add_argument("--megabytes", type=float, default=4.9, help="each nested page's size")
    parser.add_argument("--size", type=int, default=2000, help="the brain's items")
    args = parser.parse_args()
    pages_server = PageServer(PAGE_HOST, {}, nested_page(args.megabytes))
    site = pages_server.start()
    pages = [
        Page(f"{site}/nested/{i}", f"Lattice QCD notes {i}", "lattice qcd gluon grid", "article")
        for i in range(12)
    ]
    fake = FakeWeb(brave_keys=(BRAVE_KEY,), pages=pages).start()
    with tempfile.TemporaryDirectory() as tmp:
        brain = Path(tmp) / "memory.db"
        build(brain, args.size, rebuild=True)
        config = {
            "external_search": {
                "enabled": True,
                "providers": ["brave"],
                "cache_ttl": 0,
                "allow": True,
                "brave": {
                    "api_key": {"$env": "BENCH_MEMORY_BRAVE"},
                    "base_url": f"{fake.url}/brave/res/v1",
                },
                "fetch_allow_networks": [f"{PAGE_HOST}/32"],
            }
        }
        settings = Path(tmp) / "settings.json"
        settings.write_text(json.dumps({"plugins": {"datasette-dbrain-websearch": config}}))
        from datasette.version import __version__

        flag = "-c" if __version__.startswith("1.") else "-m"
        port = free_port()
        server = subprocess.Popen(
            [DATASETTE, "serve", str(brain), flag, str(settings), "-p", str(port)],
            env={**os.environ, "BENCH_MEMORY_BRAVE": BRAVE_KEY},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(f"{base}/-/versions.json", server)
            # Warm: one person's run starts the extraction workers and fills caches.
            asyncio.run(burst(base, 1, 1, server.pid))
            time.sleep(2)
            idle = tree_mb(server.pid)
            idle_parts = tree(server.pid)
            started = time.monotonic()
            peak, seen = asyncio.run(burst(base, args.people, args.rounds, server.pid))
            took = time.monotonic() - started
            time.sleep(args.idle)
            after = tree_mb(server.pid)
            after_parts = tree(server.pid)
        finally:
            server.terminate()
            server.wait(10)
            fake.stop()
            pages_server.stop()
    grew = after - idle
    own = after_parts.get(server.pid, 0.0) - idle_parts.get(server.pid, 0.0)
    print(
        f"Datasette itself: idle {idle_parts.get(server.pid, 0.0):.0f} MB, after "
        f"{after_parts.get(server.pid, 0.0):.0f} MB ({own:+.0f}); extraction workers idle "
        f"{idle - idle_parts.get(server.pid, 0.0):.0f} MB, after "
        f"{after - after_parts.get(server.pid, 0.0):.0f} MB (they come and go)"
    )
    print(
        f"{args.people} people x {args.rounds} deep runs reading {args.megabytes} MB nested "
        f"pages, all at once: {took:.1f} s"
    )
    print(f"idle {idle:.0f} MB; peak {peak:.0f} MB; {args.idle:.0f} s after {after:.0f} MB")
    verdict = "holds" if grew <= BOUND_MB else "MISSED"
    print(f"after the burst within {BOUND_MB} MB of idle: {verdict} ({grew:+.0f} MB)")
    print("statuses:", dict(sorted(seen.items(), key=str)))
    errors = {k: v for k, v in seen.items() if not isinstance(k, int) or k >= 500}
    if errors:
        raise SystemExit(f"errors: {errors}")


if __name__ == "__main__":
    main()
