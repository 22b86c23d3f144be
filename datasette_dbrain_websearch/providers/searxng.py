"""SearXNG: a self-hosted metasearch instance's JSON API (``format=json``), no key.

An instance answers 403 when JSON output is not enabled in its ``settings.yml``; the error says so.
An instance with ``server.limiter: true`` (docker and public ones) answers 429 to any ``/search``
request without an ``Accept-Language`` header, so one is always sent. Dates come in two eras:
``publishedDate`` was localized text ("Jun 5, 2023") before mid-2023 and ISO since, while
``pubdate`` is ``%Y-%m-%d %H:%M:%S%z`` in both, so it is read first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

from .base import (
    FAILED,
    RATE_LIMITED,
    Capabilities,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    WebResult,
    objects,
    plain_text,
    retry_after_seconds,
    sites_not_sent,
    with_site_operators,
)

# SearXNG sets no bound on a query; the engines behind it do. Room for the sites' operators.
MAX_CHARS, MAX_WORDS = 1000, 200
TIME_RANGES = {"pd": "day", "pw": "week", "pm": "month", "py": "year"}
# What SearXNG's webadapter accepts for ``language`` (anything else is a 400), besides "auto".
LANGUAGE = re.compile(r"^[a-z]{2,3}(-[a-zA-Z]{2})?$")
DEFAULT_ACCEPT_LANGUAGE = "en-US,en;q=0.9"
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_PUBDATE_FORMATS = ("%Y-%m-%d %H:%M:%S%z", "%Y-%m-%d %H:%M:%S")


def valid_language(value: str) -> bool:
    return value == "auto" or bool(LANGUAGE.match(value))


class SearxngProvider(Provider):
    name: ClassVar[str] = "searxng"
    label: ClassVar[str] = "SearXNG"
    capabilities: ClassVar[Capabilities] = Capabilities(freshness=True, domain_filters=True)
    requires_base_url: ClassVar[bool] = True

    def unavailable_reason(self, options: Mapping[str, Any]) -> str | None:
        """A configured language SearXNG would answer 400 to on every search is a config error."""
        language = options.get("language")
        if language and not (isinstance(language, str) and valid_language(language)):
            return (
                "external_search.searxng.language must be a language code such as en, de or "
                f"pt-BR, or auto, not {language!r}"
            )
        return super().unavailable_reason(options)

    def domain_form(self, request: SearchRequest) -> dict[str, Any]:
        """``site:`` / ``-site:`` operators in ``q``, which the engines behind SearXNG read."""
        query = with_site_operators(request.query, request, MAX_CHARS, MAX_WORDS)
        return {"q": query} if query else {}

    async def search(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        params: dict[str, Any] = self.domain_form(request)
        if not params:
            sites_not_sent(ctx, request)
            params["q"] = request.query
        params.update({"format": "json", "pageno": 1})
        if request.freshness in TIME_RANGES:
            params["time_range"] = TIME_RANGES[request.freshness]
        elif request.freshness:
            ctx.warn(
                "provider_ignored_option",
                "SearXNG filters only by the past day, week, month or year; the date range "
                f"{request.freshness} was not applied.",
            )
        language = self._language(request, ctx)
        if language:
            params["language"] = language
        if ctx.options.get("categories"):
            params["categories"] = ctx.options["categories"]
        headers = {"Accept-Language": accept_language(language)}
        body = await ctx.fetch_json(
            "GET", f"{ctx.base_url()}/search", params=params, headers=headers
        )
        return parse_results(body)[: request.count]

    def _language(self, request: SearchRequest, ctx: ProviderContext) -> str:
        """The request's language, else the configured one; one SearXNG would refuse is not
        sent (the whole search would fail with a 400) and a warning says so."""
        if request.language and not valid_language(request.language):
            ctx.warn(
                "provider_ignored_option",
                "SearXNG accepts a language code such as en, de or pt-BR (or auto); "
                f"{request.language!r} was not sent.",
            )
        elif request.language:
            return request.language
        return str(ctx.options.get("language") or "")

    def http_error(self, status: int, body: Any, headers: Mapping[str, str]) -> ProviderError:
        if status == 403:
            return ProviderError(
                FAILED,
                "SearXNG refused JSON output (HTTP 403): enable 'json' under search.formats in "
                "the instance's settings.yml.",
            )
        if status == 429:
            return ProviderError(
                RATE_LIMITED,
                "SearXNG answered 429 Too Many Requests: the instance's bot limiter "
                "(server.limiter in its settings.yml) may be blocking API use; turn it off or "
                "pass this client's address in the limiter's settings.",
                retry_after=retry_after_seconds(headers),
            )
        if status == 400 and isinstance(body, Mapping) and body.get("error"):
            return ProviderError(FAILED, f"SearXNG refused the search: {plain_text(body['error'])}")
        return super().http_error(status, body, headers)


def accept_language(language: str) -> str:
    """An ``Accept-Language`` value for the search language (``de`` -> ``de,en;q=0.5``)."""
    if not language or language in ("auto", "all"):
        return DEFAULT_ACCEPT_LANGUAGE
    tags = list(dict.fromkeys((language, language.split("-")[0], "en")))
    weights = ("", ";q=0.9", ";q=0.5") if len(tags) == 3 else ("", ";q=0.5")
    return ",".join(tag + weight for tag, weight in zip(tags, weights, strict=False))


def published_at(item: Mapping[str, Any]) -> str:
    """``pubdate``, else an ISO ``publishedDate``, as ISO 8601 (UTC with ``Z`` when the zone is
    known); localized text such as "2 hour(s), 3 minute(s) ago" is not a date and gives ""."""
    moment = _pubdate(item.get("pubdate")) or _iso(item.get("publishedDate"))
    if moment is None:
        return ""
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%dT%H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pubdate(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    for pattern in _PUBDATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), pattern)
        except ValueError:
            continue
    return None


def _iso(value: Any) -> datetime | None:
    if not isinstance(value, str) or not _ISO_DATE.match(value.strip()):
        return None
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        return None


def parse_results(body: Any) -> list[WebResult]:
    body = body if isinstance(body, Mapping) else {}
    results: list[WebResult] = []
    for item in objects(body.get("results")):
        if not item.get("url"):
            continue
        content = plain_text(item.get("content"))
        score = item.get("score")
        results.append(
            WebResult(
                url=str(item["url"]),
                title=plain_text(item.get("title")),
                snippet=content,
                text=content,
                published_at=published_at(item),
                rank=len(results) + 1,
                score=float(score) if isinstance(score, int | float) else None,
            )
        )
    return results
