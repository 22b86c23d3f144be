"""Extracting a fetched page's readable text within the fetch's deadline, in worker processes.

Extraction (trafilatura, the ``[fetch]`` extra) is CPU-bound and on some markup far worse than
linear, so HTML is extracted in a worker process (``ExtractPool``) that is killed when it passes
the deadline, and retired when it is left holding much memory; at most ``max_markup`` bytes of
a page's markup are extracted. Plain text needs no extractor. The workers are shared by
everyone the server reads for, in fair turns (``FairSlots``): the requester with the fewest
pages being extracted goes first, so one person's many heavy pages never hold up another's one.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

logger = logging.getLogger(__name__)


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


EXTRACTOR_MISSING = (
    "Reading web pages needs trafilatura, which this install lacks: "
    "pip install 'datasette-dbrain-websearch[fetch]'."
)


def extractor_missing() -> str:
    """Why pages cannot be read here (the ``[fetch]`` extra is not installed), or ``""``."""
    return "" if importlib.util.find_spec("trafilatura") else EXTRACTOR_MISSING


def _extract(
    body: bytes, media_type: str, charset: str | None, url: str
) -> tuple[str, str, str, str]:
    """Title, description, site name and main text; CPU-bound, so HTML is extracted in a worker
    process (``ExtractPool``), plain text in a thread."""
    if media_type == "text/plain":
        return "", "", "", _decode(body, charset).strip()
    import trafilatura  # the [fetch] extra; fetch_page checks for it before any request
    from trafilatura.utils import load_html

    # Without a declared charset trafilatura sniffs the bytes (meta tags, then detection).
    content: bytes | str = _decode(body, charset) if charset else body
    document = trafilatura.bare_extraction(
        content, url=url, with_metadata=True, include_comments=False, include_tables=True
    )
    if document is None:
        tree = load_html(content)
        if tree is None:
            return "", "", "", ""
        document = trafilatura.extract_metadata(tree, default_url=url)
    assert not isinstance(document, dict)  # bare_extraction's as_dict is False: a Document
    return (
        document.title or "",
        document.description or "",
        document.sitename or "",
        (document.text or "").strip(),
    )


# Extraction is CPU-bound and, on some markup, far worse than linear (trafilatura's fallback
# compares every paragraph with its neighbours: 0.5 MB of small nested blocks takes 11 s, 1 MB
# 40 s). So it runs in worker processes: one that passes the fetch's deadline is killed, and
# one left holding much memory after a page is replaced, so the memory goes back to the system.
MAX_MARKUP = 2 * 1024 * 1024  # bytes of markup handed to the extractor; the rest is cut off
EXTRACT_WORKERS = 2  # pages extracted at once, in this process and all its requests
RETIRE_RSS = 256 * 1024 * 1024  # a worker holding more than this after a page is replaced


class ExtractionTimeout(TimeoutError):
    """The page's text was not extracted before the fetch's deadline; the worker was killed."""


class ExtractionFailed(Exception):
    """The extracting worker raised or died."""


def _resident_bytes() -> int:
    """This process's resident memory now (its peak where /proc is missing)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def _worker_main(conn: Any) -> None:
    """A worker's loop: run each ``(function, args)`` sent, answer ``((ok, value), rss)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server, which stops us
    while True:
        try:
            function, args = conn.recv()
        except (EOFError, OSError):  # the server has gone
            return
        try:
            reply: tuple[bool, Any] = (True, function(*args))
        except BaseException as exc:  # MemoryError included: report it, then carry on
            reply = (False, f"{type(exc).__name__}: {exc}"[:300])
        conn.send((reply, _resident_bytes()))


def _context() -> Any:
    """``forkserver`` where there is one: a worker is forked from a server that has imported the
    extractor already (~10 ms, not the ~0.5 s of a fresh interpreter), and never from this
    process's threads; ``spawn`` elsewhere."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__, "trafilatura"])
        return context
    return multiprocessing.get_context("spawn")


class _Worker:
    def __init__(self, context: Any) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_worker_main, args=(child,), daemon=True, name="dbrain-websearch-extract"
        )
        self.process.start()
        child.close()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
            self.process.join(5)
        with contextlib.suppress(Exception):
            self.conn.close()


class FairSlots:
    """``size`` slots shared in fair turns: of those waiting, the requester holding the fewest
    slots goes first, then the one that has waited longest (a thread-safe semaphore with a
    queue in that order)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.held: Counter[str] = Counter()  # slots per requester
        self.waiting: dict[int, str] = {}  # ticket -> requester, in arrival order
        self._tickets = itertools.count()
        self._changed = threading.Condition()

    def acquire(
        self, requester: str, timeout: float, clock: Callable[[], float] = time.monotonic
    ) -> bool:
        """Wait for this requester's turn, at most ``timeout`` seconds (False: it did not come)."""
        end = clock() + timeout
        with self._changed:
            ticket = next(self._tickets)
            self.waiting[ticket] = requester
            try:
                while sum(self.held.values()) >= self.size or self._next() != ticket:
                    left = end - clock()
                    if left <= 0:
                        return False
                    self._changed.wait(left)
                self.held[requester] += 1
                return True
            finally:
                del self.waiting[ticket]
                self._changed.notify_all()

    def release(self, requester: str) -> None:
        with self._changed:
            self.held[requester] -= 1
            if not self.held[requester]:
                del self.held[requester]
            self._changed.notify_all()

    def _next(self) -> int:
        """The ticket whose turn is next: its requester holds the fewest slots, then it came
        first."""
        return min(self.waiting, key=lambda t: (self.held[self.waiting[t]], t))


class ExtractPool:
    """At most ``size`` extractions at once, each in a worker process and within a deadline.

    ``run`` blocks, so it is called in a thread. Waiting for a free worker counts against the
    deadline; a worker that passes it is killed and a new one started for the next page. Workers
    live as long as the server (they are daemon processes), and leave when it does.
    """

    def __init__(self, size: int = EXTRACT_WORKERS, retire_rss: int = RETIRE_RSS) -> None:
        self.size = size
        self.retire_rss = retire_rss
        self._slots = FairSlots(size)
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._context: Any = None
        self._warming = False
        self.started = 0  # workers started, killed at the deadline, retired for their memory
        self.killed = 0
        self.retired = 0

    def run(
        self,
        function: Callable[..., Any],
        args: tuple[Any, ...],
        deadline: float,
        clock: Callable[[], float] = time.monotonic,
        requester: str = "",
    ) -> Any:
        """``function(*args)`` in a worker, or ``ExtractionTimeout`` once ``deadline`` (on
        ``clock``) has passed; ``ExtractionFailed`` if it raised or the worker died. Workers are
        taken in ``requester``'s fair turn (``FairSlots``)."""
        if not self._slots.acquire(requester, max(0.0, deadline - clock()), clock):
            raise ExtractionTimeout("no extraction worker was free before the deadline")
        try:
            if deadline - clock() <= 0:
                raise ExtractionTimeout("the deadline passed before extraction started")
            worker = self._take()
            try:
                worker.conn.send((function, args))
                answered = worker.conn.poll(max(0.0, deadline - clock()))
                if answered:
                    (ok, value), rss = worker.conn.recv()
            except (EOFError, OSError) as exc:
                worker.stop()
                raise ExtractionFailed("the extraction worker stopped") from exc
            if not answered:
                with self._lock:
                    self.killed += 1
                worker.stop()
                raise ExtractionTimeout("the extraction passed the deadline")
            self._give_back(worker, rss)
            if not ok:
                raise ExtractionFailed(value)
            return value
        finally:
            self._slots.release(requester)

    def warm(self) -> None:
        """Start the first worker ahead of need (while the pages download): it is the one that
        starts the fork server too, which costs a fresh interpreter and the extractor's imports."""
        with self._lock:
            if self.started or self._warming:
                return
            self._warming = True
        try:
            worker = self._start()
            with self._lock:
                self._idle.append(worker)
        finally:
            self._warming = False

    def close(self) -> None:
        """Stop the idle workers (busy ones stop at their deadline or when they finish)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()

    def pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._idle if w.process.pid is not None]

    def _start(self) -> _Worker:
        with self._lock:
            if self._context is None:
                self._context = _context()
            context = self._context
        worker = _Worker(context)
        with self._lock:
            self.started += 1
        return worker

    def _take(self) -> _Worker:
        while True:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            if worker is None:
                return self._start()
            if worker.process.is_alive():
                return worker
            worker.stop()

    def _give_back(self, worker: _Worker, rss: int) -> None:
        """Keep ``worker`` for the next page, unless it holds too much memory (or is spare)."""
        with self._lock:
            if rss > self.retire_rss:
                self.retired += 1
            elif len(self._idle) < self.size:
                self._idle.append(worker)
                return
        worker.stop()


_POOL = ExtractPool()
_EXTRACTOR: Callable[..., tuple[str, str, str, str]] = _extract  # tests stand in a slow one


def warm_pool() -> None:
    """Start the first extraction worker in the background, so no page waits for it."""
    if not _POOL.started:
        threading.Thread(target=_warm_quietly, daemon=True, name="dbrain-extract-warm").start()


def _warm_quietly() -> None:
    try:
        _POOL.warm()
    except Exception:  # the page's own extraction will start one, or say why it cannot
        logger.debug("could not start an extraction worker ahead of need", exc_info=True)


@dataclass(frozen=True)
class Body:
    """A fully read, acceptable answer, waiting for extraction."""

    final_url: str
    status: int
    media_type: str
    charset: str | None
    content: bytes


async def extract_within(
    body: Body, deadline: float, max_markup: int, requester: str = ""
) -> tuple[str, ...]:
    """The page's fields, extracted in a worker before ``deadline`` in ``requester``'s fair
    turn; plain text needs none."""
    if body.media_type == "text/plain":
        return await anyio.to_thread.run_sync(
            _extract, body.content, body.media_type, body.charset, body.final_url
        )
    args = (body.content[:max_markup], body.media_type, body.charset, body.final_url)
    return await anyio.to_thread.run_sync(
        _POOL.run, _EXTRACTOR, args, deadline, time.monotonic, requester
    )
