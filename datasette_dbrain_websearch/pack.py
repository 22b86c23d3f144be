"""The ``research_pack.v1`` dict: the one shape the page, the JSON API and the CLI render.

Pure: takes what retrieval and the judge produced and returns plain dicts. Field names follow
dbrain's pack (``internal/brainresearch/types.go``); additions never rename dbrain's fields.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from .brain import FTS_TABLE, TABLE, Hit, excerpt_fields, row_facts
from .config import JudgeThresholds
from .excerpts import best_excerpt
from .external import ExternalHit
from .fts import QueryPlan
from .judge import Verdict, combined, web_part
from .merge import (
    RRF_K,
    MergedResult,
    external_score,
    extraction_warning,
    needs_extraction,
    provider_excerpt,
    rrf_contribution,
)
from .retrieval import LocalResult

SCHEMA_VERSION = "research_pack.v1"
EXACT_WEIGHT = 1.0

RowUrl = Callable[[str, int], str]


def new_run_id(now_ns: int | None = None) -> str:
    """dbrain's run id, ``20060102T150405.000000000Z-<hex>`` (UTC, nanoseconds), with 24 hex
    (96 random bits) where dbrain has 12: an anonymous visitor's run is read by its link."""
    ns = time.time_ns() if now_ns is None else now_ns
    stamp = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}.{ns % 1_000_000_000:09d}Z-{secrets.token_hex(12)}"


def _signals(hit: Hit, plan: QueryPlan) -> list[dict[str, Any]]:
    terms = plan.query_terms
    terms_searched = len(plan.question_terms) or len(terms)
    signals: list[dict[str, Any]] = []
    if hit.exact_field:
        signals.append(
            {
                "name": f"exact_{hit.exact_field}",
                "detail": f"the question equals {TABLE[hit.kind]}.{hit.exact_field}",
                "weight": EXACT_WEIGHT,
            }
        )
    if hit.lane_rank:
        weighted = f" x lane weight {hit.weight:.2f}" if hit.weight != 1 else ""
        signals.append(
            {
                "name": "bm25_rank",
                "detail": f"rank {hit.lane_rank} of {hit.lane_size} in {FTS_TABLE[hit.kind]} "
                f"(bm25 {hit.bm25:.3f}); RRF 1/({RRF_K}+{hit.lane_rank}){weighted}",
                "weight": round(hit.weight * rrf_contribution(hit.lane_rank), 6),
            }
        )
    if hit.coverage is not None:
        signals.append(
            {
                "name": "term_coverage",
                "detail": f"holds {hit.held} of the question's {terms_searched} search terms "
                f"({round(hit.coverage * 100)}% of the question)",
                "weight": round(hit.coverage, 4),
            }
        )
    if hit.phrase:
        signals.append(
            {
                "name": "phrase_match",
                "detail": "two adjacent words of the question stand side by side in it",
                "weight": 1.0,
            }
        )
    if hit.cosine is not None:
        signals.append(
            {
                "name": "semantic_cosine",
                "detail": f"cosine {hit.cosine:.3f} between the question and the row"
                + (" (no word in common: found by meaning alone)" if hit.dense_only else ""),
                "weight": round(hit.cosine, 4),
            }
        )
    if hit.mode == "relaxed":
        signals.append(
            {
                "name": "relaxed_match",
                "detail": f"matched {len(hit.matched)} of {len(terms)} terms "
                "(OR query; no row matched them all)",
                "weight": 0.0,
            }
        )
    return signals


def _lanes(hit: Hit) -> list[dict[str, Any]]:
    lanes: list[dict[str, Any]] = []
    if hit.exact_field:
        lanes.append(
            {
                "name": "exact_lookup",
                "status": "used",
                "store": "sqlite",
                "table": TABLE[hit.kind],
                "field": hit.exact_field,
                "rank": hit.exact_rank,
            }
        )
    if hit.lane_rank:
        lanes.append(
            {
                "name": "lexical",
                "status": "used",
                "store": "sqlite_fts",
                "table": FTS_TABLE[hit.kind],
                "rank": hit.lane_rank,
                "raw_score": round(hit.bm25 or 0.0, 6),
                "query": hit.mode,
                "weight": round(hit.weight, 4),
            }
        )
    if hit.cosine is not None:
        lanes.append(
            {
                "name": "semantic",
                "status": "used",
                "store": "plugin_index",
                "table": TABLE[hit.kind],
                "raw_score": round(hit.cosine, 6),
                "dense_only": hit.dense_only,
            }
        )
    return lanes


def evidence_row(hit: Hit, plan: QueryPlan, row_url: RowUrl, excerpt_chars: int) -> dict:
    """One local evidence row with its excerpt, provenance lanes and ranking signals."""
    row = hit.row
    terms = plan.query_terms
    excerpt = best_excerpt(excerpt_fields(hit.kind, row), plan.matcher, excerpt_chars)
    evidence: dict[str, Any] = {
        "source_key": row.get("source_key", ""),
        "kind": hit.kind,
        "origin": "dbrain_corpus",
        **row_facts(hit.kind, row),
        "excerpt": excerpt.text,
        "excerpt_html": excerpt.html,
        "evidence_role": excerpt.role,
        "row_url": row_url(hit.kind, hit.id),
    }
    matched = [t for t in terms if t in hit.matched]
    evidence["retrieval"] = {
        "score": round(hit.fused + (EXACT_WEIGHT if hit.exact_field else 0.0), 6),
        "fused_score": round(hit.fused, 6),
        "lanes": _lanes(hit),
        "signals": _signals(hit, plan),
        "matched_terms": matched,
        "missing_terms": [t for t in terms if t not in matched],
    }
    if hit.linked is not None:
        _add_linked(evidence, hit.linked, plan, row_url, excerpt_chars)
    return evidence


def _add_linked(
    evidence: dict[str, Any], page: Hit, plan: QueryPlan, row_url: RowUrl, excerpt_chars: int
) -> None:
    """The page an item links to, matched too: shown inside the item's row (``linked_source``)
    with its own lane and signals, so the row says why it holds both."""
    row = page.row
    key = row.get("source_key", "")
    terms = plan.query_terms
    excerpt = best_excerpt(excerpt_fields("source", row), plan.matcher, excerpt_chars)
    evidence["linked_source"] = {
        "source_key": key,
        "kind": "source",
        **row_facts("source", row),
        "excerpt": excerpt.text,
        "excerpt_html": excerpt.html,
        "evidence_role": excerpt.role,
        "row_url": row_url("source", page.id),
        "matched_terms": [t for t in terms if t in page.matched],
    }
    retrieval = evidence["retrieval"]
    retrieval["lanes"] += [{**lane, "linked_source_key": key} for lane in _lanes(page)]
    retrieval["signals"] += [
        {**signal, "detail": f"its linked page {key}: {signal['detail']}"}
        for signal in _signals(page, plan)
        if signal["name"] == "bm25_rank"
    ]
    retrieval["signals"].append(
        {
            "name": "linked_source_match",
            "detail": f"the page this item links to ({key}, item_source_links) matched too; "
            "one row for both, scored by the stronger lane",
            "weight": 0.0,
        }
    )


def row_keys(row: Mapping[str, Any]) -> list[str]:
    """The keys a row stands for: its own and, for an item shown with its linked page, the
    page's (both were retrieved, so answers may cite and marks may name either)."""
    linked = row.get("linked_source") or {}
    return [row["source_key"], *([linked["source_key"]] if linked.get("source_key") else [])]


def match_query(plan: QueryPlan, mode: str) -> str:
    """The MATCH string that found the rows: BM25's OR query, or dbrain's AND query (its OR
    query after the relaxed fallback)."""
    if mode == "bm25":
        return plan.match_query(plan.prefixed)
    return plan.relaxed_query if mode == "relaxed" else plan.fts_query


def _counts(values: list[str], top: int | None = None) -> list[dict[str, Any]]:
    return [{"key": k, "count": c} for k, c in Counter(v for v in values if v).most_common(top)]


def build_pack(
    *,
    run_id: str,
    question: str,
    database: str,
    plan: QueryPlan,
    local: LocalResult,
    evidence: list[dict],
    verdict: dict[str, Any],
    limit: int,
    filters: dict[str, Any],
    warnings: list[dict[str, str]],
    timings_ms: dict[str, float],
    web: dict[str, Any],
    profile: str = "general",
    semantic_lane: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the pack; evidence rows come shaped by ``evidence_row``/``external_row``."""
    external = web["external_evidence"]
    # In place: the caller appends later warnings (the answer's) to this same list.
    unextracted = extraction_warning(evidence)
    if unextracted:
        warnings.append(unextracted)
    lanes: list[dict[str, Any]] = [
        {
            "name": "exact_lookup",
            "status": "used" if plan.syntax == "simple" else "disabled",
            **({} if plan.syntax == "simple" else {"reason": "raw_syntax"}),
        },
        {
            "name": "lexical",
            "status": "used",
            "store": "sqlite_fts",
            "tables": [FTS_TABLE[k] for k in local.kinds_searched],
            "weights": {FTS_TABLE[k]: w for k, w in local.lane_weights.items()},
        },
        {
            "name": "semantic",
            **{
                k: v for k, v in (semantic_lane or {"status": "disabled"}).items() if k != "message"
            },
        },
    ]
    item_matches = local.matches.get("item", 0)
    source_matches = local.matches.get("source", 0)
    return {
        "ok": True,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "question": question,
        "database": database,
        "mode": "evidence_only",
        "query_plan": {
            "text_query": plan.text_query,
            "fts_query": plan.fts_query,
            "relaxed_query": plan.relaxed_query,
            # The MATCH string that produced the rows.
            "match_query": match_query(plan, local.mode),
            "ranking": local.ranking,
            "query_terms": list(plan.query_terms),
            # Words Expand OR-ed into the ranking query; never the judge's or the web's terms.
            "expansion_terms": plan.expansion_terms,
            "excluded_terms": list(plan.excluded_terms),
            # Common terms left out of the ranking query to keep it fast (``cost``).
            "narrowed_terms": list(plan.dropped),
            "syntax": plan.syntax,
            "query_mode": local.mode,
            "profile": profile,
            "limit": limit,
            "filters": filters,
            "retrieval_lanes": lanes,
            "external_queries": web["external_queries"],
        },
        "judge": verdict,
        "external_search": web["external_search"],
        "coverage": {
            "evidence_count": len(evidence),
            "local_evidence_count": len(evidence),
            "by_kind": [
                {"key": k, "count": sum(1 for e in evidence if e["kind"] == k)}
                for k in ("item", "source")
            ],
            "by_source_type": _counts([e["source_type"] for e in evidence]),
            "top_user_tags": _counts([t for e in evidence for t in e["user_tags"]], 10),
            "exact_matches": local.exact_count,
            "item_text_matches": item_matches,
            "source_text_matches": source_matches,
            "external_evidence_count": len(external),
            "external_by_provider": _counts([p for row in external for p in row["providers"]]),
            "displayed_limit": limit,
            "recall_note": (
                f"exact matches: {local.exact_count}; "
                + (
                    "relaxed matches (some terms)"
                    if local.mode == "relaxed"
                    else "rows holding its rarest word"
                    if local.mode == "bm25"
                    else "text matches"
                )
                + f": items={item_matches} sources={source_matches}. "
                "Returned evidence is a capped working set, not the full corpus."
            ),
        },
        "evidence": evidence,
        "external_evidence": external,
        "ranking": web["ranking"],
        "merge_decisions": web["merge_decisions"],
        "warnings": warnings,
        "timings_ms": timings_ms,
    }


def _lane_for(hit: ExternalHit, store: str) -> dict[str, Any]:
    return {
        "name": "external_search",
        "status": "used",
        "provider": hit.provider,
        "store": store,
        "rank": hit.rank,
        "cached": hit.cached,
    }


def external_key(provider: str, canonical_url: str) -> str:
    """``ext:<provider>:<first 12 hex of sha256(canonical URL)>``."""
    return f"ext:{provider}:{hashlib.sha256(canonical_url.encode()).hexdigest()[:12]}"


def external_row(
    result: MergedResult,
    plan: QueryPlan,
    excerpt_chars: int,
    text_chars: int,
    labels: dict,
    page: str = "",
) -> dict[str, Any]:
    """One ``external_evidence`` row: outside the corpus, ephemeral, with its providers.

    ``page`` is the page's own text when it was read: the row then shows the passage of the
    page that matches (``depth: "page"``), else the provider's (``depth: "snippet"``)."""
    first = result.first.result
    terms = plan.query_terms
    text = (page or max((h.result.text for h in result.hits), key=len))[:text_chars]
    snippet = next((h.result.snippet for h in result.hits if h.result.snippet), "")
    provided = [("snippet", "external_snippet", snippet), ("text", "external_text", text)]
    excerpt = best_excerpt(
        [("page", "external_page", page)] if page else provided, plan.matcher, excerpt_chars
    )
    if page and not excerpt.matched_terms:  # the page does not say it (a paywall, a shell)
        excerpt = best_excerpt(provided, plan.matcher, excerpt_chars)
    title = next((h.result.title for h in result.hits if h.result.title), "") or result.domain
    published = next((h.result.published_at for h in result.hits if h.result.published_at), "")
    found = plan.matched_in([title, snippet, text])
    signals = [
        {
            "name": "external_provider_rank",
            "detail": f"rank {h.rank} at {labels.get(h.provider, h.provider)}; "
            f"RRF 1/({RRF_K}+{h.rank})" + (" (cached)" if h.cached else ""),
            "weight": round(rrf_contribution(h.rank), 6),
        }
        for h in result.hits
    ]
    signals.append(
        {
            "name": "external_query_match",
            "detail": f"title and text match {len(found)} of {len(terms)} terms",
            "weight": 0.0,
        }
    )
    if published:
        signals.append(
            {"name": "external_freshness", "detail": f"published {published[:10]}", "weight": 0.0}
        )
    if page:
        signals.append(
            {
                "name": "external_page_read",
                "detail": f"read the page: {len(page):,} characters of text",
                "weight": 0.0,
            }
        )
    if len(result.providers) > 1:
        names = " and ".join(labels.get(p, p) for p in result.providers)
        signals.append(
            {"name": "external_multi_provider", "detail": f"found by {names}", "weight": 0.0}
        )
    fused = external_score(result)
    return {
        "source_key": external_key(result.first.provider, result.canonical_url),
        "kind": "external",
        "source_type": "external_web",
        "origin": "outside_dbrain_corpus",
        "store": "ephemeral",
        "url": result.canonical_url,
        "canonical_url": result.canonical_url,
        "provider_url": first.url,
        "title": title,
        "domain": result.domain,
        "excerpt": excerpt.text,
        "excerpt_html": excerpt.html,
        "text": text,
        "published_at": published,
        "author": next((h.result.author for h in result.hits if h.result.author), ""),
        "evidence_role": excerpt.role or "external_snippet",
        "depth": "page" if page else "snippet",
        "providers": result.providers,
        "retrieval": {
            "score": round(fused, 6),
            "fused_score": round(fused, 6),
            "lanes": [_lane_for(h, "ephemeral") for h in result.hits],
            "signals": signals,
            "matched_terms": found,
            "missing_terms": [t for t in terms if t not in found],
        },
    }


def credit_local(
    row: dict[str, Any],
    hits: list[ExternalHit],
    labels: dict,
    excerpt_chars: int,
    linked_key: str = "",
) -> None:
    """A web hit for a page the brain holds: the local row gains the lane, not a twin.

    ``linked_key`` names the page when it is the row's ``linked_source`` (an item shown with the
    page it links to): the credit lands on that row, and says it is for the linked page.
    When dbrain has not extracted the page, it has little or no text of its own, so the
    provider's text rides along on the page (the row or its ``linked_source``) as
    ``provider_excerpt``, never as its ``excerpt``.
    """
    for hit in hits:
        lane = _lane_for(hit, "local")
        detail = f"also found by {labels.get(hit.provider, hit.provider)} (rank {hit.rank})"
        if linked_key:
            lane["linked_source_key"] = linked_key
            detail += f": its linked page {linked_key}"
        row["retrieval"]["lanes"].append(lane)
        row["retrieval"]["signals"].append(
            {"name": "external_duplicate_local_source", "detail": detail, "weight": 0.0}
        )
    page = row["linked_source"] if linked_key else row
    for credited in (row, page) if linked_key else (row,):
        credited["also_found_by"] = list(
            dict.fromkeys([*credited.get("also_found_by", []), *(h.provider for h in hits)])
        )
    if needs_extraction(page):
        terms = [*row["retrieval"]["matched_terms"], *row["retrieval"]["missing_terms"]]
        found = provider_excerpt(hits, terms, excerpt_chars)
        if found:
            page["provider_excerpt"] = found


def is_exact(row: Mapping[str, Any]) -> bool:
    """Did the question name this row exactly (key, URL, id or note path)?"""
    return any(lane["name"] == "exact_lookup" for lane in row["retrieval"]["lanes"])


def is_strong_local(row: dict[str, Any]) -> bool:
    return is_exact(row) or not row["retrieval"]["missing_terms"]


def merged_ranking(
    local: list[dict[str, Any]], external: list[dict[str, Any]], current_state: bool
) -> list[dict[str, Any]]:
    """One reading order over both lists, each entry saying which list and origin it is from.

    Local rows keep their order. Web rows follow them, except for questions about the current
    state of things, where web rows may go ahead of weak local rows (never ahead of exact hits
    or of local rows that match every term).
    """

    def entry(row: dict[str, Any], where: str, index: int) -> dict[str, Any]:
        return {
            "source_key": row["source_key"],
            "origin": row["origin"],
            "list": where,
            "index": index,
        }

    local_entries = [entry(r, "evidence", i) for i, r in enumerate(local)]
    web_entries = [entry(r, "external_evidence", i) for i, r in enumerate(external)]
    if not current_state:
        return local_entries + web_entries
    strong = [e for e, r in zip(local_entries, local, strict=True) if is_strong_local(r)]
    weak = [e for e, r in zip(local_entries, local, strict=True) if not is_strong_local(r)]
    return strong + web_entries + weak


def run_verdicts(pack: Mapping[str, Any], brain: Verdict, thresholds: JudgeThresholds) -> dict:
    """The judge's ``web`` and ``combined`` parts: the web's rows judged alone, and the run's
    verdict over both (what the banner, the answer and the agent tools say)."""
    web = web_part(
        pack["query_plan"]["query_terms"],
        [r["retrieval"]["matched_terms"] for r in pack["external_evidence"]],
        bool(pack["external_search"]["ran"]),
        thresholds,
    )
    return {"web": web, "combined": combined(brain, web)}
