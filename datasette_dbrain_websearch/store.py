"""The plugin's own SQLite database: everything the plugin remembers, never the brain.

It lives at ``traces_database`` (default ``research_runs.db`` next to the first brain file),
is created at startup and attached to Datasette as ``research_runs`` so its owners can browse and
facet it (only root and actors allowed ``dbrain-external-search`` may view it as tables: it holds
other people's questions). It holds research runs and their events (traces.py), promotions
(promote.py), relevance feedback and the provider cache.
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
RUNS_TABLE = "dbrain_websearch_runs"
EVENTS_TABLE = "dbrain_websearch_events"
PROMOTIONS_TABLE = "dbrain_websearch_promotions"
FEEDBACK_TABLE = "dbrain_websearch_feedback"

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
create table if not exists {RUNS_TABLE} (
    run_id text primary key,
    started_at text not null,
    completed_at text not null,
    surface text not null,
    database_name text not null,
    question text not null,
    actor_id text not null,
    external_mode text not null,
    external_permitted integer not null,
    external_ran integer not null,
    providers text not null,
    verdict text not null,
    evidence_count integer not null,
    external_evidence_count integer not null,
    warning_codes text not null,
    total_ms real not null,
    trace_json text not null
);
create index if not exists idx_{RUNS_TABLE}_started_at on {RUNS_TABLE}(started_at);
create table if not exists {EVENTS_TABLE} (
    id integer primary key,
    run_id text not null references {RUNS_TABLE}(run_id) on delete cascade,
    seq integer not null,
    at text not null,
    name text not null,
    data_json text not null
);
create index if not exists idx_{EVENTS_TABLE}_run_id on {EVENTS_TABLE}(run_id);
create table if not exists {PROMOTIONS_TABLE} (
    id integer primary key,
    run_id text not null,
    external_source_key text not null,
    local_source_key text not null,
    database_name text not null,
    status text not null,
    url text not null,
    provider text not null,
    provider_query text not null,
    provider_rank integer not null,
    retrieved_at text not null,
    promoted_at text not null,
    actor_id text not null,
    content_hash text not null,
    fetched integer not null,
    extract_error text not null
);
create index if not exists idx_{PROMOTIONS_TABLE}_run_id on {PROMOTIONS_TABLE}(run_id);
create table if not exists {FEEDBACK_TABLE} (
    id integer primary key,
    run_id text not null,
    key text not null,
    value text not null,
    actor_id text not null,
    created_at text not null,
    unique (run_id, key)
);
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
            conn.execute(f"delete from {CACHE_TABLE} where expires_at <= ?", [utc(now)])
            conn.execute(
                f"insert or replace into {CACHE_TABLE} values (?, ?, ?, ?, ?, ?, ?)", values
            )

    await db.execute_write_fn(write)


async def feedback_for(db: Any, run_id: str) -> list[dict[str, str]]:
    """A run's relevance marks, oldest first (one per key: the latest wins)."""
    rows = await db.execute(
        f"select key, value from {FEEDBACK_TABLE} where run_id = ? order by id", [run_id]
    )
    return [{"key": r[0], "value": r[1]} for r in rows.rows]


async def save_feedback(db: Any, run_id: str, marks: list[dict[str, str]], actor_id: str) -> None:
    now = utc(datetime.now(UTC))

    def write(conn: sqlite3.Connection) -> None:
        with conn:
            for mark in marks:
                conn.execute(
                    f"delete from {FEEDBACK_TABLE} where run_id = ? and key = ?",
                    [run_id, mark["key"]],
                )
                conn.execute(
                    f"insert into {FEEDBACK_TABLE} (run_id, key, value, actor_id, created_at) "
                    "values (?, ?, ?, ?, ?)",
                    [run_id, mark["key"], mark["value"], actor_id, now],
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
