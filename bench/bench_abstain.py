"""Benchmark: does a run say "no answer" when nothing answers? (issue 41's measure)

The shared SQuAD 2.0 articles (``corpora``: 87 paragraphs, ``../shared/data/squad``) become a
brain of extracted ``sources`` rows, indexed for the semantic lane as a user indexes one. It
is asked, through the research pipeline as ``/-/research.json?answer=1`` runs it:

- **answerable**: the articles' 293 answerable questions (the brain holds their answer);
- **unanswerable**: their 333 ``is_impossible`` questions, written against the same paragraphs
  (the brain holds the topic, not the answer);
- **other topic**: the other shared collections' questions (Cranfield, HotpotQA).

Per kind it prints, as ``../shared/reference/relevance-benchmarks.md`` scores it ("Answering,
not only holding"):

- right answer: a gold answer span (case-insensitive) appears in the answer's text;
- abstains:     the answer's status is not an answer (no sentence written);
- enough:       the run's verdict is ``enough_evidence``.

``--dump FILE`` writes every question's outcome as JSON lines (for reading the misses).
Prints; never fails on the figures.

    python bench/bench_abstain.py [--limit-questions N] [--no-semantic] [--dump FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import corpora

from datasette_dbrain_websearch.config import Settings
from datasette_dbrain_websearch.config_keys import DEFAULT_EMBEDDING_MODEL
from datasette_dbrain_websearch.judge import ENOUGH_EVIDENCE
from datasette_dbrain_websearch.options import checked_request
from datasette_dbrain_websearch.pipeline import run_pipeline
from datasette_dbrain_websearch.semantic_index import index_brain

ANSWERED = "ok"  # the answer's status when it wrote sentences
KINDS = ("answerable", "unanswerable", "other topic")


@dataclass(frozen=True)
class Asked:
    kind: str
    question: str
    gold: tuple[str, ...]  # answer spans (answerable questions only)


@dataclass(frozen=True)
class Outcome:
    asked: Asked
    status: str
    verdict: str
    text: str

    @property
    def right(self) -> bool:
        text = self.text.lower()
        return any(g.lower() in text for g in self.asked.gold if g)

    @property
    def abstained(self) -> bool:
        return self.status != ANSWERED


def questions(limit: int) -> list[Asked]:
    """The SQuAD articles' answerable and unanswerable questions, and the other collections'."""
    path = corpora.data_dir() / "squad" / "squad-v2-dev-2-articles.json"
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    answerable: list[Asked] = []
    unanswerable: list[Asked] = []
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa.get("is_impossible"):
                    unanswerable.append(Asked("unanswerable", qa["question"], ()))
                else:
                    spans = tuple(dict.fromkeys(a["text"] for a in qa["answers"]))
                    answerable.append(Asked("answerable", qa["question"], spans))
    other = [
        Asked("other topic", q.text, ())
        for name in corpora.NAMES
        if name != "squad"
        for q in corpora.load(name).questions
    ]

    def cut(items: list[Asked]) -> list[Asked]:
        return items[:limit] if limit else items

    return cut(answerable) + cut(unanswerable) + cut(other)


async def ask_all(
    brain: Path, index: Path | None, asked: list[Asked], settings: Settings
) -> list[Outcome]:
    conn, run = corpora.pipeline_run(brain, index, settings)
    outcomes = []
    for q in asked:
        request = checked_request(settings, question=q.question, answer=True)
        pack = (await run_pipeline(request, run)).to_json()
        answer = pack.get("answer") or {}
        outcomes.append(
            Outcome(q, answer.get("status", ""), pack["judge"]["verdict"], answer.get("text", ""))
        )
    conn.close()
    return outcomes


def table(outcomes: list[Outcome]) -> list[tuple[str, int, float | None, float, float]]:
    """(kind, questions, right answer, abstains, enough) per kind of question."""
    rows = []
    for kind in KINDS:
        group = [o for o in outcomes if o.asked.kind == kind]
        n = len(group) or 1
        right = sum(o.right for o in group) / n if kind == "answerable" else None
        abstains = sum(o.abstained for o in group) / n
        enough = sum(o.verdict == ENOUGH_EVIDENCE for o in group) / n
        rows.append((kind, len(group), right, abstains, enough))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-questions", type=int, default=0, help="at most N per kind")
    parser.add_argument("--no-semantic", action="store_true", help="without the semantic lane")
    parser.add_argument("--dump", type=Path, help="every question's outcome, as JSON lines")
    parser.add_argument("--workdir", type=Path, help="keep the brain here (default: a temp dir)")
    args = parser.parse_args()
    if not (corpora.data_dir() / "squad").is_dir():
        sys.exit(f"No squad under {corpora.data_dir()} (see DBRAIN_SHARED_DATA).")
    # A quality measure, not a speed one: a busy machine must not stop a question at 3 s.
    config: dict = {"time_limit_ms": 60_000}
    if args.no_semantic:
        config["semantic"] = {"model": ""}
    settings = Settings.from_config(config)
    asked = questions(args.limit_questions)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-abstain-"))
    work.mkdir(parents=True, exist_ok=True)
    brain = work / "squad.db"
    index = None if args.no_semantic else work / "squad-index.db"
    if not brain.exists():
        corpora.build_brain(brain, "squad", corpora.load("squad").documents)
    if index is not None and not index.exists():
        index_brain(brain, index, DEFAULT_EMBEDDING_MODEL)
    started = time.perf_counter()
    outcomes = asyncio.run(ask_all(brain, index, asked, settings))
    lane = "lexical only" if args.no_semantic else f"semantic lane on ({DEFAULT_EMBEDDING_MODEL})"
    print(
        f"the SQuAD brain (87 paragraphs), {lane}, answer=1 "
        f"({platform.machine()}, Python {platform.python_version()}; "
        f"{time.perf_counter() - started:.0f} s)"
    )
    print(f"{'questions':<14}{'n':>5}{'right answer':>14}{'abstains':>10}{'enough':>8}")
    for kind, n, right, abstains, enough in table(outcomes):
        shown = "—" if right is None else f"{right:.2f}"
        print(f"{kind:<14}{n:>5}{shown:>14}{abstains:>10.2f}{enough:>8.2f}")
    if args.dump:
        with args.dump.open("w", encoding="utf-8") as out:
            for o in outcomes:
                record = {
                    "kind": o.asked.kind,
                    "question": o.asked.question,
                    "gold": o.asked.gold,
                    "status": o.status,
                    "verdict": o.verdict,
                    "right": o.right,
                    "text": o.text,
                }
                out.write(json.dumps(record) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
