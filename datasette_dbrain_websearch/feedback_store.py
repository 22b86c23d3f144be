"""The feedback store: the relevance marks people give a run's rows, kept in the runs database.

Its own module so the runs database (``runs_db``) stays its file, locks and tables; the marks'
table is declared there (``FEEDBACK_TABLE``) with the others. What the marks do (re-ranking,
refinement) is ``feedback.py``'s.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from .runs_db import FEEDBACK_TABLE, bounded_write, utc
from .schema import sqlite_database


async def feedback_for(db: Any, run_id: str) -> list[dict[str, str]]:
    """A run's relevance marks, oldest first (one per key: the latest wins)."""
    rows = await db.execute(
        f"select key, value from {FEEDBACK_TABLE} where run_id = ? order by id", [run_id]
    )
    return [{"key": r[0], "value": r[1]} for r in rows.rows]


async def save_feedback(db: Any, run_id: str, marks: list[dict[str, str]], actor_id: str) -> None:
    now = utc(datetime.now(UTC))

    rows = [
        {
            "run_id": run_id,
            "key": m["key"],
            "value": m["value"],
            "actor_id": actor_id,
            "created_at": now,
        }
        for m in marks
    ]

    def write(conn: sqlite3.Connection) -> None:
        # One mark per (run, key): replacing deletes the old mark, so the latest is the newest row.
        with conn:
            sqlite_database(conn).table(FEEDBACK_TABLE).insert_all(rows, replace=True)

    await bounded_write(db, write)
