"""How the plugin queries a brain Datasette serves: within the run's time, briefly.

A run's queries share one ``TimeBudget`` (its ``time_limit_ms``, the time waiting for a turn or
a connection included); a brain another program has locked, or whose file was replaced,
becomes a clear 503 (``brief_busy_wait``, ``check_unchanged``), never a 500, a long wait or
stale answers.
"""

from __future__ import annotations

import os
import sqlite3
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from .errors import ResearchError, brain_gone, busy_timeout, sqlite_error

T = TypeVar("T")


ExecuteFn = Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]]


BUSY_WAIT_MS = 1000  # how long a query waits for another program's lock (Datasette's: 5 s)


@contextmanager
def brief_busy_wait(conn: sqlite3.Connection, database: str) -> Iterator[None]:
    """Wait at most ``BUSY_WAIT_MS`` for a lock another program holds, and turn SQLite's errors
    into ResearchErrors (a busy brain is a 503 with Retry-After, never a 500 or a long hang).

    The connection is Datasette's, shared with its own pages, so its busy timeout is restored.
    """
    with busy_timeout(conn, BUSY_WAIT_MS):
        try:
            yield
        except sqlite3.Error as exc:
            raise sqlite_error(exc, database) from exc


TIME_LIMIT_RETRY_SECONDS = 2


# SQLite calls the progress handler every this many VM steps: about every millisecond or two
# of an FTS5 query, and ten times less often for a search that is not heavy. Each call takes
# the GIL, which another thread running Python may hold for a few milliseconds: an ordinary
# search calls it rarely, a heavy one often enough to yield promptly.
PROGRESS_OPS = 10_000


LIGHT_PROGRESS_OPS = 100_000


YIELD_S = 0.02  # one pause of a query that yields to a cheaper one


@dataclass
class TimeBudget:
    """The run's ``time_limit_ms``, shared by every local query of the run.

    Each query may use what the earlier ones left, so the limit covers the run's whole local
    search (retrieval, then the lookup of web results the brain holds) rather than each query.
    Time spent on the web between them is not charged: a slow provider must not use up the
    brain's share.
    """

    limit_ms: int
    database: str
    spent_ms: float = 0.0
    # Whether the query should pause now, letting a cheaper search have the CPU
    # (``admission.Turn.should_yield``).
    yielding: Callable[[], bool] | None = None
    progress_ops: int = PROGRESS_OPS

    def exceeded(self) -> ResearchError:
        """A 503 with ``Retry-After``: a question that runs out of time is as often one that
        waited on a busy server as one that asked too much, so the caller may try again."""
        return ResearchError(
            f"The search took longer than {self.limit_ms} ms and was stopped; try again in a "
            "moment, or with more specific terms or filters.",
            503,
            "time_limit",
            retry_after=TIME_LIMIT_RETRY_SECONDS,
        )

    def left_s(self) -> float:
        return max(0.0, (self.limit_ms - self.spent_ms) / 1000)

    def charge(self, seconds: float) -> None:
        """Count time spent waiting outside SQLite (admission's queue) against the limit."""
        self.spent_ms += seconds * 1000

    def run(
        self,
        conn: sqlite3.Connection,
        fn: Callable[[sqlite3.Connection], T],
        queued_since: float | None = None,
    ) -> T:
        """Run ``fn`` on the connection until the budget is spent (SQLite progress handler).

        ``queued_since`` is when the query was handed to Datasette's connection pool: the time
        it waited there for a free connection is charged too, so on a server busy with costly
        questions a new one is refused (503, try again) instead of queueing without end."""
        if queued_since is not None:
            self.spent_ms += (time.perf_counter() - queued_since) * 1000
        left_s = (self.limit_ms - self.spent_ms) / 1000
        if left_s <= 0:
            raise self.exceeded()
        started = time.perf_counter()
        deadline = started + left_s
        yielding = self.yielding

        def progress() -> int:
            if time.perf_counter() > deadline:
                return 1
            if yielding is not None and yielding():
                time.sleep(YIELD_S)
            return 0

        conn.set_progress_handler(progress, self.progress_ops)
        try:
            with brief_busy_wait(conn, self.database):
                try:
                    return fn(conn)
                except sqlite3.OperationalError as exc:
                    if "interrupted" in str(exc):
                        raise self.exceeded() from exc
                    raise
        finally:
            conn.set_progress_handler(None, self.progress_ops)
            self.spent_ms += (time.perf_counter() - started) * 1000

    def bind(self, execute_fn: ExecuteFn) -> ExecuteFn:
        """``execute_fn`` with every call charged to this budget."""

        async def bounded(fn: Callable[[sqlite3.Connection], Any]) -> Any:
            submitted = time.perf_counter()
            return await execute_fn(lambda conn: self.run(conn, fn, submitted))

        return bounded


# The file identity (device, inode) each brain had when the plugin first saw it, by Database
# object (two Datasettes may serve the same path).
_OPENED: weakref.WeakKeyDictionary[Any, tuple[int, int]] = weakref.WeakKeyDictionary()


def check_unchanged(db: Any) -> None:
    """Refuse (503) a brain whose file was deleted or replaced since it was first seen.

    Datasette keeps its connections open on the file it opened: after ``mv new.db brain.db``
    they would go on reading the old, unlinked file, and writes would fail with "attempt to
    write a readonly database". Only a restart (or reload) opens the new file.
    """
    if getattr(db, "is_memory", False) or not getattr(db, "path", None):
        return
    try:
        found = os.stat(db.path)
    except OSError as exc:
        raise brain_gone(db.name) from exc
    identity = (found.st_dev, found.st_ino)
    if _OPENED.setdefault(db, identity) != identity:
        raise brain_gone(db.name)


def reader(db: Any) -> ExecuteFn:
    """How the plugin queries a brain Datasette serves: refused (503) once its file was replaced
    or deleted, and each query waits only briefly for another program's lock."""

    async def execute(fn: Callable[[sqlite3.Connection], Any]) -> Any:
        check_unchanged(db)

        def bounded(conn: sqlite3.Connection) -> Any:
            with brief_busy_wait(conn, db.name):
                return fn(conn)

        return await db.execute_fn(bounded)

    return execute


def table_names(conn: sqlite3.Connection) -> list[str]:
    """The tables, read on the given connection (not Datasette's ``table_names``) so brain
    discovery goes through ``reader``'s bounded wait and file check."""
    return [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
