"""Benchmark: multi-step questions answered from the brain and the web (issue 32's measure).

Reads the HotpotQA questions under ``../shared/data/hotpotqa/`` (``corpora``): each needs two
supporting paragraphs. Two variants, each a brain built from the collection's paragraphs
(``corpora.build_brain``, indexed as users index it) and served by ``datasette serve``:

- brain only:   every paragraph in the brain; no web;
- brain + web:  for each question the second of its supporting paragraphs is left out of the
                brain; the offline fake provider (``demo.fakeweb``, on loopback) serves every
                paragraph of the collection as a web page at the URL the brain would give it,
                so finding the missing one means going to the web (``external=always``).

Each question is asked with ``answer=1`` in each mode given (``--modes``, by default ``quick``:
the one-pass research; ``deep``: ``depth=deep``, follow-up rounds within the ``deep.*``
budgets). Per variant and mode it prints the share of questions whose cited rows include both
supporting paragraphs, the share whose answer holds the gold answer (case-insensitive, yes/no
questions included as written), rounds per question, web calls and pages read (all questions
together), and p50 time. Pages are read through the fake's reader (``read_via``), as deep
research reads before it cites.

For deep runs it also scores what the run says of itself against "the answer holds the gold"
(``../shared/reference/relevance-benchmarks.md``, "Answering, not only holding"): the
precision and recall of the stop reason ``answered``, and the AUROC of ``confidence.score``
as a ranking (0.5 is chance). Prints; never fails on the figures.

    python bench/bench_deep.py [--modes quick,deep] [--limit-questions N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import corpora
import httpx
from bench_research import DATASETTE, free_port, wait_for

from datasette_dbrain_websearch.demo.corpus import Page
from datasette_dbrain_websearch.demo.fakeweb.server import FakeWeb

COLLECTION = "hotpotqa"
BRAVE_KEY = "bench-deep-brave"


@dataclass
class Asked:
    """One question of the collection: its text, gold answer and supporting paragraphs."""

    text: str
    answer: str
    supporting: list[str]  # document ids, in the collection's order


@dataclass
class Tally:
    """A variant and mode's results, question by question."""

    both_cited: list[bool] = field(default_factory=list)
    answered: list[bool] = field(default_factory=list)
    web_calls: list[int] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    stopped_answered: list[bool] = field(default_factory=list)  # deep: stop reason "answered"
    confidence: list[float] = field(default_factory=list)  # deep: confidence.score


def auroc(scores: list[float], positive: list[bool]) -> float:
    """The chance a right answer's score ranks above a wrong one's (ties count half)."""
    right = [s for s, p in zip(scores, positive, strict=True) if p]
    wrong = [s for s, p in zip(scores, positive, strict=True) if not p]
    if not right or not wrong:
        return float("nan")
    wins = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    return wins / (len(right) * len(wrong))


def stop_scores(tally: Tally) -> tuple[float, float, float]:
    """(precision, recall) of the stop reason ``answered`` against the answer holding the
    gold, and the AUROC of the confidence."""
    said = tally.stopped_answered
    held = tally.answered
    true = sum(1 for s, h in zip(said, held, strict=True) if s and h)
    precision = true / sum(said) if sum(said) else float("nan")
    recall = true / sum(held) if sum(held) else float("nan")
    return precision, recall, auroc(tally.confidence, held)


def questions(limit: int) -> tuple[dict[str, dict[str, str]], list[Asked]]:
    """The collection's paragraphs by id, and its questions with their gold answers."""
    shared = corpora.load(COLLECTION)
    raw = json.loads(
        (corpora.data_dir() / COLLECTION / "hotpot-dev-distractor-27.json").read_text()
    )
    answers = {record["_id"]: record["answer"] for record in raw}
    asked = [
        Asked(q.text, answers[q.id], list(q.gold)) for q in shared.questions if len(q.gold) >= 2
    ]
    return shared.documents, asked[:limit] if limit else asked


def doc_id(url: str) -> str:
    """The collection's id of a paragraph from its URL (``corpora.doc_url``)."""
    return url.rstrip("/").rsplit("/", 1)[-1]


def cited_documents(pack: dict[str, Any]) -> set[str]:
    """The paragraphs the answer cites, local or web, by collection id."""
    keys = {k for s in pack.get("answer", {}).get("sentences", []) for k in s["citations"]}
    found = set()
    for row in pack.get("evidence", []):
        if row["source_key"] in keys:
            found.add(doc_id(row.get("url", "")))
        linked = row.get("linked_source") or {}
        if linked.get("source_key") in keys:
            found.add(doc_id(linked.get("url", "")))
    for row in pack.get("external_evidence", []):
        if row["source_key"] in keys:
            found.add(doc_id(row.get("url", "")))
    return found


def serve(brain: Path, config: dict[str, Any], env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    settings = brain.with_name("settings.json")
    settings.write_text(json.dumps({"plugins": {"datasette-dbrain-websearch": config}}))
    from datasette.version import __version__

    flag = "-c" if __version__.startswith("1.") else "-m"
    port = free_port()
    server = subprocess.Popen(
        [DATASETTE, "serve", str(brain), flag, str(settings), "-p", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(f"http://127.0.0.1:{port}/-/versions.json", server)
    return server, f"http://127.0.0.1:{port}"


def run_variant(
    name: str,
    documents: dict[str, dict[str, str]],
    asked: list[Asked],
    modes: list[str],
    folder: Path,
    dump: Any = None,
) -> dict[str, Tally]:
    """Build the variant's brain, serve it (with the fake web for ``brain + web``), ask."""
    web = name == "brain + web"
    left_out = {q.supporting[-1] for q in asked} if web else set()
    brain = folder / f"{name.replace(' ', '').replace('+', '-')}.db"
    kept = {i: d for i, d in documents.items() if i not in left_out}
    corpora.build_brain(brain, COLLECTION, kept)
    subprocess.run(
        [DATASETTE, "dbrain-websearch", "index", str(brain)], check=True, capture_output=True
    )
    config: dict[str, Any] = {"time_limit_ms": 20000, "max_limit": 20}
    env = {**os.environ, "BENCH_DEEP_BRAVE": BRAVE_KEY}
    fake = None
    if web:
        pages = [
            Page(corpora.doc_url(COLLECTION, i), d["title"], d["text"], "article")
            for i, d in documents.items()
        ]
        fake = FakeWeb(brave_keys=(BRAVE_KEY,), pages=pages).start()
        config["external_search"] = {
            "enabled": True,
            "providers": ["brave"],
            "cache_ttl": 0,
            "allow": True,
            "brave": {
                "api_key": {"$env": "BENCH_DEEP_BRAVE"},
                "base_url": f"{fake.url}/brave/res/v1",
            },
            # Pages are read (deep research reads before it cites) through the fake's reader.
            "read_via": f"{fake.url}/reader/",
            "read_unresolved": True,  # the fake's page names resolve nowhere offline
        }
    server, base = serve(brain, config, env)
    tallies = {mode: Tally() for mode in modes}
    try:
        with httpx.Client(base_url=base, timeout=120) as client:
            for question in asked:
                for mode in modes:
                    params = {"q": question.text, "answer": "1"}
                    params["external"] = "always" if web else "never"
                    if mode != "quick":
                        params["depth"] = mode
                    started = time.perf_counter()
                    pack = client.get("/-/research.json", params=params).json()
                    tally = tallies[mode]
                    tally.seconds.append(time.perf_counter() - started)
                    cited = cited_documents(pack)
                    tally.both_cited.append(set(question.supporting) <= cited)
                    text = (pack.get("answer") or {}).get("text", "").lower()
                    tally.answered.append(question.answer.lower() in text)
                    tally.web_calls.append(len(pack["query_plan"]["external_queries"]))
                    research = pack.get("research") or {}
                    tally.rounds.append(len(research.get("rounds", [])) or 1)
                    if research:
                        tally.stopped_answered.append(research["stop_reason"] == "answered")
                        tally.confidence.append(research["confidence"]["score"])
                    if dump is not None:
                        answer = pack.get("answer") or {}
                        record = {
                            "variant": name,
                            "mode": mode,
                            "question": question.text,
                            "gold": question.answer,
                            "holds": tally.answered[-1],
                            "both_cited": tally.both_cited[-1],
                            "status": answer.get("status"),
                            "message": answer.get("message"),
                            "text": answer.get("text"),
                            "stop_reason": research.get("stop_reason"),
                            "confidence": research.get("confidence"),
                            "rounds": research.get("rounds"),
                        }
                        dump.write(json.dumps(record) + "\n")
                    tally.reads.append(len(pack["external_search"].get("read", [])))
    finally:
        server.terminate()
        server.wait(10)
        if fake is not None:
            fake.stop()
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="quick", help="comma-separated: quick, deep")
    parser.add_argument("--limit-questions", type=int, default=0)
    parser.add_argument("--dump", type=Path, help="every run's outcome, as JSON lines")
    args = parser.parse_args()
    if not (corpora.data_dir() / COLLECTION).is_dir():
        sys.exit(f"No {COLLECTION} under {corpora.data_dir()} (see DBRAIN_SHARED_DATA).")
    documents, asked = questions(args.limit_questions)
    modes = args.modes.split(",")
    results: dict[str, dict[str, Tally]] = {}
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    with tempfile.TemporaryDirectory() as tmp:
        for variant in ("brain only", "brain + web"):
            results[variant] = run_variant(variant, documents, asked, modes, Path(tmp), dump)
    if dump is not None:
        dump.close()
    print()
    print(f"{COLLECTION}: {len(asked)} questions of two supporting paragraphs each")
    columns = (
        ("both cited", 12),
        ("answer holds", 14),
        ("rounds", 8),
        ("web calls", 11),
        ("reads", 7),
        ("p50 s", 8),
    )
    print(f"{'variant':14}{'mode':>7}" + "".join(f"{name:>{width}}" for name, width in columns))
    for variant, tallies in results.items():
        for mode, t in tallies.items():
            n = len(t.both_cited) or 1
            print(
                f"{variant:14}{mode:>7}{sum(t.both_cited) / n:>12.2f}{sum(t.answered) / n:>14.2f}"
                f"{sum(t.rounds) / n:>8.2f}{sum(t.web_calls):>11}{sum(t.reads):>7}"
                f"{statistics.median(t.seconds or [0.0]):>8.2f}"
            )
    deep = [(v, t["deep"]) for v, t in results.items() if "deep" in t]
    if deep:
        print()
        print("deep runs, what they say of themselves against 'the answer holds the gold':")
        print(f"{'variant':14}{'answered':>10}{'precision':>11}{'recall':>8}{'AUROC':>8}")
        for variant, t in deep:
            precision, recall, area = stop_scores(t)
            print(
                f"{variant:14}{sum(t.stopped_answered):>10}{precision:>11.2f}{recall:>8.2f}"
                f"{area:>8.2f}"
            )


if __name__ == "__main__":
    main()
