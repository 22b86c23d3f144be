"""Exa: ``POST /search`` with highlights and text up to the character budget.

Exa reports a bad key as 401 ``INVALID_API_KEY`` and credits as 402; the JSON error body has
``error`` and ``tag`` but the status decides. Freshness becomes a published-date window.
``score`` is no longer in Exa's schema: it is read when present, never relied on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

from .base import (
    AUTH_FAILED,
    FAILED,
    RATE_LIMITED,
    Capabilities,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    WebResult,
    body_text,
    objects,
    plain_text,
    retry_after_seconds,
    strings,
)

FRESHNESS_DAYS = {"pd": 1, "pw": 7, "pm": 31, "py": 365}
HIGHLIGHT_CHARS = 600
# The search types Exa accepts today; "keyword" is gone and answers 400.
SEARCH_TYPES = ("auto", "fast", "instant", "deep", "deep-lite", "deep-reasoning", "neural")
PARTIAL_CONTENTS = "provider_partial_contents"


class ExaProvider(Provider):
    name: ClassVar[str] = "exa"
    label: ClassVar[str] = "Exa"
    capabilities: ClassVar[Capabilities] = Capabilities(
        freshness=True, domain_filters=True, highlights=True, full_text=True
    )
    requires_api_key: ClassVar[bool] = True
    default_base_url: ClassVar[str] = "https://api.exa.ai"

    def unavailable_reason(self, options: Mapping[str, Any]) -> str | None:
        """A ``type`` Exa would reject with a 400 on every search is a config error."""
        chosen = options.get("type", "auto")
        if chosen not in SEARCH_TYPES:
            return (
                f"external_search.exa.type must be one of {', '.join(SEARCH_TYPES[:-1])} or "
                f"{SEARCH_TYPES[-1]}, not {chosen!r}"
            )
        return super().unavailable_reason(options)

    def domain_form(self, request: SearchRequest) -> dict[str, Any]:
        """``includeDomains`` / ``excludeDomains`` in the search body."""
        form: dict[str, Any] = {}
        if request.include_domains:
            form["includeDomains"] = list(request.include_domains)
        if request.exclude_domains:
            form["excludeDomains"] = list(request.exclude_domains)
        return form

    async def search(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        """``/search`` with highlights and text; with ``text_via_contents: true`` the search
        asks for highlights only and the text of the results comes from one ``/contents`` call
        (Exa bills text per result, so this keeps searches that are never read cheap). A failing
        ``/contents`` costs the text only: the results keep their highlights and a warning
        says why."""
        text = {"maxCharacters": max(1, min(request.max_chars, 10000))}
        via_contents = bool(ctx.options.get("text_via_contents"))
        contents: dict[str, Any] = {
            "highlights": {"query": request.query, "maxCharacters": HIGHLIGHT_CHARS}
        }
        if not via_contents:
            contents["text"] = text
        body: dict[str, Any] = {
            "query": request.query,
            "type": ctx.options.get("type", "auto"),
            "numResults": max(1, min(request.count, 100)),
            "contents": contents,
        }
        body.update(self.domain_form(request))
        body.update(published_window(request.freshness))
        headers = {"x-api-key": ctx.api_key, "Accept": "application/json"}
        answer = await ctx.fetch_json(
            "POST", f"{ctx.base_url()}/search", json_body=body, headers=headers
        )
        found = identified_results(answer)
        if not (via_contents and found):
            return [result for _, result in found]
        try:
            texts = await self._contents([id_ for id_, _ in found], text, ctx, headers)
        except ProviderError as exc:
            ctx.warn(
                PARTIAL_CONTENTS,
                f"Exa's /contents call failed ({exc.message}); the results show their "
                "highlights instead of the full text.",
            )
            texts = {}
        return [replace(result, text=texts.get(id_, result.text)) for id_, result in found]

    async def _contents(
        self, ids: list[str], text: dict[str, Any], ctx: ProviderContext, headers: dict
    ) -> dict[str, str]:
        """Text by result id via ``/contents``. Matched by id, not URL: the URL Exa returns
        may be another form of the page (an arXiv abstract comes back as its PDF). A page Exa
        could not crawl is reported in ``statuses`` inside a 200 and keeps its highlights."""
        answer = await ctx.fetch_json(
            "POST",
            f"{ctx.base_url()}/contents",
            json_body={"ids": ids, "text": text},
            headers=headers,
        )
        statuses = answer.get("statuses") if isinstance(answer, Mapping) else None
        failed = [s.get("id") for s in objects(statuses) if s.get("status") == "error"]
        if failed:
            ctx.warn(
                PARTIAL_CONTENTS,
                f"Exa could not fetch the full text of {len(failed)} "
                "result(s); their highlights are shown instead.",
            )
        return {id_: result.text for id_, result in identified_results(answer) if result.text}

    def http_error(self, status: int, body: Any, headers: Mapping[str, str]) -> ProviderError:
        body = body if isinstance(body, Mapping) else {}
        tag = str(body.get("tag") or "")
        detail = plain_text(body.get("error")) or f"HTTP {status}"
        if status == 401:
            return ProviderError(
                AUTH_FAILED,
                f"Exa rejected the API key ({detail}); check external_search.exa.api_key.",
            )
        if status == 429:
            return ProviderError(
                RATE_LIMITED,
                f"Exa rate limit reached: {detail}",
                retry_after=retry_after_seconds(headers),
            )
        if status == 402:
            return ProviderError(
                FAILED, f"Exa account is out of credits or budget ({tag or detail})."
            )
        return ProviderError(
            FAILED,
            f"Exa answered HTTP {status}: {detail}" + (f" [{tag}]" if tag else ""),
        )


def published_window(freshness: str, now: datetime | None = None) -> dict[str, str]:
    """Brave-style freshness (pd/pw/pm/py or a date range) as Exa's published-date filters."""
    if not freshness:
        return {}
    if "to" in freshness:
        start, end = freshness.split("to", 1)
        return {
            "startPublishedDate": f"{start}T00:00:00.000Z",
            "endPublishedDate": f"{end}T23:59:59.999Z",
        }
    now = now or datetime.now(UTC)
    since = now - timedelta(days=FRESHNESS_DAYS[freshness])
    return {"startPublishedDate": since.strftime("%Y-%m-%dT%H:%M:%S.000Z")}


def parse_results(body: Any) -> list[WebResult]:
    """``results[]``: title may be null, highlights and text only when they were requested."""
    return [result for _, result in identified_results(body)]


def identified_results(body: Any) -> list[tuple[str, WebResult]]:
    """``results[]`` with each result's ``id`` (its URL when Exa sent none), which is what
    ``/contents`` is asked for and keys its answer by."""
    body = body if isinstance(body, Mapping) else {}
    results: list[tuple[str, WebResult]] = []
    for item in objects(body.get("results")):
        if not item.get("url"):
            continue
        highlights = strings(item.get("highlights"))
        text = body_text(item.get("text"))
        score = item.get("score")
        result = WebResult(
            url=str(item["url"]),
            title=plain_text(item.get("title")),
            snippet=highlights[0] if highlights else text[:300],
            highlights=highlights,
            text=text,
            author=plain_text(item.get("author")),
            published_at=plain_text(item.get("publishedDate")),
            rank=len(results) + 1,
            score=float(score) if isinstance(score, int | float) else None,
        )
        results.append((plain_text(item.get("id")) or str(item["url"]), result))
    return results
