"""The brain's stage of a research run (``BrainStage``): plan the question, survey what it would
cost, wait for its turn (``admission``), search the brain with the semantic lane when it can
run, and shape the rows with their excerpts, corrections ("did you mean") and warnings.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .admission import Gate, ungated
from .brain import FTS_TABLE
from .brain_access import LIGHT_PROGRESS_OPS, PROGRESS_OPS, Checkpoint, ExecuteFn, TimeBudget, paced
from .config import Settings
from .cost import Cost, check_words
from .embeddings import SemanticUnavailable
from .evidence import RowUrl, brain_evidence_row
from .options import ResearchRequest
from .pack_rows import BrainRow
from .query_plan import QueryPlan, plan_query
from .retrieval import BrainResult, retrieve
from .semantic import SemanticLane, semantic_question, semantic_state, semantic_warnings
from .spelling import Correction, suggest
from .survey import Survey, narrow, question_cost, survey


@dataclass
class BrainStage:
    """What the brain gave: the rows, the plan they were searched with, the semantic lane's
    state, spelling corrections and the warnings and timings of the brain's search."""

    plan: QueryPlan
    cost: Cost
    result: BrainResult
    surveyed: Survey
    rows: list[BrainRow]
    semantic_lane: dict[str, Any]
    lane: SemanticLane | None
    corrections: list[Correction]
    warnings: list[dict[str, Any]]
    timings_ms: dict[str, float]


async def brain_stage(
    brain_query: ExecuteFn,
    budget: TimeBudget,
    options: ResearchRequest,
    settings: Settings,
    database: str,
    row_url: RowUrl,
    semantic_index: str | None,
    gate: Gate | None,
    requester: str | None,
) -> BrainStage:
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
        surveyed = await brain_query(lambda conn: survey(conn, plan, options.filters))
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
            found = _search_brain(
                conn, options, settings, plan, database, semantic_index, surveyed, budget.check
            )
            searched = plan.searched(found[0].prefixed)
            rows = [
                brain_evidence_row(h, searched, row_url, settings.excerpt_chars)
                for h in paced(found[0].hits, budget.check, every=1)
            ]
            return (*found, searched, rows)

        result, semantic_lane, lane, corrections, plan, rows = await brain_query(search)
    budget.yielding, budget.progress_ops = None, PROGRESS_OPS
    return BrainStage(
        plan=plan,
        cost=cost,
        result=result,
        surveyed=surveyed,
        rows=rows,
        semantic_lane=semantic_lane,
        lane=lane,
        corrections=corrections,
        warnings=[*result.warnings, *_brain_warnings(plan, result, semantic_lane)],
        timings_ms={
            "local_survey": round(surveyed_ms, 3),
            "local_turn": round(admitted.waited_s * 1000, 3),
            **{f"local_{k}": v for k, v in result.timings_ms.items() if k != "local"},
            "local": result.timings_ms["local"],
        },
    )


def _search_brain(
    conn: Any,
    options: ResearchRequest,
    settings: Settings,
    plan: QueryPlan,
    database: str,
    semantic_index: str | None,
    surveyed: Survey,
    checkpoint: Checkpoint,
) -> tuple[BrainResult, dict[str, Any], SemanticLane | None, list[Correction]]:
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


def _brain_warnings(
    plan: QueryPlan, result: BrainResult, semantic_lane: dict[str, Any]
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


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
