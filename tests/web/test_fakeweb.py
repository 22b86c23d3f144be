"""The fake Brave/Exa/SearXNG server, over real loopback HTTP.

The provider clients are written against this fake, so these tests pin the wire facts from
the providers' documentation: auth order, error bodies, rate-limit headers, validation ranges,
response shapes and every fault mode.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from datasette_dbrain_websearch.demo.corpus import NOW, PAGES
from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.urls import try_normalize_url

BRAVE = {"X-Subscription-Token": "test-brave-key"}
EXA = {"x-api-key": "test-exa-key"}
SEARXNG = {"Accept-Language": "en-US,en;q=0.9"}  # the bot limiter's price of admission
RATE_HEADERS = (
    "x-ratelimit-limit",
    "x-ratelimit-policy",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
)
TWO_WINDOWS = re.compile(r"^\d+, \d+$")


@pytest.fixture(scope="module")
def web() -> Iterator[FakeWeb]:
    with FakeWeb() as server:
        yield server


@pytest.fixture(autouse=True)
def clean(web: FakeWeb) -> Iterator[None]:
    web.reset()
    yield
    web.reset()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=60) as http:  # a guard against a hang, never reached
        yield http


def brave(client: httpx.Client, web: FakeWeb, endpoint: str = "web/search", **params: Any):
    headers = params.pop("headers", BRAVE)
    return client.get(f"{web.brave_base_url}/{endpoint}", params=params, headers=headers)


def exa(client: httpx.Client, web: FakeWeb, endpoint: str, body: Any, headers=EXA):
    return client.post(f"{web.exa_base_url}/{endpoint}", json=body, headers=headers)


def searxng(client: httpx.Client, web: FakeWeb, headers=SEARXNG, **params: Any):
    return client.get(f"{web.searxng_base_url}/search", params=params, headers=headers)


def brave_error(response: httpx.Response) -> dict[str, Any]:
    body = response.json()
    assert body["type"] == "ErrorResponse"
    return body["error"]


def call(client: httpx.Client, web: FakeWeb, provider: str) -> httpx.Response:
    """One valid request to ``provider``, for tests that run against all three."""
    if provider == "brave":
        return brave(client, web, q="sqlite fts5")
    if provider == "exa":
        return exa(client, web, "search", {"query": "sqlite fts5"})
    return searxng(client, web, q="sqlite fts5", format="json")


# --- Brave: auth, headers, validation -------------------------------------------------------


def test_brave_checks_the_key_before_the_parameters(client, web):
    bad = brave(client, web, headers={"X-Subscription-Token": "nope"})
    assert bad.status_code == 422
    assert brave_error(bad)["code"] == "SUBSCRIPTION_TOKEN_INVALID"
    assert brave_error(bad)["detail"] == "The provided subscription token is invalid."
    assert brave_error(bad)["meta"] == {"component": "authentication"}

    missing = brave(client, web, headers={}, q="sqlite")
    error = brave_error(missing)
    assert missing.status_code == 422
    assert error["code"] == "VALIDATION"
    assert error["meta"]["errors"][0]["loc"] == ["header", "x-subscription-token"]

    no_q = brave(client, web)
    error = brave_error(no_q)
    assert (no_q.status_code, error["code"]) == (422, "VALIDATION")
    assert error["detail"] == "Unable to validate request parameter(s)"
    assert error["meta"]["errors"] == [
        {"type": "missing", "loc": ["query", "q"], "msg": "Field required", "input": None}
    ]
    assert set(no_q.json()) == {"type", "error", "time"}
    assert set(error) == {"id", "status", "code", "detail", "meta"}


def test_every_brave_response_carries_the_two_window_rate_headers(client, web):
    responses = [
        brave(client, web, q="sqlite"),
        brave(client, web, "llm/context", q="sqlite"),
        brave(client, web),
        brave(client, web, headers={}),
        client.get(f"{web.brave_base_url}/nowhere", headers=BRAVE),
    ]
    for mode in ("rate_limited", "server_error", "malformed"):
        web.set_mode("brave", mode, times=1)
        responses.append(brave(client, web, q="sqlite"))
    for response in responses:
        for name in RATE_HEADERS[::2]:
            assert TWO_WINDOWS.match(response.headers[name]), (name, response.headers[name])
        assert re.match(r"^\d+;w=1, \d+;w=2592000$", response.headers["x-ratelimit-policy"])
        assert TWO_WINDOWS.match(response.headers["x-ratelimit-remaining"])
    ok = responses[0].headers
    assert ok["x-ratelimit-limit"] == "50, 0"
    assert ok["x-ratelimit-reset"] == "1, 43200"


@pytest.mark.parametrize(
    ("param", "value", "kind"),
    [
        ("count", "0", "greater_than_equal"),
        ("count", "21", "less_than_equal"),
        ("count", "ten", "int_parsing"),
        ("offset", "10", "less_than_equal"),
        ("offset", "-1", "greater_than_equal"),
        ("freshness", "lastweek", "string_pattern_mismatch"),
        ("freshness", "2026-13-01to2026-12-01", "value_error"),
        ("extra_snippets", "True", "bool_parsing"),
        ("safesearch", "none", "enum"),
        ("units", "furlongs", "enum"),
        ("q", "", "string_too_short"),
        ("q", "x" * 401, "string_too_long"),
        ("q", " ".join(["word"] * 51), "value_error"),
    ],
)
def test_brave_web_search_validation(client, web, param, value, kind):
    params = {"q": "sqlite", param: value}
    response = brave(client, web, **params)
    error = brave_error(response)
    assert (response.status_code, error["code"]) == (422, "VALIDATION")
    [entry] = error["meta"]["errors"]
    assert entry["loc"] == ["query", param]
    assert entry["type"] == kind
    assert entry["input"] == value


def test_brave_web_search_accepts_the_range_edges(client, web):
    for params in (
        {"count": "1", "offset": "0"},
        {"count": "20", "offset": "9"},
        {"freshness": "2026-01-01to2026-11-30", "extra_snippets": "false"},
        {"q": " ".join(["sqlite"] * 50)},
        {"q": "s" * 400},
    ):
        response = brave(client, web, **{"q": "sqlite", **params})
        assert response.status_code == 200, (params, response.text)


@pytest.mark.parametrize(
    ("param", "low", "high"),
    [
        ("count", 1, 50),
        ("maximum_number_of_urls", 1, 50),
        ("maximum_number_of_tokens", 1024, 32768),
        ("maximum_number_of_tokens_per_url", 512, 8192),
        ("maximum_number_of_snippets", 1, 100),
        ("maximum_number_of_snippets_per_url", 1, 100),
    ],
)
def test_brave_llm_context_ranges(client, web, param, low, high):
    for value, ok in ((low - 1, False), (low, True), (high, True), (high + 1, False)):
        response = brave(client, web, "llm/context", q="sqlite", **{param: str(value)})
        assert (response.status_code == 200) is ok, (param, value, response.text)
        posted = client.post(
            f"{web.brave_base_url}/llm/context", json={"q": "sqlite", param: value}, headers=BRAVE
        )
        assert (posted.status_code == 200) is ok
        if not ok:
            assert brave_error(posted)["meta"]["errors"][0]["loc"] == ["body", param]


def test_brave_llm_context_enum_and_body_errors(client, web):
    response = brave(client, web, "llm/context", q="sqlite", context_threshold_mode="loose")
    [entry] = brave_error(response)["meta"]["errors"]
    assert entry["type"] == "enum"
    assert "'strict', 'balanced', 'lenient' or 'disabled'" in entry["msg"]
    broken = client.post(
        f"{web.brave_base_url}/llm/context",
        content=b"{not json",
        headers={**BRAVE, "Content-Type": "application/json"},
    )
    assert brave_error(broken)["meta"]["errors"][0]["type"] == "json_invalid"


# --- Brave: results -------------------------------------------------------------------------


def test_brave_web_search_answers_the_question(client, web):
    """What the fake puts in Brave's shape (tests/web/test_provider_bodies.py checks the shape)."""
    body = brave(client, web, q="sqlite fts5 bm25", count="3").json()
    assert body["query"]["original"] == "sqlite fts5 bm25"
    assert body["query"]["more_results_available"] is True
    results = body["web"]["results"]
    assert len(results) == 3
    assert [m["index"] for m in body["mixed"]["main"]] == [0, 1, 2]
    for result in results:
        assert "<strong>" in result["description"]
        assert "extra_snippets" not in result
        if "page_age" in result:
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", result["page_age"])
            assert result["age"]
    assert "sqlite" in results[0]["title"].lower()


def test_brave_web_search_options(client, web):
    first = brave(client, web, q="kubernetes", count="2").json()["web"]["results"]
    second = brave(client, web, q="kubernetes", count="2", offset="1").json()["web"]["results"]
    assert len(first) == len(second) == 2
    assert {r["url"] for r in first}.isdisjoint(r["url"] for r in second)

    extras = brave(client, web, q="espresso grinder", extra_snippets="true").json()
    assert any(r.get("extra_snippets") for r in extras["web"]["results"])
    assert all(len(r.get("extra_snippets", [])) <= 5 for r in extras["web"]["results"])

    plain = brave(client, web, q="espresso", text_decorations="false").json()
    assert all("<strong>" not in r["description"] for r in plain["web"]["results"])

    news_only = brave(client, web, q="espresso", result_filter="news,query").json()
    assert "web" not in news_only
    assert news_only["query"]["original"] == "espresso"

    nothing = brave(client, web, q="zzyzx qwertyuiop").json()
    assert nothing["type"] == "search"
    assert "web" not in nothing
    assert nothing["query"]["more_results_available"] is False

    site = brave(client, web, q="site:sqlite.org fts5").json()["web"]["results"]
    assert {r["meta_url"]["hostname"] for r in site} <= {"sqlite.org", "www.sqlite.org"}

    def hosts(q: str) -> set[str]:
        return {r["meta_url"]["hostname"] for r in brave(client, web, q=q).json()["web"]["results"]}

    assert "www.sqlite.org" in hosts("sqlite fts5")
    assert not {"sqlite.org", "www.sqlite.org"} & hosts("sqlite fts5 -site:sqlite.org")
    either = hosts("espresso site:espressoscience.org OR site:homebarista-notes.com")
    assert either == {"espressoscience.org", "homebarista-notes.com"}


def test_brave_freshness_uses_the_fixed_clock(client, web):
    day = brave(client, web, q="datasette sqlite heat pump", freshness="pd").json()
    urls = {r["url"] for r in day["web"]["results"]}
    assert urls == {
        "https://datasette.io/news/2026-11-29-datasette-1-0",
        "https://news.ycombinator.com/item?id=46012345",
        "https://www.reddit.com/r/heatpumps/comments/1q0abcd/defrost_cycles_at_minus_20/",
    }
    ranged = brave(client, web, q="lattice qcd", freshness="2026-11-01to2026-11-10").json()
    assert [r["url"] for r in ranged["web"]["results"]] == ["https://arxiv.org/abs/2611.01234"]
    assert ranged["web"]["results"][0]["age"] == "26 days ago"


def test_llm_context_get_and_post_are_equivalent(client, web):
    params = {
        "q": "sourdough starter feeding ratio",
        "count": 10,
        "maximum_number_of_urls": 4,
        "maximum_number_of_tokens": 2048,
        "maximum_number_of_tokens_per_url": 512,
        "context_threshold_mode": "balanced",
    }
    got = brave(client, web, "llm/context", **{k: str(v) for k, v in params.items()})
    posted = client.post(f"{web.brave_base_url}/llm/context", json=params, headers=BRAVE)
    assert got.status_code == posted.status_code == 200
    assert got.json() == posted.json()
    body = got.json()
    assert set(body) == {"grounding", "sources"}
    assert body["grounding"]["map"] == []
    generic = body["grounding"]["generic"]
    assert 0 < len(generic) <= 4
    tokens = sum(math.ceil(len(s) / 4) for item in generic for s in item["snippets"])
    assert tokens <= 2048
    for item in generic:
        assert sum(math.ceil(len(s) / 4) for s in item["snippets"]) <= 512
    tables = [s for item in generic for s in item["snippets"] if s.startswith("{")]
    assert "table" in json.loads(tables[0])
    for url, source in body["sources"].items():
        assert set(source) == {"title", "hostname", "age"}
        if source["age"] is not None:
            _, iso_day, relative = source["age"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\d", iso_day)
            assert relative.endswith("days ago")
            assert url in {item["url"] for item in generic}


def test_llm_context_has_the_documented_rough_edges(client, web):
    body = brave(client, web, "llm/context", q="espresso grinder single dose").json()
    unsourced = [g for g in body["grounding"]["generic"] if g["url"] not in body["sources"]]
    assert unsourced, "a grounding item without a sources entry"
    empty = brave(client, web, "llm/context", q="gateway api kubernetes repository").json()
    assert any(g["snippets"] == [] for g in empty["grounding"]["generic"])
    tight = brave(
        client, web, "llm/context", q="lattice qcd", maximum_number_of_tokens="1024"
    ).json()
    used = sum(math.ceil(len(s) / 4) for g in tight["grounding"]["generic"] for s in g["snippets"])
    assert used <= 1024
    question = "lattice qcd espresso"
    strict = brave(client, web, "llm/context", q=question, context_threshold_mode="strict")
    lenient = brave(client, web, "llm/context", q=question, context_threshold_mode="lenient")
    strict, lenient = strict.json(), lenient.json()
    assert len(strict["grounding"]["generic"]) < len(lenient["grounding"]["generic"])


# --- Brave: fault modes ---------------------------------------------------------------------


def test_brave_rate_limited_times_then_normal(client, web):
    web.set_mode("brave", "rate_limited", times=1, reset_seconds=3, retry_after=2)
    limited = brave(client, web, q="sqlite")
    error = brave_error(limited)
    assert (limited.status_code, error["code"]) == (429, "RATE_LIMITED")
    assert error["detail"] == "Request rate limit exceeded for plan."
    assert set(error["meta"]) == {
        "plan",
        "rate_limit",
        "rate_current",
        "quota_limit",
        "quota_current",
        "org_rate_limit",
        "org_rate_current",
        "component",
    }
    assert error["meta"]["component"] == "rate_limiter"
    assert limited.headers["x-ratelimit-remaining"].startswith("0, ")
    assert limited.headers["x-ratelimit-reset"] == "3, 43200"
    assert limited.headers["retry-after"] == "2"
    assert brave(client, web, q="sqlite").status_code == 200

    web.set_mode("brave", "rate_limited", plan="free")
    free = brave(client, web, q="sqlite")
    assert "retry-after" not in free.headers
    assert free.headers["x-ratelimit-limit"] == "1, 2000"
    assert brave_error(free)["meta"]["plan"] == "Free"


def test_brave_quota_plan_and_tolerance_modes(client, web):
    web.set_mode("brave", "quota_limited")
    quota = brave(client, web, q="sqlite")
    assert (quota.status_code, brave_error(quota)["code"]) == (429, "QUOTA_LIMITED")
    assert quota.headers["x-ratelimit-remaining"].endswith(", 0")

    web.set_mode("brave", "not_in_plan")
    refused = brave(client, web, "llm/context", q="sqlite")
    assert (refused.status_code, brave_error(refused)["code"]) == (400, "OPTION_NOT_IN_PLAN")
    assert brave(client, web, q="sqlite").status_code == 200

    web.set_mode("brave", "error_missing_fields")
    sparse = brave(client, web)
    assert "time" not in sparse.json()
    assert set(brave_error(sparse)) == {"status", "detail", "meta"}
    web.set_mode("brave", "error_missing_fields", drop=["code"])
    assert set(brave(client, web).json()) == {"type", "error", "time"}


def test_real_per_second_limiter_of_the_free_plan(client):
    # The limiter's clock stands still: both requests fall in one second, however slow the host.
    with FakeWeb(brave_plan="free", clock=lambda: 1000.0) as free:
        first = brave(client, free, q="sqlite")
        second = brave(client, free, q="sqlite")
        assert first.status_code == 200
        assert first.headers["x-ratelimit-remaining"] == "0, 1999"
        assert (second.status_code, brave_error(second)["code"]) == (429, "RATE_LIMITED")
        free.reset()
        assert brave(client, free, q="sqlite").status_code == 200


def test_brave_server_errors(client, web):
    web.set_mode("brave", "server_error", status=503)
    response = brave(client, web, q="sqlite")
    assert response.status_code == 503
    assert brave_error(response)["status"] == 503
    web.set_mode("brave", "server_error", plain=True)
    plain = brave(client, web, q="sqlite")
    assert plain.status_code == 500
    assert plain.headers["content-type"].startswith("text/html")


# --- Faults shared by all providers ---------------------------------------------------------


@pytest.mark.parametrize("provider", ["brave", "exa", "searxng"])
def test_malformed_and_empty_modes(client, web, provider):
    web.set_mode(provider, "malformed", times=1)
    broken = call(client, web, provider)
    assert broken.status_code == 200
    assert broken.headers["content-type"].startswith("application/json")
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken.text)

    web.set_mode(provider, "empty")
    body = call(client, web, provider).json()
    if provider == "brave":
        assert body["type"] == "search" and "web" not in body
    elif provider == "exa":
        assert body["results"] == [] and re.fullmatch(r"[0-9a-f]{32}", body["requestId"])
    else:
        assert body["results"] == [] and body["number_of_results"] == 0
    web.reset()
    assert call(client, web, provider).status_code == 200


@pytest.mark.parametrize("provider", ["brave", "exa", "searxng"])
def test_huge_mode_streams_more_than_five_megabytes(client, web, provider):
    web.set_mode(provider, "huge", times=2)
    request = {
        "brave": ("GET", f"{web.brave_base_url}/web/search?q=sqlite", BRAVE, None),
        "exa": ("POST", f"{web.exa_base_url}/search", EXA, {"query": "sqlite"}),
        "searxng": ("GET", f"{web.searxng_base_url}/search?q=sqlite&format=json", SEARXNG, None),
    }[provider]
    method, url, headers, body = request
    with client.stream(method, url, headers=headers, json=body) as response:
        assert "content-length" not in response.headers
        received = b"".join(response.iter_raw())
    assert len(received) > 5 * 1024 * 1024
    assert json.loads(received)
    with client.stream(method, url, headers=headers, json=body) as response:
        assert next(response.iter_raw())
    assert call(client, web, provider).status_code == 200


def test_slow_mode_and_global_latency(client):
    """The stalls are the fake's decisions, recorded; ``sleep`` stands in so none is spent."""
    slept: list[float] = []
    with FakeWeb(sleep=slept.append) as web:
        web.set_mode("exa", "slow", seconds=30, times=1)
        assert exa(client, web, "search", {"query": "sqlite"}).status_code == 200
        # The slow mode was for one request: the next one is not stalled.
        assert exa(client, web, "search", {"query": "sqlite"}).status_code == 200
        assert [r.paused for r in web.requests] == [30, 0] and slept == [30]
    slept.clear()
    with FakeWeb(latency_ms=150, sleep=slept.append) as delayed:
        assert searxng(client, delayed, q="sqlite", format="json").status_code == 200
        assert [r.paused for r in delayed.requests] == [0.15] and slept == [0.15]


def test_a_stall_ends_when_the_client_hangs_up(web):
    """The real stall withholds everything, not even the status line goes out, until the
    client gives up; the fake sees it hang up and records the stall as cut by the client."""
    web.set_mode("brave", "slow", seconds=3600)
    with (
        httpx.Client(timeout=httpx.Timeout(60, read=0.5)) as impatient,
        pytest.raises(httpx.ReadTimeout),
        impatient.stream("GET", f"{web.brave_base_url}/web/search?q=sqlite", headers=BRAVE),
    ):
        pass
    assert web.wait_for_requests(1) and web.wait_settled()
    [stalled] = web.requests
    assert (stalled.paused, stalled.cut) == (3600, "client")


def test_stop_does_not_wait_for_slow_handlers(client):
    slow = FakeWeb().start()
    slow.set_mode("searxng", "slow", seconds=3600)

    def hang() -> None:
        with contextlib.suppress(httpx.HTTPError):
            searxng(client, slow, q="sqlite", format="json")

    worker = threading.Thread(target=hang)
    worker.start()
    assert slow.wait_for_requests(1)
    slow.stop()  # an hour's stall: only stop() can have ended it
    worker.join(timeout=60)  # a guard against a hang
    assert not worker.is_alive()
    assert slow.wait_settled()  # (the client may see the connection close first)
    [stalled] = slow.requests
    assert (stalled.paused, stalled.cut) == (3600, "stop")


# --- Exa ------------------------------------------------------------------------------------


def test_exa_auth(client, web):
    for headers in ({}, {"x-api-key": "wrong"}, {"Authorization": "Bearer wrong"}):
        response = exa(client, web, "search", {"query": "sqlite"}, headers=headers)
        body = response.json()
        assert response.status_code == 401
        assert (body["error"], body["tag"]) == ("Invalid API key", "INVALID_API_KEY")
        assert re.fullmatch(r"[0-9a-f]{32}", body["requestId"])
    bearer = {"Authorization": "Bearer test-exa-key"}
    assert exa(client, web, "search", {"query": "sqlite"}, headers=bearer).status_code == 200


@pytest.mark.parametrize(
    ("body", "tag", "fragment"),
    [
        ({}, "INVALID_REQUEST_BODY", 'expected string, received undefined at \\"query\\"'),
        ({"query": ""}, "INVALID_REQUEST_BODY", "Too small"),
        ({"query": 5}, "INVALID_REQUEST_BODY", "received number"),
        ({"query": "x", "numResults": 0}, "INVALID_NUM_RESULTS", "numResults"),
        ({"query": "x", "numResults": 101}, "INVALID_NUM_RESULTS", "numResults"),
        ({"query": "x", "type": "psychic"}, "INVALID_REQUEST_BODY", "type"),
        (
            {"query": "x", "category": "company", "startPublishedDate": "2025-01-01"},
            "INVALID_REQUEST",
            "startPublishedDate",
        ),
        (
            {"query": "x", "category": "people", "excludeDomains": ["a.com"]},
            "INVALID_REQUEST",
            "excludeDomains",
        ),
        (
            {"query": "x", "contents": {"text": {"maxCharacters": 10001}}},
            "INVALID_REQUEST_BODY",
            "contents.text.maxCharacters",
        ),
    ],
)
def test_exa_search_validation(client, web, body, tag, fragment):
    response = exa(client, web, "search", body)
    assert response.status_code == 400
    assert response.json()["tag"] == tag
    assert fragment in json.dumps(response.json()["error"])


def test_exa_search_results_and_contents_only_on_request(client, web):
    bare = exa(client, web, "search", {"query": "lattice qcd", "numResults": 3}).json()
    assert len(bare["results"]) == 3
    assert bare["resolvedSearchType"] == "neural"
    assert isinstance(bare["searchTime"], float)
    assert bare["costDollars"] == {"total": 0.005, "search": {"neural": 0.005}}
    for result in bare["results"]:
        assert not {"text", "highlights", "highlightScores", "summary"} & set(result)
        assert "score" not in result  # no longer in Exa's schema

    full = exa(
        client,
        web,
        "search",
        {
            "query": "lattice qcd",
            "numResults": 2,
            "contents": {
                "text": {"maxCharacters": 120},
                "highlights": {"maxCharacters": 200},
                "summary": {"query": "what was computed?"},
            },
        },
    ).json()
    for result in full["results"]:
        assert len(result["text"]) <= 120
        assert sum(len(h) for h in result["highlights"]) <= 200
        assert len(result["highlightScores"]) == len(result["highlights"])
        assert result["summary"]
    assert set(full["costDollars"]["contents"]) == {"text", "highlights", "summary"}

    whole = exa(client, web, "search", {"query": "sourdough", "contents": {"text": True}}).json()
    assert all(0 < len(r["text"]) <= 10_000 for r in whole["results"])
    untitled = exa(client, web, "search", {"query": "extraction yield chart"}).json()
    assert untitled["results"][0]["title"] is None


def test_exa_domain_and_date_filters(client, web):
    only = exa(
        client, web, "search", {"query": "sqlite fts5", "includeDomains": ["sqlite.org"]}
    ).json()
    hosts = {httpx.URL(r["url"]).host for r in only["results"]}
    assert hosts == {"www.sqlite.org", "sqlite.org"}
    excluded = exa(
        client, web, "search", {"query": "sqlite fts5", "excludeDomains": ["sqlite.org"]}
    ).json()
    assert not any("sqlite.org" in r["url"] for r in excluded["results"])
    dated = exa(
        client,
        web,
        "search",
        {
            "query": "lattice qcd",
            "numResults": 100,
            "startPublishedDate": "2026-09-01T00:00:00.000Z",
            "endPublishedDate": "2026-11-30T00:00:00.000Z",
        },
    ).json()
    dates = [r["publishedDate"] for r in dated["results"]]
    assert dates and all(d is not None and "2026-09-01" <= d[:10] <= "2026-11-30" for d in dates)
    news = exa(client, web, "search", {"query": "heat pump", "category": "news"}).json()
    assert news["results"] and all(
        r["publishedDate"] and r["publishedDate"] >= "2026-11" for r in news["results"]
    )


def test_exa_contents_reports_each_url_in_statuses(client, web):
    known = "https://www.sqlite.org/fts5.html"
    body = {
        "urls": [known, "https://gone.example.net/old-page", "https://forbidden.example.com/x"],
        "text": {"maxCharacters": 50},
        "highlights": True,
    }
    response = exa(client, web, "contents", body)
    assert response.status_code == 200
    payload = response.json()
    assert [r["url"] for r in payload["results"]] == [known]
    assert "score" not in payload["results"][0]
    assert len(payload["results"][0]["text"]) <= 50
    assert payload["results"][0]["highlights"]
    assert payload["statuses"] == [
        {"id": known, "status": "success", "source": "cached"},
        {
            "id": "https://gone.example.net/old-page",
            "status": "error",
            "error": {"tag": "CRAWL_NOT_FOUND", "httpStatusCode": 404},
        },
        {
            "id": "https://forbidden.example.com/x",
            "status": "error",
            "error": {"tag": "SOURCE_NOT_AVAILABLE", "httpStatusCode": 403},
        },
    ]
    assert payload["costDollars"]["contents"] == {"text": 0.001, "highlights": 0.001}
    by_id = exa(client, web, "contents", {"ids": [known]}).json()
    assert [s["status"] for s in by_id["statuses"]] == ["success"]
    assert "text" not in by_id["results"][0]
    for bad in ({}, {"urls": []}, {"urls": ["https://a.example"] * 101}, {"urls": [3]}):
        rejected = exa(client, web, "contents", bad)
        assert (rejected.status_code, rejected.json()["tag"]) == (400, "INVALID_REQUEST_BODY")


def test_exa_fault_modes(client, web):
    web.set_mode("exa", "no_credits")
    credits = exa(client, web, "search", {"query": "sqlite"})
    assert (credits.status_code, credits.json()["tag"]) == (402, "NO_MORE_CREDITS")

    web.set_mode("exa", "rate_limited", times=1)
    untagged = exa(client, web, "search", {"query": "sqlite"})
    assert untagged.status_code == 429
    assert "tag" not in untagged.json()
    assert "retry-after" not in untagged.headers
    assert exa(client, web, "search", {"query": "sqlite"}).status_code == 200

    web.set_mode("exa", "rate_limited", tag="RATE_LIMIT_EXCEEDED", retry_after=7)
    tagged = exa(client, web, "contents", {"urls": ["https://www.sqlite.org/fts5.html"]})
    assert (tagged.json()["tag"], tagged.headers["retry-after"]) == ("RATE_LIMIT_EXCEEDED", "7")

    web.set_mode("exa", "rate_limited", body="Too many requests")
    assert exa(client, web, "search", {"query": "sqlite"}).text == "Too many requests"

    web.set_mode("exa", "server_error", status=502)
    failed = exa(client, web, "search", {"query": "sqlite"})
    assert (failed.status_code, failed.json()["tag"]) == (502, "INTERNAL_ERROR")


# --- SearXNG --------------------------------------------------------------------------------


def test_searxng_json_shape(client, web):
    response = searxng(client, web, q="kubernetes networking", format="json")
    body = response.json()
    assert set(body) == {
        "query",
        "number_of_results",
        "results",
        "answers",
        "corrections",
        "infoboxes",
        "suggestions",
        "unresponsive_engines",
    }
    assert body["query"] == "kubernetes networking"
    assert 0 < len(body["results"]) <= 10
    for position, result in enumerate(body["results"], start=1):
        assert {"url", "title", "content", "engine", "engines", "score", "category"} <= set(result)
        assert result["engine"] in result["engines"]
        assert result["positions"] == [position]
        assert result["parsed_url"][1] == httpx.URL(result["url"]).netloc.decode()
        assert result["category"] == "general"
        date = result["publishedDate"]
        assert date is None or re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\+00:00)?", date)


def test_searxng_parameters_and_formats(client, web):
    assert searxng(client, web, q="sqlite", format="csv").status_code == 403
    page = searxng(client, web, q="sqlite")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert searxng(client, web, format="json").json() == {"error": "No query"}
    assert searxng(client, web, q="x", format="json", pageno="0").status_code == 400
    assert searxng(client, web, q="x", format="json", time_range="decade").status_code == 400

    week = searxng(client, web, q="heat pump", format="json", time_range="week").json()
    cutoff = (NOW.replace(tzinfo=None) - timedelta(days=7)).isoformat()
    assert week["results"]
    assert all(r["publishedDate"] and r["publishedDate"] >= cutoff for r in week["results"])
    science = searxng(client, web, q="lattice qcd", format="json", categories="science").json()
    assert science["results"] and {r["category"] for r in science["results"]} == {"science"}
    german = searxng(client, web, q="espresso", format="json", language="de").json()
    assert [r["url"] for r in german["results"]] == [
        "https://zürich-kaffee.ch/espresso/mühlen-vergleich"
    ]
    first = searxng(client, web, q="kubernetes sqlite espresso", format="json").json()
    second = searxng(client, web, q="kubernetes sqlite espresso", format="json", pageno="2").json()
    assert second["results"][0]["positions"] == [11]
    assert {r["url"] for r in first["results"]}.isdisjoint(r["url"] for r in second["results"])

    web.set_mode("searxng", "json_disabled")
    assert searxng(client, web, q="sqlite", format="json").status_code == 403
    web.set_mode("searxng", "rate_limited", times=1)
    assert searxng(client, web, q="sqlite", format="json").status_code == 429


# --- Seen from the real services beyond their documentation ---------------------------------


def test_searxng_bot_limiter_wants_accept_language(client, web):
    for blank in ({}, {"Accept-Language": ""}):
        refused = searxng(client, web, headers=blank, q="sqlite", format="json")
        assert (refused.status_code, refused.text) == (429, "Too Many Requests")
    posted = client.post(f"{web.searxng_base_url}/search", data={"q": "sqlite", "format": "json"})
    assert posted.status_code == 429
    web.set_mode("searxng", "json_disabled")
    assert searxng(client, web, headers={}, q="sqlite", format="json").status_code == 429
    web.reset()
    assert searxng(client, web, q="sqlite", format="json").status_code == 200
    with FakeWeb(searxng_limiter=False) as open_instance:
        assert searxng(client, open_instance, headers={}, q="sqlite", format="json").json()


@pytest.mark.parametrize(
    ("language", "ok"),
    [
        ("de", True),
        ("de-CH", True),
        ("fil", True),
        ("auto", True),
        ("all", True),
        ("de_CH", False),
        ("german", False),
        ("EN", False),
        ("", False),
    ],
)
def test_searxng_language_must_be_a_code(client, web, language, ok):
    response = searxng(client, web, q="espresso", format="json", language=language)
    assert (response.status_code == 200) is ok
    if not ok:
        assert response.json() == {"error": f'Invalid value "{language}" for parameter language'}


def test_searxng_dates_in_both_eras(client, web):
    def dated() -> list[dict[str, Any]]:
        found = []
        for q in ("datasette sqlite heat pump", "lattice qcd"):
            body = searxng(client, web, q=q, format="json").json()
            found.extend(r for r in body["results"] if r.get("pubdate"))
        return found

    iso = [r for r in dated() if r["publishedDate"]]
    assert any(r["publishedDate"].endswith("+00:00") for r in iso)
    assert any(not r["publishedDate"].endswith("+00:00") for r in iso)
    for result in iso:
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\+0000)?", result["pubdate"])
        assert (
            result["pubdate"].replace(" ", "T").replace("+0000", "+00:00")
            == (result["publishedDate"])
        )

    web.set_mode("searxng", "localized_dates")
    old = dated()
    texts = {r["url"]: r["publishedDate"] for r in old}
    assert texts["https://news.ycombinator.com/item?id=46012345"] == "4 hour(s), 0 minute(s) ago"
    assert texts["https://arxiv.org/abs/2611.01234"] == "Nov 3, 2026"
    assert [r["pubdate"] for r in old] == [r["pubdate"] for r in iso]
    assert all(not re.match(r"\d{4}-", date) for date in texts.values())


@pytest.mark.parametrize("kind", ["keyword", "hybrid", ""])
def test_exa_rejects_retired_search_types(client, web, kind):
    response = exa(client, web, "search", {"query": "sqlite", "type": kind})
    body = response.json()
    assert (response.status_code, body["tag"]) == (400, "INVALID_REQUEST_BODY")
    assert body["error"].startswith("Invalid request body | Validation error: Invalid option")
    assert body["error"].endswith('at "type"')


def test_exa_accepts_todays_search_types(client, web):
    for kind in ("auto", "fast", "instant", "deep", "deep-lite", "deep-reasoning", "neural"):
        assert exa(client, web, "search", {"query": "sqlite", "type": kind}).status_code == 200


def test_exa_contents_answers_by_requested_id_at_the_crawled_url(client, web):
    abstract = "https://arxiv.org/abs/2611.01234"
    slashed = "https://www.sqlite.org/fts5.html/"
    body = exa(client, web, "contents", {"ids": [abstract, slashed], "text": True}).json()
    assert [(r["id"], r["url"]) for r in body["results"]] == [
        (abstract, "https://arxiv.org/pdf/2611.01234.pdf"),
        (slashed, "https://www.sqlite.org/fts5.html"),
    ]
    assert [s["id"] for s in body["statuses"]] == [abstract, slashed]
    assert all("score" not in r for r in body["results"])


@pytest.mark.parametrize(
    ("mode", "options", "status"),
    [
        ("url_failed", {}, 422),
        ("rate_limited", {"endpoint": "contents"}, 429),
        ("server_error", {"endpoint": "contents", "status": 503}, 503),
    ],
)
def test_exa_contents_can_fail_as_a_whole_while_search_works(client, web, mode, options, status):
    web.set_mode("exa", mode, times=1, **options)
    assert exa(client, web, "search", {"query": "lattice qcd"}).status_code == 200
    failed = exa(client, web, "contents", {"ids": ["https://arxiv.org/abs/2611.01234"]})
    assert failed.status_code == status
    assert "requestId" in failed.json()
    if mode == "url_failed":
        assert failed.json()["error"] == "URL failed to fetch"
    assert exa(client, web, "contents", {"ids": ["https://arxiv.org/abs/2611.01234"]}).json()


def test_exa_contents_can_stall_while_search_answers(client):
    slept: list[float] = []
    with FakeWeb(sleep=slept.append) as web:
        web.set_mode("exa", "slow", seconds=30, endpoint="contents")
        assert exa(client, web, "search", {"query": "lattice qcd"}).status_code == 200
        contents = {"ids": ["https://arxiv.org/abs/2611.01234"]}
        assert exa(client, web, "contents", contents).status_code == 200
        assert [(r.endpoint, r.paused) for r in web.requests] == [
            ("search", 0),
            ("contents", 30),
        ]
        assert slept == [30]


def test_brave_errors_in_the_reference_array_form(client, web):
    web.set_mode("brave", "normal", form="array")
    bad = brave(client, web, q="sqlite", headers={"X-Subscription-Token": "nope"})
    body = bad.json()
    assert list(body) == ["type", "errors", "time"]
    [error] = body["errors"]
    assert (bad.status_code, error["code"]) == (422, "SUBSCRIPTION_TOKEN_INVALID")
    assert brave(client, web, q="sqlite").status_code == 200

    web.set_mode("brave", "rate_limited", form="array", times=1)
    assert brave(client, web, q="sqlite").json()["errors"][0]["code"] == "RATE_LIMITED"
    assert "error" in brave(client, web, headers={}).json()


def test_brave_plan_refusing_llm_context_with_403(client, web):
    web.set_mode("brave", "not_in_plan", code="RESOURCE_NOT_ALLOWED")
    refused = brave(client, web, "llm/context", q="sqlite")
    error = brave_error(refused)
    assert (refused.status_code, error["code"]) == (403, "RESOURCE_NOT_ALLOWED")
    assert error["detail"] == "The user is not authorized to access this resource."
    assert error["meta"] == {"component": "api"}
    assert brave(client, web, q="sqlite").status_code == 200
    web.set_mode("brave", "not_in_plan", code="OPTION_NOT_IN_PLAN", form="array")
    listed = brave(client, web, "llm/context", q="sqlite")
    assert (listed.status_code, listed.json()["errors"][0]["code"]) == (400, "OPTION_NOT_IN_PLAN")


def test_new_mode_options_are_checked(web):
    with pytest.raises(ValueError, match="unknown options"):
        web.set_mode("brave", "slow", endpoint="contents")
    with pytest.raises(ValueError, match="unknown options"):
        web.set_mode("exa", "url_failed", endpoint="search")
    with pytest.raises(ValueError, match="bad value"):
        web.set_mode("brave", "normal", form="list")
    with pytest.raises(ValueError, match="bad value"):
        web.set_mode("brave", "not_in_plan", code="FORBIDDEN")
    with pytest.raises(ValueError, match="bad value"):
        web.set_mode("exa", "slow", endpoint="answer")


# --- Request log and control ----------------------------------------------------------------


def test_request_log_and_redaction(client, web):
    brave(client, web, "llm/context", q="sqlite fts5", count="5")
    exa(client, web, "search", {"query": "tokio"}, headers={"Authorization": "Bearer test-exa-key"})
    log = web.requests
    assert [(r.provider, r.endpoint, r.method) for r in log] == [
        ("brave", "llm/context", "GET"),
        ("exa", "search", "POST"),
    ]
    assert log[0].query == {"q": ["sqlite fts5"], "count": ["5"]}
    assert log[0].headers["x-subscription-token"] == "test-brave-key"
    assert log[0].json is None
    assert log[1].json == {"query": "tokio"}
    assert log[0].status == log[1].status == 200
    assert log[0].at <= log[1].at

    exported = client.get(f"{web.url}/__fake/requests").json()
    assert exported[0]["headers"]["x-subscription-token"] == "***"
    assert exported[1]["headers"]["authorization"] == "***"
    assert exported[0]["path"] == "/brave/res/v1/llm/context"
    assert len(web.requests) == 2


def test_http_control_endpoints(client, web):
    switched = client.post(
        f"{web.url}/__fake/mode", json={"provider": "exa", "mode": "no_credits", "times": 1}
    )
    assert switched.json()["ok"] is True
    assert exa(client, web, "search", {"query": "sqlite"}).status_code == 402
    assert exa(client, web, "search", {"query": "sqlite"}).status_code == 200
    bad = client.post(f"{web.url}/__fake/mode", json={"provider": "exa", "mode": "quota_limited"})
    assert bad.status_code == 400
    assert "does not apply" in bad.json()["error"]
    client.post(f"{web.url}/__fake/mode", json={"provider": "searxng", "mode": "server_error"})
    assert client.post(f"{web.url}/__fake/reset").json() == {"ok": True}
    assert web.requests == []
    assert searxng(client, web, q="sqlite", format="json").status_code == 200


def test_wrong_paths_and_methods(client, web):
    assert client.get(f"{web.exa_base_url}/search").status_code == 405
    assert client.get(f"{web.url}/brave/res/v1/images/search", headers=BRAVE).status_code == 404
    assert client.get(f"{web.url}/__fake/nothing").status_code == 404
    form = client.post(
        f"{web.searxng_base_url}/search", data={"q": "tokio", "format": "json"}, headers=SEARXNG
    )
    assert form.json()["results"]
    assert [r.provider for r in web.requests] == ["exa", "brave", "searxng"]


def test_set_mode_rejects_typos(web):
    with pytest.raises(ValueError, match="unknown provider"):
        web.set_mode("google", "normal")
    with pytest.raises(ValueError, match="does not apply"):
        web.set_mode("searxng", "not_in_plan")
    with pytest.raises(ValueError, match="unknown options"):
        web.set_mode("brave", "rate_limited", reset=3)
    with pytest.raises(ValueError, match="bad value"):
        web.set_mode("brave", "slow", times=0)


def test_gzip_when_the_client_accepts_it(client, web):
    response = brave(client, web, q="sqlite fts5 bm25")
    assert response.headers["content-encoding"] == "gzip"
    assert response.json()["web"]["results"]


# --- Corpus ---------------------------------------------------------------------------------


def test_corpus_duplicates_normalize_to_demo_brain_urls(tmp_path: Path):
    from datasette_dbrain_websearch.demo import build_demo_brain

    brain = tmp_path / "demo.db"
    build_demo_brain(str(brain), overwrite=True)
    with sqlite3.connect(brain) as conn:
        held = {row[0] for row in conn.execute("select canonical_url from sources")}
    duplicates = [page for page in PAGES if page.duplicates]
    assert len(duplicates) >= 6
    for page in duplicates:
        assert page.duplicates in held, page.duplicates
        normalized = try_normalize_url(page.url)
        assert normalized is not None and normalized.canonical_url == page.duplicates
    assert len({page.url for page in PAGES}) == len(PAGES)


def test_hostile_pages_come_back_raw(client, web):
    results = brave(client, web, q="datasette plugin hooks", count="20").json()["web"]["results"]
    urls = [r["url"] for r in results]
    assert any(url.startswith("javascript:") for url in urls)
    assert any("<img src=x onerror=alert(1)>" in r["description"] for r in results)
    scripted = exa(client, web, "search", {"query": "fts5 ranking tricks"}).json()
    assert scripted["results"][0]["title"].startswith("<script>")
    long_titles = searxng(client, web, q="kubernetes networking guide", format="json").json()
    assert max(len(r["title"]) for r in long_titles["results"]) > 300


# --- Command line ---------------------------------------------------------------------------


def test_command_line_server_starts_and_answers():
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "datasette_dbrain_websearch.demo.fakeweb",
            "--port",
            "0",
            "--exa-key",
            "k",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        match = re.fullmatch(r"fakeweb listening on (http://127\.0\.0\.1:\d+)", line)
        assert match, line
        url = match.group(1)
        found = httpx.post(f"{url}/exa/search", json={"query": "tokio"}, headers={"x-api-key": "k"})
        assert found.status_code == 200
        assert found.json()["results"]
    finally:
        process.terminate()
        process.wait(timeout=60)  # a guard against a hang
    assert process.returncode == 0


# --- The page reader ---------------------------------------------------------------------------


def test_the_reader_serves_a_corpus_page_as_html_and_404s_the_rest(client, web):
    page = next(p for p in PAGES if p.url == "https://www.sqlite.org/fts5.html")
    response = client.get(f"{web.url}/reader/https://sqlite.org/fts5.html/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert f"<title>{page.title}</title>" in response.text
    first = page.text.split("\n\n")[0].strip()
    assert f"<p>{first}</p>".replace("'", "&#x27;") in response.text
    missing = client.get(f"{web.url}/reader/https://nowhere.example/page")
    assert missing.status_code == 404
    assert [(r.provider, r.status) for r in web.requests] == [("reader", 200), ("reader", 404)]
