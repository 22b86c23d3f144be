"""The fake providers' server: ``FakeWeb`` plays Brave, Exa and SearXNG on one loopback HTTP
server (``loopback``), with a control API (``/__fake/...``), fault modes and a page reader."""

from __future__ import annotations

import argparse
import html
import json
import math
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from ..corpus import NOW, PAGES, Page
from .brave import BraveFake
from .brave_params import WEB_BOOLS
from .common import (
    HOLE,
    HTML,
    JSON,
    KNOWN_PATHS,
    PLANS,
    PROVIDERS,
    READER_PREFIX,
    REASONS,
    ROUTES,
    Hit,
    Incoming,
    Mode,
    RecordedRequest,
    Reply,
    check_options,
    html_error,
    json_reply,
    padded_stream,
    parse_query,
    query_text,
    rank,
    same_page,
    split_hole,
    text_reply,
    utc,
)
from .exa import (
    EXA_DEFAULT_TEXT,
    EXA_JSON,
    ExaContents,
    ExaFake,
)
from .loopback import Handler, Server
from .searxng import SearxngFake


class FakeWeb(BraveFake, ExaFake, SearxngFake):
    """One loopback HTTP server playing Brave, Exa and SearXNG, with fault injection.

    Use as a context manager (``with FakeWeb() as web: ...``) or ``start()``/``stop()``.
    ``now`` is the fixed clock for freshness filters and ages, so results never drift.
    ``searxng_limiter`` plays an instance with ``server.limiter: true``, the docker and public
    default: a ``/search`` without ``Accept-Language`` gets 429 "Too Many Requests".

    A stall (``latency_ms``, the ``slow`` mode) ends early when the client hangs up or
    ``stop()`` is called; each request's record says how long the fake stalled it (``paused``)
    and what cut the stall short (``cut``). ``sleep`` stands in for the stalls: a test passes
    one that records the seconds instead of spending them; ``clock`` (``time.monotonic``) is the
    one Brave's per-second limiter and the fake's epoch run on, which a test may hold still.
    ``wait_for_requests`` and ``wait_settled`` let a test wait for the fake's handlers rather
    than for the clock.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        brave_keys: Sequence[str] = ("test-brave-key",),
        exa_keys: Sequence[str] = ("test-exa-key",),
        latency_ms: float = 0,
        brave_plan: str = "search",
        now: datetime = NOW,
        pages: Sequence[Page] = PAGES,
        searxng_limiter: bool = True,
        sleep: Callable[[float], object] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if brave_plan not in PLANS:
            raise ValueError(f"unknown Brave plan {brave_plan!r}")
        self.host = host
        self.port = port
        self.brave_keys = frozenset(brave_keys)
        self.exa_keys = frozenset(exa_keys)
        self.latency_ms = latency_ms
        self.brave_plan = brave_plan
        self.searxng_limiter = searxng_limiter
        self.now = utc(now)
        self.pages = tuple(pages)
        self._by_url = {page.url: page for page in self.pages}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a request recorded, or one answered
        self._in_flight = 0
        self._sleep = sleep
        self._clock = clock
        self._stopping = threading.Event()
        self._modes = {provider: Mode() for provider in PROVIDERS}
        self._log: list[RecordedRequest] = []
        self._window_start = -math.inf
        self._window_count = 0
        self._billed = 0
        self._started_at = clock()
        self._server: Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> FakeWeb:
        """Bind and serve in a daemon thread; returns self so ``FakeWeb().start()`` chains."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = Server((self.host, self.port), Handler)
        server.respond = self._respond
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fakeweb", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake sleeping handlers and close open connections."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeWeb:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeWeb is not started")
        return f"http://{self.host}:{self.port}"

    @property
    def brave_base_url(self) -> str:
        return f"{self.url}/brave/res/v1"

    @property
    def exa_base_url(self) -> str:
        return f"{self.url}/exa"

    @property
    def searxng_base_url(self) -> str:
        return f"{self.url}/searxng"

    # -- control --

    def set_mode(self, provider: str, mode: str, **options: Any) -> None:
        """Switch ``provider`` into a fault mode until ``reset()`` (or for ``times`` requests)."""
        check_options(provider, mode, options)
        times = options.pop("times", None)
        with self._lock:
            self._modes[provider] = Mode(mode, options, times)

    def reset(self) -> None:
        """Back to normal: modes, request log and rate counters."""
        with self._lock:
            self._modes = {provider: Mode() for provider in PROVIDERS}
            self._log.clear()
            self._window_start = -math.inf
            self._window_count = 0
            self._billed = 0

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    def wait_for_requests(self, count: int, timeout: float = 60) -> bool:
        """Block until ``count`` requests have been recorded (``timeout`` only guards against
        a hang); False if they were not."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._log) >= count, timeout)

    def wait_settled(self, timeout: float = 60) -> bool:
        """Block until no request is being handled, so its record is final (``timeout`` only
        guards against a hang); False if one still is."""
        with self._changed:
            return self._changed.wait_for(lambda: self._in_flight == 0, timeout)

    def _claim(
        self, provider: str, names: Iterable[str], endpoint: str | None = None
    ) -> Mode | None:
        """The provider's mode if it is one of ``names``, counting one use against ``times``.

        A mode set for one ``endpoint`` (Exa's ``/contents`` failing while ``/search`` works)
        is not claimed, nor counted, by a request to another."""
        with self._lock:
            mode = self._modes[provider]
            if mode.name not in names:
                return None
            wanted = mode.options.get("endpoint")
            if wanted is not None and endpoint is not None and wanted != endpoint:
                return None
            claimed = Mode(mode.name, dict(mode.options), mode.remaining)
            if mode.remaining is not None:
                mode.remaining -= 1
                if mode.remaining <= 0:
                    self._modes[provider] = Mode()
            return claimed

    def _option(self, provider: str, name: str, default: Any) -> Any:
        """An option of the provider's current mode, read without claiming it."""
        with self._lock:
            return self._modes[provider].options.get(name, default)

    def _pause(self, seconds: float, req: Incoming, record: RecordedRequest) -> None:
        """Stall ``seconds``, recorded on ``record``; cut short when the client hangs up or
        ``stop()`` is called (the cause recorded as ``cut``)."""
        if seconds <= 0:
            return
        with self._lock:
            record.paused = round(record.paused + seconds, 6)
        if self._sleep is not None:
            self._sleep(seconds)
            return
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            # stop() sets the event before it closes connections: a closed one is the client's.
            if self._stopping.wait(min(left, 0.05)):
                cut = "stop"
            elif req.hung_up():
                cut = "stop" if self._stopping.is_set() else "client"
            else:
                continue
            with self._lock:
                record.cut = cut
            return

    def _epoch(self) -> int:
        """Seconds since 1970 on the fake clock, which advances from ``now`` in real time."""
        return int(self.now.timestamp() + self._clock() - self._started_at)

    # -- dispatch --

    def _respond(self, req: Incoming) -> Reply:
        with self._changed:
            self._in_flight += 1
        try:
            return self._dispatch(req)
        finally:
            with self._changed:
                self._in_flight -= 1
                self._changed.notify_all()

    def _dispatch(self, req: Incoming) -> Reply:
        if req.path.startswith("/__fake/"):
            return self._control(req)
        if req.path.startswith(READER_PREFIX):
            record = self._record("reader", "page", req)
            reply = self._reader(req, record)
            record.status = reply.status
            return reply
        route = ROUTES.get((req.method, req.path))
        prefix = req.path.strip("/").split("/", 1)[0]
        provider = route[0] if route else (prefix if prefix in PROVIDERS else "unknown")
        record = self._record(provider, route[1] if route else "", req)
        if route is None:
            reply = json_reply(
                405 if req.path in KNOWN_PATHS else 404,
                {"detail": "Method Not Allowed" if req.path in KNOWN_PATHS else "Not Found"},
            )
        else:
            reply = self._serve(route[0], route[1], req, record)
        if provider == "brave" and reply.header("X-RateLimit-Limit") is None:
            reply.headers.extend(self._brave_headers())
        record.status = reply.status
        return reply

    def _reader(self, req: Incoming, record: RecordedRequest) -> Reply:
        """A page reader: ``GET /reader/<page URL>`` answers with the corpus page at that URL
        as HTML (what the page itself would serve), 404 for a URL the corpus does not hold."""
        if req.method != "GET":
            return text_reply(405, "Method Not Allowed")
        target = req.path[len(READER_PREFIX) :]
        if req.query:
            target += "?" + "&".join(f"{k}={v}" for k, values in req.query.items() for v in values)
        page = next((p for p in self.pages if same_page(p.url, target)), None)
        if page is None:
            return text_reply(404, "Not Found")
        self._pause(self.latency_ms / 1000, req, record)
        title = html.escape(page.title or "")
        paragraphs = "".join(
            f"<p>{html.escape(part.strip())}</p>"
            for part in page.text.split("\n\n")
            if part.strip()
        )
        body = (
            f'<!doctype html><html><head><title>{title}</title></head><body><nav><a href="/">Home'
            f"</a></nav><article><h1>{title}</h1>{paragraphs}</article>"
            "<footer>© the page's authors</footer></body></html>"
        )
        return text_reply(200, body, HTML)

    def _record(self, provider: str, endpoint: str, req: Incoming) -> RecordedRequest:
        try:
            body = req.json_body() if req.body else None
        except ValueError:
            body = None
        record = RecordedRequest(
            provider=provider,
            endpoint=endpoint,
            method=req.method,
            path=req.path,
            query=req.query,
            headers=dict(req.headers),
            json=body,
            at=self._clock(),
        )
        with self._changed:
            self._log.append(record)
            self._changed.notify_all()
        return record

    def _serve(self, provider: str, endpoint: str, req: Incoming, record: RecordedRequest) -> Reply:
        self._pause(self.latency_ms / 1000, req, record)
        if (
            provider == "searxng"
            and self.searxng_limiter
            and not req.headers.get("accept-language", "").strip()
        ):
            # SearXNG's botdetection (http_accept_language) runs before any handler.
            return text_reply(429, "Too Many Requests")
        slow = self._claim(provider, {"slow"}, endpoint)
        if slow is not None:
            self._pause(float(slow.options.get("seconds", 5)), req, record)
        fault = self._claim(provider, {"server_error", "malformed", "huge"}, endpoint)
        if fault is not None:
            return self._fault(provider, endpoint, fault, req)
        if provider == "brave":
            return self._brave(endpoint, req)
        if provider == "exa":
            return self._exa(endpoint, req)
        return self._searxng(req)

    def _control(self, req: Incoming) -> Reply:
        if req.method == "GET" and req.path == "/__fake/requests":
            return json_reply(200, [r.as_dict(redact=True) for r in self.requests])
        if req.method == "POST" and req.path == "/__fake/reset":
            self.reset()
            return json_reply(200, {"ok": True})
        if req.method == "POST" and req.path == "/__fake/mode":
            try:
                body = req.json_body()
                if not isinstance(body, dict):
                    raise ValueError("expected a JSON object")
                options = dict(body)
                provider = options.pop("provider", None)
                mode = options.pop("mode", None)
                self.set_mode(str(provider), str(mode), **options)
            except ValueError as exc:
                return json_reply(400, {"ok": False, "error": str(exc)})
            return json_reply(200, {"ok": True, "provider": provider, "mode": mode, **options})
        return json_reply(404, {"ok": False, "error": f"no control endpoint {req.path}"})

    # -- faults shared by all providers --

    def _fault(self, provider: str, endpoint: str, mode: Mode, req: Incoming) -> Reply:
        prefix, item, suffix = self._skeleton(provider, endpoint, query_text(req))
        content_type = EXA_JSON if provider == "exa" else JSON
        if mode.name == "malformed":
            return Reply(200, prefix + item[: len(item) // 2], [("Content-Type", content_type)])
        if mode.name == "huge":
            total = int(float(mode.options.get("mb", 6)) * 1024 * 1024)
            stream = padded_stream(prefix, item, suffix, total)
            return Reply(200, headers=[("Content-Type", content_type)], stream=stream)
        status = int(mode.options.get("status", 500))
        if provider == "searxng" or mode.options.get("plain"):
            return html_error(status, REASONS.get(status, "Server Error"), "Upstream failure.")
        if provider == "exa":
            tag = mode.options.get("tag", "INTERNAL_ERROR")
            payload = {"requestId": uuid.uuid4().hex, "error": "Internal server error", "tag": tag}
            return json_reply(status, payload, content_type=EXA_JSON)
        return self._brave_error(
            status,
            "INTERNAL_ERROR",
            "An unexpected error occurred.",
            {"component": "api"},
            form=mode.options.get("form"),
        )

    def _skeleton(self, provider: str, endpoint: str, q: str) -> tuple[bytes, bytes, bytes]:
        """A response of the right shape with one list left open, for malformed and huge bodies."""
        page = self.pages[0]
        hit = Hit(page, (), ())
        if provider == "brave" and endpoint == "web/search":
            item = self._brave_result(hit, {**WEB_BOOLS})
            doc: dict[str, Any] = {
                "type": "search",
                "query": {"original": q, "more_results_available": True},
                "web": {"type": "search", "results": [HOLE], "family_friendly": True},
            }
        elif provider == "brave":
            item = {"url": page.url, "title": page.title or "", "snippets": [page.text]}
            doc = {"grounding": {"generic": [HOLE], "map": []}, "sources": {}}
        elif provider == "exa":
            item = self._exa_result(hit, ExaContents(text=EXA_DEFAULT_TEXT))
            doc = {"requestId": uuid.uuid4().hex, "results": [HOLE], "searchTime": 1.0}
        else:
            item = self._searxng_result(hit, 1, None)
            doc = {"query": q, "number_of_results": 1, "results": [HOLE], "answers": []}
        before, after = split_hole(doc)
        return before, json.dumps(item, ensure_ascii=False).encode(), after

    # -- Brave --

    def _search(self, q: str) -> list[Hit]:
        return rank(self.pages, parse_query(q))

    # -- Exa --

    def _lookup(self, url: str) -> Page | None:
        """Exa finds a page by its URL, with or without a trailing slash."""
        return self._by_url.get(url) or self._by_url.get(
            url[:-1] if url.endswith("/") else url + "/"
        )

    # -- SearXNG --


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until interrupted; the one printed line tells a parent process where to connect."""
    parser = argparse.ArgumentParser(
        prog="python -m datasette_dbrain_websearch.demo.fakeweb",
        description="Offline fake of the Brave Search, Exa and SearXNG HTTP APIs.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (0: any free one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--latency-ms", type=float, default=0, help="delay every provider answer")
    parser.add_argument("--brave-key", action="append", help="accepted Brave key (repeatable)")
    parser.add_argument("--exa-key", action="append", help="accepted Exa key (repeatable)")
    parser.add_argument("--brave-plan", choices=sorted(PLANS), default="search")
    parser.add_argument(
        "--no-searxng-limiter",
        action="store_true",
        help="answer SearXNG requests without Accept-Language (server.limiter: false)",
    )
    parser.add_argument(
        "--now", type=datetime.fromisoformat, default=NOW, help="the fixed clock (ISO 8601)"
    )
    args = parser.parse_args(argv)
    now = args.now if args.now.tzinfo else args.now.replace(tzinfo=UTC)
    web = FakeWeb(
        args.host,
        args.port,
        brave_keys=args.brave_key or ("test-brave-key",),
        exa_keys=args.exa_key or ("test-exa-key",),
        latency_ms=args.latency_ms,
        brave_plan=args.brave_plan,
        now=now,
        searxng_limiter=not args.no_searxng_limiter,
    )
    signal.signal(signal.SIGTERM, _stop_on_signal)
    web.start()
    print(f"fakeweb listening on {web.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        web.stop()
    return 0


def _stop_on_signal(*_: object) -> None:
    """SIGTERM ends the sleep with an exception, once: a handler that sets an ``Event`` the main
    thread is waiting on can deadlock on the event's lock, and a second SIGTERM (``make demo``
    sends several) must not interrupt the server's stop."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(0)
