"""Benchmark: what writing an answer adds to a research run on the demo brain.

Builds the demo brain, starts a real ``datasette serve`` on loopback and, for 24 questions drawn
from the brain's own titles plus the README's demo questions, times

- without:  GET /-/research.json?q=...
- with:     GET /-/research.json?q=...&answer=1      (the extractive synthesizer + the verifier)

alternately, question by question, so both see the same machine state. Reports p50/p95 of each,
the p50 of the paired differences, and the answer stage's own time as the pack records it.
Target: answering adds at most 10 ms p50. Prints; never fails on speed.

    python bench/bench_answer.py [--reps 10] [--questions 24]
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import subprocess
import tempfile
from pathlib import Path

import httpx
from bench_research import DATASETTE, free_port, pct, pick_questions, timed, wait_for

DEMO_QUESTIONS = [
    "cold climate heat pump",
    "grinder",
    "porter stemming",
    "sqlite fts5 bm25",
    "analog synthesizer calibration",
    "tokio runtime scheduler",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per question")
    parser.add_argument("--questions", type=int, default=24, help="questions from titles")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        brain = Path(tmp) / "brain.db"
        subprocess.run([DATASETTE, "dbrain-demo", str(brain)], check=True)
        questions = DEMO_QUESTIONS + [
            q for q in pick_questions(brain, args.questions) if q not in DEMO_QUESTIONS
        ]
        port = free_port()
        server = subprocess.Popen(
            [DATASETTE, "serve", str(brain), "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for(f"http://127.0.0.1:{port}/-/versions.json", server)
            results = run(port, questions, args.reps)
        finally:
            server.terminate()
            server.wait(10)
    report(questions, args.reps, results)


def run(port: int, questions: list[str], reps: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {"without": [], "with": [], "difference": [], "stage": []}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        for question in questions:  # warm up the server and the page cache
            client.get("/-/research.json", params={"q": question, "answer": "1"})
        for _ in range(reps):
            for question in questions:
                packs: list[dict] = []

                def get(answer: str, question: str = question, packs: list = packs) -> None:
                    response = client.get(
                        "/-/research.json", params={"q": question, "answer": answer}
                    )
                    response.raise_for_status()
                    packs.append(response.json())

                without = timed(lambda: get("0"))
                with_answer = timed(lambda: get("1"))
                results["without"].append(without)
                results["with"].append(with_answer)
                results["difference"].append(with_answer - without)
                results["stage"].append(packs[-1]["timings_ms"]["answer"])
    return results


def report(questions: list[str], reps: int, results: dict[str, list[float]]) -> None:
    print()
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )
    print(f"demo brain; {len(questions)} questions x {reps} reps, answer=0 and answer=1 in turn")
    print(f"{'':28}{'p50 ms':>10}{'p95 ms':>10}")
    for key, label in (
        ("without", "research.json"),
        ("with", "research.json&answer=1"),
        ("difference", "paired difference"),
        ("stage", "answer stage (in the pack)"),
    ):
        print(f"{label:28}{statistics.median(results[key]):>10.2f}{pct(results[key], 0.95):>10.2f}")
    added = statistics.median(results["difference"])
    ratio = statistics.median(results["with"]) / statistics.median(results["without"])
    print()
    print(
        f"answering adds {added:.2f} ms p50 ({ratio:.2f}x the run)   (target <= 10 ms)"
        f"  {'OK' if added <= 10 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
