"""Retrieving local evidence from a brain: exact lookup, the lanes, fusion, dbrain's order.

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
from typing import Any, Protocol

from . import cost, lexical
from .brain import (
    FTS_TABLE,
    TABLE,
    BrainShape,
    Filters,
    Hit,
    brain_shape,
    filter_sql,
    hydrate,
)
from .brain_access import Checkpoint, paced, unbounded
from .errors import ResearchError, is_busy
from .merge import rrf_contribution
from .query_plan import QueryPlan, matches_relaxed_terms, min_relaxed_coverage, relaxed_terms
from .row_texts import relaxed_texts, searchable_texts
from .urls import source_key, try_normalize_url


@dataclass
class LocalResult:
    """What local retrieval found, before it is shaped into a pack."""

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
            urls.append(normalized.canonical_url)
            sources["source_key"].append(source_key(normalized.canonical_url))
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


@dataclass
class Lanes:
    """What the lanes found, per table, before fusion."""

    ranked: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    matches: dict[str, int] = field(default_factory=dict)
    prefixed: set[str] = field(default_factory=set)
    errors: list[tuple[str, str]] = field(default_factory=list)
    idf: dict[str, dict[str, float]] = field(default_factory=dict)  # per table, per term
    # Per table, for a keyword question, the best rows holding every keyword (id, bm25).
    holding_all: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    dense_added: int = 0


Survey = dict[str, lexical.TableSurvey]  # by kind: what each table's ranking query will read


def survey(conn: sqlite3.Connection, plan: QueryPlan, filters: Filters) -> Survey:
    """Each searched table's ``TableSurvey`` for a simple question ranked by BM25 (empty for
    raw queries and questions with nothing to search)."""
    if plan.syntax == "raw" or not plan.searchable:
        return {}
    kinds = filters.kinds(brain_shape(conn))
    return {k: lexical.survey_table(conn, FTS_TABLE[k], TABLE[k], plan) for k in kinds}


def narrow(plan: QueryPlan, surveyed: Survey) -> QueryPlan:
    """The plan without the commonest terms when its ranking query would read more than the
    postings budget (``cost.narrowed_terms``)."""
    if not surveyed:
        return plan
    totals, rows = brain_frequencies(surveyed)
    return plan.narrowed(cost.narrowed_terms(totals, cost.postings_budget(rows)))


def brain_frequencies(surveyed: Survey) -> tuple[dict[str, int], int]:
    """Each search term's rows across the searched tables, and those tables' rows together: the
    question's words as the whole brain holds them."""
    totals: dict[str, int] = {}
    for table in surveyed.values():
        for name, rows in table.frequencies.items():
            totals[name] = totals.get(name, 0) + rows
    return totals, sum(t.rows for t in surveyed.values())


def question_cost(plan: QueryPlan, surveyed: Survey, ranking: str) -> cost.Cost:
    """What the (narrowed) question will cost (``cost``)."""
    if plan.syntax == "raw":
        return cost.raw_cost(plan.fts_query, plan.query_terms)
    if ranking == "dbrain":
        return cost.dbrain_cost(plan.dbrain_terms or plan.query_terms)
    kept = {t.name for t in plan.search_terms} - set(plan.dropped)
    postings = sum(
        rows
        for table in surveyed.values()
        for name, rows in table.frequencies.items()
        if name in kept
    )
    return cost.counted_cost(postings)


def _bm25_lanes(
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


def _rescore_lane(
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
) -> LocalResult:
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
        mode, lanes = _dbrain_lanes(conn, plan, kinds, filters, shape, depth, hits, warnings)
        mark = lap("fts", mark)
        weights = dict.fromkeys(kinds, 1.0)
        _place_in_dbrain_order(lanes.ranked, mode, hits)
    else:
        mode = "raw" if plan.syntax == "raw" else "bm25"
        lanes = Lanes()
        if surveyed is None:  # a caller that surveyed passes the plan it narrowed
            surveyed = survey(conn, plan, filters)
            plan = narrow(plan, surveyed)
        signals = signals or lexical.Signals()
        pool = max(limit * 3 // 2, signals.pool)
        if plan.searchable:
            lanes = _bm25_lanes(conn, plan, kinds, filters, shape, depth, pool, surveyed)
        mark = lap("fts", mark)
        _fts_errors(lanes.errors, kinds, warnings)
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
            lanes.ranked[kind] = _rescore_lane(
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
    return LocalResult(
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


def _fts_errors(errors: list[tuple[str, str]], kinds: list[str], warnings: list) -> None:
    """Every table rejecting the query is a 400; some rejecting it, a warning each."""
    if errors and len(errors) == len(kinds):
        raise ResearchError(f"FTS5 query error: {errors[0][1]}", code="fts_query_error")
    for kind, message in errors:
        warnings.append(
            {
                "code": "fts_query_error",
                "message": f"{FTS_TABLE[kind]} rejected the query: {message}",
            }
        )


def _dbrain_lanes(
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
        _fts_errors(errors, kinds, warnings)
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


def _place_in_dbrain_order(
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
