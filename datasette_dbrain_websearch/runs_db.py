"""The runs database, the plugin's own SQLite file: everything it remembers, never the brain.

(Named so beside dbrain, which calls the brain its store.)

It lives at ``traces_database`` (default ``research_runs.db`` next to the first brain file),
is created (or brought up to date) at startup with sqlite-utils and attached to Datasette as
``research_runs`` so root can browse and facet it (no one else may view it as tables: it holds
other people's questions). It holds research runs and their events (traces.py), promotions
(promotion_provenance.py), relevance feedback (feedback_store.py), the provider cache
(provider_cache.py), the provider ledger (ledger.py) and the semantic lane's vectors
(semantic_index.py). This module holds the file itself: its locks (``bounded_write``,
``write_locked``), its tables and their migration, purging the cache, and reading a saved run
from a runs file outside Datasette (``read_saved_run``).
"""

from __future__ import annotations

import json
import sqlite3
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlite_utils

from .compat import write_opens_transaction
from .errors import busy_timeout
from .schema import sqlite_database
from .semantic_index import create_table as create_embeddings_table

T = TypeVar("T")

WRITE_WAIT_MS = 1000  # how long a write waits for a lock another program holds (SQLite's: 5 s)


async def bounded_write(db: Any, fn: Callable[[sqlite3.Connection], T], **options: Any) -> T:
    """``db.execute_write_fn(fn)``, waiting at most ``WRITE_WAIT_MS`` for another program's
    lock: a locked runs database costs a request a second, not five, and the caller says what
    was not saved (``trace_not_saved``, ``provenance_not_saved``).

    Datasette 1.0 opens the transaction (``BEGIN IMMEDIATE``, where the wait happens) before
    ``fn`` runs, so there the transaction is opened here, inside the bounded wait."""
    opens = write_opens_transaction(db)

    def bounded(conn: sqlite3.Connection) -> T:
        _WRITING[db] = clock()
        try:
            with busy_timeout(conn, WRITE_WAIT_MS):
                if not opens:
                    return fn(conn)
                with conn:
                    conn.execute("BEGIN IMMEDIATE")
                    return fn(conn)
        finally:
            _WRITING.pop(db, None)

    if opens:
        options["transaction"] = False
    return await db.execute_write_fn(bounded, **options)


# The Databases a ``bounded_write`` is writing to now (one at a time each: its write thread),
# with when it began (``clock``).
_WRITING: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
clock: Callable[[], float] = time.perf_counter
# Our own write holds the lock for milliseconds; one under way for longer is waiting for a lock
# too, another program's.
OWN_WRITE_S = 0.05
# One connection per Database for ``write_locked``, kept open: a look then costs one lock
# attempt (microseconds), never an open, nor the checkpoint a WAL file's last close makes.
_PROBES: weakref.WeakKeyDictionary[Any, sqlite3.Connection] = weakref.WeakKeyDictionary()


def write_locked(db: Any) -> bool:
    """Does another program hold the database's write lock now? One attempt at the lock that
    does not wait, let go at once (a few microseconds, so it runs on the event loop): a run
    saved after its answer is sent would learn of such a lock only once its link was out. A
    refusal while a write of ours has been under way for less than ``OWN_WRITE_S`` counts as
    that write's (done in milliseconds); a write of ours under way for longer is itself waiting
    out another program's lock."""
    try:
        conn = _PROBES.get(db)
        if conn is None:
            conn = _PROBES[db] = sqlite3.connect(
                db.path, isolation_level=None, timeout=0, check_same_thread=False
            )
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
    except sqlite3.Error:
        ours = _WRITING.get(db)
        return ours is None or clock() - ours > OWN_WRITE_S
    return False


DATABASE_NAME = "research_runs"
DEFAULT_FILENAME = "research_runs.db"
CACHE_TABLE = "dbrain_websearch_provider_cache"
RUNS_TABLE = "dbrain_websearch_runs"
EVENTS_TABLE = "dbrain_websearch_events"
PROMOTIONS_TABLE = "dbrain_websearch_promotions"
FEEDBACK_TABLE = "dbrain_websearch_feedback"
LEDGER_TABLE = "dbrain_websearch_provider_calls"

# Each table's columns, in order, as sqlite-utils creates them (primary keys first). A table an
# older version created keeps its rows; columns added since are added to it at startup.
TABLES: dict[str, dict[str, Any]] = {
    CACHE_TABLE: {
        "columns": {
            "cache_key": str,
            "provider": str,
            "query": str,
            "params_json": str,
            "results_json": str,
            "created_at": str,
            "expires_at": str,
        },
        "pk": "cache_key",
        "indexes": [["expires_at"]],
    },
    RUNS_TABLE: {
        "columns": {
            "run_id": str,
            "started_at": str,
            "completed_at": str,
            "surface": str,
            "database_name": str,
            "question": str,
            "actor_id": str,
            "external_mode": str,
            "external_permitted": int,
            "external_ran": int,
            "providers": str,
            "verdict": str,
            "evidence_count": int,
            "external_evidence_count": int,
            "warning_codes": str,
            "total_ms": float,
            "trace_json": str,
        },
        "pk": "run_id",
        "indexes": [["started_at"], ["actor_id", "started_at"]],
    },
    EVENTS_TABLE: {
        "columns": {
            "id": int,
            "run_id": str,
            "seq": int,
            "at": str,
            "name": str,
            "data_json": str,
        },
        "pk": "id",
        "foreign_keys": [("run_id", RUNS_TABLE, "run_id")],
        "indexes": [["run_id"]],
    },
    PROMOTIONS_TABLE: {
        "columns": {
            "id": int,
            "run_id": str,
            "external_source_key": str,
            "local_source_key": str,
            "database_name": str,
            "status": str,
            "url": str,
            "provider": str,
            "provider_query": str,
            "provider_rank": int,
            "retrieved_at": str,
            "promoted_at": str,
            "actor_id": str,
            "content_hash": str,
            "fetched": int,
            "extract_error": str,
            "tags": str,
            "note_item_key": str,
        },
        "pk": "id",
        "indexes": [["run_id"], ["database_name", "local_source_key"]],
    },
    FEEDBACK_TABLE: {
        "columns": {
            "id": int,
            "run_id": str,
            "key": str,
            "value": str,
            "actor_id": str,
            "created_at": str,
        },
        "pk": "id",
        "indexes": [["run_id", "key"]],
        "unique_index": ["run_id", "key"],
    },
    LEDGER_TABLE: {
        "columns": {
            "id": int,
            "at": str,
            "day": str,
            "provider": str,
            "endpoint": str,
            "status": int,
            "error": str,
            "latency_ms": float,
            "results": int,
            "cost_usd": float,
            "actor_id": str,
            "run_id": str,
        },
        "pk": "id",
        "indexes": [["provider", "day"], ["day"], ["run_id"]],
    },
}


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
    """Create the file and its tables, or bring an older file's tables up to date (idempotent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("pragma journal_mode = wal")
        # One transaction: a new file's ~20 statements then cost one commit, not one each.
        conn.execute("begin")
        with conn:
            migrate(sqlite_database(conn))
            create_embeddings_table(conn)
    finally:
        conn.close()


def migrate(db: sqlite_utils.Database) -> None:
    """Create missing tables, add missing columns (with empty defaults) and indexes."""
    for name, spec in TABLES.items():
        columns: dict[str, Any] = spec["columns"]
        table = db.table(name)
        if not table.exists():
            table.create(
                columns,
                pk=spec["pk"],
                not_null=set(columns) - {spec["pk"]},
                foreign_keys=spec.get("foreign_keys"),
            )
        else:
            for column, kind in columns.items():
                if column not in table.columns_dict:
                    table.add_column(column, kind, not_null_default=EMPTY[kind])
        for index in spec["indexes"]:
            table.create_index(index, if_not_exists=True, unique=index == spec.get("unique_index"))


EMPTY: dict[type, Any] = {str: "", int: 0, float: 0.0}


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


class RunFileError(Exception):
    """A runs database file that cannot be read, or does not hold the run asked for."""


def read_saved_run(path: Path, run_id: str) -> tuple[dict[str, Any], dict[str, str] | None]:
    """A run's saved trace and its feedback (key -> the last value given; None without a
    feedback table), read from a runs database file outside Datasette (the CLI's eval
    proposals), read-only."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise RunFileError(f"{path}: cannot open it ({exc})") from exc
    try:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
        if RUNS_TABLE not in tables:
            raise RunFileError(f"{path} is not the plugin database (no {RUNS_TABLE} table)")
        row = conn.execute(
            f"select trace_json from {RUNS_TABLE} where run_id = ?", [run_id]
        ).fetchone()
        if row is None:
            raise RunFileError(f"no run {run_id} in {path}")
        feedback = None
        if FEEDBACK_TABLE in tables:
            # Oldest first, so a changed mind wins.
            rows = conn.execute(
                f"select key, value from {FEEDBACK_TABLE} where run_id = ? order by id",
                [run_id],
            )
            feedback = {str(key): str(value).strip().lower() for key, value in rows}
    except sqlite3.DatabaseError as exc:
        raise RunFileError(f"{path}: cannot read it ({exc})") from exc
    finally:
        conn.close()
    return json.loads(row[0]), feedback
