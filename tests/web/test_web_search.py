"""Web search end to end: the research API over a real fake provider server on loopback."""

from __future__ import annotations

import json
import re
import socket

import pytest
from click.testing import CliRunner
from datasette.cli import cli
from datasette.utils import StartupError

from datasette_dbrain_websearch.providers import Provider, WebResult
from datasette_dbrain_websearch.web import WebStage

from ..helpers import (
    BRAVE_KEY,
    DATASETTE_1,
    EXA_KEY,
    actor_cookies,
    ask,
    make_datasette,
    provider_requests,
    registered,
    web_config,
    web_ds,
)
from .stand_ins import Clock


def codes(pack):
    """The pack's warnings but the semantic lane's (a brain without an index warns of it)."""
    return [w["code"] for w in pack["warnings"] if not w["code"].startswith("semantic_")]


async def test_default_mode_never_calls_no_provider(brain, fake):
    ds = await web_ds(brain, fake)
    status, pack = await ask(ds, q="quantum chromodynamics lattice")
    assert status == 200
    assert pack["external_search"] == {
        "mode": "never",
        "requested": False,
        "ran": False,
        "providers": [],
        "skipped_reason": "mode_never",
        "current_state_question": False,
        "sites": [],
        "not_sites": [],
    }
    assert pack["external_evidence"] == []
    assert provider_requests(fake) == []


async def test_always_searches_brave_and_badges_rows(brain, fake):
    ds = await web_ds(brain, fake)
    status, pack = await ask(ds, q="quantum chromodynamics lattice", external="always")
    assert status == 200
    assert pack["external_search"]["ran"] is True
    assert pack["external_search"]["providers"] == ["brave"]
    (request,) = provider_requests(fake)
    assert request.endpoint == "llm/context"
    assert request.query["q"] == ["quantum chromodynamics lattice"]
    rows = pack["external_evidence"]
    assert 1 <= len(rows) <= 5
    for row in rows:
        assert row["kind"] == "external" and row["source_type"] == "external_web"
        assert row["origin"] == "outside_dbrain_corpus" and row["store"] == "ephemeral"
        assert row["source_key"].startswith("ext:brave:") and len(row["source_key"]) == 22
        assert row["providers"] == ["brave"]
        (lane,) = row["retrieval"]["lanes"]
        assert lane == {
            "name": "external_search",
            "status": "used",
            "provider": "brave",
            "store": "ephemeral",
            "rank": lane["rank"],
            "cached": False,
        }
        assert row["canonical_url"].startswith("https://")
        assert "<strong>" not in row["excerpt"]
    (query,) = pack["query_plan"]["external_queries"]
    assert query["provider"] == "brave" and query["query"] == "quantum chromodynamics lattice"
    assert pack["coverage"]["external_evidence_count"] == len(rows)
    assert pack["coverage"]["external_by_provider"] == [{"key": "brave", "count": len(rows)}]
    assert all(e["origin"] == "outside_dbrain_corpus" for e in pack["ranking"])
    assert pack["evidence"] == []
    assert pack["judge"]["verdict"] == "no_evidence"
    assert "web search found" in pack["judge"]["message"]


async def test_the_verdict_has_the_brains_part_the_webs_and_one_for_both(brain, fake):
    """Issue 18: "no evidence" above web rows that answer contradicts the screen. The brain's
    verdict stays (dbrain's judge); the web's rows are judged alone; the combined verdict over
    every row is what the banner, the answer and the agent tools say."""
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="quantum chromodynamics lattice", external="always")
    judge = pack["judge"]
    assert judge["verdict"] == "no_evidence"
    rows = len(pack["external_evidence"])
    web_missing = judge["web"]["missing_terms"]
    assert judge["web"]["searched"] is True and judge["web"]["verdict"] != ""
    terms = set(pack["query_plan"]["query_terms"])
    whole = sum(
        1 for r in pack["external_evidence"] if terms <= set(r["retrieval"]["matched_terms"])
    )
    assert 0 < whole < rows
    # Issue 41: the web's rows answer the question, and the summary says which row does.
    answering = judge["web"]["verdict"] == "enough_evidence"
    assert answering and not web_missing
    assert judge["web"]["summary"] == f"{rows} rows; [W1] is about it."
    assert judge["combined"]["verdict"] == judge["web"]["verdict"]  # no brain rows: the web's
    assert (
        judge["combined"]["message"]
        == f"Your brain: no evidence \u00b7 Web: {judge['web']['summary']}"
    )
    response = await ds.client.get(
        "/-/research",
        params={"q": "quantum chromodynamics lattice", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    banner = response.text.split('class="dbrain-verdict dbrain-verdict-')[1].split("</div>")[0]
    assert banner.startswith(judge["combined"]["verdict"])
    assert "Your brain: no evidence \u00b7 Web:" in banner
    assert ("Nothing in the top rows mentions" in banner) == bool(web_missing)

    _, local_only = await ask(ds, q="espresso grinder")
    assert local_only["judge"]["web"] == {
        "searched": False,
        "verdict": "",
        "reason": "not_searched",
        "summary": "not searched",
        "missing_terms": [],
    }
    assert local_only["judge"]["combined"] == {
        k: local_only["judge"][k] for k in ("verdict", "reason", "message")
    }


async def test_on_weak_skips_the_web_when_local_evidence_is_enough(brain, fake):
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="espresso grinder", external="on_weak")
    assert pack["judge"]["verdict"] == "enough_evidence"
    assert pack["external_search"]["skipped_reason"] == "local_evidence_enough"
    assert provider_requests(fake) == []
    _, pack = await ask(ds, q="lattice chromodynamics", external="on_weak")
    assert pack["judge"]["verdict"] == "no_evidence"
    assert pack["external_search"]["ran"] is True
    assert len(provider_requests(fake)) == 1


async def test_default_mode_from_config(brain, fake):
    ds = await web_ds(brain, fake, default_mode="always")
    _, pack = await ask(ds, q="lattice chromodynamics")
    assert pack["external_search"]["mode"] == "always" and pack["external_search"]["ran"]


async def test_disabled_config_never_calls_out(brain, fake):
    ds = await web_ds(brain, fake, enabled=False)
    _, pack = await ask(ds, q="espresso", external="always")
    assert codes(pack) == ["external_search_disabled"]
    assert pack["external_search"]["skipped_reason"] == "disabled"
    assert len(pack["evidence"]) > 0
    assert provider_requests(fake) == []


@pytest.mark.parametrize("actor", [None, "mallory"])
async def test_actor_without_permission_gets_local_results_and_a_warning(brain, fake, actor):
    ds = await web_ds(brain, fake)
    status, pack = await ask(ds, actor=actor, q="espresso", external="always")
    assert status == 200
    assert codes(pack) == ["external_search_not_permitted"]
    assert pack["external_search"]["skipped_reason"] == "not_permitted"
    assert len(pack["evidence"]) > 0
    assert provider_requests(fake) == []


async def test_allow_block_grants_other_actors(brain, fake):
    ds = await web_ds(brain, fake, allow={"id": ["root", "alice"]})
    _, pack = await ask(ds, actor="alice", q="lattice", external="always")
    assert pack["external_search"]["ran"] is True


async def test_web_hit_for_a_page_in_the_brain_collapses_onto_the_local_row(brain, fake):
    _, ids = brain
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="sqlite fts5 bm25 ranking", external="always")
    assert pack["external_search"]["ran"]
    assert all("sqlite.org/fts5" not in r["canonical_url"] for r in pack["external_evidence"])
    local = next(r for r in pack["evidence"] if r["source_key"] == ids["src_fts5_key"])
    assert local["origin"] == "dbrain_corpus"
    assert local["also_found_by"] == ["brave"]
    lane = local["retrieval"]["lanes"][-1]
    assert (lane["name"], lane["provider"], lane["store"]) == ("external_search", "brave", "local")
    signal = local["retrieval"]["signals"][-1]
    assert signal["name"] == "external_duplicate_local_source"
    assert signal["detail"].startswith("also found by Brave")
    decisions = [d["decision"] for d in pack["merge_decisions"]]
    assert "collapsed_onto_local_source" in decisions


async def test_provider_all_merges_the_same_page_into_one_row(brain, fake):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    _, pack = await ask(ds, q="lattice qcd", external="always", provider="all")
    assert pack["external_search"]["providers"] == ["brave", "exa"] or sorted(
        pack["external_search"]["providers"]
    ) == ["brave", "exa"]
    assert {r.provider for r in provider_requests(fake)} == {"brave", "exa"}
    both = [r for r in pack["external_evidence"] if len(r["providers"]) == 2]
    assert both, "the fake corpus returns shared pages from both providers"
    lanes = both[0]["retrieval"]["lanes"]
    assert sorted(lane["provider"] for lane in lanes) == ["brave", "exa"]
    urls = [r["canonical_url"] for r in pack["external_evidence"]]
    assert len(urls) == len(set(urls))


async def test_fallback_to_the_next_provider_on_failure(brain, fake):
    fake.set_mode("brave", "server_error")
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    _, pack = await ask(ds, q="lattice qcd", external="always")
    assert codes(pack) == ["provider_failed", "provider_fallback"]
    assert pack["warnings"][0]["provider"] == "brave"
    assert {r["providers"][0] for r in pack["external_evidence"]} == {"exa"}


async def test_invalid_key_is_named(brain, fake, monkeypatch):
    monkeypatch.setenv("TEST_BRAVE_KEY", "brave-WRONG-key")
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="espresso grinder", external="always")
    (warning,) = pack["warnings"]
    assert warning["code"] == "provider_auth_failed" and warning["provider"] == "brave"
    assert "external_search.brave.api_key" in warning["message"]
    assert "brave-WRONG-key" not in json.dumps(pack)
    assert len(pack["evidence"]) == 2


async def test_exa_invalid_key(brain, fake, monkeypatch):
    monkeypatch.setenv("TEST_EXA_KEY", "exa-WRONG")
    ds = await web_ds(brain, fake, providers=["exa"])
    _, pack = await ask(ds, q="lattice", external="always")
    assert codes(pack) == ["provider_auth_failed"]
    assert "external_search.exa.api_key" in pack["warnings"][0]["message"]


@pytest.fixture
def pauses(monkeypatch) -> list[float]:
    """The waits the web stage makes before retrying, recorded instead of spent."""
    waited: list[float] = []

    async def pause(seconds: float) -> None:
        waited.append(seconds)

    monkeypatch.setattr(WebStage, "pause", staticmethod(pause))
    return waited


async def test_rate_limit_is_retried_once_when_the_reset_fits(brain, fake, pauses):
    fake.set_mode("brave", "rate_limited", reset_seconds=1, times=1)
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="lattice qcd", external="always")
    assert pauses == [1]  # the reset Brave named, waited once
    assert codes(pack) == ["provider_rate_limited"]
    assert "Retrying once" in pack["warnings"][0]["message"]
    assert len(provider_requests(fake)) == 2
    assert pack["external_evidence"]


async def test_rate_limit_beyond_the_budget_is_reported(brain, fake, pauses):
    fake.set_mode("brave", "rate_limited", reset_seconds=60)
    # A stage long enough for Brave's answer on a busy machine, yet short of its 60 s reset.
    ds = await web_ds(brain, fake, timeout=30)
    _, pack = await ask(ds, q="espresso", external="always")
    assert pauses == []  # 60 s does not fit the 30 s stage: no wait, no retry
    assert codes(pack) == ["provider_rate_limited"]
    assert len(provider_requests(fake)) == 1
    assert pack["external_evidence"] == [] and len(pack["evidence"]) > 0


async def test_exa_rate_limit_honours_retry_after(brain, fake, pauses):
    fake.set_mode("exa", "rate_limited", retry_after=1, times=1)
    ds = await web_ds(brain, fake, providers=["exa"])
    _, pack = await ask(ds, q="lattice qcd", external="always")
    assert pauses == [1]
    assert codes(pack) == ["provider_rate_limited"]
    assert pack["external_evidence"]


async def test_stage_timeout_keeps_local_results(brain, fake, monkeypatch):
    """Brave stalls for an hour; the stage's real timer cuts it at 1 s and the fake sees the
    plugin hang up mid-stall. The stage's clock stands still, so Brave is always asked (on a
    busy machine the second could otherwise run out before the request is made)."""
    monkeypatch.setattr(WebStage, "clock", staticmethod(Clock()))
    fake.set_mode("brave", "slow", seconds=3600)
    ds = await web_ds(brain, fake, timeout=1)
    _, pack = await ask(ds, q="espresso grinder", external="always")
    assert codes(pack) == ["provider_timeout"]
    assert len(pack["evidence"]) == 2
    assert fake.wait_for_requests(1) and fake.wait_settled()
    assert [(r.paused, r.cut) for r in provider_requests(fake, "brave")] == [(3600, "client")]


@pytest.mark.parametrize(
    "mode, options, code",
    [
        ("server_error", {}, "provider_failed"),
        ("server_error", {"status": 503}, "provider_failed"),
        ("malformed", {}, "provider_failed"),
        ("huge", {"mb": 6}, "provider_response_too_large"),
    ],
)
async def test_provider_failures_are_named(brain, fake, mode, options, code):
    fake.set_mode("brave", mode, **options)
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="espresso grinder", external="always")
    assert codes(pack) == [code]
    assert pack["warnings"][0]["provider"] == "brave"
    assert len(pack["evidence"]) == 2


async def test_refused_connection(brain, fake):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    ds = await web_ds(brain, fake, brave={"base_url": f"http://127.0.0.1:{closed}/res/v1"})
    _, pack = await ask(ds, q="espresso", external="always")
    assert codes(pack) == ["provider_failed"]
    # The message names where it tried (a demo on another port shows what to fix).
    (warning,) = [w for w in pack["warnings"] if w["code"] == "provider_failed"]
    assert f"Could not reach Brave at 127.0.0.1:{closed}: ConnectError." in warning["message"]


async def test_empty_answer_is_not_an_error(brain, fake):
    fake.set_mode("brave", "empty")
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="lattice", external="always")
    assert codes(pack) == [] and pack["external_evidence"] == []
    assert pack["external_search"]["ran"] is True


async def test_llm_context_not_in_plan_falls_back_to_web_search(brain, fake):
    fake.set_mode("brave", "not_in_plan")
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="lattice qcd", external="always")
    assert [r.endpoint for r in provider_requests(fake)] == ["llm/context", "web/search"]
    assert pack["external_evidence"] and codes(pack) == ["provider_fallback"]


async def test_web_search_endpoint_by_config(brain, fake):
    ds = await web_ds(brain, fake, brave={"endpoint": "web_search"})
    _, pack = await ask(ds, q="lattice qcd", external="always")
    (request,) = provider_requests(fake)
    assert request.endpoint == "web/search" and request.query["extra_snippets"] == ["true"]
    assert pack["external_evidence"]


async def test_searxng(brain, fake):
    ds = await web_ds(brain, fake, providers=["searxng"])
    _, pack = await ask(ds, q="lattice qcd", external="always")
    assert pack["external_search"]["providers"] == ["searxng"]
    assert pack["external_evidence"]
    assert all(r["source_key"].startswith("ext:searxng:") for r in pack["external_evidence"])


async def test_block_domains_reach_brave_as_operators_and_no_row_comes_from_them(brain, fake):
    ds = await web_ds(brain, fake)
    _, first = await ask(ds, q="lattice qcd", external="always")
    blocked = first["external_evidence"][0]["domain"]
    fake.reset()
    ds = await web_ds(brain, fake, block_domains=[blocked])
    _, pack = await ask(ds, q="lattice qcd", external="always")
    (request,) = provider_requests(fake)
    assert request.query["q"] == [f"lattice qcd -site:{blocked}"]
    assert pack["external_evidence"]
    assert all(r["domain"] != blocked for r in pack["external_evidence"])


async def test_external_count_caps_rows(brain, fake):
    ds = await web_ds(brain, fake)
    _, full = await ask(ds, q="lattice qcd", external="always")
    assert len(full["external_evidence"]) == 5
    _, pack = await ask(ds, q="lattice qcd", external="always", external_count="2")
    assert [r["source_key"] for r in pack["external_evidence"]] == [
        r["source_key"] for r in full["external_evidence"][:2]
    ]
    assert provider_requests(fake)[-1].query["maximum_number_of_urls"] == ["2"]


@pytest.mark.parametrize(
    "params, code",
    [
        ({"external": "sometimes"}, "bad_external"),
        ({"external": "always", "provider": "altavista"}, "unknown_provider"),
        ({"external": "always", "freshness": "yesterday"}, "bad_freshness"),
        ({"external": "always", "external_count": "11"}, "bad_external_count"),
    ],
)
async def test_bad_web_parameters_are_400(brain, fake, params, code):
    ds = await web_ds(brain, fake)
    status, body = await ask(ds, q="espresso", **params)
    assert status == 400 and body["code"] == code
    assert provider_requests(fake) == []


async def test_cache_serves_repeat_runs_and_purge_clears_it(brain, fake):
    ds = await web_ds(brain, fake, cache_ttl=3600)
    _, first = await ask(ds, q="lattice qcd", external="always")
    _, second = await ask(ds, q="lattice qcd", external="always")
    assert len(provider_requests(fake)) == 1
    assert {
        lane["cached"] for r in first["external_evidence"] for lane in r["retrieval"]["lanes"]
    } == {False}
    assert {
        lane["cached"] for r in second["external_evidence"] for lane in r["retrieval"]["lanes"]
    } == {True}
    assert second["query_plan"]["external_queries"][0]["cached"] is True
    plugin_db = brain[0].parent / "research_runs.db"
    assert plugin_db.exists()
    result = CliRunner().invoke(cli, ["dbrain-websearch", "purge-cache", str(plugin_db)])
    assert result.exit_code == 0 and "Deleted 1 cached" in result.output
    await ask(ds, q="lattice qcd", external="always")
    assert len(provider_requests(fake)) == 2


async def test_cache_never_touches_the_brain(brain, fake):
    import sqlite3

    ds = await web_ds(brain, fake, cache_ttl=3600)
    await ask(ds, q="lattice qcd", external="always")
    tables = {r[0] for r in sqlite3.connect(brain[0]).execute("select name from sqlite_master")}
    assert not any("cache" in t or "dbrain_websearch" in t for t in tables)


async def test_freshness_is_sent_to_the_provider(brain, fake):
    ds = await web_ds(brain, fake)
    await ask(ds, q="lattice qcd", external="always", freshness="pw")
    (request,) = provider_requests(fake)
    assert request.query["freshness"] == ["pw"]


async def test_current_state_question_gets_a_hint_but_no_web_search(brain, fake):
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="latest espresso grinder")
    assert "current_state_question" in codes(pack)
    assert pack["external_search"]["current_state_question"] is True
    assert provider_requests(fake) == []


async def test_missing_key_disables_only_that_provider(brain, fake, monkeypatch):
    monkeypatch.delenv("TEST_BRAVE_KEY")
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    _, pack = await ask(ds, q="lattice qcd", external="always")
    assert codes(pack) == ["provider_unavailable"]
    assert "external_search.brave.api_key" in pack["warnings"][0]["message"]
    assert pack["external_evidence"] and {r.provider for r in provider_requests(fake)} == {"exa"}


@pytest.mark.skipif(DATASETTE_1, reason="0.65 publishes raw metadata; 1.0 redacts api_key")
async def test_literal_api_key_stops_startup_on_0_65(brain, fake):
    config = web_config(fake, brave={"api_key": "literal-key-in-metadata"})
    ds = make_datasette([str(brain[0])], plugin_config=config)
    with pytest.raises(StartupError) as info:
        await ds.invoke_startup()
    assert "external_search.brave.api_key" in str(info.value) and "$env" in str(info.value)


async def test_keys_never_leak_through_config_endpoints(brain, fake):
    ds = await web_ds(brain, fake)
    for path in ("/-/metadata.json", "/-/config.json", "/-/settings.json", "/-/plugins.json"):
        response = await ds.client.get(path, follow_redirects=True)
        assert BRAVE_KEY not in response.text and EXA_KEY not in response.text, path


@pytest.mark.skipif(not DATASETTE_1, reason="1.0 accepts literal keys and redacts /-/config")
async def test_literal_key_is_redacted_on_1_0(brain, fake):
    ds = await web_ds(brain, fake, brave={"api_key": BRAVE_KEY})
    response = await ds.client.get("/-/config.json")
    assert response.status_code == 200 and "***" in response.text
    assert BRAVE_KEY not in response.text
    _, pack = await ask(ds, q="lattice", external="always")
    assert pack["external_evidence"]


async def test_keys_never_leak_in_any_scenario(brain, fake, caplog):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    scenarios = [
        ("normal", {}),
        ("server_error", {}),
        ("malformed", {}),
        # A reset past the stage's time: refused at once, not retried (retries: below).
        ("rate_limited", {"reset_seconds": 60}),
        ("empty", {}),
        ("error_missing_fields", {}),
    ]
    for mode, options in scenarios:
        fake.reset()
        fake.set_mode("brave", mode, **options)
        for params in ({"external": "always"}, {"external": "always", "provider": "all"}):
            for path in ("/-/research.json", "/-/research"):
                response = await ds.client.get(
                    path, params={"q": "lattice qcd", **params}, cookies=actor_cookies(ds, "root")
                )
                assert response.status_code == 200
                assert BRAVE_KEY not in response.text and EXA_KEY not in response.text
    assert BRAVE_KEY not in caplog.text and EXA_KEY not in caplog.text


@pytest.mark.parametrize(
    "question, returned, raw_markup",
    [
        ("fts5 ranking tricks", "alert(1) FTS5 ranking tricks", "<script>alert(1)</script>"),
        (
            "datasette plugin hooks glance",
            "<img src=x onerror=alert(1)>",
            "<img src=x onerror=alert(1)>",
        ),
    ],
)
async def test_hostile_provider_text_is_escaped_on_the_page(
    brain, fake, question, returned, raw_markup
):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    params = {"q": question, "external": "always", "provider": "all"}
    root = actor_cookies(ds, "root")
    pack = (await ds.client.get("/-/research.json", params=params, cookies=root)).json()
    # The hostile text really came back from the provider (as text, in JSON) ...
    assert any(returned in (r["title"] + r["text"]) for r in pack["external_evidence"])
    html = (await ds.client.get("/-/research", params=params, cookies=root)).text
    # ... and the page shows it escaped, never as markup.
    assert "Outside dbrain corpus" in html
    assert raw_markup not in html
    assert "onerror=alert(1)>" not in html
    assert 'rel="noopener noreferrer nofollow"' in html


async def test_javascript_urls_from_providers_are_never_links(brain, fake):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    params = {"q": "datasette plugins directory mirror", "external": "always", "provider": "all"}
    root = actor_cookies(ds, "root")
    pack = (await ds.client.get("/-/research.json", params=params, cookies=root)).json()
    assert "external_url_rejected" in codes(pack)
    assert all(r["url"].startswith(("http://", "https://")) for r in pack["external_evidence"])
    html = (await ds.client.get("/-/research", params=params, cookies=root)).text
    assert "javascript:" not in html


async def test_page_shows_controls_badges_counters_and_chips(brain, fake):
    ds = await web_ds(brain, fake)
    root = actor_cookies(ds, "root")
    empty = (await ds.client.get("/-/research", cookies=root)).text
    assert "<legend>Search the web too</legend>" in empty
    assert 'name="external" value="on_weak"' in empty and "If local evidence is weak" in empty
    assert 'id="dbrain-provider"' in empty and 'id="dbrain-freshness"' in empty
    html = (
        await ds.client.get(
            "/-/research",
            params={"q": "sqlite fts5 bm25 ranking", "external": "always"},
            cookies=root,
        )
    ).text
    assert "Outside dbrain corpus / Brave / ephemeral" in html
    assert re.search(r"Brain: \d+ · Web: \d+ \(Brave\)", html)
    assert "also found by Brave" in html
    anonymous = (await ds.client.get("/-/research")).text
    assert "<legend>Search the web too</legend>" not in anonymous
    assert "Sign in to search the web too" in anonymous
    assert "/-/auth-token link" in anonymous  # and how


class EchoProvider(Provider):
    name = "echo"
    label = "Echo"

    async def search(self, request, ctx):
        return [
            WebResult(url=f"https://echo.example/{w}", title=w, snippet=f"echo {w}", rank=i + 1)
            for i, w in enumerate(request.query.split())
        ]


async def test_plugins_can_register_providers(brain, fake):
    with registered(EchoProvider()):
        ds = await web_ds(brain, fake, providers=["echo"])
        _, pack = await ask(ds, q="lattice gauge", external="always")
        assert [r["source_key"].split(":")[1] for r in pack["external_evidence"]] == [
            "echo",
            "echo",
        ]
        assert [r["title"] for r in pack["external_evidence"]] == ["lattice", "gauge"]


def test_cli_can_search_the_web(brain, fake, tmp_path):
    meta = tmp_path / "metadata.json"
    meta.write_text(json.dumps({"plugins": {"datasette-dbrain-websearch": web_config(fake)}}))
    result = CliRunner().invoke(
        cli,
        ["dbrain-research", str(brain[0]), "lattice qcd", "--external", "always", "-m", str(meta)],
    )
    assert result.exit_code == 0, result.output
    assert (
        "Outside dbrain corpus:" in result.output
        and "OUTSIDE DBRAIN CORPUS / brave" in result.output
    )
    assert BRAVE_KEY not in result.output


class BrokenProvider(Provider):
    """Answers with data no parser expects (a bug or a hostile server)."""

    name = "broken"
    label = "Broken"

    async def search(self, request, ctx):
        return [WebResult(url=u) for u in 5]  # TypeError, as a provider bug would


@pytest.mark.parametrize("provider_param", [None, "all"])
async def test_any_provider_exception_is_a_named_failure_not_a_500(brain, fake, provider_param):
    with registered(BrokenProvider()):
        ds = await web_ds(brain, fake, providers=["broken", "exa"])
        params = {"q": "espresso grinder", "external": "always"}
        if provider_param:
            params["provider"] = provider_param
        status, pack = await ask(ds, **params)
        assert status == 200
        assert codes(pack)[0] == "provider_failed" and pack["warnings"][0]["provider"] == "broken"
        assert "TypeError" in pack["warnings"][0]["message"]
        assert len(pack["evidence"]) == 2
        assert pack["external_search"]["providers"] == ["exa"]


async def test_only_providers_that_answered_get_credit(brain, fake):
    fake.set_mode("brave", "server_error")
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    html = (
        await ds.client.get(
            "/-/research",
            params={"q": "lattice qcd", "external": "always"},
            cookies=actor_cookies(ds, "root"),
        )
    ).text
    assert re.search(r"Web: \d+ \(Exa\)</span>", html)


async def test_a_brain_named_research_runs_never_receives_plugin_tables(tmp_path, fake):
    import sqlite3

    from ..helpers import build_fixture_brain

    path = tmp_path / "research_runs.db"
    build_fixture_brain(path)
    ds = make_datasette([str(path)], plugin_config=web_config(fake, cache_ttl=3600))
    await ds.invoke_startup()
    status, pack = await ask(ds, q="lattice qcd", external="always")
    assert status == 200 and pack["external_evidence"]
    tables = {r[0] for r in sqlite3.connect(path).execute("select name from sqlite_master")}
    assert not any("dbrain_websearch" in t for t in tables)


async def test_traces_database_pointing_at_a_brain_stops_startup(brain, fake):
    config = web_config(fake)
    config["traces_database"] = str(brain[0])
    ds = make_datasette([str(brain[0])], plugin_config=config)
    with pytest.raises(StartupError) as info:
        await ds.invoke_startup()
    assert "already attached as database 'brain'" in str(info.value)


async def test_plugin_database_is_private(brain, fake):
    ds = await web_ds(brain, fake, cache_ttl=3600)
    await ask(ds, q="lattice qcd", external="always")
    table = "/research_runs/dbrain_websearch_provider_cache.json"
    assert (await ds.client.get(table)).status_code == 403
    assert (await ds.client.get("/research_runs")).status_code == 403
    root = await ds.client.get(table, cookies=actor_cookies(ds, "root"))
    assert root.status_code == 200 and "lattice" in root.text


async def test_credentials_in_a_base_url_never_show(brain, fake, monkeypatch):
    url = fake.searxng_base_url.replace("http://", "http://admin:HUNTER2pass@")
    monkeypatch.setenv("TEST_SEARXNG_URL", url)
    ds = await web_ds(
        brain,
        fake,
        providers=["searxng"],
        cache_ttl=3600,
        searxng={"base_url": {"$env": "TEST_SEARXNG_URL"}},
    )
    response = await ds.client.get(
        "/-/research.json",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    assert response.json()["external_evidence"]
    assert "HUNTER2pass" not in response.text
    cache = await ds.client.get(
        "/research_runs/dbrain_websearch_provider_cache.json", cookies=actor_cookies(ds, "root")
    )
    assert "HUNTER2pass" not in cache.text


async def test_filters_apply_to_brain_pages_the_web_points_to(brain, fake):
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="sqlite fts5 bm25 ranking", external="always", kind="item")
    assert {r["kind"] for r in pack["evidence"]} <= {"item"}
    assert all("sqlite.org/fts5" not in r["canonical_url"] for r in pack["external_evidence"])


async def test_web_hit_surfaces_a_brain_page_local_search_missed(brain, fake):
    _, ids = brain
    ds = await web_ds(brain, fake)
    # The brain's copy of the FTS5 page never says "match" or "operator", so local search
    # misses it ...
    _, pack = await ask(ds, q="match operator", external="always")
    assert pack["judge"]["verdict"] == "no_evidence"
    # ... and the web search brings it back as a local row, which the verdict mentions.
    (row,) = pack["evidence"]
    assert row["source_key"] == ids["src_fts5_key"] and row["also_found_by"] == ["brave"]
    assert [lane["name"] for lane in row["retrieval"]["lanes"]] == ["external_search"]
    assert "already in your brain" in pack["judge"]["message"]
    assert all("sqlite.org/fts5" not in r["canonical_url"] for r in pack["external_evidence"])


async def test_unconfigured_provider_is_refused(brain, fake):
    ds = await web_ds(brain, fake)  # providers: [brave]
    status, body = await ask(ds, q="lattice", external="always", provider="searxng")
    assert status == 400 and body["code"] == "unknown_provider"
    assert provider_requests(fake) == []


async def test_key_from_a_file_with_a_trailing_newline(brain, fake, tmp_path):
    key_file = tmp_path / "brave.key"
    key_file.write_text(BRAVE_KEY + "\n")
    ds = await web_ds(brain, fake, brave={"api_key": {"$file": str(key_file)}})
    _, pack = await ask(ds, q="lattice qcd", external="always")
    assert codes(pack) == [] and pack["external_evidence"]


async def test_raw_query_without_words_is_not_sent(brain, fake):
    ds = await web_ds(brain, fake)
    status, pack = await ask(ds, q='""', syntax="raw", external="always")
    assert status == 200
    assert "external_query_empty" in codes(pack)
    assert provider_requests(fake) == []


async def test_searxng_warns_about_date_ranges(brain, fake):
    ds = await web_ds(brain, fake, providers=["searxng"])
    _, pack = await ask(ds, q="lattice qcd", external="always", freshness="2026-01-01to2026-02-01")
    assert "provider_ignored_option" in codes(pack)


@pytest.mark.parametrize("value", ["²", "1" * 5000, "-1", "1e3", " 7"])
async def test_odd_numbers_are_400(brain, fake, value):
    ds = await web_ds(brain, fake)
    for name in ("limit", "external_count"):
        status, body = await ask(ds, q="espresso", **{name: value})
        if value == " 7":
            assert status == 200  # surrounding white space is trimmed
        else:
            assert status == 400 and body["code"].startswith("bad_"), (name, value)


async def test_exa_text_via_contents(brain, fake):
    ds = await web_ds(brain, fake, providers=["exa"], exa={"text_via_contents": True})
    _, pack = await ask(ds, q="lattice qcd", external="always")
    search, contents = provider_requests(fake)
    assert (search.endpoint, contents.endpoint) == ("search", "contents")
    assert "text" not in search.json["contents"] and "highlights" in search.json["contents"]
    assert contents.json["ids"] and contents.json["text"]["maxCharacters"] > 0
    assert pack["external_evidence"] and all(r["text"] for r in pack["external_evidence"])


async def test_stream_reports_each_stage_then_the_saved_run(brain, fake):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    root = actor_cookies(ds, "root")
    response = await ds.client.get(
        "/-/research/stream",
        params={"q": "lattice qcd", "external": "always", "provider": "all"},
        cookies=root,
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/x-ndjson")
    events = [json.loads(line) for line in response.text.splitlines() if line]
    stages = [(e["stage"], e.get("status")) for e in events]
    assert stages[:4] == [
        ("local", "started"),
        ("local", "done"),
        ("judge", "done"),
        ("web", "started"),
    ]
    providers = {(e["provider"], e["status"]) for e in events if e["stage"] == "provider"}
    assert providers == {
        ("brave", "started"),
        ("brave", "done"),
        ("exa", "started"),
        ("exa", "done"),
    }
    assert stages[-2] == ("merge", "done") and events[-1]["stage"] == "done"
    assert BRAVE_KEY not in response.text and EXA_KEY not in response.text
    calls = len(provider_requests(fake))
    page = await ds.client.get(events[-1]["url"], cookies=root)
    assert page.status_code == 200 and "Outside dbrain corpus / Brave + Exa" in page.text
    assert events[-1]["run_id"] in page.text
    assert len(provider_requests(fake)) == calls  # the saved run is shown, not searched again


async def test_stream_errors_and_refusals(brain, fake):
    ds = await web_ds(brain, fake)
    bad = await ds.client.get("/-/research/stream", params={"q": "a AND (", "syntax": "raw"})
    event = [json.loads(line) for line in bad.text.splitlines() if line][-1]
    assert event["stage"] == "error" and event["status"] == 400
    assert event["error"].startswith("FTS5 query error")
    private = make_datasette([str(brain[0])], databases={"brain": {"allow": {"id": "alice"}}})
    denied = await private.client.get("/-/research/stream", params={"q": "espresso"})
    assert denied.status_code == 403


async def test_a_saved_run_is_only_reused_for_its_own_question(brain, fake):
    ds = await web_ds(brain, fake)
    root = actor_cookies(ds, "root")
    _, pack = await ask(ds, q="lattice qcd", external="always")
    other = await ds.client.get(
        "/-/research", params={"q": "espresso", "run": pack["run_id"]}, cookies=root
    )
    assert "Outside dbrain corpus / Brave" not in other.text and "espresso" in other.text.lower()


async def test_the_stream_answers_with_a_flash_message_pending(brain, fake):
    """A message set by the last request (e.g. a promotion's) is shown and cleared by the next
    response, whichever it is: the stream clears it too instead of failing."""
    ds = await web_ds(brain, fake)
    pending = {"ds_messages": ds.sign([["Promoted into brain: 1 page.", 1]], "messages")}
    response = await ds.client.get("/-/research/stream", params={"q": "espresso"}, cookies=pending)
    assert response.status_code == 200
    events = [json.loads(line) for line in response.text.splitlines() if line]
    assert events[-1]["stage"] == "done"


@pytest.mark.parametrize(
    ("headers", "searched"),
    [
        ({"sec-fetch-site": "cross-site"}, False),
        ({"origin": "https://evil.example"}, False),
        ({"sec-fetch-site": "same-origin"}, True),
        ({"sec-fetch-site": "none"}, True),  # a typed address or a bookmark
        ({}, True),  # no browser said anything: a script with the cookie
    ],
)
async def test_another_site_cannot_spend_a_signed_in_persons_web_budget(
    brain, fake, headers, searched
):
    ds = await web_ds(brain, fake)
    response = await ds.client.get(
        "/-/research.json",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
        headers=headers,
    )
    pack = response.json()
    assert pack["external_search"]["ran"] is searched
    assert bool(provider_requests(fake)) is searched
    if not searched:
        assert pack["external_search"]["skipped_reason"] == "cross_site"
        assert "external_search_cross_site" in codes(pack)


async def test_search_the_web_is_offered_beside_a_did_you_mean(brain, fake):
    """Issue 30: a suggested correction no longer hides the web: the run's verdict is not
    enough, so both are offered."""
    ds = await web_ds(brain, fake)
    response = await ds.client.get(
        "/-/research", params={"q": "sourdugh startr"}, cookies=actor_cookies(ds, "root")
    )
    assert 'class="dbrain-did-you-mean"' in response.text
    offer = response.text.split('class="dbrain-web-offer"')[1].split("</p>")[0]
    assert ">Search the web</a>" in offer and "external=always" in offer
