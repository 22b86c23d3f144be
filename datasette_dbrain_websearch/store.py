"""The plugin's own SQLite database: everything the plugin remembers, never the brain.

It lives at ``traces_database`` (default ``research_runs.db`` next to the first brain file),
is created at startup and attached to Datasette as ``research_runs`` so its owners can browse it
(only actors allowed ``dbrain-external-search`` may view it: it holds other people's questions).
Today it holds the provider cache, so it exists only when web search is enabled; research
traces, promotions and feedback join it later.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import weakref
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .providers.base import WebResult

DATABASE_NAME = "research_runs"
DEFAULT_FILENAME = "research_runs.db"
CACHE_TABLE = "dbrain_websearch_provider_cache"

SCHEMA = f"""
create table if not exists {CACHE_TABLE} (
    cache_key text primary key,
    provider text not null,
    query text not null,
    params_json text not null,
    results_json text not null,
    created_at text not null,
    expires_at text not null
);
create index if not exists idx_{CACHE_TABLE}_expires_at on {CACHE_TABLE}(expires_at);
"""


# The database each Datasette attached for the plugin, by object, never by name: a brain that
# happens to be called research_runs must never receive the plugin's tables.
_ATTACHED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def remember(datasette: Any, database: Any) -> None:
    _ATTACHED[datasette] = database


def plugin_database(datasette: Any) -> Any | None:
    """The plugin's own Database on this Datasette, or None when it has none."""
    return _ATTACHED.get(datasette)


def utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_path(brain_paths: list[str]) -> Path | None:
    """``research_runs.db`` next to the first brain that is a file."""
    for path in brain_paths:
        if path:
            return Path(path).resolve().parent / DEFAULT_FILENAME
    return None


def create(path: Path) -> None:
    """Create the file and its tables (idempotent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("pragma journal_mode = wal")
        conn.executescript(SCHEMA)
        conn.commit()
    finally:
        conn.close()


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
    values = [
        key,
        provider,
        str(params.get("query", "")),
        json.dumps(params, sort_keys=True, default=str),
        json.dumps([asdict(r) for r in results]),
        utc(now),
        utc(now + timedelta(seconds=ttl)),
    ]

    def write(conn: sqlite3.Connection) -> None:
        with conn:
            conn.execute(
                f"insert or replace into {CACHE_TABLE} values (?, ?, ?, ?, ?, ?, ?)", values
            )

    await db.execute_write_fn(write)


def purge_cache(path: Path, expired_only: bool = False) -> int:
    """Delete cached provider responses (all, or only expired ones); returns the count."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            if expired_only:
                cursor = conn.execute(
                    f"delete from {CACHE_TABLE} where expires_at <= ?", [utc(datetime.now(UTC))]
                )
            else:
                cursor = conn.execute(f"delete from {CACHE_TABLE}")
        return cursor.rowcount
    finally:
        conn.close()
