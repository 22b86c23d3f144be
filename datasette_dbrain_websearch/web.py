"""The web stage of a research run: the providers called within one deadline, their calls
cached, budgeted and recorded.

Whether a run searches the web at all is decided before (``web_gate.decide``). ``WebStage.run``
then makes one bounded pass: providers in fallback order, or all at once for
``provider=all``, under one deadline for the whole stage, each call within its budget, and
each provider's results normalized into hits (``web_hits``). Every failure becomes a named
warning; nothing here can lose the local results.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import certifi
import httpx

from . import ledger, provider_cache
from .config import WebSettings
from .providers.base import (
    FAILED,
    RATE_LIMITED,
    TIMEOUT,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    WebResult,
    clamp_query,
    redact,
)
from .providers.brave import MAX_QUERY_CHARS, MAX_QUERY_WORDS
from .query_plan import QueryPlan
from .web_gate import WebRequest
from .web_hits import WebHit, normalize_hits

BUDGET_EXHAUSTED = "provider_budget_exhausted"
# A provider's own requests end at its deadline; the stage waits this much longer before
# cancelling it, so a provider can still return what it has (Exa's results when /contents stalls).
GRACE = 0.25

ALL = "all"


@dataclass
class WebOutcome:
    """What the web stage did: hits, the calls made, warnings and timings."""

    hits: list[WebHit] = field(default_factory=list)
    providers_answered: list[str] = field(default_factory=list)
    queries: list[dict[str, Any]] = field(default_factory=list)
    reserved: list[int] = field(default_factory=list)  # ledger places held under budgets
    warnings: list[dict[str, str]] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    rejected_urls: int = 0
    decisions: list[dict[str, Any]] = field(default_factory=list)
    ledger: list[dict[str, Any]] = field(default_factory=list)


def web_query(plan: QueryPlan) -> str:
    """The provider query: the question's keywords (current-state words such as "latest"
    included), within Brave's limits for every provider."""
    return clamp_query(
        " ".join(plan.web_terms or plan.query_terms), MAX_QUERY_CHARS, MAX_QUERY_WORDS
    )


def provider_order(
    requested: tuple[str, ...], settings: WebSettings, known: Mapping[str, Provider]
) -> tuple[list[str], bool]:
    """Provider names to try and whether to run them in parallel (``provider=all``)."""
    if ALL in requested:
        return [n for n in settings.providers if n in known], True
    return list(requested or settings.providers), False


class WebStage:
    """One bounded external pass over the chosen providers."""

    # The wait before a rate-limited call's one retry (a test replaces it to check the wait
    # without spending it).
    pause: Callable[[float], Awaitable[Any]] = staticmethod(asyncio.sleep)
    # The clock the stage's deadlines and each provider's share are decided on, and the transport
    # its requests go through: a test holds the clock still and stands in a transport (a stalled
    # provider that uses up what it was given), to check each decision without spending the time.
    clock: Callable[[], float] = staticmethod(time.monotonic)
    transport: httpx.AsyncBaseTransport | None = None

    def __init__(
        self,
        settings: WebSettings,
        providers: Mapping[str, Provider],
        cache_db: Any | None,
        emit: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
        run_id: str = "",
        actor_id: str = "",
    ) -> None:
        self.settings = settings
        self.providers = providers
        self.cache_db = cache_db  # the plugin database: provider cache and call ledger
        self.emit = emit
        self.run_id = run_id
        self.actor_id = actor_id
        self.outcome = WebOutcome()

    async def _progress(self, name: str, status: str, message: str) -> None:
        if self.emit is not None:
            await self.emit(
                {
                    "stage": "provider",
                    "provider": name,
                    "status": status,
                    "message": redact(f"{self._label(name)}: {message}", self.settings.secrets()),
                }
            )

    def warn(self, code: str, provider: str, message: str) -> None:
        self.outcome.warnings.append(
            {
                "code": code,
                "provider": provider,
                "message": redact(message, self.settings.secrets()),
            }
        )

    async def run(self, request: WebRequest, plan: QueryPlan) -> WebOutcome:
        started = time.monotonic()
        deadline = self.clock() + self.settings.timeout
        names, parallel = provider_order(request.providers, self.settings, self.providers)
        usable = []
        for name in names:
            reason = self._unavailable(name)
            if reason:
                self.warn("provider_unavailable", name, f"{name} is not available: {reason}.")
            else:
                usable.append(name)
        policy = request.domain_policy(self.settings)
        search = SearchRequest(
            query=web_query(plan),
            count=request.count,
            freshness=request.freshness,
            include_domains=policy.include,
            exclude_domains=policy.exclude,
            max_chars=max(500, self.settings.max_tokens * 4 // max(1, request.count)),
            max_tokens=self.settings.max_tokens,
            timeout=self.settings.timeout,
        )
        async with httpx.AsyncClient(
            transport=self.transport,
            verify=tls_context(),
            follow_redirects=False,
            headers={"User-Agent": USER_AGENT},
        ) as client:
            if parallel:
                await self._parallel(usable, search, client, deadline)
            else:
                await self._fallback(usable, search, client, deadline)
        self._in_provider_order(names)
        self._report_not_public()
        await self._record_calls()
        self.outcome.timings_ms["external"] = round((time.monotonic() - started) * 1000, 3)
        return self.outcome

    def _report_not_public(self) -> None:
        dropped = [d for d in self.outcome.decisions if d["decision"] == "dropped_not_public"]
        if dropped:
            hosts = ", ".join(dict.fromkeys(d["host"] for d in dropped))
            self.outcome.warnings.append(
                {
                    "code": "external_url_not_public",
                    "message": f"{len(dropped)} web result(s) pointed at local or private "
                    f"addresses ({hosts}) and were dropped; they are never shown or promoted "
                    "(external_search.fetch_allow_networks allows such networks).",
                }
            )

    async def _record_calls(self) -> None:
        """Every provider call of this run into the ledger, in one write after the stage."""
        if self.cache_db is None or not (self.outcome.ledger or self.outcome.reserved):
            return
        try:
            await ledger.record(self.cache_db, self.outcome.ledger, self.outcome.reserved)
        except Exception as exc:  # a locked or read-only plugin database must not cost the run
            self.outcome.warnings.append(
                {
                    "code": "provider_ledger_failed",
                    "message": f"The provider calls could not be recorded ({type(exc).__name__}); "
                    "budgets may undercount them.",
                }
            )

    def _in_provider_order(self, names: list[str]) -> None:
        """Parallel providers finish in any order; results are kept in the configured order,
        so a page two providers found gets the same ``ext:`` key and badge on every run."""
        position = {name: i for i, name in enumerate(names)}
        outcome = self.outcome
        outcome.hits.sort(key=lambda hit: position.get(hit.provider, len(position)))
        outcome.queries.sort(key=lambda query: position.get(query["provider"], len(position)))
        outcome.providers_answered.sort(key=lambda name: position.get(name, len(position)))

    def _unavailable(self, name: str) -> str | None:
        provider = self.providers.get(name)
        if provider is None:
            return "no such provider is installed"
        return provider.unavailable_reason(self.settings.options_for(name))

    async def _fallback(
        self, names: list[str], search: SearchRequest, client: httpx.AsyncClient, deadline: float
    ) -> None:
        for position, name in enumerate(names):
            remaining = deadline - self.clock()
            if remaining <= 0:
                self._timed_out(name, 0.0)
                return
            share = self.share(remaining, len(names) - position)
            try:
                await asyncio.wait_for(
                    self._one(name, search, client, self.clock() + share),
                    min(share + GRACE, remaining),
                )
                return
            except TimeoutError:
                self._timed_out(name, share)
            except ProviderError as exc:
                self.warn(exc.code, name, exc.message)
            if position + 1 < len(names):
                following = self._label(names[position + 1])
                self.warn(
                    "provider_fallback",
                    name,
                    f"Trying {following} instead of {self._label(name)}.",
                )

    def share(self, remaining: float, providers_left: int) -> float:
        """One provider's time: ``provider_timeout`` when set, else an equal part of what is
        left among the providers still to try; never past the stage's deadline."""
        wanted = self.settings.provider_timeout or remaining / max(1, providers_left)
        return max(0.0, min(wanted, remaining))

    async def _parallel(
        self, names: list[str], search: SearchRequest, client: httpx.AsyncClient, deadline: float
    ) -> None:
        share = self.share(deadline - self.clock(), 1)
        tasks = {
            asyncio.ensure_future(self._one(name, search, client, self.clock() + share)): name
            for name in names
        }
        if not tasks:
            return
        done, pending = await asyncio.wait(
            tasks, timeout=min(share + GRACE, max(0.0, deadline - self.clock()))
        )
        for task in pending:
            task.cancel()
            self._timed_out(tasks[task], share)
        if pending:
            await asyncio.wait(pending)  # let cancelled calls record themselves in the ledger
        for task in done:
            exc = task.exception()
            if isinstance(exc, ProviderError):
                self.warn(exc.code, tasks[task], exc.message)

    def _timed_out(self, name: str, share: float) -> None:
        budget = self.settings.timeout
        within = (
            f"its {share:.3g} s share of the {budget:g} s web-search budget"
            if 0 < share < budget
            else f"the {budget:g} s web-search budget"
        )
        self.warn(TIMEOUT, name, f"{self._label(name)} did not answer within {within}.")

    def _label(self, name: str) -> str:
        provider = self.providers.get(name)
        return provider.label if provider else name

    async def _one(
        self, name: str, search: SearchRequest, client: httpx.AsyncClient, deadline: float
    ) -> None:
        """One provider, with every failure as a ProviderError (never an unhandled exception)."""
        await self._progress(name, "started", "searching")
        try:
            count = await self._call(name, search, client, deadline)
        except asyncio.CancelledError:
            raise
        except ProviderError as exc:
            await self._progress(name, "failed", exc.message)
            raise
        except Exception as exc:
            error = ProviderError(
                FAILED,
                f"{self._label(name)} answered with data the plugin could not read "
                f"({type(exc).__name__}).",
            )
            await self._progress(name, "failed", error.message)
            raise error from exc
        await self._progress(name, "done", f"{count} results")

    async def _call(
        self, name: str, search: SearchRequest, client: httpx.AsyncClient, deadline: float
    ) -> int:
        """Cache, budget, call (one retry on a rate limit that fits the budget), record."""
        provider = self.providers[name]
        options = self.settings.options_for(name)
        params = cache_params(name, search, options)
        key = provider_cache.cache_key(name, {**params, "base_url": options.get("base_url", "")})
        started = time.monotonic()
        query: dict[str, Any] = {
            "provider": name,
            "query": search.query,
            "params": {k: v for k, v in params.items() if k not in ("provider", "query")},
            "sites_sent_as": provider.domain_form(search)
            if search.include_domains or search.exclude_domains
            else {},
            "cached": False,
            "results": 0,
        }
        results = await self._cache_get(name, key)
        cached = results is not None
        ctx = ProviderContext(
            provider,
            client,
            options,
            max_bytes=self.settings.max_response_bytes,
            deadline=deadline,
            clock=self.clock,
        )
        if search.freshness and not provider.capabilities.freshness:
            self.warn(
                "provider_ignored_option",
                name,
                f"{self._label(name)} cannot filter by freshness; results may be older.",
            )
        if (search.include_domains or search.exclude_domains) and not (
            provider.capabilities.domain_filters
        ):
            self.warn(
                "provider_ignored_option",
                name,
                f"{self._label(name)} cannot be asked for particular sites; its results from "
                "other sites are dropped afterwards.",
            )
        try:
            if results is None:
                await self._within_budget(name)
                results = await self._search(provider, search, ctx, name, deadline)
                await self._cache_put(name, key, params, results)
        except (ProviderError, asyncio.CancelledError) as exc:
            query["error"] = getattr(exc, "code", TIMEOUT)
            self.outcome.queries.append(query)
            raise
        finally:
            self._bill(name, ctx, len(results or ()))
        for code, message in ctx.warnings:
            self.warn(code, name, message)
        self.outcome.queries.append({**query, "cached": cached, "results": len(results)})
        hits, rejected, not_public = normalize_hits(
            name, results, cached, self.settings.fetch_allow_networks
        )
        self.outcome.hits.extend(hits)
        self.outcome.rejected_urls += rejected
        self.outcome.decisions.extend(not_public)
        self.outcome.providers_answered.append(name)
        self.outcome.timings_ms[f"external_{name}"] = round((time.monotonic() - started) * 1000, 3)
        return len(results)

    async def _search(
        self,
        provider: Provider,
        search: SearchRequest,
        ctx: ProviderContext,
        name: str,
        deadline: float,
    ) -> list[WebResult]:
        """The provider's answer; after a rate limit, one bounded wait and one retry when the
        provider says how long to wait and that fits the time left, never a loop."""
        try:
            return await provider.search(search, ctx)
        except ProviderError as exc:
            wait = exc.retry_after
            if exc.code != RATE_LIMITED or wait is None or self.clock() + wait >= deadline:
                raise
            self.warn(RATE_LIMITED, name, f"{exc.message} Retrying once in {wait:g} s.")
            await self.pause(wait)
            return await provider.search(search, ctx)

    async def _within_budget(self, name: str) -> None:
        """Skip a provider over its ``budgets`` cap before any request is made, and hold this
        call's place under the cap until the run's calls are recorded."""
        budget = self.settings.budgets.get(name)
        if budget is None or self.cache_db is None:
            return
        held = await ledger.reserve(
            self.cache_db,
            name,
            budget,
            self._label(name),
            self.settings.price_per_call(name),
            self.actor_id,
            self.run_id,
        )
        if isinstance(held, str):
            raise ProviderError(BUDGET_EXHAUSTED, held)
        self.outcome.reserved.append(held)

    def _bill(self, name: str, ctx: ProviderContext, results: int) -> None:
        self.outcome.ledger.extend(
            ledger.rows_for(
                name,
                ctx.calls,
                results,
                self.settings.price_per_call(name),
                self.actor_id,
                self.run_id,
            )
        )

    async def _cache_get(self, name: str, key: str) -> list[WebResult] | None:
        if not self.settings.cache_ttl or self.cache_db is None:
            return None
        try:
            return await provider_cache.cache_get(self.cache_db, key)
        except Exception as exc:  # a locked, read-only or foreign file must not cost the run
            self.warn(
                "provider_cache_failed",
                name,
                f"The provider cache could not be read "
                f"({type(exc).__name__}); asking the provider.",
            )
            return None

    async def _cache_put(
        self, name: str, key: str, params: dict[str, Any], results: list[WebResult]
    ) -> None:
        if not self.settings.cache_ttl or self.cache_db is None:
            return
        try:
            await provider_cache.cache_put(
                self.cache_db, key, name, params, results, self.settings.cache_ttl
            )
        except Exception as exc:
            self.warn(
                "provider_cache_failed",
                name,
                f"The answer could not be cached ({type(exc).__name__}).",
            )


USER_AGENT = "datasette-dbrain-websearch (+https://github.com/darron/dbrain)"


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Built once: loading the CA bundle costs ~30 ms, too much to pay on every run."""
    return ssl.create_default_context(cafile=certifi.where())


# Provider options that may be shown and stored; anything else (keys, base URLs that may carry
# credentials, options a third-party provider invents) stays out of packs, traces and the cache.
SHOWN_OPTIONS = (
    "endpoint",
    "type",
    "context_threshold_mode",
    "country",
    "search_lang",
    "language",
    "categories",
    "text_via_contents",
)


def cache_params(name: str, search: SearchRequest, options: Mapping[str, Any]) -> dict[str, Any]:
    """The request and the provider's showable options: recorded in the pack and the cache."""
    request = asdict(search)
    request.pop("timeout")
    shown = {k: options[k] for k in SHOWN_OPTIONS if k in options}
    return {"provider": name, **request, "options": shown}
