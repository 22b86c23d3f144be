"""Evidence rows, built: a local hit or a merged web result becomes a typed row (``pack``)
with its excerpt, the lanes that found it and the signals that explain its place.

Pure: takes what retrieval and the web stage found and returns rows; ``credit_brain_row`` adds a
web hit's credit to the brain's row for the same page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from .brain import FTS_TABLE, TABLE, Facts, Hit
from .display import plural
from .excerpts import best_excerpt
from .merge import RRF_K, MergedResult, provider_excerpt, rrf_contribution, web_score
from .pack_json import Signal
from .pack_rows import BrainRow, Lane, LinkedPage, Retrieval, WebRow
from .providers import DIRECT
from .query_plan import QueryPlan
from .row_texts import excerpt_fields
from .web_hits import WebHit
from .web_ranking import RowRank

EXACT_WEIGHT = 1.0
NEEDS_EXTRACTION = "local_source_needs_extraction"

RowUrl = Callable[[str, int], str]


def _signals(hit: Hit, plan: QueryPlan) -> list[Signal]:
    terms = plan.query_terms
    terms_searched = len(plan.question_terms) or len(terms)
    signals: list[Signal] = []
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
                + (" (found by meaning \u2014 no words in common)" if hit.dense_only else ""),
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


def _lanes(hit: Hit) -> list[Lane]:
    lanes: list[Lane] = []
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


def brain_evidence_row(hit: Hit, plan: QueryPlan, row_url: RowUrl, excerpt_chars: int) -> BrainRow:
    """One brain evidence row with its excerpt, provenance lanes and ranking signals."""
    terms = plan.query_terms
    matched = [t for t in terms if t in hit.matched]
    row = BrainRow(
        source_key=hit.row.get("source_key", ""),
        facts=Facts.from_row(hit.kind, hit.row),
        excerpt=best_excerpt(excerpt_fields(hit.kind, hit.row), plan.matcher, excerpt_chars),
        row_url=row_url(hit.kind, hit.id),
        retrieval=Retrieval(
            score=round(hit.fused + (EXACT_WEIGHT if hit.exact_field else 0.0), 6),
            fused_score=round(hit.fused, 6),
            lanes=_lanes(hit),
            signals=_signals(hit, plan),
            matched_terms=matched,
            missing_terms=[t for t in terms if t not in matched],
        ),
    )
    if hit.linked is not None:
        _add_linked(row, hit.linked, plan, row_url, excerpt_chars)
    return row


def _add_linked(
    row: BrainRow, page: Hit, plan: QueryPlan, row_url: RowUrl, excerpt_chars: int
) -> None:
    """The page an item links to, matched too: shown inside the item's row (``linked_source``)
    with its own lane and signals, so the row says why it holds both."""
    key = page.row.get("source_key", "")
    row.linked = LinkedPage(
        source_key=key,
        facts=Facts.from_row("source", page.row),
        excerpt=best_excerpt(excerpt_fields("source", page.row), plan.matcher, excerpt_chars),
        row_url=row_url("source", page.id),
        matched_terms=[t for t in plan.query_terms if t in page.matched],
    )
    retrieval = row.retrieval
    retrieval.lanes += [{**lane, "linked_source_key": key} for lane in _lanes(page)]
    retrieval.signals += [
        {**signal, "detail": f"its linked page {key}: {signal['detail']}"}
        for signal in _signals(page, plan)
        if signal["name"] == "bm25_rank"
    ]
    retrieval.signals.append(
        {
            "name": "linked_source_match",
            "detail": f"the page this item links to ({key}, item_source_links) matched too; "
            "one row for both, scored by the stronger lane",
            "weight": 0.0,
        }
    )


def _web_lane(hit: WebHit, store: str) -> Lane:
    return {
        "name": "direct_url" if hit.provider == DIRECT else "external_search",
        "status": "used",
        "provider": hit.provider,
        "store": store,
        "rank": hit.rank,
        "cached": hit.cached,
    }


def web_key(provider: str, canonical_url: str) -> str:
    """``ext:<provider>:<first 12 hex of sha256(canonical URL)>``."""
    return f"ext:{provider}:{hashlib.sha256(canonical_url.encode()).hexdigest()[:12]}"


def web_row(
    result: MergedResult,
    plan: QueryPlan,
    excerpt_chars: int,
    text_chars: int,
    labels: dict,
    rank: RowRank,
    page: str = "",
) -> WebRow:
    """One ``external_evidence`` row: outside the corpus, ephemeral, with its providers, its
    score and signals from ranking it against the question (``web_ranking``).

    ``page`` is the page's own text when it was read: the row then shows the passage of the
    page that matches (``depth: "page"``), else the provider's (``depth: "snippet"``)."""
    terms = plan.query_terms
    given = max((h.result.text for h in result.hits), key=len)
    text = (page or given)[:text_chars]
    snippet = next((h.result.snippet for h in result.hits if h.result.snippet), "")
    provided = [("snippet", "external_snippet", snippet), ("text", "external_text", text)]
    excerpt = best_excerpt(
        [("page", "external_page", page)] if page else provided, plan.matcher, excerpt_chars
    )
    # The page does not say it (a paywall, a shell): what the provider said, if it said anything
    # (a page read directly has only its own text).
    if page and not excerpt.matched_terms and (snippet or given):
        excerpt = best_excerpt(provided, plan.matcher, excerpt_chars)
    title = next((h.result.title for h in result.hits if h.result.title), "") or result.domain
    published = next((h.result.published_at for h in result.hits if h.result.published_at), "")
    found = plan.matched_in([title, snippet, text])
    signals: list[Signal] = list(rank.signals)
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
    return WebRow(
        source_key=web_key(result.first.provider, result.canonical_url),
        canonical_url=result.canonical_url,
        provider_url=result.first.result.url,
        title=title,
        domain=result.domain,
        excerpt=excerpt,
        text=text,
        published_at=published,
        author=next((h.result.author for h in result.hits if h.result.author), ""),
        depth="page" if page else "snippet",
        providers=result.providers,
        cosine=rank.cosine,
        direct_url=result.first.provider == DIRECT,
        retrieval=Retrieval(
            score=rank.score,
            fused_score=round(web_score(result), 6),
            lanes=[_web_lane(h, "ephemeral") for h in result.hits],
            signals=signals,
            matched_terms=found,
            missing_terms=[t for t in terms if t not in found],
        ),
    )


def credit_brain_row(
    row: BrainRow, hits: list[WebHit], labels: dict, excerpt_chars: int, linked: bool
) -> None:
    """A web hit for a page the brain holds: the brain row gains the lane, not a twin.

    ``linked`` says the page is the row's ``linked_source`` (an item shown with the page it
    links to): the credit lands on that row, and says it is for the linked page. When dbrain
    has not extracted the page, it has little or no text of its own, so the provider's text
    rides along on the page as ``provider_excerpt``, never as its ``excerpt``.
    """
    page = row.linked if linked and row.linked is not None else row
    for hit in hits:
        lane = _web_lane(hit, "local")
        detail = f"also found by {labels.get(hit.provider, hit.provider)} (rank {hit.rank})"
        if page is not row:
            lane["linked_source_key"] = page.source_key
            detail += f": its linked page {page.source_key}"
        row.retrieval.lanes.append(lane)
        row.retrieval.signals.append(
            {"name": "external_duplicate_local_source", "detail": detail, "weight": 0.0}
        )
    for credited in (row, page) if page is not row else (row,):
        credited.also_found_by = list(
            dict.fromkeys([*credited.also_found_by, *(h.provider for h in hits)])
        )
    if page.needs_extraction:
        terms = [*row.retrieval.matched_terms, *row.retrieval.missing_terms]
        found = provider_excerpt(hits, terms, excerpt_chars)
        if found:
            page.provider_excerpt = found


def extraction_warning(rows: list[BrainRow]) -> dict[str, Any] | None:
    """``local_source_needs_extraction``, naming each held page the web found that dbrain has
    not extracted, or None when there is none."""
    pages = [page for row in rows for page in row.pages if page.needs_extraction]
    if not pages:
        return None
    named = "; ".join(
        f"“{page.facts.title}” ({page.facts.url}, extract status: "
        f"{page.facts.extract_status or 'pending'})"
        for page in pages
    )
    return {
        "code": NEEDS_EXTRACTION,
        "message": f"The web search found {plural(len(pages), 'page')} your brain holds but "
        f"dbrain has not extracted: {named}. Until dbrain extracts a page, your brain has little "
        "or none of its text; the text shown with it is marked as the web provider's.",
        "source_keys": [page.source_key for page in pages],
    }
