"""Benchmark: the web stage's own cost, with providers that take 300 ms to answer.

Starts the offline fake provider server (``fakeweb``) with a fixed latency per provider request
and a real ``datasette serve`` over the demo brain, then times ``/-/research.json`` with
``external=always`` for a set of questions:

- single:  ``provider=brave``
- all:     ``provider=all`` (Brave and Exa in parallel)
- local:   the same questions without web search

Targets: ``all`` p50 <= 1.2x ``single`` p50 (providers run in parallel, not in sequence), and the
plugin's own time on top of the provider latency (``single`` - latency) <= 30 ms p50.
Prints ratios; never fails on them.

    python bench/bench_web.py [--latency-ms 300] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics

import httpx

# Run as a script, so this folder is on sys.path and the sibling benchmark's helpers import.
from bench_research import pct, timed, web_served

QUESTIONS = [
    "lattice qcd",
    "quantum chromodynamics lattice",
    "sqlite fts5 bm25",
    "tokio runtime scheduler",
    "espresso grinder burrs",
    "cold climate heat pump",
    "kubernetes network policy",
    "sourdough starter hydration",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=300)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    with web_served(args.latency_ms, allow=True) as (base, _):
        results = run(base, args.reps)
    report(args, results)


def run(base: str, reps: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {"local": [], "single": [], "all": []}
    variants = {
        "local": {},
        "single": {"external": "always", "provider": "brave"},
        "all": {"external": "always", "provider": "all"},
    }
    with httpx.Client(base_url=base, timeout=60) as client:
        for question in QUESTIONS:  # warm up every path once
            for params in variants.values():
                client.get("/-/research.json", params={"q": question, **params})
        for _ in range(reps):
            for question in QUESTIONS:
                for name, params in variants.items():

                    def call(params: dict = params, question: str = question) -> None:
                        r = client.get("/-/research.json", params={"q": question, **params})
                        r.raise_for_status()
                        if params and not r.json()["external_search"]["ran"]:
                            raise SystemExit(f"web search did not run: {r.json()['warnings']}")

                    results[name].append(timed(call))
    return results


def report(args, results: dict[str, list[float]]) -> None:
    p50 = {k: statistics.median(v) for k, v in results.items()}
    print()
    print(
        f"fake provider latency: {args.latency_ms:g} ms per request; {len(QUESTIONS)} questions "
        f"x {args.reps} reps over the demo brain"
    )
    print(f"{'':28}{'p50 ms':>10}{'p95 ms':>10}")
    for key, label in (
        ("local", "local only"),
        ("single", "external=always, brave"),
        ("all", "external=always, provider=all"),
    ):
        print(f"{label:28}{p50[key]:>10.2f}{pct(results[key], 0.95):>10.2f}")
    ratio = p50["all"] / p50["single"]
    overhead = p50["single"] - args.latency_ms
    print()
    print(
        f"all / single         = {ratio:.2f}x   (target <= 1.2x)  "
        f"{'OK' if ratio <= 1.2 else 'MISSED'}"
    )
    print(
        f"plugin time on top   = {overhead:.1f} ms (target <= 30 ms p50)  "
        f"{'OK' if overhead <= 30 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
