"""Deep research (``depth=deep``): a bounded loop of follow-up rounds over one question.

Round 1 is the quick run (``pipeline.gather``). Each further round asks follow-up queries
derived deterministically from what the evidence so far lacks: a name the best rows give that
the question depends on but does not say (the bridge in "the position held by the woman who
played X"), a name the question says that no row is about yet, and question terms no brain row
or read page states (what the answer could not support). Each follow-up is a run of its own:
the brain, then the web where the mode and permission allow, its top new pages read through
the guarded reader. Its new rows join the run with their round recorded, and the gaps are
computed again. The loop stops for a named reason (``answered``, ``no_progress``, ``budget``,
``time``); one answer is then written over everything, citing a web row only where its page
was read (or, where reading failed, marked as resting on the provider's snippet).

Every provider call and page read counts against ``deep``'s budgets, checked before the call
with the worst case (every provider of the fallback order); the providers' own caps in the
ledger apply as well. Decisions are pure functions: what to ask next (``deep_follow_ups``),
whether to stop (``deep_rounds.stop_reason``) and how far to trust the answer
(``confidence``); ``run_deep`` does the I/O, a round at a time (``deep_rounds``, or
``deep_pro_rounds`` where a model proposes them), into the run's state (``deep_state``).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from . import deep_rounds
from .answer import Passage
from .config import Settings
from .deep_follow_ups import (
    FollowUp,
    bridge_entities,
    facets,
    fold,
    follow_ups,
    question_names,
    uncovered,
)
from .deep_pro_rounds import pro_rounds
from .deep_rounds import (
    ANSWERED,
    BUDGET,
    MIN_ROUND_S,
    NO_PROGRESS,
    STOP_MESSAGES,
    TIME,
    bounded,
    run_round,
    say_round,
    stop_reason,
    web_cost,
)
from .deep_state import KEPT_FIRST, Loop, rows_of
from .display import plural
from .options import PRO, ResearchRequest
from .pack import Pack
from .pack_json import ConfidenceJSON, ResearchJSON
from .pack_rows import Row, WebRow
from .pipeline import Gathered, RunContext, answer_gathered, gather

DEEP_BUDGET = "deep_budget"  # round 1's web skipped: one search could spend more than it allows
PARENTHESIS = re.compile(r"\s*\([^)]*\)\s*$")


def confidence(
    covered: int, facet_count: int, cited_web: Sequence[WebRow], conflicts: Mapping[str, Any]
) -> ConfidenceJSON:
    """How far to trust the answer: how much of the question the evidence covers (most of the
    weight), how much of the web it cites was read rather than a snippet, and whether the
    cited sources agree (unknown when they were not compared)."""
    coverage = covered / facet_count if facet_count else 1.0
    read_depth = (
        sum(1 for r in cited_web if r.depth == "page") / len(cited_web) if cited_web else 1.0
    )
    if conflicts.get("status") == "assessed":
        agreement = max(0.0, 1.0 - 0.25 * len(conflicts.get("items") or []))
    else:
        agreement = 0.75
    score = round(0.6 * coverage + 0.2 * read_depth + 0.2 * agreement, 2)
    level = "high" if score >= 0.8 else "medium" if score >= 0.5 else "low"
    return {
        "score": score,
        "level": level,
        "coverage": round(coverage, 2),
        "read_depth": round(read_depth, 2),
        "agreement": round(agreement, 2),
    }


async def run_deep(options: ResearchRequest, run: RunContext) -> Pack:
    """Research the question in rounds (``pipeline.run_pipeline``'s arguments) and return the
    pack with its ``research`` record; the answer, when asked for, is written once at the end
    over every round's rows."""
    settings, answering = run.settings, run.answering
    emit = run.progress or _silent
    budget = settings.deep
    deadline = deep_rounds.clock() + budget.time_limit_ms / 1000
    cost = web_cost(options, settings, run.web)

    async def search(
        asked: ResearchRequest, bounds: Settings, read: frozenset[str], since: float | None = None
    ) -> Gathered:
        return await gather(asked, replace(run, settings=bounds, arrived=since), read)

    # Round 1 reads half the pages: the question's own results are the likeliest to answer.
    first_reads = max(math.ceil(budget.reads / 2), options.web.read)
    mode = options.web.mode if cost <= budget.web_searches else "never"
    first_options = replace(
        options, web=replace(options.web, read=min(first_reads, budget.reads), mode=mode)
    )
    await say_round(emit, 1, [FollowUp(options.question, "the question itself", "question", "")])
    first = await search(
        first_options, bounded(settings, deadline - deep_rounds.clock()), frozenset(), run.arrived
    )
    if mode != options.web.mode:  # the budget kept round 1 off the web, not the request
        first.pack.web_search.mode = options.web.mode
        first.pack.web_search.skipped_reason = DEEP_BUDGET
    terms = first.pack.plan.query_terms
    loop = Loop(first, terms, question_names(options.question), [options.question])
    loop.count(first)
    loop.spent.rounds = 1
    passages = first.passages()
    loop.rounds.append(
        {
            "round": 1,
            "queries": [
                {
                    "query": options.question,
                    "why": "the question itself",
                    "reason": "question",
                    "searched_web": first.pack.web_search.ran,
                    "added": len(first.pack.evidence) + len(first.pack.web_rows),
                    "proposed_by": "runtime",
                }
            ],
            "added": [r.source_key for r in rows_of(first.pack)],
            "gaps": uncovered(facets(terms, loop.names), loop.evidence_texts(passages)),
        }
    )
    # A question that names a page (its key or URL, held or read directly) is that page.
    named = any(r.is_exact for r in first.pack.evidence) or any(
        r.direct_url for r in first.pack.web_rows
    )
    reason = ANSWERED if named else None
    rounds_started = time.perf_counter()
    with first.budget.paused():
        if reason is None and options.strategy == PRO:
            reason = await pro_rounds(loop, options, settings, search, emit, deadline, answering)
        while reason is None:
            bridges = bridge_entities(options.question, loop.best_rows(passages), terms)
            loop.names = list(dict.fromkeys([*loop.names, *bridges]))
            wanted = facets(terms, loop.names)
            gaps = uncovered(wanted, loop.evidence_texts(passages))
            queries = follow_ups(gaps, wanted, bridges, loop.asked)
            reason = stop_reason(gaps, queries, loop.spent, budget, deadline - deep_rounds.clock())
            if reason is not None:
                break
            added = await run_round(loop, queries, options, settings, search, emit, deadline, cost)
            passages = first.passages()
            loop.rounds[-1]["gaps"] = uncovered(
                facets(terms, loop.names), loop.evidence_texts(passages)
            )
            if not added:
                out_of_time = deadline - deep_rounds.clock() < MIN_ROUND_S
                out_of_money = loop.spent.over_money
                reason = TIME if out_of_time else BUDGET if out_of_money else NO_PROGRESS
    loop.reorder()
    pack = first.pack
    pack.timings_ms["deep_rounds"] = round((time.perf_counter() - rounds_started) * 1000, 3)
    if options.answer:
        # A model that directed the rounds writes the answer as claims bound to keys.
        writer = replace(answering, claims=True) if loop.model_directed else answering
        await answer_gathered(first, replace(run, answering=writer), answer_rows(loop))
    pack.research = _research(loop, options, reason, first.passages())
    await emit(
        {
            "stage": "deep",
            "status": "done",
            "stop_reason": reason,
            "confidence": pack.research["confidence"],
            "message": f"Deep research stopped after {plural(loop.spent.rounds, 'round')}: "
            f"{STOP_MESSAGES[reason]}; confidence {pack.research['confidence']['level']} "
            f"({pack.research['confidence']['score']:.2f})",
        }
    )
    first.finish()
    return pack


def _research(
    loop: Loop, options: ResearchRequest, reason: str, passages: Mapping[str, Passage]
) -> ResearchJSON:
    """The pack's ``research``: the rounds, why the loop stopped and how far to trust it (the
    loop's own, over every round: the ``judge`` verdict is round 1's)."""
    pack = loop.pack
    wanted = facets(loop.terms, loop.names)
    gaps = uncovered(wanted, loop.evidence_texts(passages))
    cited = set(pack.answer.citations.get("external", []))
    return {
        "depth": options.depth,
        "strategy": options.strategy,
        "proposals": loop.proposals,
        "rounds": loop.rounds,
        "stop_reason": reason,
        "stop_message": STOP_MESSAGES[reason],
        "confidence": confidence(
            len(wanted.all()) - len(gaps),
            len(wanted.all()),
            [r for r in pack.web_rows if r.source_key in cited],
            pack.answer.conflicts,
        ),
        "spent": loop.spent.as_dict(),
    }


def answer_rows(loop: Loop) -> list[Row]:
    """The rows the answer reads, in order, each hop's best in turn: for each name the question
    depends on (its own, then the bridges followed) the row about it, then round 1's best
    row, the pages read and what follow-ups added, then the rest. Read before citing: a web
    row whose page was neither read nor tried is left out."""
    read = loop.first.read_urls
    rows: list[Row] = [
        *loop.pack.evidence,
        *(r for r in loop.pack.web_rows if r.depth == "page" or r.canonical_url in read),
    ]
    added = set(loop.added_order)
    hops = [row for name in loop.names if (row := _about(rows, name)) is not None]
    brain_rows = [r for r in loop.pack.evidence if r.source_key not in added]
    pages = [r for r in rows if isinstance(r, WebRow) and r.source_key not in added]
    later = [r for key in loop.added_order for r in rows if r.source_key == key]
    ordered = [*hops, *brain_rows[:KEPT_FIRST], *pages, *later, *brain_rows[KEPT_FIRST:]]
    return list({id(r): r for r in ordered}.values())


def _about(rows: Sequence[Row], name: str) -> Row | None:
    """The row about a name: titled with it ("Big Stone Gap (film)" is about "Big Stone
    Gap")."""
    return next((r for r in rows if fold(PARENTHESIS.sub("", r.title)) == fold(name)), None)


async def _silent(event: dict[str, Any]) -> None:
    """Nobody is watching."""
