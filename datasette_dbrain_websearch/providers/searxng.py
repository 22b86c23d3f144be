"""SearXNG: a self-hosted metasearch instance's JSON API (``format=json``), no key.

An instance answers 403 when JSON output is not enabled in its ``settings.yml``; the error says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from .base import (
    FAILED,
    Capabilities,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    WebResult,
    plain_text,
)

TIME_RANGES = {"pd": "day", "pw": "week", "pm": "month", "py": "year"}


class SearxngProvider(Provider):
    name: ClassVar[str] = "searxng"
    label: ClassVar[str] = "SearXNG"
    capabilities: ClassVar[Capabilities] = Capabilities(freshness=True)
    requires_base_url: ClassVar[bool] = True

    async def search(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        params: dict[str, Any] = {"q": request.query, "format": "json", "pageno": 1}
        if request.freshness in TIME_RANGES:
            params["time_range"] = TIME_RANGES[request.freshness]
        elif request.freshness:
            ctx.warn(
                "provider_ignored_option",
                "SearXNG filters only by the past day, week, month or year; the date range "
                f"{request.freshness} was not applied.",
            )
        if request.language or ctx.options.get("language"):
            params["language"] = request.language or ctx.options["language"]
        if ctx.options.get("categories"):
            params["categories"] = ctx.options["categories"]
        body = await ctx.fetch_json("GET", f"{ctx.base_url()}/search", params=params)
        return parse_results(body)[: request.count]

    def http_error(self, status: int, body: Any, headers: Mapping[str, str]) -> ProviderError:
        if status == 403:
            return ProviderError(
                FAILED,
                "SearXNG refused JSON output (HTTP 403): enable 'json' under search.formats in "
                "the instance's settings.yml.",
            )
        return super().http_error(status, body, headers)


def parse_results(body: Any) -> list[WebResult]:
    body = body if isinstance(body, Mapping) else {}
    results: list[WebResult] = []
    for item in body.get("results") or []:
        if not isinstance(item, Mapping) or not item.get("url"):
            continue
        content = plain_text(item.get("content"))
        score = item.get("score")
        results.append(
            WebResult(
                url=str(item["url"]),
                title=plain_text(item.get("title")),
                snippet=content,
                text=content,
                published_at=str(item.get("publishedDate") or ""),
                rank=len(results) + 1,
                score=float(score) if isinstance(score, int | float) else None,
            )
        )
    return results
