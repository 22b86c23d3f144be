"""Fetch one web page for promotion and extract its readable text, without becoming an SSRF proxy.

A promoted result's URL comes from a search provider or a user, so the server must not be tricked
into reading its own loopback, the cloud metadata endpoint or the LAN. Every TCP connection goes
through ``guarded_transport``, which connects only to addresses it resolved itself and found
public (``public_hosts``), on the first request and on every redirect alike. The page's text is
extracted afterwards, with the connection closed, within the same deadline (``extraction``).

``fetch_page`` never raises for a bad URL or a network problem; it returns a ``FetchResult`` whose
``failure_kind`` is one of dbrain's ``extract_failure_kind`` values (dbrain-schema.md §4.1):

- DNS lookup failed: ``dns_nxdomain``;
- connection refused, reset or unreachable: ``connectivity``;
- TLS handshake or certificate problem: ``tls_certificate``;
- the overall time budget (15 s by default) or a per-operation timeout ran out: ``timeout``;
- HTTP 401/403: ``http_access_denied``;
- HTTP 404/410: ``http_gone``. A 404 on a page a search engine just listed almost always means it
  was removed, and dbrain retries failed extractions after a cooldown anyway;
- HTTP 5xx: ``http_5xx``; a Cloudflare challenge (``cf-mitigated``) or Cloudflare 52x edge error:
  ``cloudflare_edge``;
- a non-public address, a non-http(s) URL, too many redirects, any other HTTP status or an invalid
  response: ``fetch_failed`` (dbrain has no kind for a refused address; the error says why);
- a content type other than HTML, XHTML or plain text, a missing content type, or a body over the
  size cap: ``unsupported_file``;
- anything unexpected: ``unknown`` (logged with its traceback, never returned).

A page that was fetched but has no main text is ``ok=True`` with ``text == ''``: dbrain records that
as ``extract_status = 'empty'``, not as a failure.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import gc
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import anyio
import httpx

from .extraction import (
    MAX_MARKUP,
    Body,
    ExtractionTimeout,
    extract_within,
    extractor_missing,
    warm_pool,
)
from .guarded_transport import BlockedAddress, GuardedTransport, origins
from .public_hosts import HostRefused, LookupFailed, parse_networks, sendable_url

__all__ = ["FetchResult", "fetch_page"]

logger = logging.getLogger(__name__)

ALLOWED_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
_ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"
_CLOUDFLARE_EDGE_STATUSES = range(520, 531)


@dataclass(frozen=True)
class FetchResult:
    """What one fetch produced: page fields on success, a dbrain failure kind otherwise."""

    ok: bool
    url: str
    final_url: str
    status: int | None
    content_type: str
    title: str
    description: str
    site_name: str
    text: str
    error: str
    failure_kind: str


def _failure(
    url: str,
    kind: str,
    error: str,
    response: httpx.Response | None = None,
    final_url: str = "",
) -> FetchResult:
    """A failed result; ``response`` (when there was one) fills in where the fetch ended up."""
    return FetchResult(
        ok=False,
        url=url,
        final_url=str(response.url) if response is not None else final_url,
        status=response.status_code if response is not None else None,
        content_type=_media_type(response) if response is not None else "",
        title="",
        description="",
        site_name="",
        text="",
        error=error,
        failure_kind=kind,
    )


def _media_type(response: httpx.Response) -> str:
    return response.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _status_failure(response: httpx.Response) -> tuple[str, str] | None:
    """The failure kind and message for a non-2xx answer, or None for a success."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    server = response.headers.get("server", "").lower()
    if "cf-mitigated" in response.headers or (
        status in _CLOUDFLARE_EDGE_STATUSES and "cloudflare" in server
    ):
        return "cloudflare_edge", f"HTTP {status} from Cloudflare's edge"
    if status in (401, 403):
        return "http_access_denied", f"HTTP {status}: access denied"
    if status in (404, 410):
        return "http_gone", f"HTTP {status}: page not found or gone"
    if status >= 500:
        return "http_5xx", f"HTTP {status}: server error"
    return "fetch_failed", f"HTTP {status}"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and its causes: httpx wraps httpcore, which wraps the OSError or SSLError."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _classify(exc: BaseException, timeout: float) -> tuple[str, str]:
    """Map an exception from the fetch to dbrain's failure kind and a message safe to show."""
    if isinstance(exc, ExtractionTimeout):
        return "timeout", f"timed out after {timeout:g} s extracting the page's text"
    if isinstance(exc, BlockedAddress):
        return "fetch_failed", str(exc)
    if isinstance(exc, LookupFailed):
        return "dns_nxdomain", str(exc)
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        return "timeout", f"timed out after {timeout:g} s"
    if any(isinstance(cause, ssl.SSLError) for cause in _chain(exc)):
        return "tls_certificate", "TLS handshake or certificate verification failed"
    if isinstance(exc, httpx.ConnectError | httpx.ReadError | httpx.WriteError):
        # os.strerror, not the exception text, which may carry addresses and asyncio wording.
        errnos = (c.errno for c in _chain(exc) if isinstance(c, OSError) and c.errno)
        reason = next((os.strerror(code) for code in errnos), "")
        return "connectivity", f"connection failed: {reason}" if reason else "connection failed"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "fetch_failed", "the server sent an invalid HTTP response"
    if isinstance(exc, httpx.DecodingError):
        return "fetch_failed", "could not decode the response body"
    if isinstance(exc, httpx.HTTPError | httpx.InvalidURL):
        return "fetch_failed", "the request failed"
    return "unknown", "unexpected error while fetching the page"


MAX_HELD_BYTES = 64 * 1024 * 1024  # page bodies held at once, for everyone the server reads for
SERVER_FULL = "the server is holding as many pages as it reads at once; this one was left unread"


class Held:
    """Bytes of page bodies held in this process, read or waiting for extraction, across every
    request: a burst of people's readers cannot together hold more than ``MAX_HELD_BYTES``
    (each fetch holds at most its own ``max_bytes``). Each fetch takes what it reads and gives it
    back when it is done."""

    total = 0
    since_trim = 0  # bytes taken since memory was last given back to the system
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.mine = 0

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes for this fetch; False when the server holds its most."""
        with Held._lock:
            if Held.total + size > MAX_HELD_BYTES:
                return False
            Held.total += size
            Held.since_trim += size
        self.mine += size
        return True

    def give_back(self) -> None:
        """Give this fetch's bytes back; when none are left, freed memory is given back to the
        system ``TRIM_DELAY_S`` later, if the server is still reading nothing then (the runs
        that read the pages free more as they finish)."""
        with Held._lock:
            Held.total -= self.mine
            idle = Held.total == 0 and Held.since_trim >= TRIM_AFTER_BYTES
        self.mine = 0
        if idle:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # a fetch outside an event loop: nothing else is running
                trim_if_idle()
                return
            loop.call_later(TRIM_DELAY_S, loop.run_in_executor, None, trim_if_idle)


TRIM_AFTER_BYTES = 16 * 1024 * 1024  # bodies read since the last trim that make one worth it
TRIM_DELAY_S = 2.0


def trim_if_idle() -> bool:
    """``release_memory`` when no body is held and enough were since the last time: first the
    cycles still holding bodies (a failed fetch's traceback keeps its frames, and their bodies,
    until the collector's rare full pass), then the heap."""
    with Held._lock:
        if Held.total or Held.since_trim < TRIM_AFTER_BYTES:
            return False
        Held.since_trim = 0
    gc.collect()
    release_memory()
    return True


def release_memory() -> None:
    """Hand freed heap memory back to the operating system (glibc's ``malloc_trim``).

    Page bodies are megabytes each; glibc serves such blocks from its heaps once it has seen a
    few freed, and keeps those heaps after a burst, so a server that read 30 people's pages at
    once would stay hundreds of MB larger for good. Elsewhere (musl, macOS) this does nothing."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


async def _read_body(
    url: str, response: httpx.Response, max_bytes: int, held: Held
) -> Body | FetchResult:
    """Check status, type and size of the final answer, then read its body within the cap and
    what the server may hold (``Held``)."""
    failure = _status_failure(response)
    if failure is not None:
        return _failure(url, *failure, response=response)
    media_type = _media_type(response)
    if media_type not in ALLOWED_CONTENT_TYPES:
        what = f"content type {media_type}" if media_type else "a missing content type"
        return _failure(url, "unsupported_file", f"cannot extract {what}", response)
    too_big = f"the page is larger than {max_bytes:,} bytes"
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        return _failure(url, "unsupported_file", too_big, response)
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            return _failure(url, "unsupported_file", too_big, response)
        if not held.take(len(chunk)):
            return _failure(url, "fetch_failed", SERVER_FULL, response)
        chunks.append(chunk)
    return Body(
        final_url=str(response.url),
        status=response.status_code,
        media_type=media_type,
        charset=response.charset_encoding,
        content=b"".join(chunks),
    )


@dataclass
class _Progress:
    """Where a fetch has got to, so a failure part-way can still say where it ended up."""

    target: str = ""
    response: httpx.Response | None = None


async def _follow(
    client: httpx.AsyncClient,
    url: str,
    max_redirects: int,
    max_bytes: int,
    progress: _Progress,
    held: Held,
) -> Body | FetchResult:
    """GET ``url``, following at most ``max_redirects`` redirects one checked hop at a time,
    each in the one form its host is checked in (``public_hosts.sendable_url``)."""
    target = url
    redirects = 0
    while True:
        try:
            sent = httpx.URL(sendable_url(target))
        except (HostRefused, httpx.InvalidURL) as refused:
            return _failure(url, "fetch_failed", f"refused: {refused}", final_url=progress.target)
        async with client.stream("GET", sent) as response:
            progress.response = response
            if response.next_request is None:
                return await _read_body(url, response, max_bytes, held)
            if redirects == max_redirects:
                return _failure(
                    url, "fetch_failed", f"more than {max_redirects} redirects", response
                )
            redirects += 1
            target = str(response.next_request.url)
            progress.target = target
            progress.response = None


async def fetch_page(
    url: str,
    *,
    timeout: float = 15.0,
    max_bytes: int = 5 * 1024 * 1024,
    max_markup: int = MAX_MARKUP,
    max_redirects: int = 5,
    allow_networks: tuple[str, ...] = (),
    trusted_origin: str = "",
    user_agent: str = "datasette-dbrain-websearch",
    requester: str = "",
) -> FetchResult:
    """Fetch ``url`` and extract its readable text; failures come back as a result, not raised.

    ``timeout`` bounds the whole fetch: the network exchange (every redirect and the body) and
    then the extraction, which runs with the connection closed in a worker process that is
    killed if it passes the deadline (a ``timeout`` failure). At most ``max_markup`` bytes of a
    page's markup are extracted; the rest is cut off. ``allow_networks`` lists CIDRs that may be
    connected to even though they are not public (a self-hosted setup, tests); an invalid CIDR
    raises ValueError, being a configuration error. ``trusted_origin`` is a URL whose host and
    port (a page reader the configuration names) may be connected to whatever its address.
    ``requester`` is whose turn the extraction takes (``extraction.FairSlots``).
    """
    deadline = time.monotonic() + timeout
    allowed = parse_networks(allow_networks)
    missing = extractor_missing()
    if missing:
        return _failure(url, "unsupported_file", missing)
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return _failure(url, "fetch_failed", "invalid URL")
    progress = _Progress()
    held = Held()
    warm_pool()
    try:
        async with httpx.AsyncClient(
            transport=GuardedTransport(allowed, origins(trusted_origin)),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(timeout),
            headers={"User-Agent": user_agent, "Accept": _ACCEPT},
        ) as client:
            with anyio.fail_after(timeout):
                outcome = await _follow(client, url, max_redirects, max_bytes, progress, held)
        if isinstance(outcome, FetchResult):
            return outcome
        title, description, site_name, text = await extract_within(
            outcome, deadline, max_markup, requester
        )
    except Exception as exc:
        kind, error = _classify(exc, timeout)
        if kind == "unknown":
            logger.warning("unexpected error while fetching a page", exc_info=True)
        return _failure(url, kind, error, progress.response, progress.target)
    finally:
        held.give_back()  # the body is read and extracted (or given up on)
    return FetchResult(
        ok=True,
        url=url,
        final_url=outcome.final_url,
        status=outcome.status,
        content_type=outcome.media_type,
        title=title,
        description=description,
        site_name=site_name,
        text=text,
        error="",
        failure_kind="",
    )
