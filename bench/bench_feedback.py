"""Benchmark: does relevance feedback help? Marks as a person gives them, on a public collection.

Reads a collection in BEIR's layout (as ``bench_ir.py`` does: ``bench/ir/<name>/`` or the
folder ``DBRAIN_IR_DATA`` names), builds its brain, and for every judged question:

1. asks ``/-/research.json`` (the original run, top 10);
2. marks the top 5 rows as a person would: the judged relevant ones 👍 (``relevant``), the
   others 👎 (``irrelevant``);
3. re-ranks the run with those marks (``feedback.apply_feedback``, what the page does);
4. asks again with Expand's words (``refinement.refinement`` -> ``expand=``, what the page's
   Expand button does).

Prints nDCG@10 and R@10 of the three, how many expanded runs returned fewer rows than the
original (Expand must never narrow), and what Expand added: the share of its words that are
filler (``expansion.filler_kind``: stop words, numbers, generic verbs, the filler list; the goal
is at most 0.05), and the share held by at least a tenth of the collection's documents (common
in this brain, a second look that no list decides). Prints; never fails.

    python bench/bench_feedback.py [--collection cranfield] [--limit-queries N]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import platform
import re
import statistics
import sys
import tempfile
from collections import Counter
from pathlib import Path

from bench_ir import collection, ndcg
from corpora import build_brain
from datasette.app import Datasette
from datasette.version import __version__ as datasette_version

from datasette_dbrain_websearch.expansion import filler_kind
from datasette_dbrain_websearch.feedback import apply_feedback
from datasette_dbrain_websearch.refinement import refinement
from datasette_dbrain_websearch.stemming import fold, stem

K = 10
MARKED = 5
COMMON = 0.1  # a word held by this share of the documents is common in the brain
WORD = re.compile(r"[^\W_]+")


def recall(ranked: list[str], gold: dict[str, int], k: int = K) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def doc_ids(pack: dict) -> list[str]:
    """The ranking's rows as collection ids (the brain's URLs end with them)."""
    rows = [pack[e["list"]][e["index"]] for e in pack["ranking"]]
    return [str(r.get("canonical_url") or r.get("url") or "").rsplit("/", 1)[-1] for r in rows]


def make_datasette(brain: Path) -> Datasette:
    block = {"plugins": {"datasette-dbrain-websearch": {"semantic": {"model": ""}}}}
    if datasette_version.startswith("0."):
        return Datasette([str(brain)], metadata=block)
    return Datasette([str(brain)], config=block)


def document_rows(corpus: dict[str, dict]) -> Counter[str]:
    """How many documents hold each stem (title and text)."""
    return Counter(
        t
        for doc in corpus.values()
        for t in {stem(w) for w in WORD.findall(fold(f"{doc.get('title', '')} {doc['text']}"))}
    )


async def run(
    brain: Path, queries: dict[str, str], qrels: dict
) -> tuple[dict[str, list[float]], list[str]]:
    ds = make_datasette(brain)
    await ds.invoke_startup()
    scores: dict[str, list[float]] = {
        f"{system} {metric}": []
        for system in ("original", "re-ranked", "expanded")
        for metric in ("ndcg", "recall")
    }
    scores["fewer rows"] = []
    words: list[str] = []
    for qid, question in queries.items():
        gold = qrels[qid]
        original = (
            await ds.client.get("/-/research.json", params={"q": question, "limit": str(K)})
        ).json()
        if "ranking" not in original:
            continue
        ids = doc_ids(original)
        rows = [original[e["list"]][e["index"]] for e in original["ranking"]]
        marks = [
            {"key": row["source_key"], "value": "relevant" if doc in gold else "irrelevant"}
            for row, doc in list(zip(rows, ids, strict=True))[:MARKED]
        ]
        reranked = doc_ids(apply_feedback(original, marks))
        added = (await refinement(ds, original, marks))["added_terms"]
        words += added
        params = {"q": question, "limit": str(K)}
        if added:
            params["expand"] = ",".join(added)
        expanded_pack = (await ds.client.get("/-/research.json", params=params)).json()
        expanded = doc_ids(expanded_pack)
        for system, ranked in (("original", ids), ("re-ranked", reranked), ("expanded", expanded)):
            scores[f"{system} ndcg"].append(ndcg(ranked, gold))
            scores[f"{system} recall"].append(recall(ranked, gold))
        scores["fewer rows"].append(float(len(expanded) < len(ids)))
    return scores, words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="cranfield")
    parser.add_argument("--limit-queries", type=int, default=0)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per request
    corpus, queries, qrels = collection(args.collection, args.limit_queries)
    with tempfile.TemporaryDirectory() as tmp:
        brain = Path(tmp) / f"{args.collection}.db"
        build_brain(brain, args.collection, corpus)
        scores, words = asyncio.run(run(brain, queries, qrels))
    asked = len(scores["fewer rows"])
    print(
        f"{args.collection}: {len(corpus):,} documents, {asked} judged questions, the top "
        f"{MARKED} marked ({platform.machine()}, Python {sys.version.split()[0]}, "
        f"Datasette {datasette_version})"
    )
    print(f"{'run':12}{'nDCG@10':>9}{'R@10':>8}")
    for system in ("original", "re-ranked", "expanded"):
        ndcg_mean = statistics.mean(scores[f"{system} ndcg"]) if asked else 0.0
        recall_mean = statistics.mean(scores[f"{system} recall"]) if asked else 0.0
        print(f"{system:12}{ndcg_mean:>9.3f}{recall_mean:>8.3f}")
    fewer = int(sum(scores["fewer rows"]))
    print(f"expanded runs with fewer rows than the original: {fewer} of {asked}")
    filler = [w for w in words if filler_kind(w)]
    rows = document_rows(corpus)
    common = [w for w in words if rows[stem(fold(w))] >= COMMON * len(corpus)]
    share = len(filler) / len(words) if words else 0.0
    print(
        f"words Expand added: {len(words)}; filler {len(filler)} ({share:.3f}, goal <= 0.05), "
        f"held by >= {COMMON:.0%} of the documents {len(common)} "
        f"({len(common) / len(words) if words else 0.0:.3f})"
    )
    if filler:
        print(
            "  filler added, commonest first: "
            + ", ".join(f"{w} ({n})" for w, n in Counter(filler).most_common(12))
        )


if __name__ == "__main__":
    main()
