"""Deep research's rounds: why the loop stops before the next one (``stop_reason``), and one
round of follow-up queries, each researched within the budgets and the time left.

A follow-up is a run of its own (``follow_up_options``): the brain, then the web while the
mode, the permission and ``deep``'s budgets allow (checked before the call with the worst case,
every provider of the fallback order: ``web_cost``), its share of the page reads
(``round_reads``), and settings that end within the loop's time (``bounded``). Its new rows
merge into the run (``deep_state.Loop``), and the page hears of each query as it is asked.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any

from .config import DeepSettings, Settings
from .deep_follow_ups import FollowUp
from .deep_state import Loop, Spent
from .display import plural
from .errors import ResearchError
from .options import QUICK, ResearchRequest
from .pack_json import ResearchRoundJSON
from .pipeline import Gathered, Progress, WebAccess
from .web import provider_order

ANSWERED, NO_PROGRESS, BUDGET, TIME = "answered", "no_progress", "budget", "time"
STOP_MESSAGES = {
    ANSWERED: "a sentence of your brain's rows or the pages read answers the question",
    NO_PROGRESS: "the last round found nothing new, or nothing was left to ask",
    BUDGET: "its budget of rounds, web searches, page reads or provider spending ran out",
    TIME: "its time ran out",
}
MIN_ROUND_S = 1.0  # less time than this left: no round starts

# The deep loop's clock (a test replaces it to spend a run's time without waiting).
clock: Callable[[], float] = time.monotonic


def stop_reason(
    answered: bool,
    queries: Sequence[FollowUp],
    spent: Spent,
    budget: DeepSettings,
    seconds_left: float,
) -> str | None:
    """Why the loop stops before the next round, or None to go on (checked in this order:
    answered (a sentence answers the question: ``deep_check``), out of rounds or money, out
    of time, nothing left to ask)."""
    if answered:
        return ANSWERED
    if spent.rounds >= budget.rounds or spent.over_money:
        return BUDGET
    if seconds_left < MIN_ROUND_S:
        return TIME
    if not queries:
        return NO_PROGRESS
    return None


def bounded(settings: Settings, seconds_left: float) -> Settings:
    """A round's settings: its web stage and brain search end within the loop's time left."""
    left_ms = max(50, int(seconds_left * 1000))
    web = replace(settings.web, timeout=max(0.5, min(settings.web.timeout, seconds_left)))
    return replace(settings, web=web, time_limit_ms=min(settings.time_limit_ms, left_ms))


def web_cost(options: ResearchRequest, settings: Settings, web: WebAccess) -> int:
    """The most provider calls one search may make: every provider of its order (a fallback
    calls the next when one fails)."""
    names, _ = provider_order(options.web.providers, settings.web, web.providers)
    return max(1, len(names))


def round_reads(budget: DeepSettings, spent: Spent, rounds_left: int, queries: int) -> int:
    """Pages one search of this round may read: an even share of what is left."""
    left = max(0, budget.reads - spent.reads)
    return min(left, math.ceil(left / max(1, rounds_left) / max(1, queries)))


def follow_up_options(
    options: ResearchRequest, query: str, reads: int, web_allowed: bool
) -> ResearchRequest:
    """A follow-up's request: the question's filters and web choices, the follow-up's words,
    no answer, its share of the reads, and the web only while the budget allows."""
    request = replace(options.web, read=reads, mode=options.web.mode if web_allowed else "never")
    return replace(
        options, question=query, answer=False, expand=(), syntax="simple", depth=QUICK, web=request
    )


Search = Callable[..., Awaitable[Gathered]]  # one follow-up: options, bounds, pages read


async def say_round(emit: Progress, round_no: int, queries: Sequence[FollowUp]) -> None:
    """The page's progress line for a round: its queries and why each is asked."""
    said = "; ".join(f"“{q.query}” ({q.why})" for q in queries)
    await emit(
        {
            "stage": "deep",
            "status": "round",
            "round": round_no,
            "queries": [{"query": q.query, "why": q.why} for q in queries],
            "message": f"Deep research, round {round_no}: {said}",
        }
    )


async def run_round(
    loop: Loop,
    queries: list[FollowUp],
    options: ResearchRequest,
    settings: Settings,
    search: Search,
    emit: Progress,
    deadline: float,
    cost: int,
) -> list[str]:
    """One follow-up round: each query researched in turn (the brain, then the web while the
    budget allows), its new rows merged. Returns the keys the round added."""
    spent, deep = loop.spent, settings.deep
    spent.rounds += 1
    round_no = spent.rounds
    await say_round(emit, round_no, queries)
    record: ResearchRoundJSON = {"round": round_no, "queries": [], "added": [], "gaps": []}
    loop.rounds.append(record)
    for n, follow in enumerate(queries):
        left = deadline - clock()
        if left < MIN_ROUND_S:
            break
        reading = follow.reason == "read"  # a model's read: the page itself, no provider
        web_allowed = reading or (
            not spent.over_money and spent.web_searches + cost <= deep.web_searches
        )
        reads = (
            1 if reading else round_reads(deep, spent, deep.rounds - round_no + 1, len(queries) - n)
        )
        loop.asked.append(follow.query)
        try:
            sub = await search(
                follow_up_options(options, follow.query, reads, web_allowed),
                bounded(settings, left),
                frozenset(loop.first.read_urls),
            )
        except ResearchError as exc:  # a busy brain or a spent time limit: the run goes on
            loop.pack.warnings.append(
                {
                    "code": "deep_follow_up_failed",
                    "message": f"The follow-up “{follow.query}” could not be researched: "
                    f"{exc.message}",
                }
            )
            record["queries"].append(_asked(follow, False, 0))
            continue
        loop.count(sub)
        added = (loop.merge_read if reading else loop.merge)(sub, round_no, follow)
        loop.added_order += added
        record["added"] += added
        record["queries"].append(_asked(follow, sub.pack.web_search.ran, len(added)))
        await emit(
            {
                "stage": "deep",
                "status": "query",
                "round": round_no,
                "query": follow.query,
                "added": len(added),
                "message": f"“{follow.query}”: {plural(len(added), 'new row')}",
            }
        )
    return record["added"]


def _asked(follow: FollowUp, searched_web: bool, added: int) -> dict[str, Any]:
    return {
        "query": follow.query,
        "why": follow.why,
        "reason": follow.reason,
        "searched_web": searched_web,
        "added": added,
        "proposed_by": follow.proposed_by,
    }
