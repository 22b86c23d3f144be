"""The fake Exa: ``/search`` and ``/contents``, its validation, credits and failing pages."""

from __future__ import annotations

import html
import json
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .common import (
    FakeState,
    Hit,
    Incoming,
    Mode,
    Reply,
    clip,
    domain_matches,
    hits_in,
    hostname,
    json_reply,
    parse_query,
    split_sentences,
    text_reply,
    utc,
    within,
    words_in,
)

EXA_JSON = "application/json; charset=utf-8"


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


EXA_DEFAULT_TEXT = 10_000


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
class ExaContents:
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


def _contents_options(body: dict[str, Any], prefix: str) -> ExaContents:
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
            options["text"] = _max_chars(spec, path, EXA_DEFAULT_TEXT)
            options["html_tags"] = spec.get("includeHtmlTags") is True
        elif name == "highlights":
            path = f"{prefix}highlights.maxCharacters"
            options["highlights"] = _max_chars(spec, path, _EXA_DEFAULT_HIGHLIGHTS)
            options["highlight_query"] = _expect(spec, "query", "string", f"{prefix}highlights.")
        else:
            options["summary"] = True
            options["summary_query"] = _expect(spec, "query", "string", f"{prefix}summary.")
            options["summary_schema"] = _expect(spec, "schema", "object", f"{prefix}summary.")
    return ExaContents(**options)


def _highlights(text: str, terms: Sequence[str], max_chars: int) -> list[str]:
    """The most relevant sentences, in order of relevance, within ``max_chars`` in total."""
    sentences = split_sentences(text)
    order = sorted(range(len(sentences)), key=lambda i: (-hits_in(sentences[i], terms), i))
    picked: list[str] = []
    used = 0
    for i in order:
        sentence = sentences[i]
        if picked and (used + len(sentence) > max_chars or not hits_in(sentence, terms)):
            break
        if not picked and len(sentence) > max_chars:
            sentence = sentence[:max_chars]
        picked.append(sentence)
        used += len(sentence)
    return picked


def _add_contents_cost(cost: dict[str, Any], contents: ExaContents, pages: int) -> None:
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


class ExaFake(FakeState):
    """FakeWeb's Exa routes (a mixin: ``self`` is the server)."""

    def _exa_error(self, status: int, tag: str | None, message: str) -> Reply:
        payload: dict[str, Any] = {"requestId": uuid.uuid4().hex, "error": message}
        if tag is not None:
            payload["tag"] = tag
        return json_reply(status, payload, content_type=EXA_JSON)

    def _exa(self, endpoint: str, req: Incoming) -> Reply:
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
            refusal = {"error": message, "tag": "NO_MORE_CREDITS"}
            return json_reply(402, refusal, content_type=EXA_JSON)
        limited = self._claim("exa", {"rate_limited"}, endpoint)
        if limited is not None:
            return self._exa_limited(limited)
        if endpoint == "contents" and self._claim("exa", {"url_failed"}):
            # The older error page's whole-request failure of /contents (newer answers report
            # each URL in ``statuses`` inside a 200); no tag is documented for it.
            return json_reply(
                422,
                {"requestId": uuid.uuid4().hex, "error": "URL failed to fetch"},
                content_type=EXA_JSON,
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
        return json_reply(200, payload, content_type=EXA_JSON)

    def _exa_limited(self, mode: Mode) -> Reply:
        custom = mode.options.get("body")
        if isinstance(custom, str):
            reply = text_reply(429, custom)
        elif isinstance(custom, dict):
            reply = json_reply(429, custom, content_type=EXA_JSON)
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
        selected: list[Hit] = []
        for hit in hits:
            page = hit.page
            host = hostname(page.url)
            text = f"{page.title or ''} {page.text}".lower()
            if include and not any(domain_matches(host, d) for d in include):
                continue
            if any(domain_matches(host, d) for d in exclude):
                continue
            if (start or end) and not within(
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
                tag, code = _EXA_FAILING_HOSTS.get(hostname(url), ("CRAWL_NOT_FOUND", 404))
                statuses.append(
                    {"id": url, "status": "error", "error": {"tag": tag, "httpStatusCode": code}}
                )
                continue
            query = parse_query(contents.highlight_query or page.title or "")
            hit = Hit(page, tuple(t for t in query.terms if t in words_in(page.text)), query.terms)
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

    def _exa_result(self, hit: Hit, contents: ExaContents) -> dict[str, Any]:
        """One result; no ``score``, which is no longer in Exa's schema."""
        page = hit.page
        host = hostname(page.url)
        published = page.published_at
        result: dict[str, Any] = {
            "id": page.url,
            "title": page.title,
            "url": page.url,
            "publishedDate": (
                utc(published).strftime("%Y-%m-%dT%H:%M:%S.000Z") if published else None
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
                parse_query(contents.highlight_query).terms
                if contents.highlight_query
                else hit.terms
            )
            highlights = _highlights(page.text, terms, contents.highlights)
            result["highlights"] = highlights
            result["highlightScores"] = [
                round(0.3 + 0.6 * (hits_in(h, terms) / len(terms) if terms else 0), 4)
                for h in highlights
            ]
        if contents.summary:
            summary = clip(" ".join(split_sentences(page.text)[:2]), 300)
            if contents.summary_schema is not None:
                properties = contents.summary_schema.get("properties") or {"summary": {}}
                summary = json.dumps(dict.fromkeys(properties, summary))
            result["summary"] = summary
        return result
