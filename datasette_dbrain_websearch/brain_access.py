"""How the plugin queries a brain Datasette serves: within the run's time, briefly.

A run shares one ``TimeBudget`` (its ``time_limit_ms``, the time waiting for a turn or a
connection included) between its queries and its work outside SQLite; running out is a 400 when
the question is too costly in itself, a 503 when load made it slow (``out_of_time``). A brain
another program has locked, or whose file was replaced, becomes a clear 503
(``brief_busy_wait``, ``check_unchanged``), never a 500, a long wait or stale answers.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
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


# How long past its deadline a run waits for a query to stop before answering without it. The
# progress handler runs between VM steps, and one step can be long: FTS5 reads a prefix's
# postings inside one, SQLite sorts inside one. Past this share of the limit the run answers
# at once and interrupts the query, which stops at its next step.
OVERRUN_SHARE = 0.03


# A run that spent at least this share of its limit computing, and waited for its turn less
# than the rest, would not fit on an idle server either: it is too costly in itself.
COSTLY_SHARE = 0.8
CHECK_EVERY = 64  # cheap rows between two clock reads of a loop (``paced``)

Clock = Callable[[], float]
Checkpoint = Callable[[], None]


def unbounded() -> None:
    """The checkpoint of work no run's deadline bounds (an index build, a bare call)."""


def paced(items: Iterable[T], checkpoint: Checkpoint, every: int = CHECK_EVERY) -> Iterator[T]:
    """The items, with the run's checkpoint before every ``every``-th: a loop over rows stops
    at the deadline, and reads the clock once per ``every`` rows, not per row."""
    for n, item in enumerate(items):
        if n % every == 0:
            checkpoint()
        yield item


def out_of_time(limit_ms: int, wall_ms: float, cpu_ms: float, queued_ms: float) -> ResearchError:
    """What a run stopped at its limit tells the person: was the question too costly in itself,
    or did load make it slow? (pure; ``wall_ms`` is the time it ran, ``cpu_ms`` its own
    computing in it, ``queued_ms`` its waits for a turn or a connection).

    Had it computed for most of the limit (``COSTLY_SHARE``) without waiting long for a turn,
    it would not fit on an idle server either: a 400 ``exceeds_time_limit`` that says how to
    narrow it, without ``Retry-After`` (asking again gains nothing). Otherwise other work took
    its time (it queued, or shared the CPU: its wall time well above its computing): a 503
    ``time_limit`` with ``Retry-After``.
    """
    costly = cpu_ms >= COSTLY_SHARE * limit_ms and queued_ms < (1 - COSTLY_SHARE) * limit_ms
    if costly:
        return ResearchError(
            f"This question takes more than the time limit of {limit_ms:,} ms by itself (it "
            f"computed for {cpu_ms:,.0f} ms before it was stopped): asking again will not help. "
            "Narrow it: fewer and rarer words, filters (kind, tag, dates), longer prefixes, "
            "fewer rows (limit).",
            400,
            "exceeds_time_limit",
        )
    return ResearchError(
        f"The search was stopped at its time limit of {limit_ms:,} ms after {wall_ms:,.0f} ms, "
        f"of which it computed for {cpu_ms:,.0f} ms: other searches had the rest (the server "
        "is busy); try again in a moment.",
        503,
        "time_limit",
        retry_after=TIME_LIMIT_RETRY_SECONDS,
    )


@dataclass
class TimeBudget:
    """The run's ``time_limit_ms``: one deadline for everything the run computes.

    Its clock runs from the run's start, waits for a turn or a connection included; time on
    the web or waiting for a model is not charged (``paused``): a slow provider must not use up
    the brain's share. Every query gets what is left (SQLite's progress handler stops it at the
    deadline); work outside SQLite is measured by ``phase`` and calls ``check`` between its
    steps and every few rows of its loops (``paced``), so a run stops within a few
    milliseconds of its limit. What the run computed (``cpu_clock``, per thread) and waited is
    kept, so running out says which it was (``out_of_time``). ``clock`` and ``cpu_clock`` are
    injectable for tests.
    """

    limit_ms: int
    database: str
    # Whether the query should pause now, letting a cheaper search have the CPU
    # (``admission.Turn.should_yield``).
    yielding: Callable[[], bool] | None = None
    progress_ops: int = PROGRESS_OPS
    clock: Clock = time.perf_counter
    cpu_clock: Clock = time.thread_time
    # When the request arrived (``time.perf_counter``), if before the run: the wait for a free
    # connection to find the brain counts as queued, within the limit.
    arrived: float | None = None
    cpu_s: float = 0.0  # computing, in the phases that ended
    queued_s: float = 0.0  # waiting for a turn or a connection
    paused_s: float = 0.0  # on the web or a model, not charged
    started: float = field(init=False)
    _phase_cpu: float | None = field(default=None, init=False)  # the open phase's start

    def __post_init__(self) -> None:
        self.started = self.clock()
        if self.arrived is not None and self.clock is time.perf_counter:
            waited = max(0.0, self.started - self.arrived)
            self.started -= waited
            self.queued_s += waited

    @property
    def spent_ms(self) -> float:
        return (self.clock() - self.started - self.paused_s) * 1000

    def deadline(self) -> float:
        return self.started + self.paused_s + self.limit_ms / 1000

    def left_s(self) -> float:
        return max(0.0, self.deadline() - self.clock())

    def exceeded(self) -> ResearchError:
        """The error for running out now (``out_of_time``); the open phase's computing so far
        counts (it is read on the phase's own thread, where ``check`` runs)."""
        cpu = self.cpu_s
        if self._phase_cpu is not None:
            cpu += self.cpu_clock() - self._phase_cpu
        return out_of_time(self.limit_ms, self.spent_ms, cpu * 1000, self.queued_s * 1000)

    def check(self) -> None:
        """A checkpoint: stop the run (``exceeded``) once its deadline has passed."""
        if self.clock() > self.deadline():
            raise self.exceeded()

    @contextmanager
    def phase(self) -> Iterator[None]:
        """A stretch of the run's own work on this thread (no awaits inside): checked at both
        ends, its computing counted as the run's."""
        self.check()
        self._phase_cpu = self.cpu_clock()
        try:
            yield
        finally:
            self.cpu_s += self.cpu_clock() - self._phase_cpu
            self._phase_cpu = None
        self.check()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Time outside the brain's share (the web, a model's reply): not charged."""
        since = self.clock()
        try:
            yield
        finally:
            self.paused_s += self.clock() - since

    def waited(self, seconds: float) -> None:
        """Time waiting for a turn (``admission``): on the clock already, and a sign of load."""
        self.queued_s += seconds

    def run(
        self,
        conn: sqlite3.Connection,
        fn: Callable[[sqlite3.Connection], T],
        queued_since: float | None = None,
    ) -> T:
        """Run ``fn`` on the connection as a phase, until the deadline (SQLite progress handler).

        ``queued_since`` is when the query was handed to Datasette's connection pool: a server
        busy with costly questions sheds a new one (503, try again) once its wait for a free
        connection used up its time, instead of queueing it without end."""
        if queued_since is not None:
            self.waited(self.clock() - queued_since)
        with self.phase():
            deadline = self.deadline()
            clock, yielding = self.clock, self.yielding

            def progress() -> int:
                if clock() > deadline:
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

    def bind(self, execute_fn: ExecuteFn) -> ExecuteFn:
        """``execute_fn`` with every call run within this budget, and given up on (its query
        interrupted) once it passes the deadline by ``OVERRUN_SHARE`` of the limit: the
        answer never waits for a step SQLite cannot stop in."""

        async def bounded(fn: Callable[[sqlite3.Connection], Any]) -> Any:
            submitted = self.clock()
            began: list[tuple[sqlite3.Connection, float, int]] = []

            def in_turn(conn: sqlite3.Connection) -> Any:
                began.append((conn, self.clock(), threading.get_ident()))
                return self.run(conn, fn, submitted)

            call = asyncio.ensure_future(execute_fn(in_turn))
            grace = self.limit_ms / 1000 * OVERRUN_SHARE
            try:
                return await asyncio.wait_for(asyncio.shield(call), self.left_s() + grace)
            except TimeoutError:
                call.add_done_callback(_consume)
                if began:
                    began[0][0].interrupt()
                raise self.overran(submitted, *(began[0][1:] if began else (None, None))) from None

        return bounded

    def overran(
        self, submitted: float, began: float | None, thread: int | None = None
    ) -> ResearchError:
        """The error for a query given up on past the deadline (``bind``), which began at
        ``began`` on ``thread``: what it computed so far is read from that thread's own CPU
        clock (``open_phase_cpu``)."""
        queued = (began if began is not None else self.clock()) - submitted
        self.waited(queued)
        cpu = self.cpu_s + self.open_phase_cpu(thread)
        return out_of_time(self.limit_ms, self.spent_ms, cpu * 1000, self.queued_s * 1000)

    def open_phase_cpu(self, thread: int | None) -> float:
        """What the phase open on ``thread`` has computed so far, read from another thread:
        its CPU clock where the system gives one (Linux, macOS), else nothing (a query whose
        computing cannot be read is not called too costly). An injected ``cpu_clock`` is the
        test's, shared by every thread."""
        start = self._phase_cpu
        if start is None:
            return 0.0
        if self.cpu_clock is not time.thread_time:
            return self.cpu_clock() - start
        if thread is None or not hasattr(time, "pthread_getcpuclockid"):
            return 0.0
        try:
            return time.clock_gettime(time.pthread_getcpuclockid(thread)) - start
        except (OSError, OverflowError):
            return 0.0


def _consume(call: asyncio.Future) -> None:
    """Read a given-up query's outcome, so its error (the interrupt) is never logged."""
    if not call.cancelled():
        call.exception()


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
                try:
                    with plain_text(conn):
                        return fn(conn)
                except (sqlite3.OperationalError, ResearchError) as exc:
                    if not _undecodable(exc):
                        raise
                return fn(conn)  # a row holds broken UTF-8: read again as Datasette reads it

        return await db.execute_fn(bounded)

    return execute


def _undecodable(exc: BaseException) -> bool:
    """Whether sqlite3 could not decode a text value (the error itself, or the ResearchError
    a budget made of it)."""
    cause = exc if isinstance(exc, sqlite3.OperationalError) else exc.__cause__
    return isinstance(cause, sqlite3.OperationalError) and "Could not decode to UTF-8" in str(cause)


@contextmanager
def plain_text(conn: sqlite3.Connection) -> Iterator[None]:
    """Text read by sqlite3 itself while the plugin reads: Datasette's connections decode every
    text value with a Python function (replacing broken UTF-8), which costs as much as the
    query on a page of long rows. A row holding broken UTF-8 raises instead; ``reader`` then
    reads again with Datasette's function. Reads only: the plugin writes elsewhere."""
    factory = conn.text_factory
    conn.text_factory = str
    try:
        yield
    finally:
        conn.text_factory = factory


def table_names(conn: sqlite3.Connection) -> list[str]:
    """The tables, read on the given connection (not Datasette's ``table_names``) so brain
    discovery goes through ``reader``'s bounded wait and file check."""
    return [r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")]
