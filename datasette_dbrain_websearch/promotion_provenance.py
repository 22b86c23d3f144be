"""Where each promoted source came from: its provenance record in the plugin's database (never
the brain), held before the brain is written and completed after, and read back.

A source row is never written without the record of where it came from: the records are held
as ``pending``, then completed with what the write did, or taken back if the brain refuses.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Mapping
from typing import Any

from .errors import ResearchError
from .promotion_rows import Candidate
from .runs_db import PROMOTIONS_TABLE, bounded_write
from .schema import sqlite_database

PENDING = "pending"  # a provenance record held before its source row is written


def provenance_rows(
    trace: Mapping[str, Any],
    database: str,
    candidates: list[Candidate],
    results: list[dict[str, Any]],
    actor_id: str,
    now: str,
) -> list[dict[str, Any]]:
    """One plugin-database row per promoted key: where it came from and who promoted it."""
    queries = {q["provider"]: q["query"] for q in trace["pack"]["query_plan"]["external_queries"]}
    return [
        {
            "run_id": trace["run_id"],
            "external_source_key": item.web_source_key,
            "local_source_key": result["local_source_key"],
            "database_name": database,
            "status": result["status"],
            "url": item.url,
            "provider": item.provider,
            "provider_query": queries.get(item.provider, ""),
            "provider_rank": item.rank,
            "retrieved_at": trace["started_at"],
            "promoted_at": now,
            "actor_id": actor_id,
            "content_hash": result["content_hash"],
            "fetched": int(result["fetch"] == "fetched"),
            "extract_error": item.extract_error if result["fetch"] == "failed" else "",
            "tags": result.get("tags", ""),
            "note_item_key": result.get("note_key", ""),
        }
        for item, result in zip(candidates, results, strict=True)
    ]


def write_provenance(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> list[int]:
    """Append the provenance rows to the plugin's own database (never the brain); their ids."""
    table = sqlite_database(conn).table(PROMOTIONS_TABLE)
    ids = []
    with conn:
        for row in rows:
            table.insert(row)
            ids.append(int(table.last_rowid or 0))
    return ids


async def hold_provenance(
    plugin_db: Any, trace: Mapping[str, Any], candidates: list[Candidate], actor_id: str, now: str
) -> list[int]:
    """Record where each page comes from before the brain is written, or refuse the promotion
    (503) when the plugin's database cannot take the records."""
    if plugin_db is None:
        return []
    pending = [
        {
            "source_key": c.web_source_key,
            "local_source_key": c.columns["source_key"],
            "status": PENDING,
            "content_hash": "",
            "fetch": "not_fetched",
        }
        for c in candidates
    ]
    records = provenance_rows(trace, trace["database"], candidates, pending, actor_id, now)
    try:
        return await bounded_write(plugin_db, lambda conn: write_provenance(conn, records))
    except sqlite3.Error as exc:
        raise ResearchError(
            "Nothing was promoted: the plugin's database could not record where the pages come "
            f"from ({type(exc).__name__}); try again in a moment.",
            503,
            "provenance_not_saved",
            retry_after=2,
        ) from exc


async def release_provenance(plugin_db: Any, ids: list[int]) -> None:
    """Take back the pending records of a promotion the brain refused (best effort: left
    behind, a pending record names no row of the brain)."""
    if plugin_db is None or not ids:
        return
    marks = ", ".join("?" for _ in ids)

    def release(conn: sqlite3.Connection) -> None:
        with conn:
            conn.execute(
                f"delete from {PROMOTIONS_TABLE} where status = ? and id in ({marks})",
                [PENDING, *ids],
            )

    with contextlib.suppress(Exception):
        await bounded_write(plugin_db, release)


def complete_provenance(
    conn: sqlite3.Connection, ids: list[int], records: list[dict[str, Any]]
) -> None:
    """The pending records, completed with what the brain write did."""
    table = sqlite_database(conn).table(PROMOTIONS_TABLE)
    with conn:
        for row_id, record in zip(ids, records, strict=True):
            table.update(row_id, record)


async def promoted_from(plugin_db: Any, database: str, source_key: str) -> str | None:
    """The run whose web result a promotion made into this brain's source, if one did; None
    too while the plugin database is locked (a row page shows the plain key then)."""
    try:
        rows = await plugin_db.execute(
            f"select run_id from {PROMOTIONS_TABLE} where database_name = ? "
            "and local_source_key = ? and status = 'created' order by id limit 1",
            [database, source_key],
        )
    except sqlite3.Error:
        return None
    return rows.rows[0][0] if rows.rows else None


async def promoted_in_run(plugin_db: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """What was promoted from a run so far: ext key -> local key, brain and row id."""
    rows = await plugin_db.execute(
        f"select external_source_key, local_source_key, database_name from {PROMOTIONS_TABLE} "
        "where run_id = ? and status != ? order by id",
        [run_id, PENDING],
    )
    return {r[0]: {"local_source_key": r[1], "database": r[2]} for r in rows.rows}
