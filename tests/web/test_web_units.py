"""Pure pieces of the web stage: parsing, rate-limit waits, policy, merge, config."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from datasette_dbrain_websearch.config import Settings, literal_secrets
from datasette_dbrain_websearch.config_keys import ConfigError
from datasette_dbrain_websearch.evidence import web_key
from datasette_dbrain_websearch.merge import DomainPolicy, merge_web
from datasette_dbrain_websearch.pack_rows import reading_order
from datasette_dbrain_websearch.providers.base import (
    SearchRequest,
    WebResult,
    plain_text,
    redact,
    with_site_operators,
)
from datasette_dbrain_websearch.providers.brave import (
    MAX_QUERY_CHARS,
    MAX_QUERY_WORDS,
    BraveProvider,
    error_object,
    parse_llm_context,
    parse_web_search,
    rate_limit_reset,
)
from datasette_dbrain_websearch.providers.exa import identified_results, published_window
from datasette_dbrain_websearch.providers.searxng import accept_language, published_at
from datasette_dbrain_websearch.query_plan import plan_query
from datasette_dbrain_websearch.urls import site_domain
from datasette_dbrain_websearch.web import web_query
from datasette_dbrain_websearch.web_gate import Decision, decide, is_current_state
from datasette_dbrain_websearch.web_hits import normalize_hits

from ..helpers import typed_brain_row, typed_web_row

ENABLED = Settings.from_config({"external_search": {"enabled": True}}).web


def test_plain_text_strips_markup_and_entities():
    assert plain_text("A <strong>fast</strong> &amp; small") == "A fast & small"
    assert plain_text(None) == ""


def test_brave_llm_context_tolerates_missing_pieces():
    body = {
        "grounding": {
            "generic": [
                {"url": "https://a.example/x", "title": "A", "snippets": ["one", '{"t": 1}']},
                {"url": "https://b.example/y", "title": "B", "snippets": []},
                {"title": "no url"},
            ],
            "map": [],
        },
        "sources": {
            "https://a.example/x": {"hostname": "a.example", "age": ["Mon", "2026-11-02", "1 day"]}
        },
    }
    a, b = parse_llm_context(body)
    assert (a.rank, a.snippet, a.published_at, a.domain) == (1, "one", "2026-11-02", "a.example")
    assert a.highlights == ("one", '{"t": 1}')
    assert (b.rank, b.snippet, b.published_at) == (2, "", "")
    assert parse_llm_context({"unexpected": True}) == []
    assert parse_llm_context(None) == []


def test_brave_web_search_strips_strong_and_uses_extra_snippets():
    body = {
        "type": "search",
        "web": {
            "results": [
                {
                    "url": "https://c.example/z",
                    "title": "C &amp; D",
                    "description": "A <strong>ratio</strong> of 1:1",
                    "page_age": "2025-03-02T09:15:00",
                    "meta_url": {"hostname": "c.example"},
                    "extra_snippets": ["more <b>text</b>"],
                }
            ]
        },
    }
    (r,) = parse_web_search(body)
    assert (r.title, r.snippet, r.highlights) == ("C & D", "A ratio of 1:1", ("more text",))
    assert parse_web_search({"type": "search"}) == []


def test_brave_error_object_reads_both_forms():
    live = {"type": "ErrorResponse", "error": {"code": "RATE_LIMITED", "detail": "x"}}
    listed = {"type": "ErrorResponse", "errors": [{"code": "RATE_LIMITED"}, {"code": "OTHER"}]}
    assert error_object(live)["code"] == error_object(listed)["code"] == "RATE_LIMITED"
    for odd in (None, "text", {"errors": []}, {"errors": ["x"]}, {"error": "x"}):
        assert error_object(odd) == {}


@pytest.mark.parametrize("code", ["OPTION_NOT_IN_PLAN", "RESOURCE_NOT_ALLOWED"])
def test_brave_plan_refusals_are_not_auth_failures(code):
    body = {"errors": [{"code": code, "detail": "Not in plan", "status": 403}]}
    error = BraveProvider().http_error(403, body, {})
    assert error.code == "provider_not_in_plan"
    assert "Not in plan" in error.message


def test_exa_results_carry_their_id():
    body = {
        "results": [
            {"id": "doc-1", "url": "https://a.example/pdf", "text": "t"},
            {"url": "https://b.example/"},
            {"id": "no-url"},
        ]
    }
    assert [(i, r.url) for i, r in identified_results(body)] == [
        ("doc-1", "https://a.example/pdf"),
        ("https://b.example/", "https://b.example/"),
    ]
    assert identified_results(None) == []


@pytest.mark.parametrize(
    "item, expected",
    [
        (
            {"pubdate": "2023-06-05 10:00:00+0200", "publishedDate": "Jun 5, 2023"},
            "2023-06-05T08:00:00Z",
        ),
        ({"pubdate": "2023-06-05 10:00:00", "publishedDate": "Jun 5, 2023"}, "2023-06-05T10:00:00"),
        ({"publishedDate": "2026-11-29T10:00:00+00:00"}, "2026-11-29T10:00:00Z"),
        ({"publishedDate": "2026-11-29T10:00:00.250000"}, "2026-11-29T10:00:00"),
        ({"pubdate": "not a date", "publishedDate": "2026-11-29T10:00:00"}, "2026-11-29T10:00:00"),
        ({"publishedDate": "2 hour(s), 3 minute(s) ago"}, ""),
        ({"publishedDate": "Jun 5, 2023"}, ""),
        ({"publishedDate": "20230605"}, ""),
        ({"publishedDate": None, "pubdate": None}, ""),
        ({}, ""),
    ],
)
def test_searxng_dates_from_either_era(item, expected):
    assert published_at(item) == expected


def test_searxng_accept_language():
    assert accept_language("") == accept_language("auto") == "en-US,en;q=0.9"
    assert accept_language("all") == "en-US,en;q=0.9"
    assert accept_language("de") == "de,en;q=0.5"
    assert accept_language("pt-BR") == "pt-BR,pt;q=0.9,en;q=0.5"
    assert accept_language("en") == "en"


def test_brave_rate_limit_reset_uses_the_exhausted_window():
    assert (
        rate_limit_reset(
            {
                "x-ratelimit-remaining": "0, 900",
                "x-ratelimit-reset": "1, 86400",
                "x-ratelimit-limit": "1, 2000",
            }
        )
        == 1.0
    )
    assert (
        rate_limit_reset(
            {
                "x-ratelimit-remaining": "5, 0",
                "x-ratelimit-reset": "1, 86400",
                "x-ratelimit-limit": "50, 2000",
            }
        )
        == 86400.0
    )
    # pay-as-you-go: a monthly limit and remaining of 0 mean uncapped, not exhausted
    assert (
        rate_limit_reset(
            {
                "x-ratelimit-remaining": "0, 0",
                "x-ratelimit-reset": "2, 99",
                "x-ratelimit-limit": "50, 0",
            }
        )
        == 2.0
    )
    assert rate_limit_reset({}) is None
    assert rate_limit_reset({"x-ratelimit-reset": "soon"}) is None


def brave_query(query: str, include=(), exclude=()) -> str | None:
    request = SearchRequest(query, include_domains=include, exclude_domains=exclude)
    return with_site_operators(query, request, MAX_QUERY_CHARS, MAX_QUERY_WORDS)


def test_brave_query_limits():
    assert brave_query(" ".join(["w"] * 60)) == " ".join(["w"] * 50)
    long_words = " ".join(["abcdefghij"] * 45)
    assert len(brave_query(long_words)) <= 400


def test_sites_become_operators_and_the_question_makes_room_for_them():
    query = brave_query(
        " ".join(["word"] * 60), include=("a.example", "b.example"), exclude=("c.example",)
    )
    assert query.endswith(" site:a.example OR site:b.example -site:c.example")
    assert len(query.split()) == 50 and len(query) <= 400
    assert query.startswith("word word")
    many = tuple(f"site{i}.example" for i in range(30))
    assert brave_query("heat pump", include=many) is None  # left to the filter afterwards
    assert brave_query("heat pump", exclude=("c.example",)) == "heat pump -site:c.example"


def test_exa_published_window():
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    assert published_window("pw", now) == {"startPublishedDate": "2026-11-23T12:00:00.000Z"}
    assert published_window("2026-01-01to2026-02-01") == {
        "startPublishedDate": "2026-01-01T00:00:00.000Z",
        "endPublishedDate": "2026-02-01T23:59:59.999Z",
    }
    assert published_window("") == {}


def test_redact_replaces_every_secret():
    assert redact("key abc123 and abc123x", ["abc123", ""]) == "key *** and ***x"
    assert redact("KEY ABC123, Abc123", ["abc123"]) == "KEY ***, ***"
    assert redact("?k=a%2Fb%2Bc and a%2fb+c and a/b c", ["a/b+c", "a/b c"]) == (
        "?k=*** and *** and ***"
    )
    assert redact("abc1234", ["abc123", "abc1234"]) == "***"  # the longer key, whole


@pytest.mark.parametrize(
    "mode, enabled, permitted, verdict, expected",
    [
        ("never", True, True, "no_evidence", Decision(False, "mode_never")),
        ("always", True, True, "enough_evidence", Decision(True)),
        ("on_weak", True, True, "weak_evidence", Decision(True)),
        ("on_weak", True, True, "no_evidence", Decision(True)),
        ("on_weak", True, True, "enough_evidence", Decision(False, "local_evidence_enough")),
    ],
)
def test_decide_follows_mode_and_verdict(mode, enabled, permitted, verdict, expected):
    assert decide(mode, ENABLED, permitted, verdict) == expected


def test_decide_names_why_it_refused():
    disabled = decide("always", Settings().web, True, "no_evidence")
    assert (disabled.run, disabled.warning["code"]) == (False, "external_search_disabled")
    denied = decide("always", ENABLED, False, "no_evidence")
    assert (denied.run, denied.warning["code"]) == (False, "external_search_not_permitted")


def test_current_state_questions():
    assert is_current_state("latest tokio release")
    assert is_current_state("what is the price as of now?")
    assert not is_current_state("tokio scheduler design")


def test_web_query_is_keywords_within_brave_limits():
    assert web_query(plan_query("What is the latest tokio release?")) == "latest tokio release"
    assert len(web_query(plan_query(" ".join(f"word{i}" for i in range(80))))) <= 400


def hit_list(provider, urls):
    results = [WebResult(url=u, title=f"t{i}", rank=i + 1) for i, u in enumerate(urls)]
    hits, rejected, *_ = normalize_hits(provider, results, cached=False)
    return hits, rejected


def test_normalize_hits_drops_urls_dbrain_refuses():
    hits, rejected = hit_list(
        "brave", ["javascript:alert(1)", "https://t.co/x", "http://www.Example.com/a/?utm_source=z"]
    )
    assert rejected == 2
    assert [h.url.canonical_url for h in hits] == ["https://example.com/a"]


def test_merge_collapses_merges_filters_and_budgets():
    brave, _ = hit_list(
        "brave",
        [
            "https://www.sqlite.org/fts5.html",
            "https://a.example/1",
            "https://spam.example/x",
            "https://b.example/2",
        ],
    )
    exa, _ = hit_list("exa", ["https://b.example/2", "https://c.example/3"])
    outcome = merge_web(
        brave + exa,
        brain_urls={"https://sqlite.org/fts5.html"},
        policy=DomainPolicy(block=("spam.example",)),
        budget=2,
    )
    assert list(outcome.collapsed) == ["https://sqlite.org/fts5.html"]
    assert outcome.dropped_by_domain == 1
    assert [r.canonical_url for r in outcome.rows] == ["https://b.example/2", "https://a.example/1"]
    assert outcome.rows[0].providers == ["brave", "exa"]
    decisions = [d["decision"] for d in outcome.decisions]
    assert decisions.count("dropped_by_budget") == 1
    assert "merged_across_providers" in decisions and "collapsed_onto_local_source" in decisions


def test_an_ipv6_result_keeps_its_brackets_and_collapses_onto_dbrains_row():
    urls = ["http://[::1]:9101/secret", "http://[2606:4700::1111]/a", "http://[2a00:1450::7]/b"]
    results = [WebResult(url=u, title=f"t{i}", rank=i + 1) for i, u in enumerate(urls)]
    hits, rejected, not_public = normalize_hits("brave", results, cached=False)
    assert rejected == 0
    assert [(d["url"], d["host"]) for d in not_public] == [("http://[::1]:9101/secret", "::1")]
    assert [h.url.canonical_url for h in hits] == urls[1:]
    # dbrain stored the first page under its bracket-less normalized_url
    outcome = merge_web(hits, {"http://2606:4700::1111/a"}, DomainPolicy(), 10)
    assert list(outcome.collapsed) == ["http://2606:4700::1111/a"]
    assert [r.canonical_url for r in outcome.rows] == ["http://[2a00:1450::7]/b"]


def test_allow_domains_keep_only_listed_domains_and_subdomains():
    hits, _ = hit_list(
        "brave",
        ["https://docs.python.org/3/", "https://python.org/x", "https://evil.example/python.org"],
    )
    outcome = merge_web(hits, set(), DomainPolicy(allow=("python.org",)), 10)
    assert [r.domain for r in outcome.rows] == ["docs.python.org", "python.org"]


def test_a_questions_sites_narrow_the_configs_lists_and_every_drop_names_its_rule():
    policy = DomainPolicy(
        allow=("python.org", "sqlite.org"),
        block=("spam.python.org",),
        sites=("docs.python.org", "evil.example"),
        not_sites=("old.docs.python.org",),
    )
    assert policy.refused_sites == ("evil.example",)  # outside the config's allow-list
    assert policy.include == ("docs.python.org",)
    assert policy.exclude == ("spam.python.org", "old.docs.python.org")
    assert [
        policy.rule_for(d)
        for d in (
            "docs.python.org",
            "x.docs.python.org",
            "old.docs.python.org",
            "spam.python.org",
            "python.org",
            "evil.example",
        )
    ] == ["", "", "not_site", "block_domains", "site", "site"]
    assert DomainPolicy(allow=("python.org",)).rule_for("sqlite.org") == "allow_domains"
    assert DomainPolicy(allow=("python.org",), sites=("evil.example",)).nothing_allowed
    assert not DomainPolicy(sites=("evil.example",)).nothing_allowed
    assert DomainPolicy(not_sites=("a.example",)).include == ()


@pytest.mark.parametrize(
    "value, domain",
    [
        ("example.com", "example.com"),
        ("https://www.Example.com/path?x=1", "example.com"),
        ("*.docs.example.org", "docs.example.org"),
        ("site:m.example.com", "example.com"),
        ("zürich-kaffee.ch", "zürich-kaffee.ch"),
        ("user@evil.example:8080/x", "evil.example"),
        ("localhost", ""),
        ("ex ample.com", ""),
        ("a..b", ""),
        ("-bad.com", ""),
        ("", ""),
    ],
)
def test_site_filters_name_domains_as_web_rows_write_them(value, domain):
    assert site_domain(value) == domain


def test_web_key_formula():
    import hashlib

    url = "https://example.com/a"
    assert web_key("brave", url) == "ext:brave:" + hashlib.sha256(url.encode()).hexdigest()[:12]


def test_reading_order_puts_web_after_local_unless_current_state():
    local = [
        typed_brain_row("exact", exact=True),
        typed_brain_row("strong"),
        typed_brain_row("weak", missing=["x"]),
    ]
    web = [typed_web_row("ext:brave:1")]
    normal = [r.source_key for r in reading_order(local, web, current_state=False)]
    assert normal == ["exact", "strong", "weak", "ext:brave:1"]
    current = [r.source_key for r in reading_order(local, web, current_state=True)]
    assert current == ["exact", "strong", "ext:brave:1", "weak"]


def test_external_config_validation():
    ext = Settings.from_config(
        {
            "external_search": {
                "enabled": True,
                "providers": ["exa", "brave"],
                "count": 7,
                "brave": {"api_key": "k1", "endpoint": "web_search"},
            }
        }
    ).web
    assert (ext.providers, ext.count, ext.secrets()) == (("exa", "brave"), 7, ["k1"])
    assert "k1" not in repr(ext)
    for bad, fragment in [
        ({"default_mode": "sometimes"}, "'external_search.default_mode' must be one of"),
        ({"count": 11}, "'external_search.count' must be an integer from 1 to 10"),
        ({"max_count": 3, "count": 5}, "'external_search.count' must be an integer from 1 to 3"),
        ({"freshness": "yesterday"}, "'external_search.freshness' must be pd"),
        ({"timeout": 0}, "'external_search.timeout' must be a number"),
        ({"enabled": "yes"}, "'external_search.enabled' must be true or false"),
        ({"providerz": 1}, "unknown config key(s) providerz in 'external_search'"),
    ]:
        with pytest.raises(ConfigError) as info:
            Settings.from_config({"external_search": bad})
        assert fragment in str(info.value)


def test_literal_secrets_are_found_but_env_values_are_not():
    raw = {"external_search": {"brave": {"api_key": "plain"}, "exa": {"api_key": {"$env": "X"}}}}
    assert literal_secrets(raw) == ["external_search.brave.api_key"]


async def test_parallel_results_keep_the_configured_provider_order():
    import asyncio

    from datasette_dbrain_websearch.providers import Provider
    from datasette_dbrain_websearch.web import WebStage
    from datasette_dbrain_websearch.web_gate import WebRequest

    class Timed(Provider):
        def __init__(self, name, delay):
            self.name, self.label, self.delay = name, name.title(), delay

        async def search(self, request, ctx):
            await asyncio.sleep(self.delay)
            return [WebResult(url="https://same.example/page", title=self.name, rank=1)]

    settings = Settings.from_config(
        {"external_search": {"enabled": True, "providers": ["slow", "fast"], "cache_ttl": 0}}
    ).web
    providers = {"slow": Timed("slow", 0.05), "fast": Timed("fast", 0.0)}
    stage = WebStage(settings, providers, None)
    outcome = await stage.run(WebRequest("always", ("all",)), plan_query("same page"))
    # "fast" answered first, but "slow" is configured first: it leads everywhere.
    assert [h.provider for h in outcome.hits] == ["slow", "fast"]
    assert outcome.providers_answered == ["slow", "fast"]
    assert [q["provider"] for q in outcome.queries] == ["slow", "fast"]


def test_a_missing_key_names_the_variable_the_readme_uses():
    from datasette_dbrain_websearch.providers.brave import BraveProvider
    from datasette_dbrain_websearch.providers.exa import ExaProvider

    assert '"$env": "BRAVE_SEARCH_API_KEY"' in BraveProvider().unavailable_reason({})
    assert '"$env": "EXA_API_KEY"' in ExaProvider().unavailable_reason({})
