"""Fetch one web page for promotion and extract its readable text, without becoming an SSRF proxy.

A promoted result's URL comes from a search provider or a user, so the server must not be tricked
into reading its own loopback, the cloud metadata endpoint or the LAN. Every TCP connection goes
through ``_GuardedBackend``, which resolves the host itself, refuses the lot if any address is not
public, and connects to one of the addresses it checked. The name is never resolved a second time
by anything else, so there is no DNS-rebinding window between the check and the connect, and the
check covers the first request and every redirect alike. TLS still uses the URL's host name for
SNI and certificate verification, because httpcore takes those from the request, not the socket.

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

import contextlib
import functools
import importlib.util
import ipaddress
import logging
import multiprocessing
import os
import signal
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore
import httpx

__all__ = [
    "BlockedAddress",
    "FetchResult",
    "fetch_page",
    "host_refusal",
    "is_public_address",
]

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
_ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1"

# Ranges refused even where Python's ``is_global`` would let them through; its tables differ
# between Python versions, so the ones that matter most are spelled out.
_NEVER_PUBLIC = tuple(
    ipaddress.ip_network(cidr)
    for cidr in (
        "0.0.0.0/8",  # "this network"
        "100.64.0.0/10",  # carrier-grade NAT
        "192.0.0.0/24",  # IETF protocol assignments
        "198.18.0.0/15",  # benchmarking
        "64:ff9b:1::/48",  # local-use NAT64
        "2001::/23",  # IETF protocol assignments, Teredo included
        "2001:db8::/32",  # documentation
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_CLOUDFLARE_EDGE_STATUSES = range(520, 531)


class BlockedAddress(Exception):
    """The host resolves to an address this fetcher must not connect to."""


class _LookupFailed(Exception):
    """The host name did not resolve; kept apart from OSError so it maps to ``dns_nxdomain``."""


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


def is_public_address(ip: IPAddress) -> bool:
    """True only for globally routable unicast addresses.

    IPv6 forms that carry an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by that IPv4
    address, since that is where the packets end up.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public_address(embedded)
        if ip.is_site_local:
            return False
    if any(ip in network for network in _NEVER_PUBLIC):
        return False
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def _parse_networks(cidrs: Iterable[str]) -> tuple[IPNetwork, ...]:
    """Parse ``allow_networks``; a typo there is a configuration bug, so it raises ValueError."""
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def _permitted(ip: IPAddress, allowed: tuple[IPNetwork, ...]) -> bool:
    """Public, or inside an explicitly allowed network (IPv4-mapped addresses match IPv4 ranges)."""
    plain = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip
    if any(plain in network for network in allowed):
        return True
    return is_public_address(ip)


def _host_key(host: str) -> str:
    """A host as written in a URL, compared the way a resolver would see it."""
    return host.strip("[]").rstrip(".").lower().split("%", 1)[0]


def public_host(host: str, allow_networks: Iterable[str] = ()) -> bool:
    """May a page on this host be shown as web evidence? False for ``localhost`` and for IP
    literals (in any form a resolver accepts: ``2130706433``, ``0x7f.1``, ``[::1]``) that are
    not public, unless inside ``allow_networks``. Other names pass: a name is resolved, and its
    addresses checked, when a promotion fetches the page or before a page reader is asked for it
    (``host_refusal``)."""
    host = _host_key(host)
    if host == "localhost" or host.endswith(".localhost"):
        host = "127.0.0.1"
    try:
        ip: IPAddress = ipaddress.ip_address(host)
    except ValueError:
        try:
            ip = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return True
    return _permitted(ip, _parse_networks(allow_networks))


# Module-level so tests can stand in a resolver for names that do not exist offline.
_getaddrinfo = anyio.getaddrinfo


async def _resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, in resolver order, without duplicates."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = await _getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise _LookupFailed(f"DNS lookup failed for {host}") from exc
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise _LookupFailed(f"DNS lookup failed for {host}")
    return addresses


# Names that only mean something inside a network: single labels (``metadata``, ``intranet``)
# and the suffixes set aside for private and local use. A name that does not resolve here but is
# one of these may well resolve inside a reader service's network (``metadata.google.internal``).
_INTERNAL_SUFFIXES = (
    ".localhost",
    ".local",
    ".localdomain",
    ".internal",
    ".intranet",
    ".lan",
    ".home",
    ".corp",
    ".private",
    ".home.arpa",
)


def internal_name(host: str) -> bool:
    """Is ``host`` a name only a private network can resolve (a single label, ``localhost``,
    or under ``.internal``, ``.local``, ``.lan``, ``.home.arpa`` and the like)?"""
    host = _host_key(host)
    return "." not in host or host == "localhost" or host.endswith(_INTERNAL_SUFFIXES)


async def host_refusal(url: str, allow_networks: Iterable[str] = (), timeout: float = 5.0) -> str:
    """Why a page at ``url`` may not be fetched on this server's behalf by someone else (a page
    reader given its URL), or ``""`` when it may: the policy the fetcher applies to its own
    connections, applied before the request.

    An IP literal must be public (or inside ``allow_networks``), as in ``public_host``. A name is
    resolved here and refused if any of its addresses is not; a name that does not resolve here
    is refused when it is an internal name (``internal_name``) and otherwise passed on, since the
    reader cannot find it either unless its network has names of its own.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "invalid URL"
    if parts.scheme not in ("http", "https"):
        return "only http and https pages can be read"
    if not host:
        return "the URL has no host"
    if not public_host(host, allow_networks):
        return "refused: not a public address"
    try:
        ipaddress.ip_address(_host_key(host))
        return ""  # a public (or allowed) literal; public_host has judged it
    except ValueError:
        pass
    allowed = _parse_networks(allow_networks)
    try:
        with anyio.fail_after(timeout):
            addresses = await _resolve(_host_key(host), 443 if parts.scheme == "https" else 80)
    except _LookupFailed:
        return "refused: a name internal to a network" if internal_name(host) else ""
    except TimeoutError:
        return f"refused: the name did not resolve within {timeout:g} s"
    if not all(_permitted(address, allowed) for address in addresses):
        return "refused: the name resolves to an address that is not public"
    return ""


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks and connects in one step, so the checked address is the one connected to.

    ``trusted`` holds ``(host, port)`` origins the configuration itself names (a page reader):
    connections to exactly those skip the address check, and nothing else does.
    """

    def __init__(
        self, allowed: tuple[IPNetwork, ...], trusted: frozenset[tuple[str, int]] = frozenset()
    ) -> None:
        self._allowed = allowed
        self._trusted = trusted
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with anyio.fail_after(timeout):
            addresses = await _resolve(host, port)
        # One bad answer refuses the host: a name that mixes public and private addresses is
        # exactly what a rebinding attack looks like.
        trusted = (_host_key(host), port) in self._trusted
        if not trusted and not all(_permitted(address, self._allowed) for address in addresses):
            raise BlockedAddress(f"refused to connect to {host}: it is not a public address")
        for address in addresses[:-1]:
            with contextlib.suppress(httpcore.ConnectError):
                return await self._connect(address, port, timeout, local_address, socket_options)
        return await self._connect(addresses[-1], port, timeout, local_address, socket_options)

    async def _connect(
        self,
        address: IPAddress,
        port: int,
        timeout: float | None,
        local_address: str | None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to an address literal, so nothing below here resolves a name again."""
        return await self._inner.connect_tcp(
            str(address),
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )


def _origins(url: str) -> frozenset[tuple[str, int]]:
    """``{(host, port)}`` of ``url`` (the port its scheme implies when it names none)."""
    if not url:
        return frozenset()
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return frozenset()
    return frozenset({(_host_key(parts.hostname or ""), port)}) if parts.hostname else frozenset()


@functools.lru_cache(maxsize=4)
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's TLS context for these ``SSL_CERT_FILE``/``SSL_CERT_DIR`` values, built once:
    loading the CA bundle costs ~35 ms, too much to pay on every page fetched."""
    return httpx.create_ssl_context()


class _GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (and its exception mapping) over a pool on ``_GuardedBackend``.

    httpx has no public way to choose the network backend (encode/httpx#3749), so the pool it
    builds is replaced; ``handle_async_request`` uses ``self._pool`` in every httpx 0.2x. If that
    ever stops being a connection pool this refuses to run rather than fetch unguarded.
    """

    def __init__(
        self, allowed: tuple[IPNetwork, ...], trusted: frozenset[tuple[str, int]] = frozenset()
    ) -> None:
        # Honours SSL_CERT_FILE/SSL_CERT_DIR like httpx does; proxy variables are not read.
        ssl_context = _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        super().__init__(verify=ssl_context, trust_env=False)
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError("this httpx version cannot take the address-checking backend")
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, network_backend=_GuardedBackend(allowed, trusted)
        )


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
    if isinstance(exc, _LookupFailed):
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


def _refuse_url(url: httpx.URL) -> str:
    """Why this URL may not be fetched, or '' when it may."""
    if url.scheme not in ("http", "https"):
        return "only http and https URLs can be fetched"
    if not url.host:
        return "the URL has no host"
    return ""


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


class ExtractPool:
    """At most ``size`` extractions at once, each in a worker process and within a deadline.

    ``run`` blocks, so it is called in a thread. Waiting for a free worker counts against the
    deadline; a worker that passes it is killed and a new one started for the next page. Workers
    live as long as the server (they are daemon processes), and leave when it does.
    """

    def __init__(self, size: int = EXTRACT_WORKERS, retire_rss: int = RETIRE_RSS) -> None:
        self.size = size
        self.retire_rss = retire_rss
        self._slots = threading.BoundedSemaphore(size)
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
    ) -> Any:
        """``function(*args)`` in a worker, or ``ExtractionTimeout`` once ``deadline`` (on
        ``clock``) has passed; ``ExtractionFailed`` if it raised or the worker died."""
        if not self._slots.acquire(timeout=max(0.0, deadline - clock())):
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
            self._slots.release()

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


def _warm_pool() -> None:
    """Start the first extraction worker in the background, so no page waits for it."""
    if not _POOL.started:
        threading.Thread(target=_warm_quietly, daemon=True, name="dbrain-extract-warm").start()


def _warm_quietly() -> None:
    try:
        _POOL.warm()
    except Exception:  # the page's own extraction will start one, or say why it cannot
        logger.debug("could not start an extraction worker ahead of need", exc_info=True)


async def _extract_within(body: _Body, deadline: float, max_markup: int) -> tuple[str, ...]:
    """The page's fields, extracted in a worker before ``deadline``; plain text needs none."""
    if body.media_type == "text/plain":
        return await anyio.to_thread.run_sync(
            _extract, body.content, body.media_type, body.charset, body.final_url
        )
    args = (body.content[:max_markup], body.media_type, body.charset, body.final_url)
    return await anyio.to_thread.run_sync(_POOL.run, _EXTRACTOR, args, deadline)


@dataclass(frozen=True)
class _Body:
    """A fully read, acceptable answer, waiting for extraction."""

    final_url: str
    status: int
    media_type: str
    charset: str | None
    content: bytes


async def _read_body(url: str, response: httpx.Response, max_bytes: int) -> _Body | FetchResult:
    """Check status, type and size of the final answer, then read its body within the cap."""
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
        chunks.append(chunk)
    return _Body(
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
    client: httpx.AsyncClient, url: str, max_redirects: int, max_bytes: int, progress: _Progress
) -> _Body | FetchResult:
    """GET ``url``, following at most ``max_redirects`` redirects one checked hop at a time."""
    target = httpx.URL(url)
    redirects = 0
    while True:
        refusal = _refuse_url(target)
        if refusal:
            return _failure(url, "fetch_failed", refusal, final_url=progress.target)
        async with client.stream("GET", target) as response:
            progress.response = response
            if response.next_request is None:
                return await _read_body(url, response, max_bytes)
            if redirects == max_redirects:
                return _failure(
                    url, "fetch_failed", f"more than {max_redirects} redirects", response
                )
            redirects += 1
            target = response.next_request.url
            progress.target = str(target)
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
) -> FetchResult:
    """Fetch ``url`` and extract its readable text; failures come back as a result, not raised.

    ``timeout`` bounds the whole fetch: the network exchange (every redirect and the body) and
    then the extraction, which runs with the connection closed in a worker process that is
    killed if it passes the deadline (a ``timeout`` failure). At most ``max_markup`` bytes of a
    page's markup are extracted; the rest is cut off. ``allow_networks`` lists CIDRs that may be
    connected to even though they are not public (a self-hosted setup, tests); an invalid CIDR
    raises ValueError, being a configuration error. ``trusted_origin`` is a URL whose host and
    port (a page reader the configuration names) may be connected to whatever its address.
    """
    deadline = time.monotonic() + timeout
    allowed = _parse_networks(allow_networks)
    missing = extractor_missing()
    if missing:
        return _failure(url, "unsupported_file", missing)
    try:
        httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return _failure(url, "fetch_failed", "invalid URL")
    progress = _Progress()
    _warm_pool()
    try:
        async with httpx.AsyncClient(
            transport=_GuardedTransport(allowed, _origins(trusted_origin)),
            follow_redirects=False,
            trust_env=False,
            timeout=httpx.Timeout(timeout),
            headers={"User-Agent": user_agent, "Accept": _ACCEPT},
        ) as client:
            with anyio.fail_after(timeout):
                outcome = await _follow(client, url, max_redirects, max_bytes, progress)
        if isinstance(outcome, FetchResult):
            return outcome
        title, description, site_name, text = await _extract_within(outcome, deadline, max_markup)
    except Exception as exc:
        kind, error = _classify(exc, timeout)
        if kind == "unknown":
            logger.warning("unexpected error while fetching a page", exc_info=True)
        return _failure(url, kind, error, progress.response, progress.target)
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
