"""What a question's ranking query will read, measured before it runs (``survey``): the plan
narrowed when it would read more than the postings budget (``narrow``), the question's words as
the whole brain holds them (``brain_frequencies``, the judge's weights), and what the question
will cost (``question_cost``), so a costly question is admitted by its cost (``admission``).
"""

from __future__ import annotations

import sqlite3

from . import cost, lexical
from .brain import FTS_TABLE, TABLE, Filters, brain_shape
from .query_plan import QueryPlan

Survey = dict[str, lexical.TableSurvey]  # by kind: what each table's ranking query will read


def survey(conn: sqlite3.Connection, plan: QueryPlan, filters: Filters) -> Survey:
    """Each searched table's ``TableSurvey`` for a simple question ranked by BM25 (empty for
    raw queries and questions with nothing to search)."""
    if plan.syntax == "raw" or not plan.searchable:
        return {}
    kinds = filters.kinds(brain_shape(conn))
    return {k: lexical.survey_table(conn, FTS_TABLE[k], TABLE[k], plan) for k in kinds}


def narrow(plan: QueryPlan, surveyed: Survey) -> QueryPlan:
    """The plan without the commonest terms when its ranking query would read more than the
    postings budget (``cost.narrowed_terms``)."""
    if not surveyed:
        return plan
    totals, rows = brain_frequencies(surveyed)
    return plan.narrowed(cost.narrowed_terms(totals, cost.postings_budget(rows)))


def brain_frequencies(surveyed: Survey) -> tuple[dict[str, int], int]:
    """Each search term's rows across the searched tables, and those tables' rows together: the
    question's words as the whole brain holds them."""
    totals: dict[str, int] = {}
    for table in surveyed.values():
        for name, rows in table.frequencies.items():
            totals[name] = totals.get(name, 0) + rows
    return totals, sum(t.rows for t in surveyed.values())


def question_cost(plan: QueryPlan, surveyed: Survey, ranking: str) -> cost.Cost:
    """What the (narrowed) question will cost (``cost``)."""
    if plan.syntax == "raw":
        return cost.raw_cost(plan.fts_query, plan.query_terms)
    if ranking == "dbrain":
        return cost.dbrain_cost(plan.dbrain_terms or plan.query_terms)
    kept = {t.name for t in plan.search_terms} - set(plan.dropped)
    postings = sum(
        rows
        for table in surveyed.values()
        for name, rows in table.frequencies.items()
        if name in kept
    )
    return cost.counted_cost(postings)
