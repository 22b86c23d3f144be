"""The one error type every research surface turns into a response.

Views render it as ``{"ok": false, "error": ..., "status": ...}`` (JSON) or an error box (HTML);
the CLI prints it and exits non-zero. Anything the user typed that cannot be searched becomes a
``ResearchError`` with status 400, never an unhandled exception; a brain another program is
writing to, or whose file went away, becomes a 503 that says so.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
BUSY_RETRY_AFTER_S = 2
BUSY_MESSAGE = "The brain is busy: another program is writing to it; try again in a moment."


class ResearchError(Exception):
    """A problem the caller can act on, with the HTTP status that describes it.

    ``retry_after`` (seconds) marks a transient refusal (a busy brain, too many raw questions at
    once); responses carry it as a ``Retry-After`` header.
    """

    def __init__(
        self,
        message: str,
        status: int = 400,
        code: str = "bad_request",
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.retry_after = retry_after

    def as_json(self) -> dict:
        """The one JSON error shape: the message as ``error`` and, as Datasette 1.0's JSON
        API gives them, in an ``errors`` list."""
        return {
            "ok": False,
            "error": self.message,
            "errors": [self.message],
            "status": self.status,
            "code": self.code,
        }

    def headers(self) -> dict[str, str]:
        return {} if self.retry_after is None else {"Retry-After": str(self.retry_after)}


def is_busy(exc: sqlite3.Error) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another connection holds the lock (extended codes too)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in BUSY_CODES
    return "database is locked" in str(exc) or "database table is locked" in str(exc)


def brain_gone(database: str) -> ResearchError:
    """The brain's file is not the one Datasette opened: its connections would read the old,
    deleted file (stale answers) and writes would fail, so say what the operator must do."""
    return ResearchError(
        f"The brain '{database}' was deleted or replaced on disk while Datasette was serving it; "
        "restart Datasette (or reload it) so it opens the file that is there now.",
        503,
        "brain_replaced",
    )


def sqlite_error(exc: sqlite3.Error, database: str) -> ResearchError:
    """What a failed query on a brain means for the person who asked."""
    if is_busy(exc):
        return ResearchError(BUSY_MESSAGE, 503, "brain_busy", retry_after=BUSY_RETRY_AFTER_S)
    text = str(exc)
    if "unable to open database file" in text or "disk I/O error" in text:
        return ResearchError(
            f"The brain '{database}' could not be read ({text}). If its file was moved, deleted "
            "or replaced, restart Datasette (or reload it).",
            503,
            "brain_unreadable",
        )
    return ResearchError(f"SQLite error: {text}", code="sqlite_error")


@contextmanager
def busy_timeout(conn: sqlite3.Connection, ms: int) -> Iterator[None]:
    """Wait at most ``ms`` for a lock another program holds, on a connection Datasette shares
    (its busy timeout is restored afterwards)."""
    previous = conn.execute("pragma busy_timeout").fetchone()[0]
    conn.execute(f"pragma busy_timeout = {int(ms)}")
    try:
        yield
    finally:
        conn.execute(f"pragma busy_timeout = {previous}")
