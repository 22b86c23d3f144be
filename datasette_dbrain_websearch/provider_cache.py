"""The provider cache: a web search provider's answer (or a page read), kept in the runs
database for its ``ttl`` so the same question asked again costs no second call.

Its own module so the runs database (``runs_db``) stays its file, locks and tables; the cache's
table is declared there (``CACHE_TABLE``) with the others, and ``runs_db.purge_cache`` empties it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from .providers.base import WebResult
from .runs_db import CACHE_TABLE, bounded_write, utc
from .schema import sqlite_database


def cache_key(provider: str, params: dict[str, Any]) -> str:
    """Provider + query + parameters (secrets are never part of ``params``)."""
    blob = json.dumps({"provider": provider, **params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


async def cache_get(db: Any, key: str, now: datetime | None = None) -> list[WebResult] | None:
    now = now or datetime.now(UTC)
    rows = await db.execute(
        f"select results_json from {CACHE_TABLE} where cache_key = ? and expires_at > ?",
        [key, utc(now)],
    )
    row = rows.first()
    if row is None:
        return None
    return [
        WebResult(**{**item, "highlights": tuple(item.get("highlights") or ())})
        for item in json.loads(row[0])
    ]


async def cache_put(
    db: Any,
    key: str,
    provider: str,
    params: dict[str, Any],
    results: list[WebResult],
    ttl: int,
    now: datetime | None = None,
) -> None:
    now = now or datetime.now(UTC)
    row = {
        "cache_key": key,
        "provider": provider,
        "query": str(params.get("query", "")),
        "params_json": json.dumps(params, sort_keys=True, default=str),
        "results_json": json.dumps([asdict(r) for r in results]),
        "created_at": utc(now),
        "expires_at": utc(now + timedelta(seconds=ttl)),
    }

    def write(conn: sqlite3.Connection) -> None:
        with conn:
            conn.execute(f"delete from {CACHE_TABLE} where expires_at <= ?", [utc(now)])
            sqlite_database(conn).table(CACHE_TABLE).insert(row, replace=True)

    await bounded_write(db, write)
