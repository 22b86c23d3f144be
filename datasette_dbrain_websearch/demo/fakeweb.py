"""An offline stand-in for Brave Search, Exa and SearXNG, over real loopback HTTP.

There is no internet in tests or the demo, yet the provider clients must meet the real wire
formats, status codes, headers and failure shapes their documentation gives. This server
answers from the fixed corpus in ``corpus`` with deterministic ranking against a fixed
clock, and can be switched into fault modes (rate limits, 5xx, malformed or huge bodies, slow
answers, empty results, plan and credit errors) per provider.

It also does what the real services do beyond the happy path, as seen outside the docs:
SearXNG's bot limiter answers 429 to a ``/search`` without ``Accept-Language`` (on by default,
as on docker and public instances), bad ``language`` values get a 400, and an older instance's
localized dates are a mode; Exa rejects retired search types, sends no ``score``, can fail
``/contents`` as a whole and returns an arXiv abstract's text under its PDF URL; Brave can answer
errors in the reference pages' ``errors`` array form and refuse LLM Context with 403
``RESOURCE_NOT_ALLOWED``.

Paths, so one server plays all three providers::

    /brave/res/v1/web/search   GET (and POST with a JSON body)
    /brave/res/v1/llm/context  GET and POST
    /exa/search, /exa/contents POST
    /searxng/search            GET and POST (form)
    /reader/<page URL>         GET: the corpus page at that URL, as HTML (a page reader)
    /__fake/requests (GET), /__fake/mode (POST), /__fake/reset (POST)

Run it with ``python -m datasette_dbrain_websearch.demo.fakeweb --port N``.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import html
import json
import math
import re
import signal
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socket import IPPROTO_TCP, SHUT_RDWR, TCP_NODELAY, socket
from typing import Any
from urllib.parse import parse_qs, urlparse, urlsplit

from .corpus import NOW, PAGES, Page

__all__ = ["PLANS", "BravePlan", "FakeWeb", "RecordedRequest", "main"]

PROVIDERS = ("brave", "exa", "searxng")
_COMMON_MODES = ("normal", "server_error", "malformed", "slow", "huge", "empty")
_PROVIDER_MODES: dict[str, frozenset[str]] = {
    "brave": frozenset(
        (*_COMMON_MODES, "rate_limited", "quota_limited", "not_in_plan", "error_missing_fields")
    ),
    "exa": frozenset((*_COMMON_MODES, "rate_limited", "no_credits", "url_failed")),
    "searxng": frozenset((*_COMMON_MODES, "rate_limited", "json_disabled", "localized_dates")),
}
_MODE_OPTIONS: dict[tuple[str, str], frozenset[str]] = {
    ("brave", "rate_limited"): frozenset({"reset_seconds", "retry_after", "plan"}),
    ("brave", "quota_limited"): frozenset({"retry_after", "plan"}),
    ("exa", "rate_limited"): frozenset({"retry_after", "tag", "body"}),
    ("searxng", "rate_limited"): frozenset({"retry_after"}),
    ("brave", "server_error"): frozenset({"status", "plain"}),
    ("exa", "server_error"): frozenset({"status", "plain", "tag"}),
    ("searxng", "server_error"): frozenset({"status"}),
    ("brave", "slow"): frozenset({"seconds"}),
    ("exa", "slow"): frozenset({"seconds"}),
    ("searxng", "slow"): frozenset({"seconds"}),
    ("brave", "huge"): frozenset({"mb"}),
    ("exa", "huge"): frozenset({"mb"}),
    ("searxng", "huge"): frozenset({"mb"}),
    ("brave", "error_missing_fields"): frozenset({"drop"}),
    ("brave", "not_in_plan"): frozenset({"code"}),
}
# Options every mode of a provider takes: Brave's error body ``form`` (the live ``error`` object
# or the reference pages' ``errors`` array; "normal" with ``form`` changes only the form).
_PROVIDER_OPTIONS: dict[str, frozenset[str]] = {"brave": frozenset({"form"})}
# Exa modes that take ``endpoint``: the fault then hits only /search or only /contents.
_EXA_ENDPOINT_MODES = frozenset(
    ("server_error", "malformed", "slow", "huge", "empty", "rate_limited", "no_credits")
)
_BRAVE_REFUSALS = {
    "OPTION_NOT_IN_PLAN": (400, "The option is not subscribed in the plan.", "authentication"),
    "RESOURCE_NOT_ALLOWED": (403, "The user is not authorized to access this resource.", "api"),
}
_AUTH_HEADERS = frozenset({"x-subscription-token", "x-api-key", "authorization"})

_ROUTES: dict[tuple[str, str], tuple[str, str]] = {
    ("GET", "/brave/res/v1/web/search"): ("brave", "web/search"),
    ("POST", "/brave/res/v1/web/search"): ("brave", "web/search"),
    ("GET", "/brave/res/v1/llm/context"): ("brave", "llm/context"),
    ("POST", "/brave/res/v1/llm/context"): ("brave", "llm/context"),
    ("POST", "/exa/search"): ("exa", "search"),
    ("POST", "/exa/contents"): ("exa", "contents"),
    ("GET", "/searxng/search"): ("searxng", "search"),
    ("POST", "/searxng/search"): ("searxng", "search"),
}
_KNOWN_PATHS = frozenset(path for _, path in _ROUTES)
READER_PREFIX = "/reader/"  # a page reader: GET /reader/<page URL> answers with the page

_JSON = "application/json"
_EXA_JSON = "application/json; charset=utf-8"
_HTML = "text/html; charset=utf-8"
_MONTH_WINDOW = 2_592_000


# --- Text matching --------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _norm(word: str) -> str:
    """Lowercase and drop a plural ``s`` so "grinders" finds "grinder" both ways."""
    word = word.lower()
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


_STOPWORDS = frozenset(
    _norm(word)
    for word in "a an and are as at be best but by can could did do does for from had has have how"
    " i if in into is it its me my no not of on or our should so than that the their them then"
    " there these they this those to up use vs versus was we what when where which who why will"
    " with would you your".split()
)


def _words(text: str) -> set[str]:
    return {_norm(w) for w in _WORD.findall(text)}


@dataclass(frozen=True)
class _Query:
    terms: tuple[str, ...]
    sites: tuple[str, ...]
    excluded: tuple[str, ...]
    excluded_sites: tuple[str, ...] = ()


def _parse_query(q: str) -> _Query:
    """Terms for term-overlap ranking, plus the ``site:`` (several are alternatives),
    ``-site:`` and ``-term`` operators."""
    terms: list[str] = []
    sites: list[str] = []
    excluded: list[str] = []
    excluded_sites: list[str] = []
    for raw in q.split():
        token = raw.strip("\"'")
        if token.lower().startswith("site:") and len(token) > 5:
            sites.append(token[5:].lower())
        elif token.lower().startswith("-site:") and len(token) > 6:
            excluded_sites.append(token[6:].lower())
        elif token.startswith("-") and len(token) > 1:
            excluded.extend(_norm(w) for w in _WORD.findall(token))
        else:
            terms.extend(_norm(w) for w in _WORD.findall(token))
    kept = [t for t in terms if t not in _STOPWORDS and len(t) > 1] or terms
    return _Query(tuple(dict.fromkeys(kept)), tuple(sites), tuple(excluded), tuple(excluded_sites))


def _host(url: str) -> str:
    return urlsplit(url).hostname or ""


def _same_page(a: str, b: str) -> bool:
    """Two addresses of one page: the scheme, ``www.`` / ``m.`` and a trailing slash aside."""

    def key(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url)
        host = _host(url).removeprefix("www.").removeprefix("m.")
        return host, parts.path.rstrip("/"), parts.query

    return key(a) == key(b)


def _domain_matches(host: str, domain: str) -> bool:
    """A domain matches itself and its subdomains; a URL is reduced to its host first."""
    domain = domain.strip().lower()
    if "//" in domain:
        domain = _host(domain)
    domain = domain.split("/", 1)[0]
    return bool(domain) and (host == domain or host.endswith("." + domain))


@dataclass(frozen=True)
class _Hit:
    page: Page
    matched: tuple[str, ...]
    terms: tuple[str, ...]

    @property
    def coverage(self) -> float:
        return len(self.matched) / len(self.terms) if self.terms else 1.0


def _rank(pages: Sequence[Page], query: _Query) -> list[_Hit]:
    """Term overlap on title + text: most terms, then most title terms, then corpus order."""
    scored: list[tuple[tuple[int, int, int], _Hit]] = []
    for index, page in enumerate(pages):
        host = _host(page.url)
        if query.sites and not any(_domain_matches(host, s) for s in query.sites):
            continue
        if any(_domain_matches(host, s) for s in query.excluded_sites):
            continue
        words = _words(f"{page.title or ''} {page.text}")
        if any(t in words for t in query.excluded):
            continue
        matched = tuple(t for t in query.terms if t in words)
        if query.terms and not matched:
            continue
        if not query.terms and not query.sites:
            continue
        title_words = _words(page.title or "")
        title_hits = sum(1 for t in matched if t in title_words)
        scored.append(((-len(matched), -title_hits, index), _Hit(page, matched, query.terms)))
    scored.sort(key=lambda item: item[0])
    return [hit for _, hit in scored]


def _sentences(text: str) -> list[str]:
    return [s for para in text.split("\n\n") for s in _SENTENCE_END.split(para) if s]


def _hits_in(text: str, terms: Iterable[str]) -> int:
    words = _words(text)
    return sum(1 for t in terms if t in words)


def _clip(text: str, limit: int) -> str:
    """Cut at a word boundary, marking the cut the way search engines do."""
    if len(text) <= limit:
        return text
    return text[: limit - 3].rsplit(" ", 1)[0] + "..."


def _snippet(text: str, terms: Sequence[str], target: int = 160, limit: int = 300) -> str:
    """The best-matching sentence, extended with the following ones up to ``target`` characters."""
    sentences = _sentences(text)
    if not sentences:
        return ""
    best = max(range(len(sentences)), key=lambda i: (_hits_in(sentences[i], terms), -i))
    out = sentences[best]
    for following in sentences[best + 1 :]:
        if len(out) >= target:
            break
        out = f"{out} {following}"
    return _clip(out, limit)


def _decorate(text: str, terms: Sequence[str]) -> str:
    """Wrap matched words in ``<strong>``, as Brave's text decorations do."""
    wanted = set(terms)
    return _WORD.sub(lambda m: f"<strong>{m[0]}</strong>" if _norm(m[0]) in wanted else m[0], text)


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _relative_age(published: datetime, now: datetime) -> str:
    delta = now - published
    if delta < timedelta(hours=1):
        minutes = max(int(delta.total_seconds() // 60), 1)
        return f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    if delta < timedelta(days=1):
        hours = int(delta.total_seconds() // 3600)
        return f"{hours} hour{'s' if hours != 1 else ''} ago"
    if delta < timedelta(days=30):
        return f"{delta.days} day{'s' if delta.days != 1 else ''} ago"
    return f"{published:%B} {published.day}, {published.year}"


def _within(published: datetime | None, start: datetime, end: datetime) -> bool:
    return published is not None and start <= published <= end


_FRESHNESS_DAYS = {"pd": 1, "pw": 7, "pm": 31, "py": 365}
_FRESHNESS = re.compile(r"^(pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$")


def _freshness_window(value: str, now: datetime) -> tuple[datetime, datetime]:
    """Brave ``freshness`` as an inclusive UTC window; a date range covers whole days."""
    if value in _FRESHNESS_DAYS:
        return now - timedelta(days=_FRESHNESS_DAYS[value]), now
    first, last = (date.fromisoformat(part) for part in value.split("to"))
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    end = datetime(last.year, last.month, last.day, tzinfo=UTC) + timedelta(days=1, microseconds=-1)
    return start, end


# --- Requests, replies and the request log --------------------------------------------------


@dataclass
class RecordedRequest:
    """One request as the fake saw it, so tests can assert on what a client actually sent."""

    provider: str
    endpoint: str
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    json: Any
    at: float
    status: int | None = None

    def as_dict(self, *, redact: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if redact:
            data["headers"] = {
                k: ("***" if k in _AUTH_HEADERS else v) for k, v in self.headers.items()
            }
        return data


@dataclass(frozen=True)
class _Incoming:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json_body(self) -> Any:
        """The parsed JSON body; raises ``ValueError`` when it is not JSON."""
        return json.loads(self.body.decode("utf-8"))


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    stream: Iterator[bytes] | None = None

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


def _json_reply(
    status: int, payload: Any, headers: Sequence[tuple[str, str]] = (), content_type: str = _JSON
) -> _Reply:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return _Reply(status, body, [("Content-Type", content_type), *headers])


def _text_reply(status: int, text: str, content_type: str = "text/plain; charset=utf-8") -> _Reply:
    return _Reply(status, text.encode("utf-8"), [("Content-Type", content_type)])


def _html_error(status: int, title: str, message: str) -> _Reply:
    """Werkzeug's default error page, which SearXNG (Flask) sends for aborts."""
    page = (
        f"<!doctype html>\n<html lang=en>\n<title>{status} {title}</title>\n"
        f"<h1>{title}</h1>\n<p>{message}</p>\n"
    )
    return _text_reply(status, page, _HTML)


_HOLE = "\x00items\x00"
_HOLE_JSON = json.dumps(_HOLE)


def _split_hole(payload: dict[str, Any]) -> tuple[bytes, bytes]:
    """Serialise ``payload`` around the one list holding ``[_HOLE]`` (for streamed bodies)."""
    text = json.dumps(payload, ensure_ascii=False)
    before, after = text.split(_HOLE_JSON)
    return before.encode(), after.encode()


def _padded_stream(prefix: bytes, item: bytes, suffix: bytes, total: int) -> Iterator[bytes]:
    """A valid JSON document of at least ``total`` bytes, in 64 KiB chunks."""
    yield prefix
    per_chunk = max(1, 65_536 // (len(item) + 1))
    sent = len(prefix)
    first = True
    while sent < total:
        items = [item] * per_chunk
        chunk = (b"" if first else b",") + b",".join(items)
        first = False
        sent += len(chunk)
        yield chunk
    yield suffix


# --- Brave plans and parameter validation ---------------------------------------------------


@dataclass(frozen=True)
class BravePlan:
    """What the rate-limit headers advertise. ``per_month == 0`` means uncapped (pay as you go)."""

    name: str
    per_second: int
    per_month: int


PLANS = {
    "search": BravePlan("Search", 50, 0),
    "free": BravePlan("Free", 1, 2000),
}

_VALIDATION_DETAIL = "Unable to validate request parameter(s)"
_STR_MSG = "Input should be a valid string"
_INT_MSG = "Input should be a valid integer"
_INT_PARSE_MSG = "Input should be a valid integer, unable to parse string as an integer"
_WEB_INTS = {"count": (20, 1, 20), "offset": (0, 0, 9)}
_WEB_BOOLS = {
    "text_decorations": True,
    "spellcheck": True,
    "extra_snippets": False,
    "summary": False,
    "enable_rich_callback": False,
    "include_fetch_metadata": False,
    "operators": True,
}
_LLM_INTS = {
    "count": (20, 1, 50),
    "maximum_number_of_urls": (20, 1, 50),
    "maximum_number_of_tokens": (8192, 1024, 32768),
    "maximum_number_of_snippets": (50, 1, 100),
    "maximum_number_of_tokens_per_url": (4096, 512, 8192),
    "maximum_number_of_snippets_per_url": (50, 1, 100),
}
_LLM_BOOLS = {"enable_source_metadata": False, "spellcheck": True}
_SAFESEARCH = ("off", "moderate", "strict")
_THRESHOLDS = ("strict", "balanced", "lenient", "disabled")
_THRESHOLD_COVERAGE = {"strict": 0.5, "balanced": 0.25, "lenient": 0.0, "disabled": 0.0}


def _pyd_error(
    kind: str, loc: list[Any], msg: str, value: Any, ctx: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One entry of ``meta.errors``, shaped like the pydantic errors Brave returns."""
    entry: dict[str, Any] = {"type": kind, "loc": loc, "msg": msg, "input": value}
    if ctx is not None:
        entry["ctx"] = ctx
    return entry


def _choices(options: Sequence[str]) -> str:
    quoted = [f"'{o}'" for o in options]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


class _BraveParams:
    """Validates query-string (GET) or JSON-body (POST) parameters, collecting every error."""

    def __init__(self, source: dict[str, Any], where: str) -> None:
        self.source = source
        self.where = where
        self.errors: list[dict[str, Any]] = []
        self.values: dict[str, Any] = {}

    def _loc(self, name: str) -> list[Any]:
        return [self.where, name]

    def query(self) -> None:
        if "q" not in self.source:
            self.errors.append(_pyd_error("missing", self._loc("q"), "Field required", None))
            return
        q = self.source["q"]
        if not isinstance(q, str):
            self.errors.append(_pyd_error("string_type", self._loc("q"), _STR_MSG, q))
        elif not q:
            self.errors.append(
                _pyd_error(
                    "string_too_short",
                    self._loc("q"),
                    "String should have at least 1 character",
                    q,
                    {"min_length": 1},
                )
            )
        elif len(q) > 400:
            self.errors.append(
                _pyd_error(
                    "string_too_long",
                    self._loc("q"),
                    "String should have at most 400 characters",
                    q,
                    {"max_length": 400},
                )
            )
        elif len(q.split()) > 50:
            problem = "the query must not have more than 50 words"
            self.errors.append(
                _pyd_error(
                    "value_error", self._loc("q"), f"Value error, {problem}", q, {"error": problem}
                )
            )
        else:
            self.values["q"] = q

    def integer(self, name: str, default: int, low: int, high: int) -> None:
        self.values[name] = default
        if name not in self.source:
            return
        raw = self.source[name]
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            self.errors.append(_pyd_error("int_type", self._loc(name), _INT_MSG, raw))
            return
        if isinstance(raw, str) and not re.fullmatch(r"[+-]?\d+", raw.strip()):
            self.errors.append(_pyd_error("int_parsing", self._loc(name), _INT_PARSE_MSG, raw))
            return
        if isinstance(raw, float) and not raw.is_integer():
            msg = "Input should be a valid integer, got a number with a fractional part"
            self.errors.append(_pyd_error("int_from_float", self._loc(name), msg, raw))
            return
        value = int(raw)
        if value < low:
            msg = f"Input should be greater than or equal to {low}"
            self.errors.append(
                _pyd_error("greater_than_equal", self._loc(name), msg, raw, {"ge": low})
            )
        elif value > high:
            msg = f"Input should be less than or equal to {high}"
            self.errors.append(
                _pyd_error("less_than_equal", self._loc(name), msg, raw, {"le": high})
            )
        else:
            self.values[name] = value

    def boolean(self, name: str, default: bool | None) -> None:
        """Only ``true``/``false``: the documented wire form, so a client sending ``True`` fails."""
        self.values[name] = default
        if name not in self.source:
            return
        raw = self.source[name]
        if isinstance(raw, bool):
            self.values[name] = raw
        elif raw in ("true", "false"):
            self.values[name] = raw == "true"
        else:
            msg = "Input should be a valid boolean, unable to interpret input"
            self.errors.append(_pyd_error("bool_parsing", self._loc(name), msg, raw))

    def enum(self, name: str, default: str | None, options: Sequence[str]) -> None:
        self.values[name] = default
        if name not in self.source:
            return
        raw = self.source[name]
        if raw in options:
            self.values[name] = raw
        else:
            expected = _choices(options)
            self.errors.append(
                _pyd_error(
                    "enum",
                    self._loc(name),
                    f"Input should be {expected}",
                    raw,
                    {"expected": expected},
                )
            )

    def freshness(self, now: datetime) -> None:
        self.values["freshness"] = None
        raw = self.source.get("freshness")
        if raw in (None, ""):
            return
        if not isinstance(raw, str) or not _FRESHNESS.match(raw):
            pattern = _FRESHNESS.pattern
            self.errors.append(
                _pyd_error(
                    "string_pattern_mismatch",
                    self._loc("freshness"),
                    f"String should match pattern '{pattern}'",
                    raw,
                    {"pattern": pattern},
                )
            )
            return
        try:
            self.values["freshness"] = _freshness_window(raw, now)
        except ValueError:
            problem = "invalid date in the freshness range"
            self.errors.append(
                _pyd_error(
                    "value_error",
                    self._loc("freshness"),
                    f"Value error, {problem}",
                    raw,
                    {"error": problem},
                )
            )

    def text(self, name: str, default: str | None = None) -> None:
        raw = self.source.get(name, default)
        self.values[name] = raw if isinstance(raw, str) else default


# --- Exa request validation -----------------------------------------------------------------


class _ExaBad(Exception):
    """A 400 from Exa: its tag and message."""

    def __init__(self, tag: str, message: str) -> None:
        super().__init__(message)
        self.tag = tag
        self.message = message


# Today's search types: the spec's six plus "neural" from the docs page; "keyword" and
# "hybrid" are gone (a 400 like any other invalid option).
_EXA_TYPES = ("instant", "fast", "auto", "deep-lite", "deep", "deep-reasoning", "neural")
_EXA_CATEGORY_KINDS = {
    "news": {"news"},
    "research paper": {"paper"},
    "pdf": {"pdf"},
    "github": {"github"},
    "personal site": {"blog"},
    "company": set(),
    "people": set(),
    "financial report": set(),
    "tweet": set(),
    "linkedin profile": set(),
}
_EXA_FAILING_HOSTS = {
    "crawl-timeout.example.com": ("CRAWL_TIMEOUT", 408),
    "forbidden.example.com": ("SOURCE_NOT_AVAILABLE", 403),
    "broken.example.com": ("CRAWL_UNKNOWN_ERROR", 500),
}
_EXA_DEFAULT_TEXT = 10_000
_EXA_DEFAULT_HIGHLIGHTS = 1_000
_ARXIV_ABSTRACT = re.compile(r"^https://arxiv\.org/abs/([^/?#]+)$")


def _crawled_url(url: str) -> str:
    """Where Exa's crawler ends up for a page: an arXiv abstract is fetched as its PDF."""
    match = _ARXIV_ABSTRACT.match(url)
    return f"https://arxiv.org/pdf/{match[1]}.pdf" if match else url


def _js_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _zod(problem: str, path: str) -> _ExaBad:
    """Exa's validation wording (zod), as in the captured 400 body."""
    return _ExaBad(
        "INVALID_REQUEST_BODY", f'Invalid request body | Validation error: {problem} at "{path}"'
    )


def _expect(body: dict[str, Any], name: str, kind: str, prefix: str = "") -> Any:
    value = body.get(name)
    if value is None or _js_type(value) == kind:
        return value
    raise _zod(f"Invalid input: expected {kind}, received {_js_type(value)}", prefix + name)


def _string_list(body: dict[str, Any], name: str, most: int) -> list[str]:
    value = _expect(body, name, "array") or []
    if len(value) > most:
        raise _zod(f"Too big: expected array to have <={most} items", name)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise _zod(f"Invalid input: expected string, received {_js_type(item)}", f"{name}.{i}")
    return value


def _iso_datetime(body: dict[str, Any], name: str) -> datetime | None:
    value = _expect(body, name, "string")
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _zod("Invalid ISO datetime", name) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True)
class _ExaContents:
    text: int | None = None
    html_tags: bool = False
    highlights: int | None = None
    highlight_query: str | None = None
    summary: bool = False
    summary_query: str | None = None
    summary_schema: dict[str, Any] | None = None


def _max_chars(value: dict[str, Any], path: str, default: int) -> int:
    chars = value.get("maxCharacters", default)
    if isinstance(chars, bool) or not isinstance(chars, int):
        raise _zod(f"Invalid input: expected int, received {_js_type(chars)}", path)
    if chars < 1:
        raise _zod("Too small: expected number to be >=1", path)
    if chars > 10_000:
        raise _zod("Too big: expected number to be <=10000", path)
    return chars


def _contents_options(body: dict[str, Any], prefix: str) -> _ExaContents:
    """``text``/``highlights``/``summary`` as Exa accepts them: ``true`` or an options object."""
    options: dict[str, Any] = {}
    for name in ("text", "highlights", "summary"):
        value = body.get(name)
        if value is None or value is False:
            continue
        if value is not True and not isinstance(value, dict):
            kind = _js_type(value)
            raise _zod(f"Invalid input: expected boolean or object, received {kind}", prefix + name)
        spec = value if isinstance(value, dict) else {}
        if name == "text":
            path = f"{prefix}text.maxCharacters"
            options["text"] = _max_chars(spec, path, _EXA_DEFAULT_TEXT)
            options["html_tags"] = spec.get("includeHtmlTags") is True
        elif name == "highlights":
            path = f"{prefix}highlights.maxCharacters"
            options["highlights"] = _max_chars(spec, path, _EXA_DEFAULT_HIGHLIGHTS)
            options["highlight_query"] = _expect(spec, "query", "string", f"{prefix}highlights.")
        else:
            options["summary"] = True
            options["summary_query"] = _expect(spec, "query", "string", f"{prefix}summary.")
            options["summary_schema"] = _expect(spec, "schema", "object", f"{prefix}summary.")
    return _ExaContents(**options)


# --- Fault modes ----------------------------------------------------------------------------


@dataclass
class _Mode:
    name: str = "normal"
    options: dict[str, Any] = field(default_factory=dict)
    remaining: int | None = None


def _check_options(provider: str, mode: str, options: dict[str, Any]) -> None:
    """Reject unknown modes and options early: a typo must not silently mean "normal"."""
    if provider not in PROVIDERS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    if mode not in _PROVIDER_MODES[provider]:
        known = ", ".join(sorted(_PROVIDER_MODES[provider]))
        raise ValueError(f"mode {mode!r} does not apply to {provider}; expected one of {known}")
    allowed = (
        _MODE_OPTIONS.get((provider, mode), frozenset())
        | _PROVIDER_OPTIONS.get(provider, frozenset())
        | {"times"}
    )
    if provider == "exa" and mode in _EXA_ENDPOINT_MODES:
        allowed |= {"endpoint"}
    unknown = set(options) - allowed
    if unknown:
        raise ValueError(f"unknown options for {provider} {mode}: {', '.join(sorted(unknown))}")
    checks: dict[str, Callable[[Any], bool]] = {
        "times": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
        "reset_seconds": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        "retry_after": lambda v: isinstance(v, int | str) and not isinstance(v, bool),
        "plan": lambda v: v in PLANS,
        "status": lambda v: isinstance(v, int) and 500 <= v <= 599,
        "plain": lambda v: isinstance(v, bool),
        "tag": lambda v: v is None or isinstance(v, str),
        "body": lambda v: isinstance(v, dict | str),
        "seconds": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v >= 0,
        "mb": lambda v: isinstance(v, int | float) and not isinstance(v, bool) and v > 0,
        "drop": lambda v: isinstance(v, list | tuple) and set(v) <= {"id", "time", "code"},
        "form": lambda v: v in ("object", "array"),
        "code": lambda v: v in _BRAVE_REFUSALS,
        "endpoint": lambda v: v in ("search", "contents"),
    }
    for name, value in options.items():
        if not checks[name](value):
            raise ValueError(f"bad value for option {name!r}: {value!r}")


# --- The server -----------------------------------------------------------------------------


class FakeWeb:
    """One loopback HTTP server playing Brave, Exa and SearXNG, with fault injection.

    Use as a context manager (``with FakeWeb() as web: ...``) or ``start()``/``stop()``.
    ``now`` is the fixed clock for freshness filters and ages, so results never drift.
    ``searxng_limiter`` plays an instance with ``server.limiter: true``, the docker and public
    default: a ``/search`` without ``Accept-Language`` gets 429 "Too Many Requests".
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
        self.now = _utc(now)
        self.pages = tuple(pages)
        self._by_url = {page.url: page for page in self.pages}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._modes = {provider: _Mode() for provider in PROVIDERS}
        self._log: list[RecordedRequest] = []
        self._window_start = -math.inf
        self._window_count = 0
        self._billed = 0
        self._started_at = time.monotonic()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --

    def start(self) -> FakeWeb:
        """Bind and serve in a daemon thread; returns self so ``FakeWeb().start()`` chains."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self.host, self.port), _Handler)
        server.fake = self
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
        _check_options(provider, mode, options)
        times = options.pop("times", None)
        with self._lock:
            self._modes[provider] = _Mode(mode, options, times)

    def reset(self) -> None:
        """Back to normal: modes, request log and rate counters."""
        with self._lock:
            self._modes = {provider: _Mode() for provider in PROVIDERS}
            self._log.clear()
            self._window_start = -math.inf
            self._window_count = 0
            self._billed = 0

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    def _claim(
        self, provider: str, names: Iterable[str], endpoint: str | None = None
    ) -> _Mode | None:
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
            claimed = _Mode(mode.name, dict(mode.options), mode.remaining)
            if mode.remaining is not None:
                mode.remaining -= 1
                if mode.remaining <= 0:
                    self._modes[provider] = _Mode()
            return claimed

    def _option(self, provider: str, name: str, default: Any) -> Any:
        """An option of the provider's current mode, read without claiming it."""
        with self._lock:
            return self._modes[provider].options.get(name, default)

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def _epoch(self) -> int:
        """Seconds since 1970 on the fake clock, which advances from ``now`` in real time."""
        return int(self.now.timestamp() + time.monotonic() - self._started_at)

    # -- dispatch --

    def _respond(self, req: _Incoming) -> _Reply:
        if req.path.startswith("/__fake/"):
            return self._control(req)
        if req.path.startswith(READER_PREFIX):
            record = self._record("reader", "page", req)
            reply = self._reader(req)
            record.status = reply.status
            return reply
        route = _ROUTES.get((req.method, req.path))
        prefix = req.path.strip("/").split("/", 1)[0]
        provider = route[0] if route else (prefix if prefix in PROVIDERS else "unknown")
        record = self._record(provider, route[1] if route else "", req)
        if route is None:
            reply = _json_reply(
                405 if req.path in _KNOWN_PATHS else 404,
                {"detail": "Method Not Allowed" if req.path in _KNOWN_PATHS else "Not Found"},
            )
        else:
            reply = self._serve(route[0], route[1], req)
        if provider == "brave" and reply.header("X-RateLimit-Limit") is None:
            reply.headers.extend(self._brave_headers())
        record.status = reply.status
        return reply

    def _reader(self, req: _Incoming) -> _Reply:
        """A page reader: ``GET /reader/<page URL>`` answers with the corpus page at that URL
        as HTML (what the page itself would serve), 404 for a URL the corpus does not hold."""
        if req.method != "GET":
            return _text_reply(405, "Method Not Allowed")
        target = req.path[len(READER_PREFIX) :]
        if req.query:
            target += "?" + "&".join(f"{k}={v}" for k, values in req.query.items() for v in values)
        page = next((p for p in self.pages if _same_page(p.url, target)), None)
        if page is None:
            return _text_reply(404, "Not Found")
        self._pause(self.latency_ms / 1000)
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
        return _text_reply(200, body, _HTML)

    def _record(self, provider: str, endpoint: str, req: _Incoming) -> RecordedRequest:
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
            at=time.monotonic(),
        )
        with self._lock:
            self._log.append(record)
        return record

    def _serve(self, provider: str, endpoint: str, req: _Incoming) -> _Reply:
        self._pause(self.latency_ms / 1000)
        if (
            provider == "searxng"
            and self.searxng_limiter
            and not req.headers.get("accept-language", "").strip()
        ):
            # SearXNG's botdetection (http_accept_language) runs before any handler.
            return _text_reply(429, "Too Many Requests")
        slow = self._claim(provider, {"slow"}, endpoint)
        if slow is not None:
            self._pause(float(slow.options.get("seconds", 5)))
        fault = self._claim(provider, {"server_error", "malformed", "huge"}, endpoint)
        if fault is not None:
            return self._fault(provider, endpoint, fault, req)
        if provider == "brave":
            return self._brave(endpoint, req)
        if provider == "exa":
            return self._exa(endpoint, req)
        return self._searxng(req)

    def _control(self, req: _Incoming) -> _Reply:
        if req.method == "GET" and req.path == "/__fake/requests":
            return _json_reply(200, [r.as_dict(redact=True) for r in self.requests])
        if req.method == "POST" and req.path == "/__fake/reset":
            self.reset()
            return _json_reply(200, {"ok": True})
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
                return _json_reply(400, {"ok": False, "error": str(exc)})
            return _json_reply(200, {"ok": True, "provider": provider, "mode": mode, **options})
        return _json_reply(404, {"ok": False, "error": f"no control endpoint {req.path}"})

    # -- faults shared by all providers --

    def _fault(self, provider: str, endpoint: str, mode: _Mode, req: _Incoming) -> _Reply:
        prefix, item, suffix = self._skeleton(provider, endpoint, _query_text(req))
        content_type = _EXA_JSON if provider == "exa" else _JSON
        if mode.name == "malformed":
            return _Reply(200, prefix + item[: len(item) // 2], [("Content-Type", content_type)])
        if mode.name == "huge":
            total = int(float(mode.options.get("mb", 6)) * 1024 * 1024)
            stream = _padded_stream(prefix, item, suffix, total)
            return _Reply(200, headers=[("Content-Type", content_type)], stream=stream)
        status = int(mode.options.get("status", 500))
        if provider == "searxng" or mode.options.get("plain"):
            return _html_error(status, _REASONS.get(status, "Server Error"), "Upstream failure.")
        if provider == "exa":
            tag = mode.options.get("tag", "INTERNAL_ERROR")
            payload = {"requestId": uuid.uuid4().hex, "error": "Internal server error", "tag": tag}
            return _json_reply(status, payload, content_type=_EXA_JSON)
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
        hit = _Hit(page, (), ())
        if provider == "brave" and endpoint == "web/search":
            item = self._brave_result(hit, {**_WEB_BOOLS})
            doc: dict[str, Any] = {
                "type": "search",
                "query": {"original": q, "more_results_available": True},
                "web": {"type": "search", "results": [_HOLE], "family_friendly": True},
            }
        elif provider == "brave":
            item = {"url": page.url, "title": page.title or "", "snippets": [page.text]}
            doc = {"grounding": {"generic": [_HOLE], "map": []}, "sources": {}}
        elif provider == "exa":
            item = self._exa_result(hit, _ExaContents(text=_EXA_DEFAULT_TEXT))
            doc = {"requestId": uuid.uuid4().hex, "results": [_HOLE], "searchTime": 1.0}
        else:
            item = self._searxng_result(hit, 1, None)
            doc = {"query": q, "number_of_results": 1, "results": [_HOLE], "answers": []}
        before, after = _split_hole(doc)
        return before, json.dumps(item, ensure_ascii=False).encode(), after

    # -- Brave --

    def _brave_headers(
        self,
        plan: BravePlan | None = None,
        remaining: tuple[int, int] | None = None,
        reset: tuple[int, int] | None = None,
    ) -> list[tuple[str, str]]:
        """The four two-window X-RateLimit-* headers (per second, per month)."""
        plan = plan or PLANS[self.brave_plan]
        with self._lock:
            in_window = time.monotonic() - self._window_start < 1
            used_now = self._window_count if in_window else 0
            billed = self._billed
        month_left = max(plan.per_month - billed, 0) if plan.per_month else 0
        remaining = remaining or (max(plan.per_second - used_now, 0), month_left)
        reset = reset or (1, self._month_reset())
        return [
            ("X-RateLimit-Limit", f"{plan.per_second}, {plan.per_month}"),
            ("X-RateLimit-Policy", f"{plan.per_second};w=1, {plan.per_month};w={_MONTH_WINDOW}"),
            ("X-RateLimit-Remaining", f"{remaining[0]}, {remaining[1]}"),
            ("X-RateLimit-Reset", f"{reset[0]}, {reset[1]}"),
        ]

    def _month_reset(self) -> int:
        first = self.now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        following = (first + timedelta(days=32)).replace(day=1)
        return int((following - self.now).total_seconds())

    def _brave_error(
        self,
        status: int,
        code: str,
        detail: str,
        meta: dict[str, Any],
        headers: Sequence[tuple[str, str]] = (),
        form: str | None = None,
    ) -> _Reply:
        """Brave's error body: live answers carry one ``error`` object; with ``form="array"``
        (the mode's option when not given) the reference pages' ``errors`` list instead."""
        error: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": status,
            "code": code,
            "detail": detail,
            "meta": meta,
        }
        listed = (form or self._option("brave", "form", "object")) == "array"
        payload: dict[str, Any] = {"type": "ErrorResponse"}
        payload.update({"errors": [error]} if listed else {"error": error})
        payload["time"] = self._epoch()
        tolerant = self._claim("brave", {"error_missing_fields"})
        if tolerant is not None:
            for name in tolerant.options.get("drop", ("id", "time", "code")):
                (payload if name == "time" else error).pop(name, None)
        return _json_reply(status, payload, headers)

    def _brave_limited(self, mode: _Mode) -> _Reply:
        default_plan = self.brave_plan if mode.name == "rate_limited" else "free"
        plan = PLANS[mode.options.get("plan", default_plan)]
        with self._lock:
            billed = self._billed
        month_left = max(plan.per_month - billed, 0) if plan.per_month else 0
        extra = (
            [("Retry-After", str(mode.options["retry_after"]))]
            if "retry_after" in mode.options
            else []
        )
        if mode.name == "quota_limited":
            headers = self._brave_headers(plan, (plan.per_second, 0), (1, self._month_reset()))
            return self._brave_error(
                429,
                "QUOTA_LIMITED",
                "Request quota limit exceeded for plan.",
                {"component": "rate_limiter"},
                headers + extra,
                form=mode.options.get("form"),
            )
        reset_seconds = int(mode.options.get("reset_seconds", 1))
        headers = self._brave_headers(plan, (0, month_left), (reset_seconds, self._month_reset()))
        meta = {
            "plan": plan.name,
            "rate_limit": plan.per_second,
            "rate_current": plan.per_second,
            "quota_limit": plan.per_month,
            "quota_current": billed,
            "org_rate_limit": None,
            "org_rate_current": 0,
            "component": "rate_limiter",
        }
        return self._brave_error(
            429,
            "RATE_LIMITED",
            "Request rate limit exceeded for plan.",
            meta,
            headers + extra,
            form=mode.options.get("form"),
        )

    def _brave_admit(self) -> _Reply | None:
        """The real limiter: the plan's per-second window, and its monthly quota when capped."""
        plan = PLANS[self.brave_plan]
        with self._lock:
            if plan.per_month and self._billed >= plan.per_month:
                over_quota = True
            else:
                over_quota = False
                now = time.monotonic()
                if now - self._window_start >= 1:
                    self._window_start, self._window_count = now, 0
                if self._window_count < plan.per_second:
                    self._window_count += 1
                    return None
        if over_quota:
            return self._brave_limited(_Mode("quota_limited", {"plan": self.brave_plan}))
        return self._brave_limited(_Mode("rate_limited"))

    def _brave(self, endpoint: str, req: _Incoming) -> _Reply:
        token = req.headers.get("x-subscription-token")
        if token is None:
            missing = _pyd_error(
                "missing", ["header", "x-subscription-token"], "Field required", None
            )
            return self._brave_error(422, "VALIDATION", _VALIDATION_DETAIL, {"errors": [missing]})
        if token not in self.brave_keys:
            return self._brave_error(
                422,
                "SUBSCRIPTION_TOKEN_INVALID",
                "The provided subscription token is invalid.",
                {"component": "authentication"},
            )
        refusal = self._claim("brave", {"not_in_plan"}) if endpoint == "llm/context" else None
        if refusal is not None:
            # A plan without LLM Context: 400 OPTION_NOT_IN_PLAN as reported live, or the
            # reference's 403 RESOURCE_NOT_ALLOWED; Web Search keeps working either way.
            code = refusal.options.get("code", "OPTION_NOT_IN_PLAN")
            status, detail, component = _BRAVE_REFUSALS[code]
            return self._brave_error(
                status, code, detail, {"component": component}, form=refusal.options.get("form")
            )
        limited = self._claim("brave", {"rate_limited", "quota_limited"})
        if limited is not None:
            return self._brave_limited(limited)
        refused = self._brave_admit()
        if refused is not None:
            return refused
        params = self._brave_params(endpoint, req)
        if params.errors:
            return self._brave_error(
                422, "VALIDATION", _VALIDATION_DETAIL, {"errors": params.errors}
            )
        values = params.values
        hits = [] if self._claim("brave", {"empty"}) else self._search(values["q"])
        window = values["freshness"]
        if window is not None:
            hits = [h for h in hits if _within(h.page.published_at, *window)]
        if endpoint == "web/search":
            payload = self._brave_web(values, hits)
        else:
            payload = self._brave_llm(values, hits)
        with self._lock:
            self._billed += 1
        return _json_reply(200, payload, self._brave_headers())

    def _brave_params(self, endpoint: str, req: _Incoming) -> _BraveParams:
        if req.method == "GET":
            params = _BraveParams({k: v[-1] for k, v in req.query.items()}, "query")
        else:
            try:
                source = req.json_body() if req.body else {}
            except ValueError as exc:
                params = _BraveParams({}, "body")
                params.errors.append(
                    _pyd_error(
                        "json_invalid", ["body", 0], "JSON decode error", {}, {"error": str(exc)}
                    )
                )
                return params
            if not isinstance(source, dict):
                params = _BraveParams({}, "body")
                msg = "Input should be a valid dictionary or object to extract fields from"
                params.errors.append(_pyd_error("model_attributes_type", ["body"], msg, source))
                return params
            params = _BraveParams(source, "body")
        params.query()
        params.text("country", "US")
        params.text("search_lang", "en")
        ints, bools = (
            (_WEB_INTS, _WEB_BOOLS) if endpoint == "web/search" else (_LLM_INTS, _LLM_BOOLS)
        )
        for name, (default, low, high) in ints.items():
            params.integer(name, default, low, high)
        for name, flag in bools.items():
            params.boolean(name, flag)
        params.enum("safesearch", "moderate", _SAFESEARCH)
        params.freshness(self.now)
        if endpoint == "web/search":
            params.enum("units", None, ("metric", "imperial"))
            params.text("result_filter")
        else:
            params.enum("context_threshold_mode", "balanced", _THRESHOLDS)
            params.boolean("enable_local", None)
        return params

    def _search(self, q: str) -> list[_Hit]:
        return _rank(self.pages, _parse_query(q))

    def _brave_web(self, values: dict[str, Any], hits: list[_Hit]) -> dict[str, Any]:
        count, offset = values["count"], values["offset"]
        start = offset * count
        shown = hits[start : start + count]
        query = _parse_query(values["q"])
        summary: dict[str, Any] = {
            "original": values["q"],
            "show_strict_warning": False,
            "is_navigational": False,
            "is_news_breaking": False,
            "spellcheck_off": not values["spellcheck"],
            "country": str(values["country"]).lower(),
            "bad_results": False,
            "should_fallback": False,
            "postal_code": "",
            "city": "",
            "header_country": "",
            "more_results_available": len(hits) > start + count,
            "state": "",
        }
        if query.sites:
            summary["search_operators"] = {
                "applied": True,
                "cleaned_query": " ".join(query.terms),
                "sites": list(query.sites),
            }
        payload: dict[str, Any] = {"type": "search", "query": summary}
        result_filter = values["result_filter"]
        wanted = result_filter is None or "web" in {
            part.strip() for part in result_filter.split(",")
        }
        results = [self._brave_result(hit, values) for hit in shown] if wanted else []
        payload["mixed"] = {
            "type": "mixed",
            "main": [{"type": "web", "index": i, "all": False} for i in range(len(results))],
            "top": [],
            "side": [],
        }
        if results:
            payload["web"] = {"type": "search", "results": results, "family_friendly": True}
        return payload

    def _brave_result(self, hit: _Hit, values: dict[str, Any]) -> dict[str, Any]:
        page = hit.page
        parts = urlsplit(page.url)
        host = parts.hostname or ""
        favicon = f"https://imgs.search.brave.com/fakeweb/favicon/{host or 'none'}.png"
        description = _snippet(page.text, hit.terms)
        if values["text_decorations"]:
            description = _decorate(description, hit.terms)
        segments = [s for s in parts.path.split("/") if s]
        result: dict[str, Any] = {
            "title": page.title or host or page.url,
            "url": page.url,
            "is_source_local": False,
            "is_source_both": False,
            "description": description,
        }
        published = page.published_at
        if published is not None:
            result["page_age"] = _utc(published).strftime("%Y-%m-%dT%H:%M:%S")
        result.update(
            {
                "profile": {
                    "name": _site_name(host),
                    "url": page.url,
                    "long_name": host,
                    "img": favicon,
                },
                "language": page.language,
                "family_friendly": True,
                "type": "search_result",
                "subtype": "generic",
                "is_live": False,
                "meta_url": {
                    "scheme": parts.scheme,
                    "netloc": parts.netloc,
                    "hostname": host,
                    "favicon": favicon,
                    "path": ("\u203a " + " \u203a ".join(segments)) if segments else "",
                },
            }
        )
        if page.image:
            digest = f"{zlib.crc32(page.image.encode()):08x}"
            result["thumbnail"] = {
                "src": f"https://imgs.search.brave.com/fakeweb/thumb/{digest}.jpg",
                "original": page.image,
                "logo": False,
            }
        if published is not None:
            result["age"] = _relative_age(published, self.now)
        if values["extra_snippets"]:
            extras = [
                _clip(s, 200)
                for s in _sentences(page.text)
                if s not in description and _hits_in(s, hit.terms)
            ][:5]
            if extras:
                result["extra_snippets"] = extras
        if values["include_fetch_metadata"]:
            result["fetched_content_timestamp"] = int(self.now.timestamp()) - 86_400
        return result

    def _brave_llm(self, values: dict[str, Any], hits: list[_Hit]) -> dict[str, Any]:
        floor = _THRESHOLD_COVERAGE[values["context_threshold_mode"]]
        chosen = [h for h in hits[: values["count"]] if h.coverage >= floor]
        chosen = chosen[: values["maximum_number_of_urls"]]
        tokens_left = values["maximum_number_of_tokens"]
        snippets_left = values["maximum_number_of_snippets"]
        generic: list[dict[str, Any]] = []
        sources: dict[str, Any] = {}
        for hit in chosen:
            if tokens_left < _MIN_SNIPPET_TOKENS or snippets_left <= 0:
                break
            page = hit.page
            snippets: list[str] = []
            if "empty_snippets" not in page.quirks:
                budget = min(values["maximum_number_of_tokens_per_url"], tokens_left)
                most = min(values["maximum_number_of_snippets_per_url"], snippets_left)
                snippets, spent = _llm_snippets(page, hit.terms, budget, most)
                tokens_left -= spent
                snippets_left -= len(snippets)
            generic.append({"url": page.url, "title": page.title or "", "snippets": snippets})
            if "no_source" not in page.quirks:
                sources[page.url] = self._llm_source(page, values["enable_source_metadata"])
        return {"grounding": {"generic": generic, "map": []}, "sources": sources}

    def _llm_source(self, page: Page, metadata: bool) -> dict[str, Any]:
        host = _host(page.url)
        published = page.published_at
        age = None
        if published is not None:
            day = _utc(published)
            days = (self.now.date() - day.date()).days
            age = [
                f"{day:%A}, {day:%B} {day.day}, {day.year}",
                day.date().isoformat(),
                f"{days} days ago",
            ]
        source: dict[str, Any] = {"title": page.title or "", "hostname": host, "age": age}
        if metadata:
            source["site_name"] = _site_name(host)
            source["favicon"] = f"https://imgs.search.brave.com/fakeweb/favicon/{host}.png"
            if page.image:
                source["thumbnail"] = {"src": page.image, "original": page.image}
        return source

    # -- Exa --

    def _exa_error(self, status: int, tag: str | None, message: str) -> _Reply:
        payload: dict[str, Any] = {"requestId": uuid.uuid4().hex, "error": message}
        if tag is not None:
            payload["tag"] = tag
        return _json_reply(status, payload, content_type=_EXA_JSON)

    def _exa(self, endpoint: str, req: _Incoming) -> _Reply:
        started = time.perf_counter()
        key = req.headers.get("x-api-key")
        authorization = req.headers.get("authorization", "")
        bearer = authorization[7:].strip() if authorization.lower().startswith("bearer ") else None
        if key not in self.exa_keys and bearer not in self.exa_keys:
            return self._exa_error(401, "INVALID_API_KEY", "Invalid API key")
        if self._claim("exa", {"no_credits"}, endpoint):
            message = (
                "You have exceeded your credits limit. "
                "Please top up to keep using Exa at dashboard.exa.ai"
            )
            payload = {"error": message, "tag": "NO_MORE_CREDITS"}
            return _json_reply(402, payload, content_type=_EXA_JSON)
        limited = self._claim("exa", {"rate_limited"}, endpoint)
        if limited is not None:
            return self._exa_limited(limited)
        if endpoint == "contents" and self._claim("exa", {"url_failed"}):
            # The older error page's whole-request failure of /contents (newer answers report
            # each URL in ``statuses`` inside a 200); no tag is documented for it.
            return _json_reply(
                422,
                {"requestId": uuid.uuid4().hex, "error": "URL failed to fetch"},
                content_type=_EXA_JSON,
            )
        try:
            body = req.json_body() if req.body else {}
        except ValueError:
            return self._exa_error(
                400, "INVALID_REQUEST_BODY", "Invalid request body | Invalid JSON"
            )
        try:
            if not isinstance(body, dict):
                raise _ExaBad(
                    "INVALID_REQUEST_BODY",
                    "Invalid request body | Validation error: Invalid input: expected object, "
                    f"received {_js_type(body)}",
                )
            search = endpoint == "search"
            payload = self._exa_search(body) if search else self._exa_contents(body)
        except _ExaBad as bad:
            return self._exa_error(400, bad.tag, bad.message)
        if endpoint == "search":
            payload["searchTime"] = round((time.perf_counter() - started) * 1000, 1)
        return _json_reply(200, payload, content_type=_EXA_JSON)

    def _exa_limited(self, mode: _Mode) -> _Reply:
        custom = mode.options.get("body")
        if isinstance(custom, str):
            reply = _text_reply(429, custom)
        elif isinstance(custom, dict):
            reply = _json_reply(429, custom, content_type=_EXA_JSON)
        else:
            reply = self._exa_error(429, mode.options.get("tag"), "Rate limit exceeded")
        if "retry_after" in mode.options:
            reply.headers.append(("Retry-After", str(mode.options["retry_after"])))
        return reply

    def _exa_search(self, body: dict[str, Any]) -> dict[str, Any]:
        if "query" not in body:
            raise _zod("Invalid input: expected string, received undefined", "query")
        query = _expect(body, "query", "string")
        if query is None:
            raise _zod("Invalid input: expected string, received null", "query")
        if not query.strip():
            raise _zod("Too small: expected string to have >=1 characters", "query")
        search_type = _expect(body, "type", "string")
        if search_type is not None and search_type not in _EXA_TYPES:
            options = "|".join(f'"{t}"' for t in _EXA_TYPES)
            raise _zod(f"Invalid option: expected one of {options}", "type")
        num = body.get("numResults", 10)
        if isinstance(num, bool) or not isinstance(num, int | float):
            raise _zod(f"Invalid input: expected number, received {_js_type(num)}", "numResults")
        if not float(num).is_integer():
            raise _zod("Invalid input: expected int, received number", "numResults")
        if not 1 <= num <= 100:
            raise _ExaBad(
                "INVALID_NUM_RESULTS", f"Invalid numResults: {num}. It must be between 1 and 100."
            )
        include = _string_list(body, "includeDomains", 1200)
        exclude = _string_list(body, "excludeDomains", 1200)
        start = _iso_datetime(body, "startPublishedDate")
        end = _iso_datetime(body, "endPublishedDate")
        include_text = _string_list(body, "includeText", 1)
        exclude_text = _string_list(body, "excludeText", 1)
        for name, phrases in (("includeText", include_text), ("excludeText", exclude_text)):
            if phrases and len(phrases[0].split()) > 5:
                raise _zod("Too big: expected a phrase of at most 5 words", f"{name}.0")
        category = _expect(body, "category", "string")
        filters = [
            name
            for name in (
                "startPublishedDate",
                "endPublishedDate",
                "startCrawlDate",
                "endCrawlDate",
                "includeText",
                "excludeText",
                "excludeDomains",
            )
            if body.get(name)
        ]
        if category in ("company", "people") and filters:
            raise _ExaBad(
                "INVALID_REQUEST",
                f"The {category} category does not support these filters: {', '.join(filters)}",
            )
        contents_body = _expect(body, "contents", "object") or {}
        contents = _contents_options(contents_body, "contents.")
        hits = [] if self._claim("exa", {"empty"}, "search") else self._search(query)
        kinds = _EXA_CATEGORY_KINDS.get(category or "")
        selected: list[_Hit] = []
        for hit in hits:
            page = hit.page
            host = _host(page.url)
            text = f"{page.title or ''} {page.text}".lower()
            if include and not any(_domain_matches(host, d) for d in include):
                continue
            if any(_domain_matches(host, d) for d in exclude):
                continue
            if (start or end) and not _within(
                page.published_at, start or datetime.min.replace(tzinfo=UTC), end or self.now
            ):
                continue
            if include_text and include_text[0].lower() not in text:
                continue
            if exclude_text and exclude_text[0].lower() in text:
                continue
            if kinds is not None and page.kind not in kinds:
                continue
            selected.append(hit)
        selected = selected[: int(num)]
        results = [self._exa_result(hit, contents) for hit in selected]
        search_cost = 0.005 if len(results) <= 25 else 0.025
        cost: dict[str, Any] = {"total": 0.0, "search": {"neural": search_cost}}
        _add_contents_cost(cost, contents, len(results))
        return {
            "requestId": uuid.uuid4().hex,
            "resolvedSearchType": "neural",
            "results": results,
            "costDollars": cost,
        }

    def _exa_contents(self, body: dict[str, Any]) -> dict[str, Any]:
        name = "urls" if "urls" in body or "ids" not in body else "ids"
        if name not in body:
            raise _zod("Invalid input: expected array, received undefined", "urls")
        urls = _expect(body, name, "array")
        if urls is None:
            raise _zod("Invalid input: expected array, received null", name)
        if not urls:
            raise _zod("Too small: expected array to have >=1 items", name)
        if len(urls) > 100:
            raise _zod("Too big: expected array to have <=100 items", name)
        for i, url in enumerate(urls):
            if not isinstance(url, str):
                raise _zod(
                    f"Invalid input: expected string, received {_js_type(url)}", f"{name}.{i}"
                )
            if not 1 <= len(url) <= 2048:
                raise _zod("Invalid string length (1 to 2048 characters)", f"{name}.{i}")
        contents = _contents_options(body, "")
        empty = self._claim("exa", {"empty"}, "contents") is not None
        results: list[dict[str, Any]] = []
        statuses: list[dict[str, Any]] = []
        for url in urls:
            page = None if empty else self._lookup(url)
            if page is None:
                tag, code = _EXA_FAILING_HOSTS.get(_host(url), ("CRAWL_NOT_FOUND", 404))
                statuses.append(
                    {"id": url, "status": "error", "error": {"tag": tag, "httpStatusCode": code}}
                )
                continue
            query = _parse_query(contents.highlight_query or page.title or "")
            hit = _Hit(page, tuple(t for t in query.terms if t in _words(page.text)), query.terms)
            # Keyed by the id asked for, at the URL the crawler ended up at.
            result = self._exa_result(hit, contents)
            result.update(id=url, url=_crawled_url(page.url))
            results.append(result)
            statuses.append({"id": url, "status": "success", "source": "cached"})
        cost: dict[str, Any] = {"total": 0.0}
        _add_contents_cost(cost, contents, len(results))
        return {
            "requestId": uuid.uuid4().hex,
            "results": results,
            "statuses": statuses,
            "costDollars": cost,
        }

    def _lookup(self, url: str) -> Page | None:
        """Exa finds a page by its URL, with or without a trailing slash."""
        return self._by_url.get(url) or self._by_url.get(
            url[:-1] if url.endswith("/") else url + "/"
        )

    def _exa_result(self, hit: _Hit, contents: _ExaContents) -> dict[str, Any]:
        """One result; no ``score``, which is no longer in Exa's schema."""
        page = hit.page
        host = _host(page.url)
        published = page.published_at
        result: dict[str, Any] = {
            "id": page.url,
            "title": page.title,
            "url": page.url,
            "publishedDate": (
                _utc(published).strftime("%Y-%m-%dT%H:%M:%S.000Z") if published else None
            ),
            "author": page.author,
        }
        if page.image:
            result["image"] = page.image
        if host:
            result["favicon"] = f"https://{host}/favicon.ico"
        if contents.text is not None:
            text = page.text
            if contents.html_tags:
                text = "".join(f"<p>{html.escape(p)}</p>" for p in page.text.split("\n\n"))
            result["text"] = text[: contents.text]
        if contents.highlights is not None:
            terms = (
                _parse_query(contents.highlight_query).terms
                if contents.highlight_query
                else hit.terms
            )
            highlights = _highlights(page.text, terms, contents.highlights)
            result["highlights"] = highlights
            result["highlightScores"] = [
                round(0.3 + 0.6 * (_hits_in(h, terms) / len(terms) if terms else 0), 4)
                for h in highlights
            ]
        if contents.summary:
            summary = _clip(" ".join(_sentences(page.text)[:2]), 300)
            if contents.summary_schema is not None:
                properties = contents.summary_schema.get("properties") or {"summary": {}}
                summary = json.dumps(dict.fromkeys(properties, summary))
            result["summary"] = summary
        return result

    # -- SearXNG --

    def _searxng(self, req: _Incoming) -> _Reply:
        limited = self._claim("searxng", {"rate_limited"})
        if limited is not None:
            reply = _text_reply(429, "Too Many Requests")
            if "retry_after" in limited.options:
                reply.headers.append(("Retry-After", str(limited.options["retry_after"])))
            return reply
        params = {k: v[-1] for k, v in req.query.items()}
        if req.method == "POST":
            form = parse_qs(req.body.decode("utf-8", "replace"), keep_blank_values=True)
            params.update({k: v[-1] for k, v in form.items()})
        output = params.get("format", "html")
        if output not in ("html", "csv", "json", "rss"):
            output = "html"
        if output in ("csv", "rss") or (
            output == "json" and self._claim("searxng", {"json_disabled"})
        ):
            return _html_error(403, "Forbidden", _FORBIDDEN)
        q = params.get("q", "")
        if not q:
            if output == "html":
                return _text_reply(200, _searxng_html("", []), _HTML)
            return _json_reply(400, {"error": "No query"})
        language = params.get("language", "all")
        if language != "auto" and not _SEARXNG_LANGUAGE.match(language):
            return _json_reply(400, {"error": f'Invalid value "{language}" for parameter language'})
        language = language.lower()
        pageno_raw = params.get("pageno", "1")
        time_range = params.get("time_range", "")
        if not pageno_raw.isdigit() or int(pageno_raw) < 1:
            return _json_reply(400, {"error": f'Invalid value "{pageno_raw}" for parameter pageno'})
        if time_range not in ("", "day", "week", "month", "year"):
            return _json_reply(
                400, {"error": f'Invalid value "{time_range}" for parameter time_range'}
            )
        categories = [c.strip() for c in params.get("categories", "").split(",") if c.strip()]
        localized = self._claim("searxng", {"localized_dates"}) is not None
        hits = [] if self._claim("searxng", {"empty"}) else self._search(q)
        selected: list[tuple[_Hit, str | None]] = []
        for hit in hits:
            page = hit.page
            if time_range and not _within(
                page.published_at, self.now - timedelta(days=_TIME_RANGE_DAYS[time_range]), self.now
            ):
                continue
            if language not in ("", "all", "auto") and not page.language.startswith(
                language.split("-")[0]
            ):
                continue
            own = {"general", _SEARXNG_CATEGORY.get(page.kind, "general")}
            chosen = next((c for c in categories if c in own), None)
            if categories and chosen is None:
                continue
            selected.append((hit, chosen))
        pageno = int(pageno_raw)
        shown = selected[(pageno - 1) * 10 : pageno * 10]
        results = [
            self._searxng_result(hit, (pageno - 1) * 10 + i + 1, chosen, localized)
            for i, (hit, chosen) in enumerate(shown)
        ]
        if output == "html":
            return _text_reply(200, _searxng_html(q, results), _HTML)
        return _json_reply(
            200,
            {
                "query": q,
                "number_of_results": len(selected),
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            },
        )

    def _searxng_result(
        self, hit: _Hit, position: int, category: str | None, localized: bool = False
    ) -> dict[str, Any]:
        page = hit.page
        engines = _engines(page)
        published = page.published_at
        result: dict[str, Any] = {
            "url": page.url,
            "title": page.title or page.url,
            "content": _snippet(page.text, hit.terms),
            "engine": engines[0],
            "template": "default.html",
            "parsed_url": list(urlparse(page.url)),
            "engines": engines,
            "positions": [position],
            "publishedDate": None,
            "score": round(len(engines) / position, 4),
            "category": category or "general",
            "priority": "",
            "thumbnail": page.image or "",
            "img_src": "",
        }
        if published is not None:
            result.update(self._searxng_dates(page, published, localized))
        return result

    def _searxng_dates(self, page: Page, published: datetime, localized: bool) -> dict[str, str]:
        """``publishedDate`` as an instance of either era sends it, and ``pubdate`` as both do.

        Engines give naive or zone-aware datetimes (here: papers and news are aware), which
        is why the ISO form only sometimes ends in ``+00:00`` and ``pubdate`` in ``+0000``.
        Before mid-2023 the JSON carried the HTML page's localized text instead: "N minute(s)
        ago" or "N hour(s), M minute(s) ago" within a day, else Babel's medium date."""
        moment = _utc(published)
        if page.kind not in ("paper", "news"):
            moment = moment.replace(tzinfo=None)
        dates = {"pubdate": moment.strftime("%Y-%m-%d %H:%M:%S%z")}
        if not localized:
            dates["publishedDate"] = moment.isoformat()
            return dates
        age = self.now.replace(tzinfo=None) - _utc(published).replace(tzinfo=None)
        if age.days >= 1:
            dates["publishedDate"] = f"{moment:%b} {moment.day}, {moment.year}"
            return dates
        hours, minutes = int(age.seconds / 3600), int((age.seconds / 60) % 60)
        dates["publishedDate"] = (
            f"{minutes} minute(s) ago"
            if hours == 0
            else f"{hours} hour(s), {minutes} minute(s) ago"
        )
        return dates


_MIN_SNIPPET_TOKENS = 16
_REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}
_FORBIDDEN = (
    "You don&#39;t have the permission to access the requested resource. "
    "It is either read-protected or not readable by the server."
)
_TIME_RANGE_DAYS = {"day": 1, "week": 7, "month": 31, "year": 365}
_SEARXNG_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[a-zA-Z]{2})?$")
_SEARXNG_CATEGORY = {"paper": "science", "github": "it", "news": "news", "wiki": "general"}
_ENGINE_SETS = (
    ["duckduckgo", "brave"],
    ["startpage"],
    ["brave", "bing", "duckduckgo"],
    ["qwant", "duckduckgo"],
)


def _engines(page: Page) -> list[str]:
    if page.kind == "wiki":
        return ["wikipedia", "duckduckgo"]
    if page.kind == "paper":
        return ["arxiv", "google scholar"]
    if page.kind == "github":
        return ["github", "duckduckgo"]
    return list(_ENGINE_SETS[zlib.crc32(page.url.encode()) % len(_ENGINE_SETS)])


def _searxng_html(q: str, results: list[dict[str, Any]]) -> str:
    """A bare results page: what a client that forgot ``format=json`` gets back."""
    articles = "".join(
        f'<article class="result"><h3><a href="{html.escape(r["url"])}">'
        f"{html.escape(r['title'])}</a></h3><p>{html.escape(r['content'])}</p></article>"
        for r in results
    )
    return (
        f"<!DOCTYPE html><html><head><title>{html.escape(q)} - SearXNG</title></head>"
        f"<body>{articles}</body></html>"
    )


def _site_name(host: str) -> str:
    labels = [label for label in host.split(".") if label not in ("www", "docs", "blog")]
    return labels[0].replace("-", " ").title() if labels else host


def _tokens(text: str) -> int:
    """Brave's budgets are in tokens; roughly four characters each."""
    return math.ceil(len(text) / 4)


def _llm_snippets(
    page: Page, terms: Sequence[str], budget: int, most: int
) -> tuple[list[str], int]:
    """Paragraphs most relevant first (a table as a JSON string second), cut to the token budget."""
    paragraphs = page.text.split("\n\n")
    order = sorted(range(len(paragraphs)), key=lambda i: (-_hits_in(paragraphs[i], terms), i))
    chunks = [paragraphs[i] for i in order]
    if page.table is not None:
        chunks.insert(1, json.dumps(page.table, ensure_ascii=False))
    snippets: list[str] = []
    spent = 0
    for chunk in chunks:
        if len(snippets) >= most:
            break
        left = budget - spent
        if _tokens(chunk) > left:
            if chunk.startswith("{") or left < _MIN_SNIPPET_TOKENS:
                break
            chunk = _clip(chunk, left * 4)
        snippets.append(chunk)
        spent += _tokens(chunk)
    return snippets, spent


def _highlights(text: str, terms: Sequence[str], max_chars: int) -> list[str]:
    """The most relevant sentences, in order of relevance, within ``max_chars`` in total."""
    sentences = _sentences(text)
    order = sorted(range(len(sentences)), key=lambda i: (-_hits_in(sentences[i], terms), i))
    picked: list[str] = []
    used = 0
    for i in order:
        sentence = sentences[i]
        if picked and (used + len(sentence) > max_chars or not _hits_in(sentence, terms)):
            break
        if not picked and len(sentence) > max_chars:
            sentence = sentence[:max_chars]
        picked.append(sentence)
        used += len(sentence)
    return picked


def _add_contents_cost(cost: dict[str, Any], contents: _ExaContents, pages: int) -> None:
    """Exa's estimate: only the non-zero parts appear."""
    parts = {
        "text": 0.001 * pages if contents.text is not None else 0.0,
        "highlights": 0.001 * pages if contents.highlights is not None else 0.0,
        "summary": 0.001 * pages if contents.summary else 0.0,
    }
    parts = {k: round(v, 6) for k, v in parts.items() if v}
    if parts:
        cost["contents"] = parts
    search = sum(cost.get("search", {}).values())
    cost["total"] = round(search + sum(parts.values()), 6)


def _query_text(req: _Incoming) -> str:
    if "q" in req.query:
        return req.query["q"][-1]
    try:
        body = req.json_body() if req.body else {}
    except ValueError:
        return ""
    if isinstance(body, dict):
        value = body.get("q", body.get("query", ""))
        return value if isinstance(value, str) else ""
    return ""


class _Server(ThreadingHTTPServer):
    """Daemon handler threads, not joined on close: a slow handler must not hang ``stop()``."""

    daemon_threads = True
    block_on_close = False
    fake: FakeWeb

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket] = set()
        self._connections_lock = threading.Lock()

    def track(self, connection: socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def untrack(self, connection: socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeweb/1.0"
    sys_version = ""
    server: _Server

    def setup(self) -> None:
        """Headers and body go out in separate writes; without TCP_NODELAY each costs ~40 ms."""
        super().setup()
        self.connection.setsockopt(IPPROTO_TCP, TCP_NODELAY, 1)
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests and the demo print their own output."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        split = urlsplit(self.path)
        incoming = _Incoming(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
        )
        try:
            reply = self.server.fake._respond(incoming)
        except Exception as exc:  # a bug in the fake must reach the test, not hang the client
            reply = _json_reply(500, {"error": f"fakeweb internal error: {exc!r}"})
        try:
            self._write(reply, incoming.headers.get("accept-encoding", ""))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _write(self, reply: _Reply, accept_encoding: str) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.stream is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in reply.stream:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
            return
        body = reply.body
        if len(body) >= 1024 and "gzip" in accept_encoding.lower():
            body = gzip.compress(body, mtime=0)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


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
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    web.start()
    print(f"fakeweb listening on {web.url}", flush=True)
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        web.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
