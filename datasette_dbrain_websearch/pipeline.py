"""The research pipeline: one run as a straight sequence of typed stages, the brain's rows
(``BrainStage``) -> the judge's verdict -> the web (``WebPart``) -> the merge and profile ->
the ``Pack`` -> the answer.

``run_pipeline`` serves every surface and the evals (through ``service.research``, which saves
the run), so every surface shows the same evidence for the same question. What a run is asked is
a ``ResearchRequest``; how it is made, a ``RunContext``. The brain's stage is ``brain_stage``,
the web's ``web_part``; this module runs them in order, judges and assembles the pack.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .admission import Gate
from .answer import AnswerAccess, Passage, answer_stage
from .answer.answerability import Answerability, explain
from .answer.stage import answer_check, asked
from .brain import Hit
from .brain_access import ExecuteFn, TimeBudget
from .brain_stage import BrainStage, brain_stage
from .citations import citing, numbered
from .config import Settings
from .errors import ResearchError
from .evidence import RowUrl, extraction_warning
from .judge import (
    CALIBRATED,
    DBRAIN,
    STRONG_MATCH,
    Answered,
    Evidence,
    Rule,
    Verdict,
    run_verdict,
    term_weights,
)
from .options import ResearchRequest
from .pack import Pack, new_run_id
from .pack_json import DidYouMeanJSON
from .pack_rows import Row, WebRow
from .profiles import apply_profile, profile_for
from .providers import provider_labels
from .providers.base import Provider
from .question_terms import is_keyword_list
from .row_texts import passage_text
from .semantic import SemanticLane
from .spelling import Correction, corrected
from .survey import brain_frequencies
from .urls import URL_NOT_HELD, names_a_page
from .web import ALL
from .web_part import search_web
from .web_ranking import WebRanker

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
    the plugin database holding the semantic lane's vectors (``semantic_index``). ``run.gate``
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
        return {**self.web_passages, **_brain_passages(self.hits)}

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
    brain_query = budget.bind(run.execute_fn)
    await emit({"stage": "local", "status": "started", "message": "Searching your brain"})
    brain_part = await brain_stage(
        brain_query,
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
        rule = _rule(brain_part, options, settings)
        hits = brain_part.result.hits
        question = asked(options.question, brain_part.plan)
        url_not_held = names_a_page(options.question) and not brain_part.result.exact_count
        checked: Answerability | None = None
        brain = _judge_brain(rule, brain_part, checked, url_not_held)
        if brain.reason == STRONG_MATCH:  # the rows hold the question: do they answer it?
            # The top rows first (most questions are answered there), then all the answer reads.
            for most in dict.fromkeys([settings.judge.top_k, settings.answer.max_evidence]):
                passages = list(_brain_passages(hits[:most]).values())
                checked = answer_check(question, brain_part.plan.query_terms, passages)
                if checked.answered or most >= len(hits):
                    break
            brain = _judge_brain(rule, brain_part, checked)
    judged_ms = _ms(judge_started)
    await emit(
        {
            "stage": "local",
            "status": "done",
            "count": len(brain_part.rows),
            "message": f"Local dbrain evidence: {len(brain_part.rows)} rows "
            f"({brain_part.result.mode})",
        }
    )
    await emit(
        {"stage": "judge", "status": "done", "verdict": brain.verdict, "message": brain.message}
    )
    timings = {**brain_part.timings_ms, "judge": judged_ms}
    web_part = await search_web(
        brain_query,
        budget,
        options,
        settings,
        brain_part,
        brain.verdict,
        rule,
        row_url,
        web,
        emit,
        run_id,
        already_read,
    )
    with budget.phase():
        apply_profile(
            brain_part.rows, web_part.rows, profile_for(options.profile, settings.profiles)
        )
        # A profile re-sorts the rows: the verdict names them by the labels they end with.
        brain = _judge_brain(rule, brain_part, checked, url_not_held)
        web_checked = (
            answer_check(
                question,
                brain_part.plan.query_terms,
                [
                    web_part.passages[r.source_key]
                    for r in web_part.rows
                    if r.source_key in web_part.passages
                ],
            )
            if rule.mode == CALIBRATED and web_part.rows
            else None
        )
        unextracted = extraction_warning(brain_part.rows)
        pack = Pack(
            run_id=run_id,
            question=options.question,
            database=database,
            plan=brain_part.plan,
            cost=brain_part.cost,
            brain=brain_part.result,
            limit=options.limit,
            filters=options.filters.active(),
            profile=options.profile,
            semantic_lane=brain_part.semantic_lane,
            evidence=brain_part.rows,
            verdict=run_verdict(
                brain,
                rule,
                brain_part.plan.query_terms,
                _web_evidence(web_part.rows),
                web_part.search.ran,
                brain_rows=len(brain_part.result.hits),
                surfaced=len(web_part.surfaced),
                web_answered=_answered(web_checked, numbered((), (r.keys for r in web_part.rows)))
                if web_checked
                else None,
            ),
            web_search=web_part.search,
            web_rows=web_part.rows,
            web_queries=web_part.queries,
            merge_decisions=web_part.merge_decisions,
            warnings=[
                *brain_part.warnings,
                *web_part.warnings,
                *([unextracted] if unextracted else []),
            ],
            timings_ms={**timings, **web_part.timings_ms},
            did_you_mean=_did_you_mean(options.question, brain_part.corrections),
            secrets=tuple(settings.secrets()),
        )
    return Gathered(
        pack,
        web,
        budget,
        started,
        [*brain_part.result.hits, *web_part.surfaced],
        web_part.passages,
        brain_part.lane,
        {entry["url"] for entry in web_part.search.read or []},
    )


async def answer_gathered(
    gathered: Gathered,
    run: RunContext,
    order: Sequence[Row] | None = None,
    found: Answerability | None = None,
) -> None:
    """The answer over what the run gathered, written into its pack. ``order`` (deep
    research) is the rows it reads and may cite, in order, and ``found`` its answer check
    (``deep_check``: through a bridge) (``answer_stage``)."""
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
        found,
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


def _rule(brain_part: BrainStage, options: ResearchRequest, settings: Settings) -> Rule:
    """The verdict's rule: calibrated on the question's term weights in this brain, or
    dbrain's for ``ranking: dbrain``, raw FTS5 questions (no weights) and ``judge.mode:
    dbrain``."""
    thresholds = settings.judge
    if (
        thresholds.mode == DBRAIN
        or options.ranking == "dbrain"
        or brain_part.plan.syntax == "raw"
        or not brain_part.surveyed
    ):
        return Rule(thresholds, DBRAIN)
    frequencies, rows = brain_frequencies(brain_part.surveyed)
    weights = term_weights(rows, frequencies, brain_part.plan.query_terms)
    keywords = is_keyword_list(options.question, brain_part.plan.query_terms)
    return Rule(thresholds, CALIBRATED, weights, rows, keywords)


def _judge_brain(
    rule: Rule, brain_part: BrainStage, checked: Answerability | None, url_not_held: bool = False
) -> Verdict:
    """The brain's verdict, with what the answer check found (``checked``; or that the brain
    lacks the page a bare URL asks for), its rows named by the labels they have now."""
    labels = numbered(row.keys for row in brain_part.rows)
    evidence = [
        _evidence(hit, labels.get(hit.row.get("source_key", ""), ""))
        for hit in brain_part.result.hits
    ]
    if url_not_held:
        answered: Answered | None = Answered(
            False, URL_NOT_HELD, {"answered": False, "asks": "url"}
        )
    else:
        answered = _answered(checked, labels) if checked is not None else None
    plan = brain_part.plan
    return rule.verdict(
        evidence, brain_part.result.exact_count, plan.query_terms, plan.common_words, answered
    )


def _evidence(hit: Hit, label: str) -> Evidence:
    """What the judge reads of a brain row: the terms it (or its linked page) holds, its
    closest cosine, whether meaning alone brought it, and its label."""
    cosines = [part.cosine for part in hit.parts() if part.cosine is not None]
    return Evidence(
        frozenset(hit.matched),
        max(cosines) if cosines else None,
        meaning_only=hit.dense_only and not hit.matched and not hit.exact_rank,
        label=label,
    )


def _answered(found: Answerability, labels: Mapping[str, str]) -> Answered:
    """The answer check as the judge reads it: its finding in plain words, rows by label."""
    says = explain(found, citing(labels))
    return Answered(found.answered, says, found.to_json())


def _web_evidence(rows: list[WebRow]) -> list[Evidence]:
    """What the judge reads of the web's rows: the terms they hold and, with the semantic
    lane, how close they read to the question (the cosine that ranked them; the brain's rows
    are judged alike)."""
    return [Evidence(frozenset(row.retrieval.matched_terms), row.cosine) for row in rows]


def _did_you_mean(question: str, corrections: list[Correction]) -> DidYouMeanJSON | None:
    if not corrections:
        return None
    return {
        "question": corrected(question, corrections),
        "corrections": [c.as_dict() for c in corrections],
    }


def _brain_passages(hits: list[Hit]) -> dict[str, Passage]:
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


async def _silent(event: dict[str, Any]) -> None:
    """The default progress listener: nobody is watching."""
