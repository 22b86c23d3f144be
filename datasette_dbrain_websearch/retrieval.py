"""Retrieving local evidence from a brain: the exact lookup, then the lanes (``bm25_lanes``, or
``dbrain_order`` for dbrain's own order), fused into rows, an item and its page as one.

Retrieval is modelled on dbrain's ``Store.Search`` (``internal/store/search.go``): an exact lookup
first (a protected floor that always ranks first), then bm25-ranked FTS5 over ``items_fts`` and
``sources_fts``, then a relaxed OR query kept by dbrain's ``matchesRelaxedTerms`` rule only when
nothing else was found. Deliberate differences:
- the two FTS lanes are fused with reciprocal rank fusion (as dbrain's hybrid retrieval does),
  each weighted by how selective the question is in its table (``lane_weights``), instead of
  items first and sources filling the rest of the limit; an item and the page it links to that
  both match are one row (``merge_linked``), and after the relaxed fallback rows holding more
  of the words come first;
- the exact lookup also tries the question's dbrain-normalized URL, and compares unindexed
  columns only when the question could be a URL or a path (ordinary questions stay cheap);
- dbrain's ``LIKE '%q%'`` fallback is left out: it scans every row (seconds on a large brain),
  and the relaxed OR query covers partial matches.

Before the ranking query runs, ``survey`` measures what it would read, so a costly question is
narrowed (``narrow``) and admitted by its cost (``question_cost``, ``admission``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import lexical
from .bm25_lanes import Rescorer, bm25_lanes, rescore_lane
from .brain import TABLE, BrainShape, Filters, Hit, brain_shape, filter_sql, hydrate
from .brain_access import Checkpoint, unbounded
from .dbrain_order import dbrain_lanes, place_in_dbrain_order
from .lanes import Lanes, fts_errors
from .merge import rrf_contribution
from .query_plan import QueryPlan
from .row_texts import searchable_texts
from .survey import Survey, narrow, survey
from .urls import try_normalize_url


@dataclass
class BrainResult:
    """What retrieval in the brain found, before it is shaped into a pack."""

    hits: list[Hit]
    mode: str
    exact_count: int
    matches: dict[str, int]
    warnings: list[dict[str, str]]
    timings_ms: dict[str, float]
    kinds_searched: list[str]
    lane_weights: dict[str, float] = field(default_factory=dict)
    prefixed: frozenset[str] = frozenset()  # words searched as "word"*
    ranking: str = "bm25"
    dense_added: int = 0  # rows the semantic lane added that no word matched
    narrowed: tuple[str, ...] = ()  # terms left out of the ranking query (``cost``)


def exact_fields(question: str) -> dict[str, dict[str, list[str]]]:
    """Per table, the columns to compare with the question and the values to compare.

    Only a question that could be a key, URL, id or note path is looked up, and unindexed
    columns only when it looks like one (a URL, a path), so ordinary questions stay cheap.
    """
    q = question.strip()
    if not q or (any(c.isspace() for c in q) and not q.endswith(".md")):
        return {}
    items: dict[str, list[str]] = {"source_key": [q], "external_id": [q]}
    sources: dict[str, list[str]] = {"source_key": [q]}
    if "://" in q or q.startswith("www."):
        urls = [q]
        normalized = try_normalize_url(q)
        if normalized is not None:
            urls.extend(dict.fromkeys([normalized.canonical_url, normalized.normalized_url]))
            sources["source_key"].append(normalized.source_key)
        items["canonical_url"] = urls
        sources["normalized_url"] = urls
        sources["canonical_url"] = urls
    elif "/" in q or q.endswith(".md"):
        items["note_path"] = [q]
        sources["note_path"] = [q]
    # Sources first: a URL names a document before the items that link to it (and sources win
    # ties everywhere else too).
    return {"source": sources, "item": items}


def _exact(
    conn: sqlite3.Connection, question: str, kinds: list[str], filters: Filters, shape: BrainShape
) -> list[Hit]:
    hits: list[Hit] = []
    seen: set[tuple[str, int]] = set()
    for kind, fields in exact_fields(question).items():
        if kind not in kinds:
            continue
        table = TABLE[kind]
        where, params = filter_sql(kind, filters, shape)
        for column, values in fields.items():
            if column not in shape.columns[table]:
                continue
            marks = ", ".join("?" for _ in values)
            sql = f"select t.id from [{table}] t where t.[{column}] in ({marks}){where} limit 20"
            for (row_id,) in conn.execute(sql, [*values, *params]):
                if (kind, row_id) not in seen:
                    seen.add((kind, row_id))
                    hits.append(Hit(kind, row_id, exact_field=column, exact_rank=len(hits) + 1))
    return hits


def passing(
    conn: sqlite3.Connection, kind: str, filters: Filters, shape: BrainShape
) -> Callable[[list[int]], set[int]] | None:
    """Which of some row ids pass the request's filters (None: no filter, all do): for lanes
    that do not search with SQL (the semantic lane's nearest rows)."""
    where, params = filter_sql(kind, filters, shape)
    if not where:
        return None
    table = TABLE[kind]

    def keep(ids: list[int]) -> set[int]:
        marks = ", ".join("?" for _ in ids)
        sql = f"select t.id from [{table}] t where t.id in ({marks}){where}"
        return {row[0] for row in conn.execute(sql, [*ids, *params])}

    return keep


def lane_weights(idf: dict[str, dict[str, float]]) -> dict[str, float]:
    """Each table's lane weighs as much as the question is selective there: the summed idf of
    its terms in that table (the log of how rare a row holding them all would be), relative to
    the most selective table's (1.0).

    Fused ranks alone would give each table half of the first rows however broadly the question
    matches it: a few words of a note match a handful of short items and hundreds of long pages,
    and the pages would push the note out (dbrain's own search lists items first). Weighting
    each collection by how selective the query is there is how federated search merges
    collections; a question as selective in both tables gets plain RRF.
    """
    selectivity = {kind: sum(terms.values()) for kind, terms in idf.items()}
    top = max(selectivity.values(), default=0.0)
    return {kind: s / top if top else 1.0 for kind, s in selectivity.items()}


def _rank_lanes(
    lanes: dict[str, list[tuple[int, float]]],
    mode: str,
    hits: dict[tuple[str, int], Hit],
    weights: dict[str, float],
) -> None:
    """Reciprocal rank fusion, each table's lane weighted (``lane_weights``)."""
    for kind, ranked in lanes.items():
        weight = weights.get(kind, 1.0)
        for rank, (row_id, score) in enumerate(ranked, start=1):
            hit = hits.setdefault((kind, row_id), Hit(kind, row_id))
            hit.lane_rank, hit.lane_size, hit.bm25, hit.mode = rank, len(ranked), score, mode
            hit.weight = weight
            hit.fused = weight * rrf_contribution(rank)


def merge_linked(
    conn: sqlite3.Connection, hits: dict[tuple[str, int], Hit], shape: BrainShape
) -> None:
    """An item and a source it links to (``item_source_links``) that both matched become one
    row: the item, carrying the source as ``linked``.

    Otherwise a bookmark and its page take two of the ten places and push other things out.
    The row scores as the stronger of its two lanes (as a document scores by its best passage,
    "MaxP"): one thing is not counted twice, so it cannot push out a better match found once.
    Pairs are taken best first; an item carries at most one page, a page joins one item (the
    best), and exact hits stay rows of their own (the question named that row).
    """
    if not shape.has("item_source_links"):
        return
    items = [h.id for h in hits.values() if h.kind == "item" and h.lane_rank and not h.exact_rank]
    sources = [
        h.id for h in hits.values() if h.kind == "source" and h.lane_rank and not h.exact_rank
    ]
    if not items or not sources:
        return
    pairs = conn.execute(
        "select item_id, source_id from item_source_links "
        f"where item_id in ({', '.join('?' for _ in items)}) "
        f"and source_id in ({', '.join('?' for _ in sources)})",
        [*items, *sources],
    ).fetchall()

    def strength(pair: tuple[int, int]) -> tuple[float, int, int]:
        both = hits[("item", pair[0])].fused + hits[("source", pair[1])].fused
        return (-both, pair[0], pair[1])

    for item_id, source_id in sorted(pairs, key=strength):
        item = hits[("item", item_id)]
        if item.linked is None and ("source", source_id) in hits:
            item.linked = hits.pop(("source", source_id))
            item.fused = max(item.fused, item.linked.fused)


def _order(hit: Hit) -> tuple[Any, ...]:
    """Exact hits first (the protected floor); then fused score, sources before items, key."""
    exact = hit.exact_rank or 10**9
    kind = 0 if hit.kind == "source" else 1
    return (exact, -hit.fused, kind, hit.row.get("source_key", ""))


def retrieve(
    conn: sqlite3.Connection,
    question: str,
    plan: QueryPlan,
    filters: Filters,
    limit: int,
    ranking: str = "bm25",
    semantic: Rescorer | None = None,
    signals: lexical.Signals | None = None,
    surveyed: Survey | None = None,
    checkpoint: Checkpoint = unbounded,
) -> BrainResult:
    """Exact lookup, then the lanes (BM25 re-scored, or dbrain's order with ``ranking:
    dbrain``); fuse, order and hydrate the top rows.

    ``surveyed`` is the question's ``survey`` when the caller already took it (to decide its
    admission) and narrowed the plan by it; otherwise it is taken here, and a question that
    would read too much is narrowed first (``narrow``).

    The run's ``TimeBudget`` bounds it (and maps SQLite errors) around the call.
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    warnings: list[dict[str, str]] = []
    shape = brain_shape(conn)
    kinds = filters.kinds(shape)
    depth = min(max(limit * 4, 12), 1000)
    hits: dict[tuple[str, int], Hit] = {}

    def lap(name: str, since: float) -> float:
        now = time.perf_counter()
        timings[name] = round((now - since) * 1000, 3)
        return now

    exact = [] if plan.syntax == "raw" else _exact(conn, question, kinds, filters, shape)
    for hit in exact:
        hits[hit.key] = hit
    mark = lap("exact", started)
    if ranking == "dbrain":
        mode, lanes = dbrain_lanes(conn, plan, kinds, filters, shape, depth, hits, warnings)
        mark = lap("fts", mark)
        weights = dict.fromkeys(kinds, 1.0)
        place_in_dbrain_order(lanes.ranked, mode, hits)
    else:
        mode = "raw" if plan.syntax == "raw" else "bm25"
        lanes = Lanes()
        if surveyed is None:  # a caller that surveyed passes the plan it narrowed
            surveyed = survey(conn, plan, filters)
            plan = narrow(plan, surveyed)
        signals = signals or lexical.Signals()
        pool = max(limit * 3 // 2, signals.pool)
        if plan.searchable:
            lanes = bm25_lanes(conn, plan, kinds, filters, shape, depth, pool, surveyed)
        mark = lap("fts", mark)
        fts_errors(lanes.errors, kinds, warnings)
        plan = plan.searched(lanes.prefixed)
        # Meaning alone finds rows only for a question some of whose words the brain holds:
        # a question of words it has never seen (nonsense, another field's) gets no rows.
        known = any(n for table in surveyed.values() for n in table.frequencies.values())
        for kind, ranked in lanes.ranked.items():
            if semantic is not None and known and len(ranked) < limit:
                seen = {row_id for row_id, _ in ranked}
                keep = passing(conn, kind, filters, shape)
                extra = semantic.nearest(conn, kind, limit - len(ranked), seen, keep)
                # Dense-only rows (no word in common) rank below every lexical match.
                floor = max((score for _, score in ranked), default=0.0)
                ranked += [(row_id, floor + 1.0 - cos) for row_id, cos in extra]
                for row_id, _ in extra:
                    hits.setdefault((kind, row_id), Hit(kind, row_id)).dense_only = True
                lanes.dense_added += len(extra)
            idf = lanes.idf.get(kind, {})
            every = lanes.holding_all.get(kind)
            lanes.ranked[kind] = rescore_lane(
                conn,
                kind,
                ranked,
                every,
                plan,
                idf,
                hits,
                shape,
                limit,
                pool,
                semantic,
                signals,
                checkpoint,
            )
        mark = lap("rescore", mark)
        weights = lane_weights(lanes.idf) if mode != "raw" else dict.fromkeys(kinds, 1.0)
        _rank_lanes(lanes.ranked, mode, hits, weights)
    if ranking != "dbrain":  # dbrain lists an item and its page as two rows
        merge_linked(conn, hits, shape)
    ordered = sorted(hits.values(), key=_order)[:limit]
    hydrate(conn, [part for hit in ordered for part in hit.parts()], shape)
    ordered.sort(key=_order)
    for hit in ordered:
        for part in hit.parts():
            if part.mode == "strict":  # dbrain's AND query: every term is in the row
                part.matched = list(plan.query_terms)
            elif not part.matched:
                part.matched = plan.matched_in(searchable_texts(part.kind, part.row))
        if hit.linked is not None:  # the row holds the words its item or its page holds
            held = {*hit.matched, *hit.linked.matched}
            hit.matched = [t for t in plan.query_terms if t in held]
    lap("hydrate", mark)
    timings["local"] = round((time.perf_counter() - started) * 1000, 3)
    return BrainResult(
        hits=ordered,
        mode=mode,
        exact_count=len(exact),
        matches=lanes.matches,
        warnings=warnings,
        timings_ms=timings,
        kinds_searched=kinds,
        lane_weights={kind: round(w, 4) for kind, w in weights.items()},
        prefixed=frozenset(lanes.prefixed),
        ranking=ranking,
        dense_added=lanes.dense_added,
        narrowed=plan.dropped,
    )
