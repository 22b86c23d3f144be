"""The research pipeline: one run as a straight sequence of typed stages, the brain's rows
(``LocalStage``) -> the judge's verdict -> the web (``WebPart``) -> the merge and profile ->
the ``Pack`` -> the answer.

``run_pipeline`` serves every surface and the evals (through ``service.research``, which saves
the run), so every surface shows the same evidence for the same question. What a run is asked is
a ``ResearchRequest``; how it is made, a ``RunContext``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .admission import Gate, ungated
from .answer import AnswerAccess, Passage, answer_stage
from .brain import FTS_TABLE, Hit, sources_by_url
from .brain_access import (
    LIGHT_PROGRESS_OPS,
    PROGRESS_OPS,
    Checkpoint,
    ExecuteFn,
    TimeBudget,
    paced,
)
from .config import Settings, WebSettings
from .cost import Cost, check_words
from .errors import ResearchError
from .evidence import RowUrl, credit_local, extraction_warning, local_row, web_row
from .judge import CALIBRATED, DBRAIN, WEAK_EVIDENCE, Evidence, Rule, run_verdict, term_weights
from .merge import MergedResult, MergeOutcome, merge_web, web_score
from .options import ResearchRequest
from .pack import Pack, WebSearch, new_run_id
from .pack_json import DidYouMeanJSON, Signal
from .pack_rows import LocalRow, Row, WebRow
from .profiles import apply_profile, profile_for
from .providers import DIRECT, provider_labels
from .providers.base import Provider, WebResult
from .query_plan import QueryPlan, is_keyword_list, plan_query
from .reading import PageReader, ReadOutcome, read_targets
from .retrieval import (
    LocalResult,
    Survey,
    brain_frequencies,
    narrow,
    question_cost,
    retrieve,
    survey,
)
from .row_texts import passage_text
from .semantic import (
    SemanticLane,
    SemanticUnavailable,
    semantic_question,
    semantic_state,
    semantic_warnings,
)
from .spelling import Correction, corrected, suggest
from .urls import NormalizedURL, is_web_url, try_normalize_url
from .web import ALL, WebStage, web_query
from .web_gate import decide, is_current_state
from .web_hits import WebHit
from .web_ranking import RowRank, WebRanker, WebRanking

MAX_RETURNED_PER_PROVIDER = 10  # URLs and titles each provider returned, kept for the trace
# The web stage's ``skipped_reason`` when the question was a URL and its page was read instead.
DIRECT_URL = "direct_url"

Progress = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass(frozen=True)
class WebAccess:
    """What the surface knows about reaching the web for this request."""

    permitted: bool
    providers: Mapping[str, Provider]
    cache_db: Any | None = None  # the plugin database: provider cache and call ledger
    actor_id: str = ""
    # Another site's page sent this request with the person's cookie: it must not spend their
    # provider budget (a link or form elsewhere cannot make this account search the web).
    cross_site: bool = False
    rankers: tuple[WebRanker, ...] = ()  # other plugins' (``register_dbrain_websearch_rankers``)

    @property
    def labels(self) -> dict[str, str]:
        """Each provider's name as people read it (``brave`` -> ``Brave``)."""
        return provider_labels(self.providers)


@dataclass
class LocalStage:
    """What the brain gave: the rows, the plan they were searched with, the semantic lane's
    state, spelling corrections and the warnings and timings of the local search."""

    plan: QueryPlan
    cost: Cost
    result: LocalResult
    surveyed: Survey
    rows: list[LocalRow]
    semantic_lane: dict[str, Any]
    lane: SemanticLane | None
    corrections: list[Correction]
    warnings: list[dict[str, Any]]
    timings_ms: dict[str, float]


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


@dataclass(frozen=True)
class RunContext:
    """How one run is made, whatever it is asked: the brain it reads and how, the settings,
    what the actor may spend (``web``, ``answering``: decided once per request by the
    service), where progress goes, the admission gate and whom it counts against, and when
    the request came in. ``run_pipeline``, ``gather`` and ``deep.run_deep`` share it."""

    execute_fn: ExecuteFn
    database: str
    settings: Settings
    row_url: RowUrl
    web: WebAccess = field(default_factory=lambda: WebAccess(False, {}))
    answering: AnswerAccess = field(default_factory=AnswerAccess)
    progress: Progress | None = None
    semantic_index: str | None = None  # the plugin database's file: the semantic lane's vectors
    gate: Gate | None = None
    requester: str | None = None
    arrived: float | None = None


async def run_pipeline(options: ResearchRequest, run: RunContext) -> Pack:
    """Run one research pass and return the typed pack: the brain's rows, the verdict on
    them, the web when allowed, the merge (``gather``), then an answer when asked for
    (``answer_gathered``).

    ``run.progress`` (optional) is awaited with a small dict as each stage starts or ends, so
    a surface can show live progress; it never changes the result. ``run.semantic_index`` is
    the plugin database holding the semantic lane's vectors (``semantic.py``). ``run.gate``
    admits the local search when it is heavy (``admission``), counting it against
    ``run.requester``. ``run.arrived``: when the request came in (``time.perf_counter``), so
    the limit covers the wait before the run (``views.guards.arrived_at``).

    The run's ``time_limit_ms`` (``TimeBudget``) bounds every stage but the web's and a model's
    replies (which have their own timeouts): each runs as a ``phase``, its loops paced.
    """
    gathered = await gather(options, run)
    if options.answer:
        await answer_gathered(gathered, run)
    gathered.finish()
    return gathered.pack


@dataclass
class Gathered:
    """A run up to its answer: the pack, what its answer reads, and the run's clock. Deep
    research (``deep``) gathers several of these and answers once."""

    pack: Pack
    web: WebAccess
    budget: TimeBudget
    started: float
    hits: list[Hit]  # the brain's rows as retrieved (their passages are read lazily)
    web_passages: dict[str, Passage]
    lane: SemanticLane | None
    read_urls: set[str] = field(default_factory=set)  # pages this run tried to read

    def passages(self) -> dict[str, Passage]:
        """What the answer reads: web rows' pages or snippets, and the brain's rows' texts."""
        return {**self.web_passages, **_local_passages(self.hits)}

    def finish(self) -> None:
        self.pack.timings_ms["total"] = _ms(self.started)


async def gather(
    options: ResearchRequest, run: RunContext, already_read: frozenset[str] = frozenset()
) -> Gathered:
    """Everything a run does before its answer (``run_pipeline``). ``already_read``: pages an
    earlier round of the same deep run read; they are not read again."""
    settings, database, row_url, web = run.settings, run.database, run.row_url, run.web
    emit = run.progress or _silent
    started = time.perf_counter()
    run_id = new_run_id()
    _check_providers(options, settings)
    budget = TimeBudget(settings.time_limit_ms, database, arrived=run.arrived)
    local_query = budget.bind(run.execute_fn)
    await emit({"stage": "local", "status": "started", "message": "Searching your brain"})
    local = await _local_stage(
        local_query,
        budget,
        options,
        settings,
        database,
        row_url,
        run.semantic_index,
        run.gate,
        run.requester,
    )
    judge_started = time.perf_counter()
    with budget.phase():
        rule = _rule(local, options, settings)
        brain = rule.verdict(
            [_evidence(hit) for hit in local.result.hits],
            local.result.exact_count,
            local.plan.query_terms,
            local.plan.common_words,
        )
    judged_ms = _ms(judge_started)
    await emit(
        {
            "stage": "local",
            "status": "done",
            "count": len(local.rows),
            "message": f"Local dbrain evidence: {len(local.rows)} rows ({local.result.mode})",
        }
    )
    await emit(
        {"stage": "judge", "status": "done", "verdict": brain.verdict, "message": brain.message}
    )
    timings = {**local.timings_ms, "judge": judged_ms}
    web_part = await _web(
        local_query,
        budget,
        options,
        settings,
        local,
        brain.verdict,
        rule,
        row_url,
        web,
        emit,
        run_id,
        already_read,
    )
    with budget.phase():
        apply_profile(local.rows, web_part.rows, profile_for(options.profile, settings.profiles))
        unextracted = extraction_warning(local.rows)
        pack = Pack(
            run_id=run_id,
            question=options.question,
            database=database,
            plan=local.plan,
            cost=local.cost,
            local=local.result,
            limit=options.limit,
            filters=options.filters.active(),
            profile=options.profile,
            semantic_lane=local.semantic_lane,
            evidence=local.rows,
            verdict=run_verdict(
                brain,
                rule,
                local.plan.query_terms,
                _web_evidence(web_part.rows),
                web_part.search.ran,
                local_rows=len(local.result.hits),
                surfaced=len(web_part.surfaced),
            ),
            web_search=web_part.search,
            web_rows=web_part.rows,
            web_queries=web_part.queries,
            merge_decisions=web_part.merge_decisions,
            warnings=[*local.warnings, *web_part.warnings, *([unextracted] if unextracted else [])],
            timings_ms={**timings, **web_part.timings_ms},
            did_you_mean=_did_you_mean(options.question, local.corrections),
            secrets=tuple(settings.secrets()),
        )
    return Gathered(
        pack,
        web,
        budget,
        started,
        [*local.result.hits, *web_part.surfaced],
        web_part.passages,
        local.lane,
        {entry["url"] for entry in web_part.search.read or []},
    )


async def answer_gathered(
    gathered: Gathered, run: RunContext, order: Sequence[Row] | None = None
) -> None:
    """The answer over what the run gathered, written into its pack. ``order`` (deep
    research) is the rows it reads and may cite, in order (``answer_stage``)."""
    pack, budget = gathered.pack, gathered.budget
    with budget.phase():
        passages = gathered.passages()
    pack.answer, answer_warnings = await answer_stage(
        pack,
        passages,
        run.settings.answer,
        run.answering,
        gathered.web.labels,
        run.progress or _silent,
        budget,
        gathered.lane.similarity if gathered.lane is not None else None,
        order,
    )
    pack.warnings.extend(answer_warnings)
    pack.timings_ms["answer"] = pack.answer.timings_ms["total"]


def _check_providers(options: ResearchRequest, settings: Settings) -> None:
    """Refuse a provider this Datasette does not offer before anything runs."""
    configured = settings.web.providers
    unknown = [p for p in options.web.providers if p != ALL and p not in configured]
    if unknown:
        raise ResearchError(
            f"Unknown provider {', '.join(unknown)}; this Datasette offers "
            f"{', '.join(configured)} or 'all' (external_search.providers).",
            code="unknown_provider",
        )


async def _local_stage(
    local_query: ExecuteFn,
    budget: TimeBudget,
    options: ResearchRequest,
    settings: Settings,
    database: str,
    row_url: RowUrl,
    semantic_index: str | None,
    gate: Gate | None,
    requester: str | None,
) -> LocalStage:
    """Plan the question, survey what it would cost, wait for its turn, search the brain and
    shape the rows."""
    with budget.phase():
        if options.syntax != "raw":
            check_words(options.question)
        plan = plan_query(options.question, options.syntax).expanded(options.expand)
    if gate is not None:
        await gate.refuse_shed(requester)
    surveyed: Survey = {}
    surveying = time.perf_counter()
    if plan.syntax != "raw" and options.ranking != "dbrain":
        surveyed = await local_query(lambda conn: survey(conn, plan, options.filters))
    surveyed_ms = _ms(surveying)
    plan = narrow(plan, surveyed)
    cost = question_cost(plan, surveyed, options.ranking)
    turn = (
        gate.admit(requester, cost, budget.left_s(), budget.exceeded)
        if gate is not None
        else ungated(cost)
    )
    async with turn as admitted:
        budget.waited(admitted.waited_s)
        budget.yielding = admitted.should_yield
        budget.progress_ops = PROGRESS_OPS if cost.heavy else LIGHT_PROGRESS_OPS

        def search(conn: Any) -> tuple[Any, ...]:
            """Retrieval, then the rows and their excerpts in the same hop to the query thread:
            excerpts are CPU work (a matcher over every row's texts), not the event loop's;
            each row's is checked against the deadline."""
            found = _local(
                conn, options, settings, plan, database, semantic_index, surveyed, budget.check
            )
            searched = plan.searched(found[0].prefixed)
            rows = [
                local_row(h, searched, row_url, settings.excerpt_chars)
                for h in paced(found[0].hits, budget.check, every=1)
            ]
            return (*found, searched, rows)

        result, semantic_lane, lane, corrections, plan, rows = await local_query(search)
    budget.yielding, budget.progress_ops = None, PROGRESS_OPS
    return LocalStage(
        plan=plan,
        cost=cost,
        result=result,
        surveyed=surveyed,
        rows=rows,
        semantic_lane=semantic_lane,
        lane=lane,
        corrections=corrections,
        warnings=[*result.warnings, *_local_warnings(plan, result, semantic_lane)],
        timings_ms={
            "local_survey": round(surveyed_ms, 3),
            "local_turn": round(admitted.waited_s * 1000, 3),
            **{f"local_{k}": v for k, v in result.timings_ms.items() if k != "local"},
            "local": result.timings_ms["local"],
        },
    )


def _rule(local: LocalStage, options: ResearchRequest, settings: Settings) -> Rule:
    """The verdict's rule: calibrated on the question's term weights in this brain, or
    dbrain's for ``ranking: dbrain``, raw FTS5 questions (no weights) and ``judge.mode:
    dbrain``."""
    thresholds = settings.judge
    if (
        thresholds.mode == DBRAIN
        or options.ranking == "dbrain"
        or local.plan.syntax == "raw"
        or not local.surveyed
    ):
        return Rule(thresholds, DBRAIN)
    frequencies, rows = brain_frequencies(local.surveyed)
    weights = term_weights(rows, frequencies, local.plan.query_terms)
    keywords = is_keyword_list(options.question, local.plan.query_terms)
    return Rule(thresholds, CALIBRATED, weights, rows, keywords)


def _evidence(hit: Hit) -> Evidence:
    """What the judge reads of a brain row: the terms it (or its linked page) holds, its
    closest cosine, and whether meaning alone brought it."""
    cosines = [part.cosine for part in hit.parts() if part.cosine is not None]
    return Evidence(
        frozenset(hit.matched),
        max(cosines) if cosines else None,
        meaning_only=hit.dense_only and not hit.matched and not hit.exact_rank,
    )


def _web_evidence(rows: list[WebRow]) -> list[Evidence]:
    """What the judge reads of the web's rows: the terms they hold and, with the semantic
    lane, how close they read to the question (the cosine that ranked them; the brain's rows
    are judged alike)."""
    return [Evidence(frozenset(row.retrieval.matched_terms), row.cosine) for row in rows]


def _local_warnings(
    plan: QueryPlan, result: LocalResult, semantic_lane: dict[str, Any]
) -> list[dict[str, Any]]:
    """What the person should know about how their question was searched."""
    warnings: list[dict[str, Any]] = []
    if plan.dropped:
        warnings.append(
            {
                "code": "query_narrowed",
                "message": "Common words left out of the ranking so the search stays fast: "
                f"{', '.join(plan.dropped)} (rows are still judged on every word).",
            }
        )
    warnings.extend(semantic_warnings(semantic_lane))
    if plan.truncated_terms:
        warnings.append(
            {
                "code": "terms_truncated",
                "message": f"Only the first {len(plan.query_terms)} terms were searched; "
                f"{plan.truncated_terms} more were ignored.",
            }
        )
    if not result.kinds_searched:
        warnings.append(
            {
                "code": "nothing_to_search",
                "message": "This database has no searchable table for the chosen kind.",
            }
        )
    return warnings


def _did_you_mean(question: str, corrections: list[Correction]) -> DidYouMeanJSON | None:
    if not corrections:
        return None
    return {
        "question": corrected(question, corrections),
        "corrections": [c.as_dict() for c in corrections],
    }


def _local_passages(hits: list[Hit]) -> dict[str, Passage]:
    """What the answer reads from each local row: an item shown with its linked page answers
    from both, each cited by its own key (the row shows the sentence either way)."""
    return {
        part.row.get("source_key", ""): Passage(
            part.row.get("source_key", ""),
            "local",
            passage_text(part.kind, part.row),
            part.row.get("title", ""),
        )
        for hit in hits
        for part in hit.parts()
    }


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)


def _local(
    conn: Any,
    options: ResearchRequest,
    settings: Settings,
    plan: QueryPlan,
    database: str,
    semantic_index: str | None,
    surveyed: Survey,
    checkpoint: Checkpoint,
) -> tuple[LocalResult, dict[str, Any], SemanticLane | None, list[Correction]]:
    """Local retrieval, with the semantic lane when its model and index are there: returns the
    result, the lane's state for the pack's ``retrieval_lanes``, the lane when it was used
    (the answer reads its sentences' closeness to the question from it), and corrections for
    question words no row holds ("did you mean"). ``checkpoint`` paces the lane's loops."""
    model_id = settings.semantic.model
    lane: SemanticLane | None = None
    if options.ranking == "dbrain":
        state: dict[str, Any] = {"status": "disabled", "reason": "dbrain_ranking"}
    elif not plan.searchable or plan.syntax == "raw":
        state = {"status": "disabled", "reason": "not_requested"}
    else:
        state = semantic_state(conn, semantic_index, database, model_id, options.filters)
        if state["status"] == "used":
            try:
                lane = SemanticLane(
                    semantic_index or "",
                    database,
                    model_id,
                    semantic_question(options.question),
                    settings.semantic.weight,
                    conn,
                    min_cosine=settings.semantic.min_cosine,
                    checkpoint=checkpoint,
                )
                state["store"] = lane.vectors.store
            except SemanticUnavailable as exc:
                state = {"status": "disabled", "reason": exc.reason, "message": str(exc)}
    result = retrieve(
        conn,
        options.question,
        plan,
        options.filters,
        options.limit,
        options.ranking,
        lane,
        surveyed=surveyed,
        checkpoint=checkpoint,
    )
    if lane is not None:
        state.update(
            model=model_id,
            weight=settings.semantic.weight,
            dense_added=result.dense_added,
            status="used" if lane.used else "disabled",
        )
        if not lane.used:
            state["reason"] = "no_vectors_for_candidates"
    corrections = []
    if plan.searchable and plan.syntax != "raw":
        tables = [FTS_TABLE[kind] for kind in result.kinds_searched]
        corrections = suggest(conn, tables, plan.search_words)
    return result, state, lane if lane is not None and lane.used else None, corrections


async def _web(
    execute_fn: ExecuteFn,
    budget: TimeBudget,
    options: ResearchRequest,
    settings: Settings,
    local: LocalStage,
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
    plan = local.plan
    ext = settings.web
    request = options.web
    named = await _named_page(execute_fn, options, local)
    # The brain lacks the page a URL question names, whatever its words matched: weak evidence.
    judged = WEAK_EVIDENCE if named is not None else verdict
    decision = decide(request.mode, ext, web.permitted, judged, web.cross_site)
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
                "message": "Your brain does not hold the page at this URL. Searching the web "
                "(External web: Only if weak or Always) would read the page itself.",
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
    policy = request.domain_policy(ext)
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
            ext, web.providers, web.cache_db, emit=emit, run_id=run_id, actor_id=web.actor_id
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
    urls = sorted({h.url.canonical_url for h in outcome.hits})
    held = await execute_fn(lambda conn: sources_by_url(conn, urls, options.filters))
    ranking = WebRanking(
        options.question,
        plan,
        rule.weights or {},
        local.lane.similarity if local.lane is not None else None,
        web.rankers,
        labels,
    )
    with budget.phase():
        merged = merge_web(outcome.hits, set(held), policy, request.count, ranking.order)
        part.surfaced = _credit_local_sources(
            local.rows, held, merged, plan, row_url, settings, labels
        )
    with budget.paused():
        unread = [r.canonical_url for r in merged.rows if r.canonical_url not in already_read]
        urls = read_targets(unread, request.read)
        seconds_left = ext.timeout - (time.monotonic() - web_started)
        read = await _read_pages(part, urls, web, ext, run_id, seconds_left, emit)
    part.warnings.extend(read.warnings)
    pages = {url: page.text for url, page in read.pages.items() if page.ok}
    text_chars = ext.max_tokens * 4 // max(1, len(merged.rows))
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
    ext: WebSettings,
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
    reader = PageReader(ext, web.cache_db, web.actor_id, run_id)
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
    execute_fn: ExecuteFn, options: ResearchRequest, local: LocalStage
) -> NormalizedURL | None:
    """The page a question names when it is nothing but an http(s) URL the brain does not hold
    (exact lookup found no row, and no source has that URL, whatever the filters): it is read
    directly, not searched for as words ("https quarkmatter blog ...")."""
    question = options.question.strip()
    if (
        local.plan.syntax == "raw"
        or local.result.exact_count
        or not is_web_url(question)
        or any(c.isspace() for c in question)
    ):
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
    ext = settings.web
    part.search.skipped_reason = DIRECT_URL
    rule = options.web.domain_policy(ext).rule_for(url.domain)
    if rule:
        part.warnings.append(
            {
                "code": "direct_url_not_read",
                "message": f"The page you named is on {url.domain}, which this question's sites "
                "or this Datasette's allow_domains/block_domains leave out; it was not read.",
            }
        )
        return
    outcome = await _read_pages(part, [url.canonical_url], web, ext, run_id, ext.timeout, emit)
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
        ext.max_tokens * 4,
        web.labels,
        RowRank(round(web_score(result), 6), [signal]),
        page.text,
    )
    part.rows = [row]
    part.passages = {row.source_key: Passage(row.source_key, "external", page.text, row.title)}


def _credit_local_sources(
    local_rows: list[LocalRow],
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
        row = next((r for r in local_rows if r.source_key == key), None)
        row = row or next((r for r in local_rows if key in r.keys), None)
        if row is None:
            row = local_row(source, plan, row_url, settings.excerpt_chars)
            local_rows.append(row)
            added.append(source)
        # When the page is shown inside the item that links to it, the credit says so.
        credit_local(row, hits, labels, settings.excerpt_chars, linked=row.source_key != key)
    return added


def _snippet(result: MergedResult) -> str:
    return next((h.result.snippet for h in result.hits if h.result.snippet), "")


async def _silent(event: dict[str, Any]) -> None:
    """The default progress listener: nobody is watching."""
