"""The provider contract: what a web search provider is, asks for and returns.

A provider is a small object with a ``name``, a ``label``, ``capabilities`` and an async
``search(request, ctx)``. It knows its API's HTTP and JSON and nothing else: it maps a
``SearchRequest`` to a call through ``ctx.fetch_json`` and the answer to ``WebResult`` values.
``ctx`` owns the plumbing every provider needs alike: the shared httpx client, the resolved config
block, the response-size cap, and turning transport failures into named ``ProviderError``s.
Other Datasette plugins add providers through the ``register_dbrain_websearch_providers`` hook.
"""

from __future__ import annotations

import asyncio
import functools
import html
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, TypedDict
from urllib.parse import quote, quote_plus, urlsplit

import httpx

AUTH_FAILED = "provider_auth_failed"
RATE_LIMITED = "provider_rate_limited"
FAILED = "provider_failed"
TIMEOUT = "provider_timeout"
NOT_IN_PLAN = "provider_not_in_plan"
TOO_LARGE = "provider_response_too_large"

DEFAULT_TIMEOUT = 20.0  # seconds, for a request when the context has no deadline
MIN_TIMEOUT = 0.05  # seconds: a request that may start at all gets at least this long


def address(url: str) -> str:
    """``host:port`` of a URL (never its path, query or credentials): where a call went."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "an invalid address"
    port = parsed.port or {"https": 443, "http": 80}.get(parsed.scheme, 0)
    return f"{parsed.host}:{port}"


@dataclass(frozen=True)
class Capabilities:
    """What a provider can do, so the page and the stage only ask for what it supports."""

    search: bool = True
    contents: bool = False
    freshness: bool = False
    domain_filters: bool = False
    highlights: bool = False
    full_text: bool = False


@dataclass(frozen=True)
class SearchRequest:
    """One provider call, in provider-neutral terms."""

    query: str
    count: int = 5
    freshness: str = ""
    include_domains: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()
    language: str = ""
    country: str = ""
    max_chars: int = 4000
    max_tokens: int = 8192
    timeout: float = 20.0


@dataclass(frozen=True)
class WebResult:
    """One result as the provider gave it (URLs not yet canonicalized)."""

    url: str
    title: str = ""
    snippet: str = ""
    highlights: tuple[str, ...] = ()
    text: str = ""
    author: str = ""
    published_at: str = ""
    rank: int = 0
    score: float | None = None
    domain: str = ""


class ProviderError(Exception):
    """A named provider failure; the message never contains a secret (see ``redact``)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after = retry_after


class CallRecord(TypedDict):
    """One HTTP request a provider made, for the ledger: no query string, header or key."""

    endpoint: str  # the URL path relative to the base URL, e.g. "/llm/context"
    status: int  # the HTTP status, 0 when no response arrived
    error: str  # the ProviderError code, "" when the request succeeded
    latency_ms: float


@dataclass
class ProviderContext:
    """Per-call plumbing handed to ``Provider.search``.

    ``deadline`` is an instant on ``clock`` (``time.monotonic``): every request gets only the
    time left until it, so a provider that makes two calls (Exa's search, then /contents)
    cannot overrun the stage budget. ``calls`` records each HTTP request ``fetch_json`` made,
    whatever the outcome.
    """

    provider: Provider
    client: httpx.AsyncClient
    options: Mapping[str, Any] = field(repr=False)
    max_bytes: int = 5 * 1024 * 1024
    warnings: list[tuple[str, str]] = field(default_factory=list)
    deadline: float | None = None
    calls: list[CallRecord] = field(default_factory=list)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def warn(self, code: str, message: str) -> None:
        """Tell the user something about this answer (an option the API cannot honour ...).

        The same warning twice (a retried search repeats its fallback) tells nothing new."""
        if (code, message) not in self.warnings:
            self.warnings.append((code, message))

    @property
    def api_key(self) -> str:
        # $file secrets keep the file's trailing newline; a key never contains white space.
        return str(self.options.get("api_key") or "").strip()

    def base_url(self) -> str:
        return str(self.options.get("base_url") or self.provider.default_base_url).rstrip("/")

    def time_left(self) -> float:
        """Seconds the next request may take; raises TIMEOUT when the deadline has passed.

        httpx reads ``timeout=None`` as "wait forever", so a request always gets a number."""
        if self.deadline is None:
            return DEFAULT_TIMEOUT
        left = self.deadline - self.clock()
        if left <= 0:
            raise ProviderError(
                TIMEOUT, f"{self.provider.label} was not asked: the web-search time ran out."
            )
        return max(MIN_TIMEOUT, left)

    def endpoint(self, url: str) -> str:
        """``url``'s path relative to the base URL (the path alone for another host)."""
        path = urlsplit(url).path
        base = urlsplit(self.base_url()).path.rstrip("/")
        if base and path.startswith(base + "/"):
            path = path[len(base) :]
        return redact(path, [self.api_key])

    async def fetch_json(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Send one request and return its JSON, or raise a named ProviderError.

        The request gets the time left until ``deadline`` (``timeout``, when given, caps it
        further), as a whole and not per read, so a server trickling bytes is cut too. The
        body is streamed and cut off at ``max_bytes``; non-2xx answers go to the provider's
        ``http_error`` so each API's error model stays in its own module. Every request made
        is appended to ``calls``.
        """
        seconds = self.time_left()
        if timeout is not None:
            seconds = min(seconds, max(MIN_TIMEOUT, timeout))
        record = CallRecord(endpoint=self.endpoint(url), status=0, error="", latency_ms=0.0)
        started = time.monotonic()
        try:
            return await self._fetch(method, url, params, json_body, headers, seconds, record)
        except ProviderError as exc:
            record["error"] = exc.code
            raise
        except asyncio.CancelledError:
            # The stage cancels a provider at its deadline; anything else is not a timeout.
            if self.deadline is not None and self.clock() >= self.deadline:
                record["error"] = TIMEOUT
            raise
        finally:
            record["latency_ms"] = round((time.monotonic() - started) * 1000, 3)
            self.calls.append(record)

    async def _fetch(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None,
        json_body: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        seconds: float,
        record: CallRecord,
    ) -> Any:
        received = 0
        try:
            async with (
                asyncio.timeout(seconds),
                self.client.stream(
                    method, url, params=params, json=json_body, headers=headers, timeout=seconds
                ) as response,
            ):
                record["status"] = response.status_code
                chunks: list[bytes] = []
                async for chunk in response.aiter_bytes():
                    received += len(chunk)
                    if received > self.max_bytes:
                        raise ProviderError(
                            TOO_LARGE,
                            f"{self.provider.label} sent more than {self.max_bytes:,} bytes; "
                            "the response was cut off and ignored.",
                        )
                    chunks.append(chunk)
        except (httpx.TimeoutException, TimeoutError) as exc:
            raise ProviderError(
                TIMEOUT, f"{self.provider.label} did not answer within {seconds:.1f} s."
            ) from exc
        except httpx.HTTPError as exc:
            raise ProviderError(
                FAILED,
                f"Could not reach {self.provider.label} at {address(url)}: {type(exc).__name__}.",
            ) from exc
        body_bytes = b"".join(chunks)
        try:
            body = json.loads(body_bytes) if body_bytes else None
        except ValueError:
            body = None
            if response.is_success:
                raise ProviderError(
                    FAILED, f"{self.provider.label} answered with malformed JSON."
                ) from None
        if not response.is_success:
            raise self.provider.http_error(response.status_code, body, response.headers)
        return body


class Provider:
    """Base class for providers. Subclasses set the class attributes and implement ``search``."""

    name: ClassVar[str] = ""
    label: ClassVar[str] = ""
    capabilities: ClassVar[Capabilities] = Capabilities()
    requires_api_key: ClassVar[bool] = False
    requires_base_url: ClassVar[bool] = False
    default_base_url: ClassVar[str] = ""
    key_env: ClassVar[str] = ""  # the environment variable the README and messages suggest

    def unavailable_reason(self, options: Mapping[str, Any]) -> str | None:
        """Why this provider cannot run with this config block, or None when it can."""
        if self.requires_api_key and not options.get("api_key"):
            variable = self.key_env or self.name.upper() + "_API_KEY"
            return (
                f"no API key: set external_search.{self.name}.api_key "
                f'(e.g. {{"$env": "{variable}"}}), or {variable} in the environment or in '
                "datasette-secrets"
            )
        if self.requires_base_url and not (options.get("base_url") or self.default_base_url):
            return f"no base_url: set external_search.{self.name}.base_url"
        return None

    async def search(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        raise NotImplementedError

    def domain_form(self, request: SearchRequest) -> dict[str, Any]:
        """The request's sites in this API's own terms (the parameters that carry them), as
        ``search`` sends them and the trace records them; ``{}`` when the API is not told."""
        return {}

    def http_error(self, status: int, body: Any, headers: Mapping[str, str]) -> ProviderError:
        """Map a non-2xx answer to a named error; providers refine this with their error model."""
        if status in (401, 403):
            return ProviderError(
                AUTH_FAILED,
                f"{self.label} rejected the API key (HTTP {status}); check "
                f"external_search.{self.name}.api_key.",
            )
        if status == 429:
            return ProviderError(
                RATE_LIMITED,
                f"{self.label} rate limit reached (HTTP 429).",
                retry_after=retry_after_seconds(headers),
            )
        return ProviderError(FAILED, f"{self.label} answered HTTP {status}.")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in seconds when it is a number (dates are not worth waiting for here)."""
    value = headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def redact(text: str, secrets: Sequence[str]) -> str:
    """Replace every secret value in text with ``***``, in any letter case and as a URL
    carries it (percent-encoded, ``+`` for spaces): a server that echoes a key back
    upper-cased or inside a URL must not get it onto the page."""
    pattern = _secrets_pattern(tuple(sorted({s for s in secrets if s})))
    return pattern.sub("***", text) if pattern is not None else text


def scrub(value: Any, secrets: Sequence[str]) -> Any:
    """``redact`` every string inside a JSON-shaped value (a pack, a progress event): the last
    line of defence, whatever a provider or model echoed."""
    if not secrets:
        return value
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, secrets) for k, v in value.items()}
    return value


@functools.lru_cache(maxsize=64)
def _secrets_pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    forms = {form for s in secrets for form in (s, quote(s, safe=""), quote_plus(s, safe=""))}
    if not forms:
        return None
    # Longest first, so a key that contains another is replaced whole.
    return re.compile(
        "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True)), re.IGNORECASE
    )


def clamp_query(query: str, max_chars: int, max_words: int) -> str:
    """At most ``max_words`` words and ``max_chars`` characters, cut at a word boundary."""
    words = query.split()[:max_words]
    while words and len(" ".join(words)) > max_chars:
        words.pop()
    return " ".join(words) or query[:max_chars]


def with_site_operators(
    query: str, request: SearchRequest, max_chars: int, max_words: int
) -> str | None:
    """The query with the request's domains as search operators, for query languages that
    have them (Brave's, and the engines' behind SearXNG): included sites are alternatives
    (``site:a OR site:b``), excluded ones ``-site:c``. The question is shortened to make room;
    None when the operators would leave it less than half the room (the results are filtered
    afterwards all the same)."""
    included = " OR ".join(f"site:{d}" for d in request.include_domains)
    excluded = [f"-site:{d}" for d in request.exclude_domains]
    operators = " ".join([included, *excluded] if included else excluded)
    if not operators:
        return clamp_query(query, max_chars, max_words)
    chars, words = max_chars - len(operators) - 1, max_words - len(operators.split())
    if chars < max_chars // 2 or words < max_words // 2:
        return None
    return f"{clamp_query(query, chars, words)} {operators}"


def sites_not_sent(ctx: ProviderContext, request: SearchRequest) -> None:
    """Tell the person that the sites could not be put to the provider."""
    count = len(request.include_domains) + len(request.exclude_domains)
    ctx.warn(
        "provider_ignored_option",
        f"{ctx.provider.label} was asked without the {count} site filters (too many for its "
        "query); its results from other sites are dropped afterwards.",
    )


def clean(value: str) -> str:
    """Drop NUL bytes and lone surrogates, which SQLite and UTF-8 output cannot carry."""
    return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def clean_result(result: WebResult) -> WebResult:
    """A provider's result with every string safe to store and render."""
    return replace(
        result,
        url=clean(result.url),
        title=clean(result.title),
        snippet=clean(result.snippet),
        highlights=tuple(clean(h) for h in result.highlights),
        text=clean(result.text),
        author=clean(result.author),
        published_at=clean(result.published_at),
        domain=clean(result.domain),
    )


_TAG = re.compile(r"<[^>]*>")


def plain_text(value: Any) -> str:
    """Provider markup (Brave's ``<strong>``, SearXNG's HTML) as plain text; anything but a
    string or a number (None, an object, an array) is ''."""
    if not isinstance(value, str | int | float):
        return ""
    return " ".join(html.unescape(_TAG.sub("", str(value))).split())


def objects(value: Any) -> list[Mapping[str, Any]]:
    """The objects of an array in a provider's body; anything else there holds none. A
    malformed item is dropped alone, never the whole answer."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def strings(value: Any, markup: bool = False) -> tuple[str, ...]:
    """The non-empty strings of an array in a provider's body, as sent (``markup``: HTML the
    provider marks up, as plain text)."""
    if not isinstance(value, list):
        return ()
    found = (plain_text(v) if markup else v for v in value if isinstance(v, str))
    return tuple(t for t in found if t)


def body_text(value: Any) -> str:
    """A page's text as a provider sends it (newlines kept): a string, else ''."""
    return value if isinstance(value, str) else ""
