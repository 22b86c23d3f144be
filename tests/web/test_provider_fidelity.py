"""The provider clients against what the real services do beyond the happy path.

Each behaviour here is one the real services show beyond their documentation, which
``test_fakeweb.py`` pins in the fake first: SearXNG's bot limiter, its two eras of dates and
its language check; Exa's ``/contents`` failures and URL rewrites, its current search types
and the missing ``score``; Brave's two error-body forms and its two ways of refusing LLM
Context; and, for all three, a real deadline and a call log. Providers are driven through
``search()`` over loopback, or through the research API where the stage adds something
(unavailable providers, warnings).
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.providers import (
    BraveProvider,
    ExaProvider,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    SearxngProvider,
    WebResult,
)
from datasette_dbrain_websearch.providers.base import DEFAULT_TIMEOUT, TIMEOUT
from datasette_dbrain_websearch.providers.brave import FALLBACK, clear_plan_memo
from datasette_dbrain_websearch.providers.exa import PARTIAL_CONTENTS

from ..helpers import BRAVE_KEY, EXA_KEY, actor_cookies, make_datasette, web_config
from .stand_ins import Clock, Forwarded, Stalled

PROVIDERS: dict[str, type[Provider]] = {
    "brave": BraveProvider,
    "exa": ExaProvider,
    "searxng": SearxngProvider,
}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ?$")


@pytest.fixture(autouse=True)
def fresh_plans() -> Iterator[None]:
    """The LLM Context memo lives for the process; each test starts without it."""
    clear_plan_memo()
    yield
    clear_plan_memo()


def options_for(fake: FakeWeb, name: str, **extra: Any) -> dict[str, Any]:
    base = {
        "brave": {"api_key": BRAVE_KEY, "base_url": fake.brave_base_url},
        "exa": {"api_key": EXA_KEY, "base_url": fake.exa_base_url},
        "searxng": {"base_url": fake.searxng_base_url},
    }[name]
    return {**base, **extra}


async def search(
    fake: FakeWeb,
    name: str,
    request: SearchRequest | None = None,
    *,
    deadline: float | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
    **options: Any,
) -> tuple[list[WebResult] | ProviderError, ProviderContext]:
    """One provider search over loopback (or ``transport``), its deadline on ``clock`` (or
    ``time.monotonic``): its results (or the ProviderError) and its context."""
    provider = PROVIDERS[name]()
    async with httpx.AsyncClient(transport=transport) as client:
        ctx = ProviderContext(
            provider,
            client,
            options_for(fake, name, **options),
            deadline=deadline,
            clock=clock or time.monotonic,
        )
        try:
            results: list[WebResult] | ProviderError = await provider.search(
                request or SearchRequest("lattice qcd"), ctx
            )
        except ProviderError as exc:
            results = exc
    return results, ctx


def sent(fake: FakeWeb, provider: str) -> list[Any]:
    return [r for r in fake.requests if r.provider == provider]


def no_key_in(*values: Any) -> bool:
    text = json.dumps(values, default=str)
    return BRAVE_KEY not in text and EXA_KEY not in text


async def research(brain, fake, **external: Any) -> dict[str, Any]:
    ds = make_datasette([str(brain[0])], plugin_config=web_config(fake, **external))
    await ds.invoke_startup()
    response = await ds.client.get(
        "/-/research.json",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    assert response.status_code == 200
    assert BRAVE_KEY not in response.text and EXA_KEY not in response.text
    return response.json()


def warnings(pack: dict[str, Any]) -> list[tuple[str, str]]:
    return [(w["code"], w["provider"]) for w in pack["warnings"]]


# --- SearXNG --------------------------------------------------------------------------------


async def test_searxng_gets_past_the_bot_limiter(fake):
    results, _ = await search(fake, "searxng")
    assert isinstance(results, list) and results
    (request,) = sent(fake, "searxng")
    assert request.headers["accept-language"] == "en-US,en;q=0.9"

    german, _ = await search(fake, "searxng", SearchRequest("espresso"), language="de")
    assert isinstance(german, list) and german
    request = sent(fake, "searxng")[-1]
    assert request.query["language"] == ["de"]
    assert request.headers["accept-language"] == "de,en;q=0.5"


async def test_searxng_429_points_at_the_bot_limiter(fake):
    fake.set_mode("searxng", "rate_limited")
    error, _ = await search(fake, "searxng")
    assert isinstance(error, ProviderError)
    assert error.code == "provider_rate_limited"
    assert "server.limiter" in error.message and "settings.yml" in error.message


async def test_searxng_dates_are_iso_in_both_eras(fake):
    request = SearchRequest("datasette sqlite heat pump", count=10)
    current, _ = await search(fake, "searxng", request)
    fake.set_mode("searxng", "localized_dates")
    older, _ = await search(fake, "searxng", request)
    assert isinstance(current, list) and isinstance(older, list)
    dates = {r.url: r.published_at for r in current}
    assert dates == {r.url: r.published_at for r in older}
    assert all(ISO.match(d) for d in dates.values() if d)
    assert dates["https://news.ycombinator.com/item?id=46012345"] == "2026-11-30T08:00:00Z"
    reddit = "https://www.reddit.com/r/heatpumps/comments/1q0abcd/defrost_cycles_at_minus_20/"
    assert dates[reddit] == "2026-11-29T20:00:00"


async def test_searxng_request_language_it_would_refuse_is_not_sent(fake):
    results, ctx = await search(fake, "searxng", SearchRequest("espresso", language="german"))
    assert isinstance(results, list) and results
    (request,) = sent(fake, "searxng")
    assert "language" not in request.query
    assert request.headers["accept-language"] == "en-US,en;q=0.9"
    [(code, message)] = ctx.warnings
    assert code == "provider_ignored_option" and "'german' was not sent" in message


async def test_searxng_bad_configured_language_makes_it_unavailable(brain, fake):
    provider = SearxngProvider()
    reason = provider.unavailable_reason({"base_url": "http://x", "language": "de_CH"})
    assert reason and "external_search.searxng.language" in reason and "'de_CH'" in reason
    assert provider.unavailable_reason({"base_url": "http://x", "language": "de-CH"}) is None
    pack = await research(brain, fake, providers=["searxng"], searxng={"language": "de_CH"})
    assert warnings(pack) == [("provider_unavailable", "searxng")]
    assert "external_search.searxng.language" in pack["warnings"][0]["message"]
    assert sent(fake, "searxng") == []


# --- Exa ------------------------------------------------------------------------------------


async def test_exa_contents_text_is_matched_by_id_not_url(fake):
    results, ctx = await search(fake, "exa", text_via_contents=True)
    assert isinstance(results, list)
    _, contents_call = sent(fake, "exa")
    assert contents_call.json["ids"] == [r.url for r in results]  # the fake's ids are URLs
    assert "urls" not in contents_call.json
    arxiv = next(r for r in results if r.url == "https://arxiv.org/abs/2611.01234")
    assert arxiv.text and arxiv.highlights
    assert all(r.text for r in results)
    assert ctx.warnings == []


def assert_highlights_kept(results: Any, ctx: ProviderContext, said: str) -> None:
    assert isinstance(results, list) and len(results) == 5
    assert all(r.highlights and r.snippet and not r.text for r in results)
    [(code, message)] = ctx.warnings
    assert code == PARTIAL_CONTENTS
    assert said in message and "highlights" in message
    assert no_key_in(ctx.warnings, ctx.calls)


@pytest.mark.parametrize(
    ("mode", "options", "said"),
    [
        ("url_failed", {}, "HTTP 422: URL failed to fetch"),
        ("rate_limited", {"endpoint": "contents"}, "rate limit"),
        ("server_error", {"endpoint": "contents", "status": 502}, "HTTP 502"),
    ],
)
async def test_exa_failing_contents_keeps_the_results_and_their_highlights(
    fake, mode, options, said
):
    fake.set_mode("exa", mode, **options)
    results, ctx = await search(fake, "exa", deadline=time.monotonic() + 60, text_via_contents=True)
    assert_highlights_kept(results, ctx, said)


async def test_exa_stalled_contents_is_cut_and_keeps_the_results_and_their_highlights(fake):
    """The search takes all but 1 of the 60 seconds (on a clock the test moves); /contents,
    which the fake stalls for an hour, is cut when that second runs out: the fake records that
    the client hung up on it."""
    fake.set_mode("exa", "slow", endpoint="contents", seconds=3600)
    clock = Clock()
    results, ctx = await search(
        fake,
        "exa",
        deadline=clock() + 60,
        transport=httpx.MockTransport(Forwarded(clock, {"/exa/search": 59})),
        clock=clock,
        text_via_contents=True,
    )
    assert_highlights_kept(results, ctx, "did not answer within 1.0 s")
    assert fake.wait_for_requests(2) and fake.wait_settled()
    assert [(r.endpoint, r.paused, r.cut) for r in fake.requests] == [
        ("search", 0, ""),
        ("contents", 3600, "client"),
    ]


async def test_exa_failing_contents_is_a_warning_in_the_pack(brain, fake):
    fake.set_mode("exa", "url_failed")
    pack = await research(brain, fake, providers=["exa"], exa={"text_via_contents": True})
    assert warnings(pack) == [(PARTIAL_CONTENTS, "exa")]
    assert pack["external_evidence"] and pack["external_search"]["providers"] == ["exa"]


async def test_exa_type_it_would_refuse_makes_it_unavailable(brain, fake):
    reason = ExaProvider().unavailable_reason({"api_key": "k", "type": "keyword"})
    assert reason == (
        "external_search.exa.type must be one of auto, fast, instant, deep, deep-lite, "
        "deep-reasoning or neural, not 'keyword'"
    )
    assert ExaProvider().unavailable_reason({"api_key": "k", "type": "deep-lite"}) is None
    pack = await research(brain, fake, providers=["exa"], exa={"type": "keyword"})
    assert warnings(pack) == [("provider_unavailable", "exa")]
    assert "deep-reasoning" in pack["warnings"][0]["message"]
    assert sent(fake, "exa") == []


async def test_exa_results_need_no_score(fake):
    results, _ = await search(fake, "exa")
    assert isinstance(results, list) and results
    assert {r.score for r in results} == {None}
    assert [r.rank for r in results] == list(range(1, len(results) + 1))


# --- Brave ----------------------------------------------------------------------------------


async def test_brave_reads_errors_in_the_array_form(fake):
    fake.set_mode("brave", "normal", form="array")
    error, _ = await search(fake, "brave", api_key="brave-WRONG-key")
    assert isinstance(error, ProviderError) and error.code == "provider_auth_failed"
    assert "external_search.brave.api_key" in error.message
    assert "The provided subscription token is invalid." in error.message
    assert "brave-WRONG-key" not in error.message

    fake.set_mode("brave", "rate_limited", form="array", reset_seconds=3)
    limited, _ = await search(fake, "brave")
    assert isinstance(limited, ProviderError) and limited.code == "provider_rate_limited"
    assert limited.retry_after == 3.0


@pytest.mark.parametrize("refusal", ["OPTION_NOT_IN_PLAN", "RESOURCE_NOT_ALLOWED"])
async def test_brave_plan_without_llm_context_uses_web_search_and_remembers(fake, refusal):
    fake.set_mode("brave", "not_in_plan", code=refusal)
    first, ctx = await search(fake, "brave")
    assert isinstance(first, list) and first
    assert [r.endpoint for r in sent(fake, "brave")] == ["llm/context", "web/search"]
    [(code, message)] = ctx.warnings
    assert code == FALLBACK
    assert message.startswith("Brave's plan does not include LLM Context; used Web Search")

    fake.reset()  # the plan refused once; later runs do not ask again
    second, ctx = await search(fake, "brave")
    assert isinstance(second, list) and [r.url for r in second] == [r.url for r in first]
    assert [r.endpoint for r in sent(fake, "brave")] == ["web/search"]
    assert ctx.warnings == [(FALLBACK, message)]

    clear_plan_memo()
    await search(fake, "brave")
    assert [r.endpoint for r in sent(fake, "brave")] == ["web/search", "llm/context"]


async def test_brave_plan_memo_is_per_key_and_holds_no_key():
    from datasette_dbrain_websearch.providers import brave

    with FakeWeb(brave_keys=("legacy-KEY-1", "search-KEY-2")) as web:
        web.set_mode("brave", "not_in_plan", code="RESOURCE_NOT_ALLOWED", times=1)
        await search(web, "brave", api_key="legacy-KEY-1")
        await search(web, "brave", api_key="search-KEY-2")
        assert [r.endpoint for r in web.requests] == ["llm/context", "web/search", "llm/context"]
    assert "KEY" not in repr(brave._NO_LLM_CONTEXT)


async def test_brave_fallback_is_a_warning_in_the_pack_on_every_run(brain, fake):
    fake.set_mode("brave", "not_in_plan", code="RESOURCE_NOT_ALLOWED")
    first = await research(brain, fake)
    second = await research(brain, fake)
    for pack in (first, second):
        assert warnings(pack) == [(FALLBACK, "brave")]
        assert pack["external_evidence"]
    assert [r.endpoint for r in sent(fake, "brave")] == ["llm/context", "web/search", "web/search"]


# --- Deadlines ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["brave", "exa", "searxng"])
async def test_a_stalled_provider_is_cut_at_the_deadline(fake, name):
    clock = Clock()
    stalled = Stalled(clock=clock)
    error, ctx = await search(
        fake, name, deadline=clock() + 60, transport=httpx.MockTransport(stalled), clock=clock
    )
    assert isinstance(error, ProviderError) and error.code == TIMEOUT
    # The request was given the time left until the deadline, never httpx's default or more.
    (waited,) = stalled.timeouts.values()
    assert waited == 60
    [call] = ctx.calls
    assert (call["status"], call["error"]) == (0, TIMEOUT)


async def test_no_request_starts_after_the_deadline(fake):
    error, ctx = await search(fake, "brave", deadline=time.monotonic() - 0.01)
    assert isinstance(error, ProviderError) and error.code == TIMEOUT
    assert "time ran out" in error.message
    assert fake.requests == [] and ctx.calls == []


async def test_exa_contents_only_gets_what_the_search_left(fake):
    """The search takes 40 of the 60 seconds (on a clock the test moves); /contents gets the
    20 left, and when it stalls the search's results still come back."""
    clock = Clock()
    stalled = Stalled(forward=lambda path: path.endswith("/search"))

    async def slow_search(request: httpx.Request) -> httpx.Response:
        answer = await stalled(request)
        clock.advance(40)  # what the search took
        return answer

    results, ctx = await search(
        fake,
        "exa",
        deadline=clock() + 60,
        transport=httpx.MockTransport(slow_search),
        clock=clock,
        text_via_contents=True,
    )
    assert isinstance(results, list) and results
    searched, contents = ctx.calls
    assert (searched["endpoint"], searched["error"]) == ("/search", "")
    assert (contents["endpoint"], contents["error"]) == ("/contents", TIMEOUT)
    assert stalled.timeouts == {"/exa/search": 60, "/exa/contents": 20}


async def test_without_a_deadline_a_request_still_has_a_timeout():
    """httpx reads ``timeout=None`` as no timeout at all; a request always gets a number."""
    async with httpx.AsyncClient() as client:
        clock = Clock()
        ctx = ProviderContext(BraveProvider(), client, {}, clock=clock)
        assert ctx.time_left() == DEFAULT_TIMEOUT
        ctx.deadline = clock() + 0.01
        assert ctx.time_left() == 0.05


# --- The call log ---------------------------------------------------------------------------


async def test_every_request_is_logged_without_query_headers_or_key(fake):
    fake.set_mode("brave", "not_in_plan")
    _, brave_ctx = await search(fake, "brave")
    _, exa_ctx = await search(fake, "exa", text_via_contents=True)
    _, searxng_ctx = await search(fake, "searxng")
    logged = [
        [(c["endpoint"], c["status"], c["error"]) for c in ctx.calls]
        for ctx in (brave_ctx, exa_ctx, searxng_ctx)
    ]
    assert logged == [
        [("/llm/context", 400, "provider_not_in_plan"), ("/web/search", 200, "")],
        [("/search", 200, ""), ("/contents", 200, "")],
        [("/search", 200, "")],
    ]
    for ctx in (brave_ctx, exa_ctx, searxng_ctx):
        for call in ctx.calls:
            assert set(call) == {"endpoint", "status", "error", "latency_ms"}
            assert isinstance(call["latency_ms"], float) and call["latency_ms"] >= 0
    assert no_key_in(brave_ctx.calls, exa_ctx.calls) and "lattice" not in str(exa_ctx.calls)


async def test_failed_requests_are_logged_too(fake):
    fake.set_mode("exa", "server_error", status=503)
    _, failed = await search(fake, "exa")
    assert [(c["endpoint"], c["status"], c["error"]) for c in failed.calls] == [
        ("/search", 503, "provider_failed")
    ]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    _, refused = await search(fake, "searxng", base_url=f"http://127.0.0.1:{closed}/searxng")
    assert [(c["endpoint"], c["status"], c["error"]) for c in refused.calls] == [
        ("/search", 0, "provider_failed")
    ]
