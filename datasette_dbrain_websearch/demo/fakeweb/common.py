"""What the fake providers share: the corpus search and its ranking, snippets and dates, the
request log, replies (and broken ones), and fault modes."""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from ..corpus import Page

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


_AUTH_HEADERS = frozenset({"x-subscription-token", "x-api-key", "authorization"})


ROUTES: dict[tuple[str, str], tuple[str, str]] = {
    ("GET", "/brave/res/v1/web/search"): ("brave", "web/search"),
    ("POST", "/brave/res/v1/web/search"): ("brave", "web/search"),
    ("GET", "/brave/res/v1/llm/context"): ("brave", "llm/context"),
    ("POST", "/brave/res/v1/llm/context"): ("brave", "llm/context"),
    ("POST", "/exa/search"): ("exa", "search"),
    ("POST", "/exa/contents"): ("exa", "contents"),
    ("GET", "/searxng/search"): ("searxng", "search"),
    ("POST", "/searxng/search"): ("searxng", "search"),
}


KNOWN_PATHS = frozenset(path for _, path in ROUTES)


READER_PREFIX = "/reader/"  # a page reader: GET /reader/<page URL> answers with the page


JSON = "application/json"


HTML = "text/html; charset=utf-8"


MONTH_WINDOW = 2_592_000


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


def words_in(text: str) -> set[str]:
    return {_norm(w) for w in _WORD.findall(text)}


@dataclass(frozen=True)
class Query:
    terms: tuple[str, ...]
    sites: tuple[str, ...]
    excluded: tuple[str, ...]
    excluded_sites: tuple[str, ...] = ()


def parse_query(q: str) -> Query:
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
    return Query(tuple(dict.fromkeys(kept)), tuple(sites), tuple(excluded), tuple(excluded_sites))


def hostname(url: str) -> str:
    return urlsplit(url).hostname or ""


def same_page(a: str, b: str) -> bool:
    """Two addresses of one page: the scheme, ``www.`` / ``m.`` and a trailing slash aside."""

    def key(url: str) -> tuple[str, str, str]:
        parts = urlsplit(url)
        host = hostname(url).removeprefix("www.").removeprefix("m.")
        return host, parts.path.rstrip("/"), parts.query

    return key(a) == key(b)


def domain_matches(host: str, domain: str) -> bool:
    """A domain matches itself and its subdomains; a URL is reduced to its host first."""
    domain = domain.strip().lower()
    if "//" in domain:
        domain = hostname(domain)
    domain = domain.split("/", 1)[0]
    return bool(domain) and (host == domain or host.endswith("." + domain))


@dataclass(frozen=True)
class Hit:
    page: Page
    matched: tuple[str, ...]
    terms: tuple[str, ...]

    @property
    def coverage(self) -> float:
        return len(self.matched) / len(self.terms) if self.terms else 1.0


def rank(pages: Sequence[Page], query: Query) -> list[Hit]:
    """Term overlap on title + text: most terms, then most title terms, then corpus order."""
    scored: list[tuple[tuple[int, int, int], Hit]] = []
    for index, page in enumerate(pages):
        host = hostname(page.url)
        if query.sites and not any(domain_matches(host, s) for s in query.sites):
            continue
        if any(domain_matches(host, s) for s in query.excluded_sites):
            continue
        words = words_in(f"{page.title or ''} {page.text}")
        if any(t in words for t in query.excluded):
            continue
        matched = tuple(t for t in query.terms if t in words)
        if query.terms and not matched:
            continue
        if not query.terms and not query.sites:
            continue
        title_words = words_in(page.title or "")
        title_hits = sum(1 for t in matched if t in title_words)
        scored.append(((-len(matched), -title_hits, index), Hit(page, matched, query.terms)))
    scored.sort(key=lambda item: item[0])
    return [hit for _, hit in scored]


def split_sentences(text: str) -> list[str]:
    return [s for para in text.split("\n\n") for s in _SENTENCE_END.split(para) if s]


def hits_in(text: str, terms: Iterable[str]) -> int:
    words = words_in(text)
    return sum(1 for t in terms if t in words)


def clip(text: str, limit: int) -> str:
    """Cut at a word boundary, marking the cut the way search engines do."""
    if len(text) <= limit:
        return text
    return text[: limit - 3].rsplit(" ", 1)[0] + "..."


def snippet(text: str, terms: Sequence[str], target: int = 160, limit: int = 300) -> str:
    """The best-matching sentence, extended with the following ones up to ``target`` characters."""
    sentences = split_sentences(text)
    if not sentences:
        return ""
    best = max(range(len(sentences)), key=lambda i: (hits_in(sentences[i], terms), -i))
    out = sentences[best]
    for following in sentences[best + 1 :]:
        if len(out) >= target:
            break
        out = f"{out} {following}"
    return clip(out, limit)


def decorate(text: str, terms: Sequence[str]) -> str:
    """Wrap matched words in ``<strong>``, as Brave's text decorations do."""
    wanted = set(terms)
    return _WORD.sub(lambda m: f"<strong>{m[0]}</strong>" if _norm(m[0]) in wanted else m[0], text)


def utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def relative_age(published: datetime, now: datetime) -> str:
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


def within(published: datetime | None, start: datetime, end: datetime) -> bool:
    return published is not None and start <= published <= end


_FRESHNESS_DAYS = {"pd": 1, "pw": 7, "pm": 31, "py": 365}


FRESHNESS = re.compile(r"^(pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$")


def freshness_window(value: str, now: datetime) -> tuple[datetime, datetime]:
    """Brave ``freshness`` as an inclusive UTC window; a date range covers whole days."""
    if value in _FRESHNESS_DAYS:
        return now - timedelta(days=_FRESHNESS_DAYS[value]), now
    first, last = (date.fromisoformat(part) for part in value.split("to"))
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    end = datetime(last.year, last.month, last.day, tzinfo=UTC) + timedelta(days=1, microseconds=-1)
    return start, end


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
    paused: float = 0.0  # seconds the fake chose to stall this request (latency, slow mode)
    cut: str = ""  # what ended a stall early: "client" (it hung up) or "stop" (``stop()``)

    def as_dict(self, *, redact: bool = False) -> dict[str, Any]:
        data = asdict(self)
        if redact:
            data["headers"] = {
                k: ("***" if k in _AUTH_HEADERS else v) for k, v in self.headers.items()
            }
        return data


@dataclass(frozen=True)
class Incoming:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    # Whether the client has closed its connection (checked while the fake stalls an answer).
    hung_up: Callable[[], bool] = field(default=lambda: False, compare=False, repr=False)

    def json_body(self) -> Any:
        """The parsed JSON body; raises ``ValueError`` when it is not JSON."""
        return json.loads(self.body.decode("utf-8"))


@dataclass
class Reply:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    stream: Iterator[bytes] | None = None

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


def json_reply(
    status: int, payload: Any, headers: Sequence[tuple[str, str]] = (), content_type: str = JSON
) -> Reply:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    return Reply(status, body, [("Content-Type", content_type), *headers])


def text_reply(status: int, text: str, content_type: str = "text/plain; charset=utf-8") -> Reply:
    return Reply(status, text.encode("utf-8"), [("Content-Type", content_type)])


def html_error(status: int, title: str, message: str) -> Reply:
    """Werkzeug's default error page, which SearXNG (Flask) sends for aborts."""
    page = (
        f"<!doctype html>\n<html lang=en>\n<title>{status} {title}</title>\n"
        f"<h1>{title}</h1>\n<p>{message}</p>\n"
    )
    return text_reply(status, page, HTML)


# The reason phrases of the error pages a 5xx fault sends (Werkzeug's, as SearXNG's are).
REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


HOLE = "\x00items\x00"


_HOLE_JSON = json.dumps(HOLE)


def split_hole(payload: dict[str, Any]) -> tuple[bytes, bytes]:
    """Serialise ``payload`` around the one list holding ``[HOLE]`` (for streamed bodies)."""
    text = json.dumps(payload, ensure_ascii=False)
    before, after = text.split(_HOLE_JSON)
    return before.encode(), after.encode()


def padded_stream(prefix: bytes, item: bytes, suffix: bytes, total: int) -> Iterator[bytes]:
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


@dataclass
class Mode:
    name: str = "normal"
    options: dict[str, Any] = field(default_factory=dict)
    remaining: int | None = None


def check_options(provider: str, mode: str, options: dict[str, Any]) -> None:
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
        "code": lambda v: v in BRAVE_REFUSALS,
        "endpoint": lambda v: v in ("search", "contents"),
    }
    for name, value in options.items():
        if not checks[name](value):
            raise ValueError(f"bad value for option {name!r}: {value!r}")


def tokens(text: str) -> int:
    """Brave's budgets are in tokens; roughly four characters each."""
    return math.ceil(len(text) / 4)


def query_text(req: Incoming) -> str:
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


BRAVE_REFUSALS = {
    "OPTION_NOT_IN_PLAN": (400, "The option is not subscribed in the plan.", "authentication"),
    "RESOURCE_NOT_ALLOWED": (403, "The user is not authorized to access this resource.", "api"),
}


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


# Exa modes that take ``endpoint``: the fault then hits only /search or only /contents.
_EXA_ENDPOINT_MODES = frozenset(
    ("server_error", "malformed", "slow", "huge", "empty", "rate_limited", "no_credits")
)


def site_name(host: str) -> str:
    labels = [label for label in host.split(".") if label not in ("www", "docs", "blog")]
    return labels[0].replace("-", " ").title() if labels else host


class FakeState:
    """What the fake providers (``BraveFake``, ``ExaFake``, ``SearxngFake``) read of the server
    they are parts of: ``server.FakeWeb`` sets these attributes and defines these methods."""

    brave_keys: frozenset[str]
    exa_keys: frozenset[str]
    brave_plan: str
    now: datetime
    _lock: threading.Lock
    _billed: int
    _window_start: float
    _window_count: int
    _clock: Callable[[], float]

    def _claim(
        self, provider: str, names: Iterable[str], endpoint: str | None = None
    ) -> Mode | None:
        raise NotImplementedError

    def _option(self, provider: str, name: str, default: Any) -> Any:
        raise NotImplementedError

    def _epoch(self) -> int:
        raise NotImplementedError

    def _search(self, q: str) -> list[Hit]:
        raise NotImplementedError

    def _lookup(self, url: str) -> Page | None:
        raise NotImplementedError
