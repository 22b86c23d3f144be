"""Benchmark: ranking quality on a public test collection, beside plain BM25 baselines.

Reads one of the shared collections (``corpora``: ``cranfield``, ``squad``, ``hotpotqa`` from
``../shared/data``), or a collection under ``bench/ir/<name>/`` in BEIR's layout
(``corpus.jsonl.gz``: ``_id``, ``title``, ``text``; ``queries.jsonl``; ``qrels.tsv``: query-id,
corpus-id, score), turns every document into an extracted dbrain ``sources`` row (its
``sources_fts`` row written as dbrain writes it, the URL ``https://<name>.example/doc/<id>``),
and for every judged question reports nDCG@10, R@100 and p50 latency of, in one run:

- plugin bm25:    local retrieval as /-/research runs it (``ranking: bm25``), lexical lane only
- plugin hybrid:  the same with the semantic lane (``wordllama``, weight ``semantic.weight``;
                  when the ``[semantic]`` extra is installed)
- plugin dbrain:  ``ranking: dbrain`` (dbrain's own ``Store.Search`` order)
- fts5 or:        plain SQLite FTS5: every word of the question quoted and OR-ed,
                  ``ORDER BY bm25(sources_fts)`` (what a user could write by hand)
- bm25s:          Lucene BM25 (k1=1.5, b=0.75), English stop words and stemmer, over the same
                  title + text (when ``bm25s`` and ``PyStemmer`` are installed)

Timings interleave the systems question by question (same machine, same moment). Prints; never
fails (quality is measured here, and the README reports the numbers).

    python bench/bench_ir.py [--collection cranfield] [--limit-queries N] [--brain PATH]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import corpora

from datasette_dbrain_websearch.brain import Filters
from datasette_dbrain_websearch.config import SemanticSettings
from datasette_dbrain_websearch.config_keys import DEFAULT_EMBEDDING_MODEL
from datasette_dbrain_websearch.embeddings import SemanticUnavailable
from datasette_dbrain_websearch.query_plan import plan_query
from datasette_dbrain_websearch.retrieval import retrieve
from datasette_dbrain_websearch.semantic import SemanticLane, semantic_question

HERE = Path(__file__).resolve().parent
# Collections live in bench/ir/<name>/ (committed), or in the folder named by DBRAIN_IR_DATA.
WEIGHT = SemanticSettings().weight
K_NDCG, K_RECALL = 10, 100
WORD = re.compile(r"\w+")

Ranker = Callable[[str], list[str]]


def load(folder: Path) -> tuple[dict[str, dict], dict[str, str], dict[str, dict[str, int]]]:
    """(corpus by id, questions by id, judgements by question id) of a BEIR-layout folder."""
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        corpus = {d["_id"]: d for d in map(json.loads, fh)}
    with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
        queries = {q["_id"]: q["text"] for q in map(json.loads, fh)}
    qrels: dict[str, dict[str, int]] = {}
    with (folder / "qrels.tsv").open(encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                qrels.setdefault(qid, {})[did] = int(score)
    return corpus, {q: t for q, t in queries.items() if q in qrels}, qrels


def ndcg(ranked: list[str], gold: dict[str, int], k: int = K_NDCG) -> float:
    gains = [gold.get(d, 0) for d in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(gold.values(), reverse=True)[:k]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def recall(ranked: list[str], gold: dict[str, int], k: int = K_RECALL) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold) if gold else 0.0


def plugin(
    conn: sqlite3.Connection,
    ids: dict[str, str],
    ranking: str,
    index: Path | None = None,
    database: str = "",
) -> Ranker:
    """Local retrieval as /-/research runs it; with ``index``, the semantic lane too."""

    def run(question: str) -> list[str]:
        plan = plan_query(question)
        if not plan.searchable:
            return []
        lane = None
        if index is not None:
            lane = SemanticLane(
                str(index),
                database,
                DEFAULT_EMBEDDING_MODEL,
                semantic_question(question),
                WEIGHT,
                min_cosine=SemanticSettings().min_cosine,
            )
        found = retrieve(conn, question, plan, Filters(), K_RECALL, ranking, lane)
        return [ids[h.row["source_key"]] for h in found.hits]

    return run


def fts5_or(conn: sqlite3.Connection, by_rowid: dict[int, str]) -> Ranker:
    def run(question: str) -> list[str]:
        words = dict.fromkeys(w.lower() for w in WORD.findall(question))
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = conn.execute(
            "select rowid from sources_fts where sources_fts match ? "
            "order by bm25(sources_fts) limit ?",
            [match, K_RECALL],
        )
        return [by_rowid[r[0]] for r in rows]

    return run


def bm25s_ranker(corpus: dict[str, dict]) -> Ranker | None:
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return None
    stemmer = Stemmer.Stemmer("english")
    doc_ids = list(corpus)
    texts = [f"{corpus[d].get('title', '')} {corpus[d].get('text', '')}" for d in doc_ids]
    model = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    model.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False))

    def run(question: str) -> list[str]:
        tokens = bm25s.tokenize([question], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        k = min(K_RECALL, len(doc_ids))
        found, scores = model.retrieve(tokens, k=k, show_progress=False)
        return [doc_ids[i] for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return run


def collection_folder(name: str) -> Path | None:
    for base in (HERE / "ir", Path(os.environ.get("DBRAIN_IR_DATA", HERE / "ir"))):
        folder = base / name if (base / name).is_dir() else base
        if (folder / "corpus.jsonl.gz").exists():
            return folder
    return None


def collection(
    name: str, limit_queries: int = 0
) -> tuple[dict[str, dict], dict[str, str], dict[str, dict[str, int]]]:
    """The named collection's corpus, judged questions (the first ``limit_queries`` when
    given) and judgements; exits saying where to put it when it is missing."""
    folder = collection_folder(name)
    if folder is None and name in corpora.NAMES and corpora.data_dir().is_dir():
        shared = corpora.load(name)
        corpus = {i: {"_id": i, **doc} for i, doc in shared.documents.items()}
        questions = shared.questions[:limit_queries] if limit_queries else shared.questions
        return corpus, {q.id: q.text for q in questions}, {q.id: q.gold for q in questions}
    if folder is None:
        sys.exit(
            f"No collection {name!r}: put BEIR's corpus.jsonl.gz, queries.jsonl and "
            f"qrels.tsv in bench/ir/{name}/ (or a folder named by DBRAIN_IR_DATA)."
        )
    corpus, queries, qrels = load(folder)
    if limit_queries:
        queries = dict(list(queries.items())[:limit_queries])
    return corpus, queries, qrels


def semantic_index(brain: Path, folder: Path) -> Path | None:
    """Index the brain with the offline model (None without the [semantic] extra)."""
    try:
        from datasette_dbrain_websearch.runs_db import create
        from datasette_dbrain_websearch.semantic_index import index_brain

        path = folder / "research_runs.db"
        create(path)
        started = time.perf_counter()
        report = index_brain(brain, path, DEFAULT_EMBEDDING_MODEL)
    except SemanticUnavailable as exc:
        print(f"no hybrid run: {exc}")
        return None
    took = time.perf_counter() - started
    print(f"indexed {report.rows:,} rows with {DEFAULT_EMBEDDING_MODEL} in {took:.1f}s")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="cranfield")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--brain", type=Path, help="keep the built brain here")
    args = parser.parse_args()
    corpus, queries, qrels = collection(args.collection, args.limit_queries)
    with tempfile.TemporaryDirectory() as tmp:
        path = args.brain or Path(tmp) / f"{args.collection}.db"
        if not path.exists():
            started = time.perf_counter()
            corpora.build_brain(path, args.collection, corpus)
            took = time.perf_counter() - started
            print(f"built {path.name}: {len(corpus):,} sources in {took:.1f}s")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        by_key = {}
        by_rowid = {}
        for rowid, key, url in conn.execute("select id, source_key, canonical_url from sources"):
            doc_id = url.rsplit("/", 1)[1]
            by_key[key] = doc_id
            by_rowid[rowid] = doc_id
        systems: dict[str, Ranker] = {"plugin bm25": plugin(conn, by_key, "bm25")}
        index = semantic_index(path, Path(tmp))
        if index is not None:
            systems["plugin hybrid"] = plugin(conn, by_key, "bm25", index, path.stem)
        systems["plugin dbrain"] = plugin(conn, by_key, "dbrain")
        systems["fts5 or"] = fts5_or(conn, by_rowid)
        baseline = bm25s_ranker(corpus)
        if baseline is not None:
            systems["bm25s"] = baseline
        report(args.collection, len(corpus), queries, qrels, systems)
        conn.close()


def report(name, docs, queries, qrels, systems: dict[str, Ranker]) -> None:
    scores = {s: {"ndcg": [], "recall": [], "ms": []} for s in systems}
    for qid, question in queries.items():
        for system, run in systems.items():
            started = time.perf_counter()
            ranked = run(question)
            scores[system]["ms"].append((time.perf_counter() - started) * 1000)
            scores[system]["ndcg"].append(ndcg(ranked, qrels[qid]))
            scores[system]["recall"].append(recall(ranked, qrels[qid]))
    print()
    print(
        f"{name}: {docs:,} documents, {len(queries)} judged questions "
        f"({platform.processor() or platform.machine()}, Python {sys.version.split()[0]}, "
        f"SQLite {sqlite3.sqlite_version})"
    )
    print(f"{'system':16}{'nDCG@10':>9}{'R@100':>8}{'p50 ms':>9}")
    for system, found in scores.items():
        print(
            f"{system:16}{statistics.mean(found['ndcg']):>9.3f}"
            f"{statistics.mean(found['recall']):>8.3f}{statistics.median(found['ms']):>9.2f}"
        )
    # In process, at the 100 rows R@100 needs: the plugin against FTS5's OR at as many rows.
    floor = statistics.median(scores["fts5 or"]["ms"]) if "fts5 or" in scores else 0.0
    for system in ("plugin bm25", "plugin hybrid"):
        if system in scores and floor:
            ratio = statistics.median(scores[system]["ms"]) / floor
            print(f"{system} / fts5 or = {ratio:.2f}x at {K_RECALL} rows (target <= 2.5x)")


if __name__ == "__main__":
    main()
