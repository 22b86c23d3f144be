"""Research traces: every run saved as dbrain's ``research_trace.v1``, in the plugin database.

A trace answers "why did this run say that?": the query plan, what local retrieval found, the
judge's inputs, whether and why the web was (not) searched, what each provider was asked and
returned (bounded), every merge decision and the timings. The pack inside is the one the user
saw, already scrubbed of secrets. This module builds a trace, stores and loads it; its events
are ``trace_events``'s. Retention keeps the newest 500 runs plus any run younger than 180 days,
as dbrain's does.A saved run's shape, as ``load`` returns it, is ``TraceJSON``; its events are
``trace_events.TraceEvent``. (No postponed annotations here: ``TypedDict`` reads ``NotRequired``
when the class is made.)
"""

import asyncio
import json
import logging
import re
import sqlite3
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NotRequired, TypedDict

from .errors import is_busy
from .judge import NO_EVIDENCE
from .pack_json import AnswerJSON, PackJSON
from .runs_db import (
    EVENTS_TABLE,
    FEEDBACK_TABLE,
    RUNS_TABLE,
    bounded_write,
    plugin_database,
    write_locked,
)
from .trace_event_types import TraceEvent
from .trace_events import events_for, iso

TRACE_SCHEMA = "research_trace.v1"
PROVIDERS_FAILED = "providers_failed"
RUN_ID = re.compile(r"\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{12,64}")
KEEP_RUNS = 500
KEEP_DAYS = 180
MAX_RUNS = 20_000  # a hard ceiling, whatever their age, so a flood of runs cannot fill the disk

log = logging.getLogger("datasette_dbrain_websearch")


def run_started(run_id: str) -> datetime:
    """The start time a dbrain run id encodes (``20060102T150405.000000000Z-<hex>``)."""
    stamp, fraction = run_id[:15], run_id[16:25]
    moment = datetime.strptime(stamp, "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    return moment + timedelta(microseconds=int(fraction) // 1000)


class PermissionsJSON(TypedDict):
    """What the actor was permitted when the run was made."""

    external_search: bool


class AnswerMetricsJSON(TypedDict):
    """The answer, counted."""

    status: str
    synthesizer: str
    sentences: int
    unsupported_sentences: int
    local_citations: int
    external_citations: int
    rejected_citations: int


class MetricsJSON(TypedDict):
    """The run in numbers (what the runs table's columns are made from)."""

    verdict: str
    evidence_count: int
    external_evidence_count: int
    providers: list[str]
    warnings: list[str]
    timings_ms: dict[str, float]
    answer: NotRequired[AnswerMetricsJSON]  # runs saved before the answer stage have none


class TraceJSON(TypedDict):
    """One saved run: ``research_trace.v1``."""

    schema_version: str
    run_id: str
    surface: str
    database: str
    question: str
    actor_id: str  # "" for an anonymous visitor
    started_at: str
    completed_at: str
    permissions: PermissionsJSON
    events: list[TraceEvent]
    metrics: MetricsJSON
    pack: PackJSON
    stop_reason: str


def answer_metrics(answer: AnswerJSON) -> AnswerMetricsJSON:
    citations = answer["citations"]
    return {
        "status": answer["status"],
        "synthesizer": answer["synthesizer"],
        "sentences": len(answer["sentences"]),
        "unsupported_sentences": sum(1 for s in answer["sentences"] if not s["supported"]),
        "local_citations": len(citations.get("local", [])),
        "external_citations": len(citations.get("external", [])),
        "rejected_citations": len(answer["rejected_citations"]),
    }


def build_trace(pack: PackJSON, *, surface: str, actor_id: str, web_permitted: bool) -> TraceJSON:
    """``research_trace.v1`` for a finished run (pure)."""
    started = run_started(pack["run_id"])
    completed = started + timedelta(milliseconds=pack["timings_ms"].get("total", 0.0))
    return {
        "schema_version": TRACE_SCHEMA,
        "run_id": pack["run_id"],
        "surface": surface,
        "database": pack["database"],
        "question": pack["question"],
        "actor_id": actor_id,
        "started_at": iso(started),
        "completed_at": iso(completed),
        "permissions": {"external_search": web_permitted},
        "events": events_for(pack, started),
        "metrics": {
            "verdict": pack["judge"]["verdict"],
            "evidence_count": len(pack["evidence"]),
            "external_evidence_count": len(pack["external_evidence"]),
            "providers": pack["external_search"]["providers"],
            "warnings": [w["code"] for w in pack["warnings"]],
            "timings_ms": pack["timings_ms"],
            "answer": answer_metrics(pack["answer"]),
        },
        "pack": pack,
        "stop_reason": stop_reason(pack),
    }


def stop_reason(pack: PackJSON) -> str:
    """The verdict, except that a run with no local evidence whose every provider failed says
    so: "the web was asked and could not answer" is not "there is nothing to find"."""
    verdict = pack["judge"]["verdict"]
    web = pack["external_search"]
    queries = pack["query_plan"]["external_queries"]
    if (
        verdict == NO_EVIDENCE
        and web["ran"]
        and not web["providers"]
        and not pack["external_evidence"]
        and any(q.get("error") for q in queries)
    ):
        return PROVIDERS_FAILED
    return verdict


def _row(trace: TraceJSON) -> dict[str, Any]:
    pack, metrics = trace["pack"], trace["metrics"]
    return {
        "run_id": trace["run_id"],
        "started_at": trace["started_at"],
        "completed_at": trace["completed_at"],
        "surface": trace["surface"],
        "database_name": trace["database"],
        "question": trace["question"],
        "actor_id": trace["actor_id"],
        "external_mode": pack["external_search"]["mode"],
        "external_permitted": int(trace["permissions"]["external_search"]),
        "external_ran": int(pack["external_search"]["ran"]),
        "providers": ",".join(metrics["providers"]),
        "verdict": metrics["verdict"],
        "evidence_count": metrics["evidence_count"],
        "external_evidence_count": metrics["external_evidence_count"],
        "warning_codes": ",".join(metrics["warnings"]),
        "total_ms": metrics["timings_ms"].get("total", 0.0),
        "trace_json": json.dumps(trace, ensure_ascii=False),
    }


def _serialized(trace: TraceJSON) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's row and its events' rows."""
    events = [
        {
            "run_id": trace["run_id"],
            "seq": seq,
            "at": e["at"],
            "name": e["name"],
            "data_json": json.dumps(e["data"], ensure_ascii=False),
        }
        for seq, e in enumerate(trace["events"])
    ]
    return _row(trace), events


async def save(db: Any, trace: TraceJSON, now: datetime | None = None) -> None:
    """Insert the run and its events in one transaction, then apply retention."""
    await _write(db, trace, now)


async def _write(db: Any, trace: TraceJSON, now: datetime | None = None) -> None:
    cutoff = iso((now or datetime.now(UTC)) - timedelta(days=KEEP_DAYS))

    def write(conn: sqlite3.Connection) -> None:
        row, events = _serialized(trace)
        with conn:
            conn.execute(_insert(RUNS_TABLE, row, "insert or replace"), list(row.values()))
            conn.execute(f"delete from {EVENTS_TABLE} where run_id = ?", [row["run_id"]])
            if events:
                conn.executemany(
                    _insert(EVENTS_TABLE, events[0]), [list(e.values()) for e in events]
                )
            prune(conn, cutoff)

    await bounded_write(db, write)


def _insert(table: str, row: dict[str, Any], verb: str = "insert") -> str:
    """The statement inserting a row of these columns (plain SQL: a run is saved on every
    answer, and sqlite-utils reads the table's schema on every insert)."""
    columns = ", ".join(f"[{name}]" for name in row)
    return f"{verb} into [{table}] ({columns}) values ({', '.join('?' for _ in row)})"


# Saves still under way, by plugin Database, then run id: a read of a run waits for its save.
_PENDING: weakref.WeakKeyDictionary[Any, dict[str, asyncio.Task[None]]] = (
    weakref.WeakKeyDictionary()
)


async def settle(db: Any, run_id: str | None = None) -> None:
    """Wait for the saves under way (of one run, or all), so a run just answered reads as
    saved; a failed save was logged by ``_save_logged`` and reads as missing."""
    pending = (_PENDING.get(db) or {}) if db is not None else {}
    # A list of runs does not wait for a save retrying behind another program's lock.
    waiting = {k: t for k, t in pending.items() if k == run_id or k not in _RETRYING}
    tasks = [waiting[run_id]] if run_id in waiting else [] if run_id else list(waiting.values())
    loop = asyncio.get_running_loop()
    tasks = [t for t in tasks if t.get_loop() is loop]
    if tasks:
        await asyncio.wait(tasks)


# Pauses between attempts at a save beside the response that another program's lock refused
# (taken after ``write_locked`` found the database free): the answer already links to the run,
# so the save keeps trying for about half a minute.
SAVE_RETRY_PAUSES_S = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0)
pause_before_retry: Callable[[float], Awaitable[None]] = asyncio.sleep


async def _save_logged(
    db: Any,
    run_id: str,
    trace: TraceJSON,
) -> None:
    """Save a run whose answer was sent; while the runs database is locked, try again after
    each of ``SAVE_RETRY_PAUSES_S`` (``pause_before_retry`` waits them: tests replace it)."""
    pauses = iter(SAVE_RETRY_PAUSES_S)
    try:
        while True:
            try:
                await _write(db, trace)
                return
            except sqlite3.Error as exc:
                wait = next(pauses, None)
                if wait is None or not is_busy(exc):
                    raise
                _RETRYING.add(run_id)
                await pause_before_retry(wait)
    except Exception as exc:  # the answer was sent already: say it in the log, and on its link
        log.warning("dbrain-websearch: run %s was not saved: %r", run_id, exc)
        _NOT_SAVED[run_id] = type(exc).__name__
        while len(_NOT_SAVED) > MAX_NOT_SAVED:
            _NOT_SAVED.pop(next(iter(_NOT_SAVED)))
    finally:
        _RETRYING.discard(run_id)


# Runs whose save is waiting out another program's lock.
_RETRYING: set[str] = set()


# Runs whose save beside the response failed (a locked or full runs database), by run id: their
# link, already on the page, says so instead of a bare "no saved run".
_NOT_SAVED: dict[str, str] = {}
MAX_NOT_SAVED = 1000


def not_saved(run_id: str) -> str:
    """Why a run answered in this process could not be saved, or ``""``."""
    return _NOT_SAVED.get(run_id, "")


def prune(conn: sqlite3.Connection, cutoff: str) -> None:
    """Keep the newest ``KEEP_RUNS`` runs plus every run started after ``cutoff``, never more
    than ``MAX_RUNS``; a pruned run's events and feedback go with it (promotions stay: they
    are the provenance of rows in the brain).

    It runs on every save, so it first asks two index lookups whether anything is due: the
    oldest start, and the span of row ids, which no count of runs exceeds. Counting past
    ``MAX_RUNS`` rows costs about 1.5 ms on a file of 10,000 runs."""
    oldest, span = conn.execute(
        f"select (select min(started_at) from {RUNS_TABLE}), "
        f"(select max(rowid) from {RUNS_TABLE}) - (select min(rowid) from {RUNS_TABLE}) + 1"
    ).fetchone()
    doomed = []
    if oldest is not None and oldest < cutoff and span > KEEP_RUNS:
        doomed.append(
            f"run_id in (select run_id from {RUNS_TABLE} where started_at < :cutoff and run_id "
            f"not in (select run_id from {RUNS_TABLE} order by started_at desc limit {KEEP_RUNS}))"
        )
    if span is not None and span > MAX_RUNS:
        doomed.append(
            f"run_id in (select run_id from {RUNS_TABLE} order by started_at desc "
            f"limit -1 offset {MAX_RUNS})"
        )
    if doomed:
        for table in (EVENTS_TABLE, FEEDBACK_TABLE, RUNS_TABLE):
            conn.execute(f"delete from {table} where {' or '.join(doomed)}", {"cutoff": cutoff})


async def load(db: Any, run_id: str) -> TraceJSON | None:
    """A saved run, as it was written (``build_trace``), or None."""
    await settle(db, run_id)
    row = (
        await db.execute(f"select trace_json from {RUNS_TABLE} where run_id = ?", [run_id])
    ).first()
    if not row:
        return None
    trace: TraceJSON = json.loads(row[0])
    return trace


RUN_COLUMNS = (
    "run_id",
    "started_at",
    "surface",
    "database_name",
    "question",
    "actor_id",
    "external_mode",
    "external_ran",
    "providers",
    "verdict",
    "evidence_count",
    "external_evidence_count",
    "total_ms",
)


@dataclass(frozen=True)
class RunFilter:
    """Which runs a list shows: on these brains, by this actor (None: anyone's), and the
    filters of the runs page."""

    databases: tuple[str, ...]
    actor_id: str | None = None
    verdict: str = ""
    mode: str = ""
    web: str = ""  # "yes": the web was searched; "no": it was not
    since: str = ""  # YYYY-MM-DD, inclusive
    until: str = ""
    q: str = ""  # words the question contains

    @property
    def narrowed(self) -> bool:
        """Does the page's filter narrow the list (beyond brains and actor)?"""
        return any((self.verdict, self.mode, self.web, self.since, self.until, self.q))

    def sql(self) -> tuple[str, list[Any]]:
        marks = ", ".join("?" for _ in self.databases) or "null"
        clauses, params = [f"database_name in ({marks})"], list(self.databases)
        if self.actor_id is not None:
            clauses.append("actor_id = ?")
            params.append(self.actor_id)
        for column, value in (("verdict", self.verdict), ("external_mode", self.mode)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        if self.web in ("yes", "no"):
            clauses.append(f"external_ran = {1 if self.web == 'yes' else 0}")
        if self.since:
            clauses.append("started_at >= ?")
            params.append(self.since)
        if self.until:
            clauses.append("started_at < date(?, '+1 day')")
            params.append(self.until)
        for word in self.q.split()[:8]:
            escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            clauses.append("question like ? escape '\\'")
            params.append(f"%{escaped}%")
        return " and ".join(clauses), params


async def recent(db: Any, where: RunFilter, limit: int = 100) -> list[dict[str, Any]]:
    """The newest runs that match, summary columns only (filtered in SQL, so an actor's own
    runs never hide behind newer runs of others)."""
    await settle(db)
    clause, params = where.sql()
    rows = await db.execute(
        f"select {', '.join(RUN_COLUMNS)} from {RUNS_TABLE} where {clause} "
        "order by started_at desc limit ?",
        [*params, limit],
    )
    return [dict(zip(RUN_COLUMNS, row, strict=True)) for row in rows.rows]


def run_path(datasette: Any, run_id: str, suffix: str = "") -> str:
    """A saved run's page, or with ``suffix`` (``.json``, ``.md``, ``.csv``) its files."""
    path: str = datasette.urls.path(f"/-/research/runs/{run_id}{suffix}")
    return path


async def record(
    datasette: Any,
    pack: PackJSON,
    *,
    surface: str,
    actor: dict[str, Any] | None,
    permitted: bool,
    wait: bool = True,
) -> asyncio.Task[None] | None:
    """Save the run; the pack gains ``trace_url`` (or a ``trace_not_saved`` warning).

    With ``wait=False`` the run is serialized and written beside the response, in the write
    thread (a long pack's JSON is not paid for before the answer): the task is returned for the
    surface to await once its answer is sent, and until it is done every read of the run
    (``load``, ``recent``) waits for it, so a run is never read before it is saved. The pack
    must not change after this call. Unless another program holds the database locked
    (``write_locked``): then the run is saved before the answer, as with ``wait=True``, so the
    answer does not link to a run that lock keeps from being saved (a lock taken after that look
    is waited out by ``_save_logged``; the run's link says if it never goes).
    """
    db = plugin_database(datasette)
    if db is None:
        pack["warnings"].append(
            {
                "code": "trace_not_saved",
                "message": "This run was not saved: the plugin has no "
                "database (see traces_database in docs/configuration.md).",
            }
        )
        return None
    run_id = pack["run_id"]
    pack["trace_url"] = run_path(datasette, run_id)
    actor_id = str((actor or {}).get("id") or "")
    trace = build_trace(pack, surface=surface, actor_id=actor_id, web_permitted=permitted)
    # A save of ours still waiting out a lock says another program holds it, as a look does.
    if not wait and not _RETRYING and not write_locked(db):
        task = asyncio.ensure_future(_save_logged(db, run_id, trace))
        pending = _PENDING.setdefault(db, {})
        pending[run_id] = task
        task.add_done_callback(lambda _: pending.pop(run_id, None))
        return task
    try:
        await save(db, trace)
    except Exception as exc:  # a locked or full disk must not cost the user the answer
        pack.pop("trace_url")
        locked = isinstance(exc, sqlite3.Error) and is_busy(exc)
        why = "another program holds it locked" if locked else type(exc).__name__
        pack["warnings"].append(
            {
                "code": "trace_not_saved",
                "message": f"This run was not saved: the plugin's database refused the write "
                f"({why}). Its answer stands; ask again to save it.",
            }
        )
    return None
