"""The BM25 lanes (``ranking: bm25``): each searched table's ranking query (``lexical``), with
each search term's idf there, and the lane's top rows re-scored by the bounded signals and,
with the semantic lane (``Rescorer``), by meaning.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Protocol

from . import lexical
from .brain import FTS_TABLE, TABLE, BrainShape, Filters, Hit, filter_sql, hydrate
from .brain_access import Checkpoint, paced
from .errors import is_busy
from .lanes import Lanes
from .query_plan import QueryPlan
from .row_texts import searchable_texts
from .survey import Survey


class Rescorer(Protocol):
    """What the semantic lane offers local retrieval (``semantic.SemanticLane``)."""

    weight: float
    min_cosine: float

    def cosines(self, conn: sqlite3.Connection, kind: str, ids: list[int]) -> list[float] | None:
        """Each row's cosine with the question (0 for rows without a vector); None when the
        lane cannot score this table."""

    def nearest(
        self,
        conn: sqlite3.Connection,
        kind: str,
        count: int,
        skip: set[int],
        keep: Callable[[list[int]], set[int]] | None = None,
    ) -> list[tuple[int, float]]:
        """The rows nearest the question (id, cosine) at ``min_cosine`` or closer, best
        first, without ``skip``, only those ``keep`` keeps."""


def bm25_lanes(
    conn: sqlite3.Connection,
    plan: QueryPlan,
    kinds: list[str],
    filters: Filters,
    shape: BrainShape,
    depth: int,
    pool: int,
    surveyed: Survey,
) -> Lanes:
    """One BM25 query per table (``lexical``), with each search term's idf there; a table that
    rejects a raw query is reported, not fatal.

    A keyword question asks for the rows holding every keyword first. When they fill the
    re-scored ``pool``, they are the lane: re-scoring ranks every row holding all keywords
    above every row lacking one (``lexical.KEYWORD_BOOST``), so the OR query, which reads every
    posting of every word, could add nothing to the page."""
    lanes = Lanes()
    for kind in kinds:
        fts, table = FTS_TABLE[kind], TABLE[kind]
        where, params = filter_sql(kind, filters, shape)
        try:
            every = ""
            if plan.syntax == "raw":
                match = plan.fts_query
            else:
                measured = surveyed[kind]
                lanes.prefixed |= measured.prefixed
                match = plan.match_query(measured.prefixed)
                found = measured.frequencies
                lanes.idf[kind] = {t: lexical.idf(measured.rows, n) for t, n in found.items() if n}
                # Rows holding the question's rarest word: as many as could hold every word,
                # at most (words Expand added are not the question's).
                asked = [found[t.name] for t in plan.question_terms if t.name in found]
                lanes.matches[kind] = min(asked, default=0)
                every = plan.all_terms_query(measured.prefixed)
            sql = lexical.lane_sql(fts, table, shape.columns[fts], where)
            if every and len(plan.question_terms) <= lexical.KEYWORD_TERMS:
                complete = lexical.run_lane(conn, sql, every, params, max(depth, pool))
                lanes.holding_all[kind] = complete
                if len(complete) >= pool:
                    lanes.ranked[kind] = complete
                    continue
            lanes.ranked[kind] = lexical.run_lane(conn, sql, match, params, depth)
            if plan.syntax == "raw":
                lanes.matches[kind] = len(lanes.ranked[kind])
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc) or is_busy(exc):
                raise
            lanes.errors.append((kind, str(exc)))
    return lanes


def rescore_lane(
    conn: sqlite3.Connection,
    kind: str,
    ranked: list[tuple[int, float]],
    holding_all: list[tuple[int, float]] | None,
    plan: QueryPlan,
    idf: dict[str, float],
    hits: dict[tuple[str, int], Hit],
    shape: BrainShape,
    limit: int,
    pool: int,
    semantic: Rescorer | None,
    signals: lexical.Signals,
    checkpoint: Checkpoint,
) -> list[tuple[int, float]]:
    """The lane's top ``pool`` rows re-scored by the bounded signals (``lexical.rescore``) and
    the semantic cosine; the rest keep BM25's order below them.

    For a keyword question whose best rows hold every keyword fewer than ``limit`` times, the
    best rows holding every keyword join them first (rows BM25 ranks lower for repeating fewer
    words, which the coverage signal puts first)."""
    top = ranked[:pool]
    if not top:
        return ranked
    parts = _signals_of(conn, kind, top, plan, idf, hits, shape, checkpoint)
    names = {t.name for t in plan.question_terms}
    complete = sum(1 for p in parts if p.held == len(names))
    if holding_all and complete < limit:
        have = {row_id for row_id, _ in top}
        more = [e for e in holding_all[:pool] if e[0] not in have]
        if more:
            parts += _signals_of(conn, kind, more, plan, idf, hits, shape, checkpoint)
            top = top + more
    chosen = {row_id for row_id, _ in top}
    rest = [e for e in ranked if e[0] not in chosen]
    ids = [row_id for row_id, _ in top]
    cosine = semantic.cosines(conn, kind, ids) if semantic is not None else None
    for part, value in zip(parts, cosine or [], strict=False):
        part.cosine = value
    scores = lexical.rescore(
        [score for _, score in top],
        [p.coverage or 0.0 for p in parts],
        [p.phrase for p in parts],
        signals,
        len(plan.question_terms),
        cosine,
        semantic.weight if semantic is not None and cosine is not None else 0.0,
    )
    order = sorted(range(len(top)), key=lambda i: (-scores[i], top[i][1], -top[i][0]))
    return [top[i] for i in order] + rest


def _signals_of(
    conn: sqlite3.Connection,
    kind: str,
    entries: list[tuple[int, float]],
    plan: QueryPlan,
    idf: dict[str, float],
    hits: dict[tuple[str, int], Hit],
    shape: BrainShape,
    checkpoint: Checkpoint,
) -> list[Hit]:
    """The rows, hydrated, with what they hold of the question (coverage, phrase); the run's
    ``checkpoint`` every few rows (a pool of long pages takes a while to read)."""
    parts = [hits.setdefault((kind, row_id), Hit(kind, row_id)) for row_id, _ in entries]
    hydrate(conn, parts, shape)
    names = [t.name for t in plan.question_terms]
    texts = (searchable_texts(kind, part.row) for part in parts)
    found = lexical.rows_signals(plan, paced(texts, checkpoint, every=8))
    for part, (held, phrase) in zip(parts, found, strict=True):
        part.phrase = phrase
        part.matched = [t for t in plan.query_terms if t in held]
        part.coverage = lexical.coverage(held, names, idf)
        part.held = sum(1 for name in names if name in held)
    return parts
