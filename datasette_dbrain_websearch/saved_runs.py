"""What the surfaces read of saved runs besides a run itself (``service.visible_trace``): an
actor's recent runs, the marks given on a run, what runs' provider calls cost, the run a
promoted source came from, and waiting for a run's save. All of it is in the plugin database;
without one (``saving`` is false) nothing was saved."""

from __future__ import annotations

from typing import Any

from . import ledger, traces
from .feedback_store import feedback_for
from .promotion_provenance import promoted_from
from .runs_db import plugin_database


def saving(datasette: Any) -> bool:
    """Whether this Datasette saves runs (it has the plugin database)."""
    return plugin_database(datasette) is not None


async def recent_runs(datasette: Any, where: traces.RunFilter) -> list[dict[str, Any]]:
    """The newest saved runs that match (``traces.recent``); none while nothing is saved."""
    db = plugin_database(datasette)
    return await traces.recent(db, where) if db is not None else []


async def marks_on(datasette: Any, run_id: str) -> list[dict[str, str]]:
    """The relevance marks people gave a saved run's rows, oldest first."""
    return await feedback_for(plugin_database(datasette), run_id)


async def costs_of(datasette: Any, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """What each run asked of the providers, and what it cost (``ledger.run_costs``)."""
    return await ledger.run_costs(plugin_database(datasette), run_ids)


async def promoting_run(datasette: Any, database: str, source_key: str) -> str | None:
    """The run whose web result a promotion made into this source (``promote.promoted_from``)."""
    return await promoted_from(plugin_database(datasette), database, source_key)


async def settle(datasette: Any, run_id: str) -> None:
    """Wait for a run's save under way, so it reads as saved (``traces.settle``)."""
    await traces.settle(plugin_database(datasette), run_id)
