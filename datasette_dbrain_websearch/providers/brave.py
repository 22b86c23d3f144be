"""Brave Search: the LLM Context endpoint by default, Web Search on request or as fallback.

LLM Context (``/llm/context``) returns ranked grounding snippets per URL, which is what evidence
wants. A plan without it answers 400 ``OPTION_NOT_IN_PLAN`` or 403 ``RESOURCE_NOT_ALLOWED``; the
provider then uses Web Search (``/web/search`` with ``extra_snippets``) for the same request,
remembers the refusal for the rest of the process and says so in a warning on every run it
applies to. Brave reports a bad key as 422 ``SUBSCRIPTION_TOKEN_INVALID`` (not 401), so errors
branch on ``error.code``; live bodies carry one ``error`` object, the reference pages an
``errors`` array, and both are read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar

from .base import (
    AUTH_FAILED,
    FAILED,
    NOT_IN_PLAN,
    RATE_LIMITED,
    Capabilities,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    WebResult,
    clamp_query,
    objects,
    plain_text,
    sites_not_sent,
    strings,
    with_site_operators,
)

ENDPOINTS = ("llm_context", "web_search")
MAX_QUERY_CHARS = 400
MAX_QUERY_WORDS = 50
FALLBACK = "provider_fallback"
FALLBACK_MESSAGE = (
    "Brave's plan does not include LLM Context; used Web Search instead "
    "(set external_search.brave.endpoint to web_search to skip the check)."
)

# (base URL, sha256 of the key) of plans that refused LLM Context: a plan does not change while
# the process runs, so later runs go straight to Web Search instead of paying a refusal each.
_NO_LLM_CONTEXT: set[tuple[str, str]] = set()


def clear_plan_memo() -> None:
    """Forget which keys' plans refused LLM Context (tests switch plans on one fake server)."""
    _NO_LLM_CONTEXT.clear()


def _plan_key(ctx: ProviderContext) -> tuple[str, str]:
    """The memo key holds a digest, never the API key: a key lives only in its config block."""
    return ctx.base_url(), hashlib.sha256(ctx.api_key.encode()).hexdigest()


class BraveProvider(Provider):
    name: ClassVar[str] = "brave"
    label: ClassVar[str] = "Brave"
    capabilities: ClassVar[Capabilities] = Capabilities(
        freshness=True, highlights=True, domain_filters=True
    )
    requires_api_key: ClassVar[bool] = True
    default_base_url: ClassVar[str] = "https://api.search.brave.com/res/v1"
    key_env: ClassVar[str] = "BRAVE_SEARCH_API_KEY"

    def unavailable_reason(self, options: Mapping[str, Any]) -> str | None:
        if options.get("endpoint", "llm_context") not in ENDPOINTS:
            return "external_search.brave.endpoint must be llm_context or web_search"
        return super().unavailable_reason(options)

    async def search(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        if ctx.options.get("endpoint", "llm_context") == "web_search":
            return await self._web_search(request, ctx)
        plan = _plan_key(ctx)
        if plan not in _NO_LLM_CONTEXT:
            try:
                return await self._llm_context(request, ctx)
            except ProviderError as exc:
                if exc.code != NOT_IN_PLAN:
                    raise
                _NO_LLM_CONTEXT.add(plan)
        ctx.warn(FALLBACK, FALLBACK_MESSAGE)
        return await self._web_search(request, ctx)

    def domain_form(self, request: SearchRequest) -> dict[str, Any]:
        """``site:`` / ``-site:`` operators in ``q`` (Brave's query language has them)."""
        query = with_site_operators(request.query, request, MAX_QUERY_CHARS, MAX_QUERY_WORDS)
        return {"q": query} if query else {}

    def _headers(self, ctx: ProviderContext) -> dict[str, str]:
        return {"X-Subscription-Token": ctx.api_key, "Accept": "application/json"}

    def _common(self, request: SearchRequest, ctx: ProviderContext) -> dict[str, Any]:
        params: dict[str, Any] = self.domain_form(request)
        if not params:
            sites_not_sent(ctx, request)
            params["q"] = clamp_query(request.query, MAX_QUERY_CHARS, MAX_QUERY_WORDS)
        if request.freshness:
            params["freshness"] = request.freshness
        if request.country or ctx.options.get("country"):
            params["country"] = request.country or ctx.options["country"]
        if request.language or ctx.options.get("search_lang"):
            params["search_lang"] = request.language or ctx.options["search_lang"]
        return params

    async def _llm_context(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        urls = max(1, min(request.count, 50))
        tokens = max(1024, min(request.max_tokens, 32768))
        params = {
            **self._common(request, ctx),
            "count": min(50, max(urls * 2, 10)),
            "maximum_number_of_urls": urls,
            "maximum_number_of_tokens": tokens,
            "maximum_number_of_tokens_per_url": max(512, min(8192, tokens // urls)),
            "context_threshold_mode": ctx.options.get("context_threshold_mode", "balanced"),
        }
        body = await ctx.fetch_json(
            "GET", f"{ctx.base_url()}/llm/context", params=params, headers=self._headers(ctx)
        )
        return parse_llm_context(body)

    async def _web_search(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        params = {
            **self._common(request, ctx),
            "count": max(1, min(request.count, 20)),
            "extra_snippets": "true",
            "result_filter": "web",
        }
        body = await ctx.fetch_json(
            "GET", f"{ctx.base_url()}/web/search", params=params, headers=self._headers(ctx)
        )
        return parse_web_search(body)

    def http_error(self, status: int, body: Any, headers: Mapping[str, str]) -> ProviderError:
        error = error_object(body)
        code = str(error.get("code") or "")
        detail = plain_text(error.get("detail")) or f"HTTP {status}"
        if code == "SUBSCRIPTION_TOKEN_INVALID" or (
            code == "VALIDATION" and "x-subscription-token" in str(error.get("meta"))
        ):
            return ProviderError(
                AUTH_FAILED,
                f"Brave rejected the API key ({detail}); check external_search.brave.api_key.",
            )
        if code in ("OPTION_NOT_IN_PLAN", "RESOURCE_NOT_ALLOWED"):
            return ProviderError(
                NOT_IN_PLAN,
                f"Brave: {detail}; the plan of external_search.brave.api_key does not "
                "include this endpoint.",
            )
        if status == 429 or code in ("RATE_LIMITED", "QUOTA_LIMITED"):
            wait = None if code == "QUOTA_LIMITED" else rate_limit_reset(headers)
            return ProviderError(
                RATE_LIMITED,
                f"Brave {code or 'rate limit'}: {detail}",
                retry_after=wait,
            )
        if code == "SUBSCRIPTION_NOT_FOUND":
            return ProviderError(
                AUTH_FAILED,
                f"Brave: {detail}; check external_search.brave.api_key and its plan.",
            )
        return ProviderError(FAILED, f"Brave answered HTTP {status}: {detail}")


def error_object(body: Any) -> Mapping[str, Any]:
    """The error in a Brave error body: live answers send one ``error`` object, the reference
    pages show an ``errors`` array (the first entry is read); every field may be missing."""
    if not isinstance(body, Mapping):
        return {}
    error = body.get("error")
    if isinstance(error, Mapping):
        return error
    errors = body.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], Mapping):
        return errors[0]
    return {}


def rate_limit_reset(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait: the reset of the exhausted window, else the first window's reset.

    Brave sends one comma-separated value per window (per second, per month) and no
    Retry-After; a monthly remaining of 0 on pay-as-you-go keys means uncapped, which is why the
    exhausted window is found by remaining == 0 only when the limit is not 0 as well.
    """
    try:
        resets = [float(v) for v in headers.get("x-ratelimit-reset", "").split(",") if v.strip()]
        remaining = [v.strip() for v in headers.get("x-ratelimit-remaining", "").split(",")]
        limits = [v.strip() for v in headers.get("x-ratelimit-limit", "").split(",")]
    except ValueError:
        return None
    for i, reset in enumerate(resets):
        exhausted = i < len(remaining) and remaining[i] == "0"
        uncapped = i < len(limits) and limits[i] == "0"
        if exhausted and not uncapped:
            return reset
    return resets[0] if resets else None


def _mapping(value: Any) -> Mapping[str, Any]:
    """An object of the body, or an empty one when it is anything else."""
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    """An array of the body, or an empty one when it is anything else."""
    return value if isinstance(value, list) else []


def parse_llm_context(body: Any) -> list[WebResult]:
    """``grounding.generic[]`` joined with ``sources[url]`` (either may be missing or partial)."""
    body = body if isinstance(body, Mapping) else {}
    grounding = _mapping(body.get("grounding"))
    sources = _mapping(body.get("sources"))
    results: list[WebResult] = []
    for item in objects(grounding.get("generic")):
        if not item.get("url"):
            continue
        url = str(item["url"])  # not a string: refused as a URL dbrain cannot store
        meta = _mapping(sources.get(url))
        snippets = strings(item.get("snippets"))
        age = _list(meta.get("age"))
        results.append(
            WebResult(
                url=url,
                title=plain_text(item.get("title") or meta.get("title")),
                snippet=snippets[0] if snippets else "",
                highlights=snippets,
                text="\n\n".join(snippets),
                published_at=plain_text(age[1]) if len(age) > 1 else "",
                rank=len(results) + 1,
                domain=plain_text(meta.get("hostname")),
            )
        )
    return results


def parse_web_search(body: Any) -> list[WebResult]:
    """``web.results[]``: markup stripped from descriptions, extra snippets as highlights."""
    body = body if isinstance(body, Mapping) else {}
    web = _mapping(body.get("web"))
    results: list[WebResult] = []
    for item in objects(web.get("results")):
        if not item.get("url"):
            continue
        meta_url = _mapping(item.get("meta_url"))
        extra = strings(item.get("extra_snippets"), markup=True)
        description = plain_text(item.get("description"))
        results.append(
            WebResult(
                url=str(item["url"]),
                title=plain_text(item.get("title")),
                snippet=description,
                highlights=extra,
                text="\n\n".join(p for p in (description, *extra) if p),
                published_at=plain_text(item.get("page_age")),
                rank=len(results) + 1,
                domain=plain_text(meta_url.get("hostname")),
            )
        )
    return results
