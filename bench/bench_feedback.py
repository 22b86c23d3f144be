"""Benchmark: does relevance feedback help? Marks as a person gives them, on a public collection.

Reads a collection in BEIR's layout (as ``bench_ir.py`` does: ``bench/ir/<name>/`` or the
folder ``DBRAIN_IR_DATA`` names), builds its brain, and for every judged question:

1. asks ``/-/research.json`` (the original run, top 10);
2. marks the top 5 rows as a person would: the judged relevant ones 👍 (``relevant``), the
   others 👎 (``irrelevant``);
3. re-ranks the run with those marks (``feedback.apply_feedback``, what the page does);
4. asks again with Expand's words (``feedback.refine_query`` -> ``expand=``, what the page's
   Expand button does).

Prints nDCG@10 and R@10 of the three, and how many expanded runs returned fewer rows than the
original (Expand must never narrow). Prints; never fails.

    python bench/bench_feedback.py [--collection cranfield] [--limit-queries N]
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from bench_ir import collection, ndcg
from corpora import build_brain
from datasette.app import Datasette
from datasette.version import __version__ as datasette_version

from datasette_dbrain_websearch.feedback import apply_feedback, refine_query

K = 10
MARKED = 5


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


async def run(brain: Path, queries: dict[str, str], qrels: dict) -> dict[str, list[float]]:
    ds = make_datasette(brain)
    await ds.invoke_startup()
    scores: dict[str, list[float]] = {
        f"{system} {metric}": []
        for system in ("original", "re-ranked", "expanded")
        for metric in ("ndcg", "recall")
    }
    scores["fewer rows"] = []
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
        added = refine_query(original, marks)["added_terms"]
        params = {"q": question, "limit": str(K)}
        if added:
            params["expand"] = ",".join(added)
        expanded_pack = (await ds.client.get("/-/research.json", params=params)).json()
        expanded = doc_ids(expanded_pack)
        for system, ranked in (("original", ids), ("re-ranked", reranked), ("expanded", expanded)):
            scores[f"{system} ndcg"].append(ndcg(ranked, gold))
            scores[f"{system} recall"].append(recall(ranked, gold))
        scores["fewer rows"].append(float(len(expanded) < len(ids)))
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="nfcorpus")
    parser.add_argument("--limit-queries", type=int, default=0)
    args = parser.parse_args()
    corpus, queries, qrels = collection(args.collection, args.limit_queries)
    with tempfile.TemporaryDirectory() as tmp:
        brain = Path(tmp) / f"{args.collection}.db"
        build_brain(brain, args.collection, corpus)
        scores = asyncio.run(run(brain, queries, qrels))
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


if __name__ == "__main__":
    main()
