"""Benchmark: do answers hold the sentences that answer the question? On a public QA set.

Reads a question-answering collection in SQuAD's JSON layout (v1.1 or v2.0: articles of
paragraphs, each with questions and answer spans), turns every paragraph into an extracted
dbrain ``sources`` row (as ``bench_ir.py`` does), indexes it with the offline model when the
``[semantic]`` extra is installed, and asks each answerable question of ``/-/research.json`` with
``answer=1`` through Datasette itself. A paragraph's **gold sentences** are those holding an
answer span (cut by the answer's own sentence splitter); its row is the **relevant row**.

Reported in one run, over the same retrieved rows:

- gold hit:       share of questions whose answer holds a gold sentence (or a trimmed part of one)
- gold first:     share whose first sentence is a gold sentence (or part of one): the answer
                  leads with the point
- cites relevant: share of answer sentences citing the relevant row
- sentences:      mean sentences an answer has

for the plugin's extractive answer and two baselines:

- lead sentences:      the first sentence of each of the top 3 rows
- best BM25 sentences: the 3 sentences of the top 5 rows with the best BM25 score against the
                       question (Lucene BM25 over those sentences, the index's stemmer), and
                       the same at the answer's own sentence count

Prints; never fails (quality is measured here, and the README reports the numbers).

    python bench/bench_answer_quality.py [SQUAD_JSON] [--questions 300] [--no-semantic]
    DBRAIN_QA_DATA=SQUAD_JSON make bench-answer    # without it: the shared SQuAD articles
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from corpora import build_brain, data_dir, doc_url
from datasette.app import Datasette
from datasette.version import __version__ as datasette_version

from datasette_dbrain_websearch.answer.text import split_sentences
from datasette_dbrain_websearch.stemming import stems
from datasette_dbrain_websearch.urls import normalize_url

NAME = "qa"
SHARED_SQUAD = "squad/squad-v2-dev-2-articles.json"  # under corpora.data_dir()
ROWS = 10
K1, B = 1.2, 0.75


def load(path: Path) -> tuple[dict[str, dict], list[dict]]:
    """(paragraphs by id, answerable questions with their paragraph and gold sentences)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    corpus: dict[str, dict] = {}
    questions: list[dict] = []
    for a, article in enumerate(data["data"]):
        title = article.get("title", "").replace("_", " ")
        for p, paragraph in enumerate(article["paragraphs"]):
            doc_id = f"{a}-{p}"
            context = paragraph["context"]
            corpus[doc_id] = {"title": f"{title} ({p + 1})", "text": context}
            sentences = split_sentences(context)
            for qa in paragraph["qas"]:
                if qa.get("is_impossible") or not qa.get("answers"):
                    continue
                gold = {
                    s
                    for answer in qa["answers"]
                    for s in sentences
                    if answer["text"] and answer["text"] in s
                }
                if gold:
                    questions.append({"question": qa["question"], "doc": doc_id, "gold": gold})
    return corpus, questions


def norm(text: str) -> str:
    return " ".join(text.replace("\u2026", " ").split()).strip(" .").lower()


def holds_gold(sentences: list[str], gold: set[str]) -> bool:
    """Does any sentence equal a gold sentence, or a part of one (a trimmed clause)?"""
    wanted = [norm(g) for g in gold]
    return any(norm(s) and any(norm(s) in g for g in wanted) for s in sentences)


def bm25_sentences(
    question: str, texts: list[tuple[str, str]], count: int
) -> list[tuple[str, str]]:
    """The ``count`` (key, sentence) pairs of ``texts`` with the best BM25 score."""
    pool = [(key, s) for key, text in texts for s in split_sentences(text)]
    if not pool:
        return []
    bags = [Counter(stems(s)) for _, s in pool]
    wanted = set(stems(question))
    n = len(pool)
    average = sum(sum(b.values()) for b in bags) / n or 1.0
    df = Counter(t for b in bags for t in set(b) if t in wanted)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
    scores = []
    for bag in bags:
        norm_len = K1 * (1 - B + B * sum(bag.values()) / average)
        scores.append(sum(idf[t] * bag[t] * (K1 + 1) / (bag[t] + norm_len) for t in wanted))
    order = sorted(range(n), key=lambda i: -scores[i])
    return [pool[i] for i in order[:count] if scores[i] > 0]


def make_datasette(brain: Path) -> Datasette:
    block = {"plugins": {"datasette-dbrain-websearch": {"default_limit": ROWS}}}
    if datasette_version.startswith("0."):
        return Datasette([str(brain)], metadata=block)
    return Datasette([str(brain)], config=block)


async def run(brain: Path, questions: list[dict], keys: dict[str, str]) -> dict[str, list]:
    ds = make_datasette(brain)
    await ds.invoke_startup()
    conn = sqlite3.connect(f"file:{brain}?mode=ro", uri=True)
    texts = {
        key: f"{title}\n{text}"
        for key, title, text in conn.execute(
            "select source_key, title, extracted_text from sources"
        )
    }
    results: dict[str, list] = {
        s: []
        for s in (
            "extractive answer",
            "lead sentences",
            "best BM25 sentences",
            "BM25 at answer's count",
        )
    }
    for q in questions:
        response = await ds.client.get(
            "/-/research.json", params={"q": q["question"], "answer": "1", "limit": str(ROWS)}
        )
        pack = response.json()
        relevant = keys[q["doc"]]
        rows = [r["source_key"] for r in pack.get("evidence", [])]
        answer = pack.get("answer", {}).get("sentences", [])
        picked = {
            "extractive answer": [
                (s["citations"][0] if s["citations"] else "", s["text"]) for s in answer
            ],
            "lead sentences": [
                (key, (split_sentences(texts[key].split("\n", 1)[1]) or [""])[0])
                for key in rows[:3]
            ],
            "best BM25 sentences": bm25_sentences(
                q["question"], [(k, texts[k].split("\n", 1)[1]) for k in rows[:5]], 3
            ),
            "BM25 at answer's count": bm25_sentences(
                q["question"], [(k, texts[k].split("\n", 1)[1]) for k in rows[:5]], len(answer)
            ),
        }
        for system, pairs in picked.items():
            results[system].append(
                (
                    holds_gold([s for _, s in pairs], q["gold"]),
                    sum(1 for key, _ in pairs if key == relevant),
                    len(pairs),
                    relevant in rows,
                    holds_gold([s for _, s in pairs[:1]], q["gold"]),
                )
            )
    conn.close()
    return results


def index(brain: Path) -> str:
    try:
        from datasette_dbrain_websearch.embeddings import SemanticUnavailable
        from datasette_dbrain_websearch.runs_db import create
        from datasette_dbrain_websearch.semantic_index import index_brain

        runs = brain.parent / "research_runs.db"
        create(runs)
        index_brain(brain, runs, "wordllama")
        return "with the semantic lane (wordllama)"
    except (ImportError, SemanticUnavailable) as exc:
        return f"lexical only ({exc})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "squad",
        type=Path,
        nargs="?",
        default=os.environ.get("DBRAIN_QA_DATA") or data_dir() / SHARED_SQUAD,
        help="a SQuAD-layout JSON file (v1.1 or v2.0); default: $DBRAIN_QA_DATA, else the "
        "shared collections' two SQuAD articles",
    )
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--no-semantic", action="store_true")
    args = parser.parse_args()
    if not args.squad or not Path(args.squad).exists():
        sys.exit(
            "No QA collection: pass a SQuAD-layout JSON file (e.g. SQuAD's dev-v1.1.json) or "
            "name it in DBRAIN_QA_DATA."
        )
    args.squad = Path(args.squad)
    corpus, questions = load(args.squad)
    random.Random(7).shuffle(questions)
    questions = questions[: args.questions]
    keys = {d: normalize_url(doc_url(NAME, d)).source_key for d in corpus}
    with tempfile.TemporaryDirectory() as tmp:
        brain = Path(tmp) / f"{NAME}.db"
        build_brain(brain, NAME, corpus)
        lanes = "lexical only (--no-semantic)" if args.no_semantic else index(brain)
        results = asyncio.run(run(brain, questions, keys))
    found = statistics.mean(r[3] for r in results["extractive answer"])
    print(
        f"{args.squad.name}: {len(corpus):,} paragraphs, {len(questions)} answerable questions, "
        f"{lanes}; the relevant row is in the top {ROWS} for {found:.3f} of them "
        f"({platform.machine()}, Python {sys.version.split()[0]}, Datasette {datasette_version})"
    )
    print(f"{'system':24}{'gold hit':>10}{'gold first':>12}{'cites relevant':>16}{'sentences':>11}")
    for system, rows in results.items():
        hit = statistics.mean(r[0] for r in rows)
        first = statistics.mean(r[4] for r in rows)
        cited = sum(r[1] for r in rows)
        total = sum(r[2] for r in rows)
        share = cited / total if total else 0.0
        print(f"{system:24}{hit:>10.3f}{first:>12.3f}{share:>16.3f}{total / len(rows):>11.2f}")


if __name__ == "__main__":
    main()
