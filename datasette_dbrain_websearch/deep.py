"""Deep research (``depth=deep``): a bounded loop of follow-up rounds over one question.

Round 1 is the quick run (``pipeline.gather``). Each further round asks follow-up queries
derived deterministically from what the evidence so far lacks: a name the best rows give that
the question depends on but does not say (the bridge in "the position held by the woman who
played X"), a name the question says that no row is about yet, and question terms no brain row
or read page states (what the answer could not support). Each follow-up is a run of its own:
the brain, then the web where the mode and permission allow, its top new pages read through
the guarded reader. Its new rows join the run with their round recorded, and the gaps are
computed again. The loop stops for a named reason: ``answered`` when a sentence of the rows
answers the question (``deep_check``: the answer check, through the bridge for a two-part
question), else ``no_progress``, ``budget`` or ``time``; one answer is then written over
everything, led by that sentence, citing a web row only where its page was read (or, where
reading failed, marked as resting on the provider's snippet). Its confidence stands on the
same check: high only when a sentence answers.

Every provider call and page read counts against ``deep``'s budgets, checked before the call
with the worst case (every provider of the fallback order); the providers' own caps in the
ledger apply as well. Decisions are pure functions: what to ask next (``deep_follow_ups``),
whether to stop (``deep_rounds.stop_reason``) and how far to trust the answer
(``confidence``); ``run_deep`` does the I/O, a round at a time (``deep_rounds``, or
``deep_pro_rounds`` where a model proposes them), into the run's state (``deep_state``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from . import deep_rounds
from .answer.answerability import Answerability, explain
from .answer.names import bridge_entities, question_names
from .answer.stage import asked
from .citations import citing, of_run
from .config import Settings
from .deep_check import answer_rows, complete, loop_check, round_gaps
from .deep_follow_ups import FollowUp, facets, follow_ups, uncovered
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
from .deep_state import Loop, rows_of
from .display import plural
from .judge import ENOUGH_EVIDENCE, WEAK_EVIDENCE, RunVerdict
from .options import PRO, ResearchRequest
from .pack import Pack
from .pack_json import ConfidenceJSON, ResearchJSON
from .pack_rows import WebRow
from .pipeline import Gathered, RunContext, answer_gathered, gather

DEEP_BUDGET = "deep_budget"  # round 1's web skipped: one search could spend more than it allows
# Confidence is "high" from here; fitted on the shared HotpotQA questions (bench_deep.py).
HIGH, MEDIUM = 0.8, 0.5


def confidence(
    found: Answerability, cited_web: Sequence[WebRow], conflicts: Mapping[str, Any]
) -> ConfidenceJSON:
    """How far to trust the answer: whether a sentence answers the question (most of the
    weight: without one there is no answer, never "high"), whether the answer states every
    part of it (``complete``), how much of the question the answering sentence's window
    holds, how much of the web it cites was read rather than a snippet, and whether the cited
    sources agree (unknown when they were not compared)."""
    best = found.best
    coverage = best.held if best is not None else 0.0
    read_depth = (
        sum(1 for r in cited_web if r.depth == "page") / len(cited_web) if cited_web else 1.0
    )
    if conflicts.get("status") == "assessed":
        agreement = max(0.0, 1.0 - 0.25 * len(conflicts.get("items") or []))
    else:
        agreement = 0.75
    if best is None:
        score = round(0.3 * (found.closest.held if found.closest else 0.0), 2)
    else:
        whole = 0.25 if complete(found) else 0.0  # without every part stated: at most medium
        score = round(0.4 + 0.15 * coverage + 0.1 * read_depth + 0.1 * agreement + whole, 2)
    level = "high" if score >= HIGH else "medium" if score >= MEDIUM else "low"
    return {
        "score": score,
        "level": level,
        "answered": complete(found),
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
    question = asked(options.question, first.pack.plan)
    similarity = first.lane.similarity if first.lane is not None else None
    most = settings.answer.max_evidence

    def check() -> Answerability:
        return loop_check(loop, question, similarity, most)

    passages = first.passages()
    found = check()
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
            "gaps": round_gaps(loop, found),
            "answered": complete(found),
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
            reason = await pro_rounds(
                loop, options, settings, search, emit, deadline, answering, check
            )
        while reason is None:
            bridges = bridge_entities(options.question, loop.best_rows(passages), terms)
            loop.names = list(dict.fromkeys([*loop.names, *bridges]))
            found = check()
            wanted = facets(terms, loop.names)
            gaps = uncovered(wanted, loop.evidence_texts(passages))
            asking = found.unstated()
            anchor = found.best.span if found.best else ""
            queries = follow_ups(gaps, wanted, bridges, loop.asked, asking, anchor)
            reason = stop_reason(
                complete(found), queries, loop.spent, budget, deadline - deep_rounds.clock()
            )
            if reason is not None:
                break
            added = await run_round(loop, queries, options, settings, search, emit, deadline, cost)
            passages = first.passages()
            found = check()
            loop.rounds[-1]["gaps"] = round_gaps(loop, found)
            loop.rounds[-1]["answered"] = complete(found)
            if complete(found):
                reason = ANSWERED
            elif not added:
                out_of_time = deadline - deep_rounds.clock() < MIN_ROUND_S
                out_of_money = loop.spent.over_money
                reason = TIME if out_of_time else BUDGET if out_of_money else NO_PROGRESS
    loop.reorder()
    found = check() if not named else found
    pack = first.pack
    pack.timings_ms["deep_rounds"] = round((time.perf_counter() - rounds_started) * 1000, 3)
    if options.answer:
        # A model that directed the rounds writes the answer as claims bound to keys.
        writer = replace(answering, claims=True) if loop.model_directed else answering
        await answer_gathered(
            first, replace(run, answering=writer), answer_rows(loop), None if named else found
        )
    pack.research = _research(loop, options, reason, found)
    if not named:
        pack.verdict = _deep_verdict(pack, found)
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


def _deep_verdict(pack: Pack, found: Answerability) -> RunVerdict:
    """The run's verdict over every round: enough when a sentence answers the question, else
    no better than weak (round 1's verdict stays as the brain's)."""
    cited = citing(of_run(pack))
    says = explain(found, cited)
    before = pack.verdict
    if found.best is not None:
        who = "The web" if cited(found.best.key).startswith("[W") else "Your brain"
        says = f"{who} answers it: {says}"
        combined = {"verdict": ENOUGH_EVIDENCE, "reason": "deep:answered", "message": says}
    elif before.combined["verdict"] == ENOUGH_EVIDENCE:
        combined = {"verdict": WEAK_EVIDENCE, "reason": "deep:not_answered", "message": says}
    else:
        combined = {**before.combined, "message": says}
    return RunVerdict(before.brain, before.web, combined)


def _research(
    loop: Loop, options: ResearchRequest, reason: str, found: Answerability
) -> ResearchJSON:
    """The pack's ``research``: the rounds, why the loop stopped and how far to trust it (the
    loop's own answer check over every round)."""
    pack = loop.pack
    cited = set(pack.answer.citations.get("external", []))
    return {
        "depth": options.depth,
        "strategy": options.strategy,
        "proposals": loop.proposals,
        "rounds": loop.rounds,
        "stop_reason": reason,
        "stop_message": STOP_MESSAGES[reason],
        "confidence": confidence(
            found, [r for r in pack.web_rows if r.source_key in cited], pack.answer.conflicts
        ),
        "answer_check": found.to_json(),
        "spent": loop.spent.as_dict(),
    }


async def _silent(event: dict[str, Any]) -> None:
    """Nobody is watching."""
