"""Promotion as the surfaces ask for it: which brain takes a run's web rows, writing them as
the actor (``promote`` does the writing), what a saved run already promoted, and each
outcome in words. The endpoint and the tools come here once their checks pass."""

from __future__ import annotations

import sqlite3
from functools import partial
from typing import Any

from .brain_access import check_unchanged, reader, table_names
from .compat import track_promotion, write_options
from .config import Settings
from .errors import ResearchError, sqlite_error
from .pack_json import PackJSON
from .promote import promote
from .promotion_provenance import promoted_in_run
from .runs_db import plugin_database
from .service import actor_id_of
from .traces import TraceJSON


async def promoted_rows(datasette: Any, pack: PackJSON | None) -> dict[str, dict]:
    """For a saved run: the web rows already promoted, with the local row to link to."""
    db = plugin_database(datasette)
    if pack is None or db is None or not pack.get("trace_url"):
        return {}
    promoted = await promoted_in_run(db, pack["run_id"])
    for web_source_key, info in promoted.items():
        brain = info["database"]
        if brain not in datasette.databases:
            continue
        row_id = await reader(datasette.get_database(brain))(
            partial(source_id, source_key=info["local_source_key"])
        )
        promoted[web_source_key]["row_url"] = (
            str(datasette.urls.row(brain, "sources", str(row_id))) if row_id else ""
        )
    return promoted


def source_id(conn: sqlite3.Connection, source_key: str) -> int | None:
    row = conn.execute("select id from sources where source_key = ?", [source_key]).fetchone()
    return row[0] if row else None


def promotion_brain(datasette: Any, trace: TraceJSON) -> Any:
    """The brain a run's promotion writes into: attached and the file research read, or the
    ResearchError that refuses it (the endpoint and the tools check alike)."""
    brain = datasette.databases.get(trace["database"])
    if brain is None:
        raise ResearchError(f"The brain '{trace['database']}' is not attached.", 404, "no_brain")
    check_unchanged(brain)
    return brain


async def takes_promotions(datasette: Any, database: str) -> bool:
    """Whether web rows can be promoted into this brain: it has dbrain's sources index."""
    return "sources_fts" in await reader(datasette.get_database(database))(table_names)


async def write_promotion(
    datasette: Any,
    actor: dict | None,
    trace: TraceJSON,
    promotion: Any,
    brain: Any,
    request: Any = None,
) -> list[dict[str, Any]]:
    """Promote a run's web rows into its brain as this actor (the endpoint and the tools all
    come here once their checks pass), with SQLite failures in the plugin's words; Datasette
    1.0 hears of it (``track_event``, and ``request=`` for its write hooks)."""
    settings = Settings.from_datasette(datasette)
    try:
        results = await promote(
            brain,
            plugin_database(datasette),
            trace,
            promotion,
            actor_id_of(actor),
            settings.web.fetch_allow_networks,
            settings.semantic.model,
            write_options(brain, request),
        )
    except sqlite3.Error as exc:
        raise sqlite_error(exc, trace["database"]) from exc
    await track_promotion(datasette, actor, trace, results)
    return results


def promotion_message(result: dict[str, Any]) -> str:
    """One promotion, told by title: added or already there, and what became of the fetch."""
    title = f"“{result['title']}”" if result.get("title") else result["local_source_key"]
    said = (
        f"Added {title} as {result['local_source_key']}."
        if result["status"] == "created"
        else f"{title} was already in your brain as {result['local_source_key']}."
    )
    if result.get("tags"):
        said += f" Tags: {result['tags']}."
    if result.get("note_key"):
        said += f" Your note is {result['note_key']}, linked to it."
    if result.get("fetch") == "failed":
        said += " The page could not be fetched: kept the provider's text; dbrain will retry."
    return said
