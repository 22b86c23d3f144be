"""The web part of a research run (``WebPart``): whether to ask the web, the providers' rows
ranked against the question and merged with the brain's (a page the brain holds credits its
row), the top pages read before the answer cites them, and a question that is only a URL read
directly as "the page you named".
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .answer import Passage
from .brain import Hit, sources_by_url
from .brain_access import ExecuteFn, TimeBudget, paced
from .brain_stage import BrainStage
from .config import Settings, WebSettings
from .evidence import RowUrl, brain_evidence_row, credit_brain_row, web_row
from .judge import WEAK_EVIDENCE, Rule
from .merge import MergedResult, MergeOutcome, merge_web, web_score
from .options import ResearchRequest
from .pack import WebSearch
from .pack_json import Signal
from .pack_rows import BrainRow, WebRow
from .providers import DIRECT
from .providers.base import WebResult
from .query_plan import QueryPlan
from .reading import PageReader, ReadOutcome, read_targets
from .urls import URL_NOT_HELD, NormalizedURL, names_a_page, try_normalize_url
from .web import WebStage, web_query
from .web_gate import decide, is_current_state
from .web_hits import WebHit
from .web_ranking import RowRank, WebRanking

if TYPE_CHECKING:  # the pipeline runs this stage: its types only
    from .pipeline import Progress, WebAccess

MAX_RETURNED_PER_PROVIDER = 10  # URLs and titles each provider returned, kept for the trace
# The web stage's ``skipped_reason`` when the question was a URL and its page was read instead.
DIRECT_URL = "direct_url"


@dataclass
class WebPart:
    """What the web stage gave: the pack's web parts, the passages the answer reads from web
    rows, and the local hits it brought back (pages the brain holds that local search
    missed)."""

    search: WebSearch
    rows: list[WebRow] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)
    merge_decisions: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    passages: dict[str, Passage] = field(default_factory=dict)
    surfaced: list[Hit] = field(default_factory=list)


async def search_web(
    execute_fn: ExecuteFn,
    budget: TimeBudget,
    options: ResearchRequest,
    settings: Settings,
    brain: BrainStage,
    verdict: str,
    rule: Rule,
    row_url: RowUrl,
    web: WebAccess,
    emit: Progress,
    run_id: str,
    already_read: frozenset[str] = frozenset(),
) -> WebPart:
    """The web stage and the merge: the web's rows, ranked against the question
    (``web_ranking``: before they are cut to ``external_count``, then again with the pages
    read), and the web's credit on the brain's rows for pages the brain holds (added to
    ``local.rows`` when local search missed them). Waiting for providers and pages is not
    charged to the run's budget (the web has its own timeout)."""
    plan = brain.plan
    web_settings = settings.web
    request = options.web
    named = await _named_page(execute_fn, options, brain)
    # The brain lacks the page a URL question names, whatever its words matched: weak evidence.
    judged = WEAK_EVIDENCE if named is not None else verdict
    decision = decide(request.mode, web_settings, web.permitted, judged, web.cross_site)
    current = is_current_state(options.question)
    part = WebPart(
        WebSearch(
            mode=request.mode,
            current_state_question=current,
            sites=list(request.sites),
            not_sites=list(request.not_sites),
            skipped_reason=decision.skipped_reason,
        ),
        warnings=[decision.warning] if decision.warning else [],
    )
    if current and not decision.run:
        part.warnings.append(
            {
                "code": "current_state_question",
                "message": "This question asks how things are now; your brain may be out of "
                "date. Choose External web: Always to check the web as well.",
            }
        )
    if named is not None and decision.skipped_reason == "mode_never":
        part.warnings.append(
            {
                "code": "direct_url_not_held",
                "message": f"{URL_NOT_HELD} Searching the web (External web: Only if weak or "
                "Always) would read the page itself.",
            }
        )
    if not decision.run:
        await emit(
            {
                "stage": "web",
                "status": "skipped",
                "reason": decision.skipped_reason,
                "message": f"Web search skipped ({decision.skipped_reason})",
            }
        )
        return part
    if named is not None:
        with budget.paused():
            await _read_named_page(part, named, plan, options, settings, web, run_id, emit)
        return part
    if not web_query(plan):
        part.warnings.append(
            {
                "code": "external_query_empty",
                "message": "The question has no words to send to a web search provider.",
            }
        )
        part.search.skipped_reason = "empty_query"
        return part
    policy = request.domain_policy(web_settings)
    if policy.refused_sites:
        part.warnings.append(
            {
                "code": "site_not_allowed",
                "message": f"Left out of the web search: {', '.join(policy.refused_sites)}, "
                "outside this Datasette's allow_domains.",
            }
        )
    if policy.nothing_allowed:
        part.search.skipped_reason = "sites_not_allowed"
        return part
    part.search.ran = True
    await emit({"stage": "web", "status": "started", "message": "Searching the web"})
    web_started = time.monotonic()
    try:
        stage = WebStage(
            web_settings,
            web.providers,
            web.cache_db,
            emit=emit,
            run_id=run_id,
            actor_id=web.actor_id,
        )
        with budget.paused():
            outcome = await stage.run(request, plan)
    except Exception as exc:  # the last line of defence: local results always survive
        part.warnings.append(
            {
                "code": "provider_failed",
                "provider": "",
                "message": f"The web search stage failed ({type(exc).__name__}); showing local "
                "evidence only.",
            }
        )
        return part
    labels = web.labels
    part.search.providers = list(dict.fromkeys(outcome.providers_answered))
    part.search.returned = [
        {"provider": h.provider, "rank": h.rank, "url": h.result.url, "title": h.result.title[:200]}
        for h in outcome.hits
        if h.rank <= MAX_RETURNED_PER_PROVIDER
    ]
    part.queries = outcome.queries
    part.warnings.extend(outcome.warnings)
    part.timings_ms.update(outcome.timings_ms)
    urls = sorted({h.url.normalized_url for h in outcome.hits})
    held = await execute_fn(lambda conn: sources_by_url(conn, urls, options.filters))
    ranking = WebRanking(
        options.question,
        plan,
        rule.weights or {},
        brain.lane.similarity if brain.lane is not None else None,
        web.rankers,
        labels,
    )
    with budget.phase():
        merged = merge_web(outcome.hits, set(held), policy, request.count, ranking.order)
        part.surfaced = _credit_brain_sources(
            brain.rows, held, merged, plan, row_url, settings, labels
        )
    with budget.paused():
        unread = [r.canonical_url for r in merged.rows if r.canonical_url not in already_read]
        urls = read_targets(unread, request.read)
        seconds_left = web_settings.timeout - (time.monotonic() - web_started)
        read = await _read_pages(part, urls, web, web_settings, run_id, seconds_left, emit)
    part.warnings.extend(read.warnings)
    pages = {url: page.text for url, page in read.pages.items() if page.ok}
    text_chars = web_settings.max_tokens * 4 // max(1, len(merged.rows))
    with budget.phase():
        if pages:
            merged.rows = ranking.order(merged.rows, pages)
        part.warnings.extend(ranking.warnings)
        part.rows = [
            web_row(
                r,
                plan,
                settings.excerpt_chars,
                text_chars,
                labels,
                ranking.ranks[r.canonical_url],
                pages.get(r.canonical_url, ""),
            )
            for r in paced(merged.rows, budget.check, every=1)
        ]
        # The answer reads a read page whole (within PAGE_CHARS), else what the provider gave.
        part.passages = {
            row.source_key: Passage(
                row.source_key,
                "external",
                pages.get(result.canonical_url)
                or "\n".join(dict.fromkeys(t for t in (_snippet(result), row.text) if t)),
                row.title,
            )
            for result, row in zip(merged.rows, part.rows, strict=True)
        }
    part.merge_decisions = outcome.decisions + merged.decisions
    await emit(
        {
            "stage": "merge",
            "status": "done",
            "count": len(merged.rows),
            "message": f"Outside dbrain corpus: {len(merged.rows)} rows; "
            f"{len(merged.collapsed)} already in your brain",
        }
    )
    if outcome.rejected_urls:
        part.warnings.append(
            {
                "code": "external_url_rejected",
                "message": f"{outcome.rejected_urls} web result(s) had URLs dbrain cannot store "
                "(not http(s), or refused by dbrain's URL rules) and were left out.",
            }
        )
    if merged.dropped_by_domain:
        part.warnings.append(
            {
                "code": "external_domain_filtered",
                "message": f"{merged.dropped_by_domain} web result(s) were dropped: from "
                "sites this question or this Datasette's allow_domains/block_domains leave out.",
            }
        )
    return part


async def _read_pages(
    part: WebPart,
    urls: list[str],
    web: WebAccess,
    web_settings: WebSettings,
    run_id: str,
    seconds_left: float,
    emit: Progress,
) -> ReadOutcome:
    """Read pages through the guarded reader (its caps, cache and ledger) in the time the web
    stage has left, and record what was read in the pack; the caller says what its warnings
    mean for its rows."""
    if not urls:
        return ReadOutcome()
    await emit({"stage": "read", "status": "started", "message": f"Reading {len(urls)} pages"})
    reader = PageReader(web_settings, web.cache_db, web.actor_id, run_id)
    outcome = await reader.read(urls, seconds_left)
    part.timings_ms["read"] = outcome.elapsed_ms
    part.search.read = [
        {"url": p.url, "read": p.ok, "cached": p.cached, **({"error": p.error} if p.error else {})}
        for p in outcome.pages.values()
    ]
    read = [p for p in outcome.pages.values() if p.ok]
    await emit(
        {
            "stage": "read",
            "status": "done",
            "count": len(read),
            "message": f"Read {len(read)} of {len(urls)} pages",
        }
    )
    return outcome


async def _named_page(
    execute_fn: ExecuteFn, options: ResearchRequest, brain: BrainStage
) -> NormalizedURL | None:
    """The page a question names when it is nothing but an http(s) URL the brain does not hold
    (exact lookup found no row, and no source has that URL, whatever the filters): it is read
    directly, not searched for as words ("https quarkmatter blog ...")."""
    question = options.question.strip()
    if brain.plan.syntax == "raw" or brain.result.exact_count or not names_a_page(question):
        return None
    url = try_normalize_url(question)
    if url is None:
        return None
    urls = list(dict.fromkeys([url.canonical_url, url.normalized_url]))
    held = await execute_fn(lambda conn: sources_by_url(conn, urls, options.filters))
    return None if held else url


async def _read_named_page(
    part: WebPart,
    url: NormalizedURL,
    plan: QueryPlan,
    options: ResearchRequest,
    settings: Settings,
    web: WebAccess,
    run_id: str,
    emit: Progress,
) -> None:
    """The page the question named, read through the same guarded reader as search results
    (its caps, ledger and timeout) and shown as one web row, "the page you named". No provider
    is asked: it is not a search, so nothing joins the providers' ``returned`` lists."""
    web_settings = settings.web
    part.search.skipped_reason = DIRECT_URL
    rule = options.web.domain_policy(web_settings).rule_for(url.domain)
    if rule:
        part.warnings.append(
            {
                "code": "direct_url_not_read",
                "message": f"The page you named is on {url.domain}, which this question's sites "
                "or this Datasette's allow_domains/block_domains leave out; it was not read.",
            }
        )
        return
    outcome = await _read_pages(
        part, [url.canonical_url], web, web_settings, run_id, web_settings.timeout, emit
    )
    page = outcome.pages.get(url.canonical_url)
    # A failed read is said once, below, for the page itself (not "rests on a snippet").
    part.warnings.extend(
        w for w in outcome.warnings if page is None or w["code"] != "page_read_failed"
    )
    if page is None or not page.ok:
        why = f": {page.error}" if page is not None else " (see the warnings)"
        part.warnings.append(
            {
                "code": "direct_url_not_read",
                "message": f"Could not read the page you named{why}. Your brain does not hold "
                "it, and its address was not sent to a web search.",
            }
        )
        return
    hit = WebHit(
        DIRECT, 1, WebResult(url=options.question.strip(), title=page.title), url, page.cached
    )
    result = MergedResult(url.canonical_url, url.domain, [hit])
    signal: Signal = {
        "name": "direct_url",
        "detail": "the question is this page's URL: read directly, not found by a search",
        "weight": 0.0,
    }
    row = web_row(
        result,
        plan,
        settings.excerpt_chars,
        web_settings.max_tokens * 4,
        web.labels,
        RowRank(round(web_score(result), 6), [signal]),
        page.text,
    )
    part.rows = [row]
    part.passages = {row.source_key: Passage(row.source_key, "external", page.text, row.title)}


def _credit_brain_sources(
    brain_rows: list[BrainRow],
    held: dict[str, Hit | None],
    merged: MergeOutcome,
    plan: QueryPlan,
    row_url: RowUrl,
    settings: Settings,
    labels: dict[str, str],
) -> list[Hit]:
    """Web hits for pages the brain holds credit the local row (added when the filters allow
    it but local retrieval did not return it); returns the hits of the rows added."""
    added: list[Hit] = []
    for url, hits in merged.collapsed.items():
        source = held.get(url)
        if source is None:  # held, but outside this request's filters
            continue
        key = source.row.get("source_key")
        row = next((r for r in brain_rows if r.source_key == key), None)
        row = row or next((r for r in brain_rows if key in r.keys), None)
        if row is None:
            row = brain_evidence_row(source, plan, row_url, settings.excerpt_chars)
            brain_rows.append(row)
            added.append(source)
        # When the page is shown inside the item that links to it, the credit says so.
        credit_brain_row(row, hits, labels, settings.excerpt_chars, linked=row.source_key != key)
    return added


def _snippet(result: MergedResult) -> str:
    return next((h.result.snippet for h in result.hits if h.result.snippet), "")
