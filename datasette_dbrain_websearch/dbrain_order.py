"""dbrain's own order (``ranking: dbrain``), as its ``Store.Search`` lists rows: each table's
AND query by bm25, the newest first among equals; when nothing at all was found, the relaxed OR
query, its rows kept by dbrain's ``matchesRelaxedTerms`` rule; items then sources (the relaxed
fallback: sources then items).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from .brain import FTS_TABLE, TABLE, BrainShape, Filters, Hit, filter_sql, hydrate
from .errors import is_busy
from .lanes import Lanes, fts_errors
from .query_plan import QueryPlan
from .question_terms import dbrain_parts
from .row_texts import relaxed_texts, searchable_texts


def dbrain_lane_sql(kind: str, filters: Filters, shape: BrainShape) -> tuple[str, list[Any]]:
    """dbrain's ``Store.Search`` query for one table (``ranking: dbrain``): ids, bm25 with
    the default weights, the newest first among equals, and the total match count."""
    table, fts = TABLE[kind], FTS_TABLE[kind]
    where, params = filter_sql(kind, filters, shape)
    tiebreak = shape.col(table, "last_seen_at" if kind == "item" else "updated_at")
    # bm25() cannot sit beside a window function, so the FTS step is materialized first.
    sql = (
        f"with f as materialized (select rowid, bm25([{fts}]) as score from [{fts}] "
        f"where [{fts}] match ?) "
        f"select t.id, f.score, count(*) over () as total "
        f"from f join [{table}] t on t.id = f.rowid where 1{where} "
        f"order by f.score, {tiebreak} desc, t.id limit ?"
    )
    return sql, params


def _dbrain_lane(
    conn: sqlite3.Connection,
    kind: str,
    match: str,
    filters: Filters,
    shape: BrainShape,
    depth: int,
) -> tuple[list[tuple[int, float]], int]:
    sql, params = dbrain_lane_sql(kind, filters, shape)
    rows = conn.execute(sql, [match, *params, depth]).fetchall()
    return [(r[0], r[1]) for r in rows], (rows[0][2] if rows else 0)


def dbrain_lanes(
    conn: sqlite3.Connection,
    plan: QueryPlan,
    kinds: list[str],
    filters: Filters,
    shape: BrainShape,
    depth: int,
    hits: dict[tuple[str, int], Hit],
    warnings: list[dict[str, str]],
) -> tuple[str, Lanes]:
    """dbrain's ``Store.Search`` lanes: the AND query, then (when nothing at all was found) the
    OR query kept by ``matchesRelaxedTerms``."""
    mode = "raw" if plan.syntax == "raw" else "strict"
    lanes = Lanes()
    if plan.searchable:
        found, errors = _run_dbrain_lanes(conn, plan.fts_query, kinds, filters, shape, depth)
        fts_errors(errors, kinds, warnings)
        lanes.ranked = {k: v[0] for k, v in found.items()}
        lanes.matches = {k: v[1] for k, v in found.items()}
    if not any(lanes.ranked.values()) and not hits and plan.relaxed_query:
        relaxed = _relaxed(conn, plan, kinds, filters, shape, depth, hits)
        if any(relaxed.values()):
            mode = "relaxed"
            lanes.ranked = relaxed
            lanes.matches = {k: len(v) for k, v in relaxed.items()}
            warnings.append(
                {
                    "code": "relaxed_query",
                    "message": "No row matched every term; showing rows that match "
                    f"at least {min_relaxed_coverage(plan.query_terms)} of them.",
                }
            )
    return mode, lanes


def place_in_dbrain_order(
    lanes: dict[str, list[tuple[int, float]]], mode: str, hits: dict[tuple[str, int], Hit]
) -> None:
    """Score rows so they sort as dbrain lists them: items then sources (the relaxed fallback:
    sources then items), each table by bm25."""
    order = ("item", "source") if mode != "relaxed" else ("source", "item")
    ranked = [(kind, entry) for kind in order for entry in lanes.get(kind, [])]
    for position, (kind, (row_id, score)) in enumerate(ranked):
        hit = hits.setdefault((kind, row_id), Hit(kind, row_id))
        hit.lane_rank = 1 + sum(1 for k, _ in ranked[:position] if k == kind)
        hit.lane_size, hit.bm25, hit.mode = len(lanes[kind]), score, mode
        hit.fused = 1.0 / (1 + position)


def _run_dbrain_lanes(
    conn: sqlite3.Connection,
    match: str,
    kinds: list[str],
    filters: Filters,
    shape: BrainShape,
    depth: int,
) -> tuple[dict[str, tuple[list[tuple[int, float]], int]], list[tuple[str, str]]]:
    """Run each table's dbrain lane; a table that rejects the query is reported, not fatal."""
    lanes: dict[str, tuple[list[tuple[int, float]], int]] = {}
    errors: list[tuple[str, str]] = []
    for kind in kinds:
        try:
            lanes[kind] = _dbrain_lane(conn, kind, match, filters, shape, depth)
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) or is_busy(exc):
                raise
            errors.append((kind, str(exc)))
    return lanes, errors


def _relaxed(
    conn: sqlite3.Connection,
    plan: QueryPlan,
    kinds: list[str],
    filters: Filters,
    shape: BrainShape,
    depth: int,
    hits: dict[tuple[str, int], Hit],
) -> dict[str, list[tuple[int, float]]]:
    """OR query, keeping rows that hold enough of the terms (dbrain's matchesRelaxedTerms)."""
    lanes, _ = _run_dbrain_lanes(conn, plan.relaxed_query, kinds, filters, shape, depth)
    kept: dict[str, list[tuple[int, float]]] = {}
    for kind, (ranked, _) in lanes.items():
        candidates = [hits.get((kind, row_id)) or Hit(kind, row_id) for row_id, _ in ranked]
        hydrate(conn, candidates, shape)
        kept[kind] = []
        for candidate, (row_id, score) in zip(candidates, ranked, strict=True):
            texts = relaxed_texts(kind, candidate.row, relaxed_terms(plan.query_terms))
            if matches_relaxed_terms(plan.query_terms, texts):
                candidate.matched = plan.matched_in(searchable_texts(kind, candidate.row))
                hits[(kind, row_id)] = candidate
                kept[kind].append((row_id, score))
    return kept


def relaxed_terms(terms: Sequence[str]) -> list[str]:
    """dbrain's ``relaxedMatchTerms``: the terms of 3 or more bytes (Go's ``len`` counts UTF-8
    bytes), once each; a compound (``e5-large``) is dbrain's words in it (``large``)."""
    words = (w for t in terms for w in dbrain_parts(t))
    return list(dict.fromkeys(w for w in words if len(w.encode()) >= 3))


def min_relaxed_coverage(terms: Sequence[str]) -> int:
    """How many relaxed terms a relaxed row must hold: 2, or 1 when there is at most one (with
    none, every OR hit is kept, and each holds at least one term)."""
    return 1 if len(relaxed_terms(terms)) <= 1 else 2


def matches_relaxed_terms(terms: Sequence[str], texts: Sequence[str]) -> bool:
    """dbrain's ``matchesRelaxedTerms``: does a relaxed OR hit hold enough of the terms?

    dbrain tests each term as a substring of the row's key, title, author handle and name, URL,
    domain, note path, tags and snippet, lowercased and joined (``texts``), and so does this
    (``ranking: dbrain`` is dbrain's order exactly). With no term of 3+ bytes ("ai ml") every
    OR hit is kept, as in dbrain.
    """
    wanted = relaxed_terms(terms)
    if not wanted:
        return True
    text = " ".join(texts).lower()
    return sum(1 for t in wanted if t in text) >= min_relaxed_coverage(wanted)
