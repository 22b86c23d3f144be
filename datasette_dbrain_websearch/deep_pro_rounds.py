"""``strategy=pro``'s rounds: the answer's model asked for each step of a deep run, the step
checked (``deep_pro``) and run as a round, until the model stops or hands over.

The model may not be asked (no permission, a cross-site request), may fail, write something
that is not a step, or have its proposals refused twice in a row: then the deterministic loop
takes over, which a warning says. Every proposal, run or not, is recorded in the pack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from . import deep_rounds
from .answer import AnswerAccess
from .answer.answerability import Answerability
from .answer.extractive import Passage
from .answer.model import ModelFailure, ask_model, resolve_model
from .answer.names import bridge_entities
from .config import Settings
from .deep_check import complete, round_gaps
from .deep_follow_ups import FollowUp
from .deep_pro import (
    MAX_REFUSALS,
    READ,
    REFUSALS,
    REPEATED,
    SEARCH,
    STEP_SYSTEM,
    InvalidStep,
    Known,
    Step,
    brain_only,
    parse_step,
    proposal,
    refusal,
    stems_of,
    step_prompt,
)
from .deep_rounds import (
    ANSWERED,
    BUDGET,
    MIN_ROUND_S,
    NO_PROGRESS,
    TIME,
    Search,
    run_round,
    web_cost,
)
from .deep_state import Loop, row_text, rows_of
from .display import plural
from .options import ResearchRequest
from .pipeline import Progress

FALLBACK = "deep_pro_fallback"
BRIDGES_ALLOWED = 5  # names the best rows give that a model's web search may carry


async def pro_rounds(
    loop: Loop,
    options: ResearchRequest,
    settings: Settings,
    search: Search,
    emit: Progress,
    deadline: float,
    answering: AnswerAccess | None,
    check: Callable[[], Answerability],
) -> str | None:
    """``strategy=pro``: the answer's model proposes each round (``deep_pro``), the runtime
    checks and runs it. Returns why the loop stopped, or None to hand over to the
    deterministic loop (the model may not be asked, failed, wrote something that is not a
    step, or had its proposals refused twice in a row), which a warning then says. A model's
    "stop" is ``answered`` only where ``check`` (the answer check) finds an answering
    sentence."""
    budget, spent = settings.deep, loop.spent
    if answering is None or not answering.model_permitted or answering.cross_site:
        why = (
            "this request came from another site, so no model was asked on your account"
            if answering is not None and answering.cross_site
            else "your account may not send evidence to a language model (dbrain-llm-answer)"
        )
        _fall_back(loop, why)
        return None
    try:
        resolved = await resolve_model(
            settings.answer.model, settings.answer.api_key, answering.datasette, answering.actor
        )
    except ModelFailure as exc:
        _fall_back(loop, str(exc))
        return None
    policy = options.web.domain_policy(settings.web)
    refused, refusals = "", 0
    while True:
        if spent.rounds >= budget.rounds or spent.over_money:
            return BUDGET
        left = deadline - deep_rounds.clock()
        if left < MIN_ROUND_S:
            return TIME
        passages = loop.first.passages()
        prompt = step_prompt(
            options.question,
            [(r.source_key, *row_text(r, passages)) for r in rows_of(loop.pack)],
            _known(loop),
            loop.asked,
            {
                "rounds": budget.rounds - spent.rounds,
                "web_searches": max(0, budget.web_searches - spent.web_searches),
                "reads": max(0, budget.reads - spent.reads),
            },
            refused,
        )
        turn = len(loop.proposals) + 1
        try:
            reply = await ask_model(
                resolved.model,
                STEP_SYSTEM,
                prompt,
                resolved.key,
                min(settings.answer.timeout, left),
                _quiet,
            )
            step = parse_step(reply)
        except (ModelFailure, InvalidStep) as exc:
            loop.proposals.append(proposal(turn, None, "invalid", str(exc)))
            _fall_back(loop, f"its step {turn} was not usable ({exc})")
            return None
        loop.model_directed = True
        if step.action not in (SEARCH, READ):
            loop.proposals.append(proposal(turn, step, "stop"))
            await _say_proposal(emit, step, "stop")
            return ANSWERED if complete(check()) else NO_PROGRESS
        why_not = refusal(
            step,
            loop.asked,
            _known(loop),
            budget.reads - spent.reads,
            policy,
            settings.web.fetch_allow_networks,
            _private(loop, options, settings, passages),
        )
        if why_not == REPEATED:  # the model is going round in circles
            loop.proposals.append(proposal(turn, step, "refused", why_not))
            await _say_proposal(emit, step, "refused", REFUSALS[why_not])
            return NO_PROGRESS
        if why_not:
            loop.proposals.append(proposal(turn, step, "refused", why_not))
            await _say_proposal(emit, step, "refused", REFUSALS[why_not])
            refused, refusals = REFUSALS[why_not], refusals + 1
            if refusals >= MAX_REFUSALS:
                _fall_back(loop, f"{plural(refusals, 'proposal')} in a row were refused")
                return None
            continue
        refused, refusals = "", 0
        loop.proposals.append(proposal(turn, step, "accepted"))
        follow = _follow(step)
        await run_round(
            loop,
            [follow],
            options,
            settings,
            search,
            emit,
            deadline,
            web_cost(options, settings, loop.first.web),
        )
        found = check()
        loop.rounds[-1]["gaps"] = round_gaps(loop, found)
        loop.rounds[-1]["answered"] = complete(found)


def _follow(step: Step) -> FollowUp:
    """A model's accepted step as a follow-up: a search for its query, or a read of its URL."""
    if step.action == READ:
        return FollowUp(
            step.url, step.why or "the model asked to read it", "read", step.url, "model"
        )
    return FollowUp(step.query, step.why or "the model asked it", "search", step.query, "model")


def _private(
    loop: Loop, options: ResearchRequest, settings: Settings, passages: Mapping[str, Passage]
) -> frozenset[str]:
    """The words a model's search may not carry to the web: those only the brain's rows hold
    (``brain_only``), save the names the question depends on that its best rows give (the
    bridges the deterministic rounds search for themselves: "the director of Lighthouse
    Keepers" is Marguerite Oduya); none when the config allows them (``deep.pro_brain_queries``)
    or the run never searches the web."""
    if (
        settings.deep.pro_brain_queries
        or options.web.mode == "never"
        or not loop.first.web.permitted
    ):
        return frozenset()
    brain = [" ".join(row_text(r, passages)) for r in loop.pack.evidence]
    seen = [" ".join(row_text(r, passages)) for r in loop.pack.web_rows]
    rows = loop.best_rows(passages)
    bridges = bridge_entities(options.question, rows, loop.terms, most=BRIDGES_ALLOWED)
    return brain_only(options.question, brain, seen) - stems_of(" ".join(bridges))


def _known(loop: Loop) -> list[Known]:
    """The run's web results as the model may ask to read them."""
    read = loop.first.read_urls
    return [
        Known(r.source_key, r.canonical_url, r.title, r.depth == "page" or r.canonical_url in read)
        for r in loop.pack.web_rows
    ]


def _fall_back(loop: Loop, why: str) -> None:
    """Hand the rounds to the deterministic loop, saying why."""
    loop.pack.warnings.append(
        {
            "code": FALLBACK,
            "message": f"Deep research was to be directed by a model, but {why}; the "
            "deterministic follow-up rounds went on instead.",
        }
    )


async def _say_proposal(emit: Progress, step: Step, status: str, detail: str = "") -> None:
    """The page's progress line for a model's proposal that did not become a round."""
    what = {"stop": "stop", "refused": f"{step.action} refused: {detail}"}[status]
    await emit(
        {
            "stage": "deep",
            "status": "proposal",
            "proposal": {**step.as_dict(), "status": status},
            "message": f"The model proposed to {what}",
        }
    )


async def _quiet(chunk: str) -> None:
    """A step's reply is not streamed to the page: only the step it proposes is shown."""
