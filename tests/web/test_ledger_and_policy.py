"""The provider ledger and its caps, per-provider time shares, failed calls in the trace, and
the public-host policy on web results: over HTTP against the fake provider server."""

from __future__ import annotations

import asyncio
import sqlite3

import httpx
import pytest
from datasette.app import Datasette

from datasette_dbrain_websearch.config import Settings
from datasette_dbrain_websearch.config_keys import ConfigError
from datasette_dbrain_websearch.demo.corpus import PAGES, Page
from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.web import WebStage

from ..helpers import BRAVE_KEY, EXA_KEY, actor_cookies, make_datasette, web_config
from .stand_ins import Clock, Stalled

NO_LOCAL = "lattice chromodynamics gluon"  # the fixture brain holds nothing about it


# On 1.0 root holds only what it is granted (or everything with --root); 0.65 grants it here.
GRANT_ROOT = {"dbrain-view-usage": {"id": "root"}}


async def web_ds(brain, fake, **external) -> Datasette:
    ds = make_datasette(
        [str(brain[0])], plugin_config=web_config(fake, **external), permissions=GRANT_ROOT
    )
    await ds.invoke_startup()
    return ds


async def ask(ds, actor="root", **params) -> dict:
    cookies = actor_cookies(ds, actor) if actor else {}
    response = await ds.client.get("/-/research.json", params=params, cookies=cookies)
    assert response.status_code == 200, response.text
    assert BRAVE_KEY not in response.text and EXA_KEY not in response.text
    return response.json()


def ledger_rows(brain) -> list[dict]:
    conn = sqlite3.connect(brain[0].parent / "research_runs.db")
    conn.row_factory = sqlite3.Row
    try:
        return [
            dict(r)
            for r in conn.execute("select * from dbrain_websearch_provider_calls order by id")
        ]
    finally:
        conn.close()


def codes(pack) -> list[str]:
    return [w["code"] for w in pack["warnings"]]


async def trace_of(ds, pack) -> dict:
    response = await ds.client.get(pack["trace_url"] + ".json", cookies=actor_cookies(ds, "root"))
    assert response.status_code == 200
    return response.json()


async def test_every_provider_call_is_in_the_ledger_with_its_cost(brain, fake):
    ds = await web_ds(brain, fake, providers=["brave", "exa"], exa={"price_per_call": 0.008})
    pack = await ask(ds, q=NO_LOCAL, external="always", provider="all")
    rows = ledger_rows(brain)
    assert sorted((r["provider"], r["endpoint"], r["status"]) for r in rows) == [
        ("brave", "/llm/context", 200),
        ("exa", "/search", 200),
    ]
    by_provider = {r["provider"]: r for r in rows}
    assert by_provider["brave"]["cost_usd"] == 0.005  # Brave's list price, not configured
    assert by_provider["exa"]["cost_usd"] == 0.008
    for row in rows:
        assert row["run_id"] == pack["run_id"] and row["actor_id"] == "root"
        assert row["error"] == "" and row["latency_ms"] > 0 and row["results"] > 0
        assert BRAVE_KEY not in str(row) and EXA_KEY not in str(row)


async def test_a_failed_call_is_recorded_unbilled_and_traced(brain, fake):
    fake.set_mode("brave", "server_error")
    ds = await web_ds(brain, fake)
    pack = await ask(ds, q=NO_LOCAL, external="always")
    assert pack["judge"]["verdict"] == "no_evidence" and pack["external_evidence"] == []
    (row,) = ledger_rows(brain)
    assert row["provider"] == "brave" and row["status"] >= 500
    assert row["error"] == "provider_failed" and row["cost_usd"] == 0 and row["results"] == 0
    trace = await trace_of(ds, pack)
    events = {e["name"]: e["data"] for e in trace["events"]}
    assert events["external_provider_request"]["provider"] == "brave"
    response = events["external_provider_response"]
    assert response["error"] == "provider_failed" and response["results"] == 0
    assert "Brave" in response["message"]
    assert trace["stop_reason"] == "providers_failed"


async def test_a_run_with_local_evidence_keeps_its_verdict_as_stop_reason(brain, fake):
    fake.set_mode("brave", "server_error")
    ds = await web_ds(brain, fake)
    pack = await ask(ds, q="espresso", external="always")
    assert pack["evidence"]
    assert (await trace_of(ds, pack))["stop_reason"] == pack["judge"]["verdict"]


async def test_daily_cap_skips_the_provider_before_any_request(brain, fake):
    ds = await web_ds(
        brain, fake, providers=["brave", "exa"], budgets={"brave": {"daily_calls": 1}}
    )
    first = await ask(ds, q=NO_LOCAL, external="always")
    assert first["external_search"]["providers"] == ["brave"]
    brave_calls = len([r for r in fake.requests if r.provider == "brave"])
    second = await ask(ds, q="sqlite fts5 ranking", external="always")
    assert len([r for r in fake.requests if r.provider == "brave"]) == brave_calls
    assert "provider_budget_exhausted" in codes(second)
    warning = next(w for w in second["warnings"] if w["code"] == "provider_budget_exhausted")
    assert warning["provider"] == "brave" and "1 calls today" in warning["message"]
    assert "provider_fallback" in codes(second)
    assert second["external_search"]["providers"] == ["exa"]
    assert [r["provider"] for r in ledger_rows(brain)] == ["brave", "exa"]
    trace = await trace_of(ds, second)
    skipped = [e["data"] for e in trace["events"] if e["name"] == "external_provider_skipped"]
    assert skipped == [{"provider": "brave", "reason": "provider_budget_exhausted"}]


async def test_monthly_spend_cap_counts_estimated_cost(brain, fake):
    ds = await web_ds(
        brain,
        fake,
        brave={"price_per_call": 0.6},
        budgets={"brave": {"monthly_usd": 1}},
    )
    for question in ("sqlite fts5", "sqlite bm25"):
        assert "provider_budget_exhausted" not in codes(
            await ask(ds, q=question, external="always")
        )
    third = await ask(ds, q="sqlite ranking", external="always")
    assert "provider_budget_exhausted" in codes(third)
    assert third["external_search"]["providers"] == []
    assert round(sum(r["cost_usd"] for r in ledger_rows(brain)), 4) == 1.2


async def test_usage_page_is_for_root_and_adds_up(brain, fake):
    ds = await web_ds(brain, fake, budgets={"brave": {"daily_calls": 100, "monthly_usd": 5}})
    fake.set_mode("brave", "server_error", times=1)
    await ask(ds, q=NO_LOCAL, external="always")
    await ask(ds, q="sqlite fts5", external="always")
    for cookies in ({}, actor_cookies(ds, "alice")):
        page = await ds.client.get("/-/research/usage", cookies=cookies)
        assert page.status_code == 403
        assert (await ds.client.get("/-/research/usage.json", cookies=cookies)).status_code == 403
        # Not a bare "Forbidden": why, and how to get it.
        said = "Sign in as one of them" if not cookies else "Your account may not see"
        assert said in page.text and "dbrain-view-usage" in page.text
        assert ("/-/auth-token link" in page.text) == (not cookies)  # how, when signed out
    root = actor_cookies(ds, "root")
    data = (await ds.client.get("/-/research/usage.json", cookies=root)).json()
    (day,) = [d for d in data["days"] if d["provider"] == "brave"]
    assert day["calls"] == 2 and day["errors"] == 1 and day["cost_usd"] == 0.005
    brave = next(p for p in data["providers"] if p["provider"] == "brave")
    assert brave["calls_today"] == 2 and brave["daily_calls_cap"] == 100
    assert brave["monthly_usd_cap"] == 5 and brave["over_budget"] is False
    page = await ds.client.get("/-/research/usage", cookies=root)
    assert page.status_code == 200
    assert "Web search usage" in page.text and "$0.005" in page.text and "/llm/context" in page.text
    assert BRAVE_KEY not in page.text
    menu = (await ds.client.get("/-/research", cookies=root)).text
    assert 'href="/-/research/usage"' in menu
    others = (await ds.client.get("/-/research", cookies=actor_cookies(ds, "alice"))).text
    assert "/-/research/usage" not in others


async def test_usage_lists_each_call_with_its_question_and_filters_them(brain, fake):
    """Issue 19: root sees what was asked of the providers: time, question, provider, endpoint,
    results, cost and status, newest first, filtered by provider and outcome."""
    ds = await web_ds(brain, fake)
    fake.set_mode("brave", "server_error", times=1)
    await ask(ds, q=NO_LOCAL, external="always")
    await ask(ds, q="sqlite fts5", external="always")
    root = actor_cookies(ds, "root")
    calls = (await ds.client.get("/-/research/usage.json", cookies=root)).json()["calls"]
    assert [(c["question"], c["status"]) for c in calls] == [("sqlite fts5", 200), (NO_LOCAL, 500)]
    ok = calls[0]
    assert ok["provider"] == "brave" and ok["endpoint"] and ok["results"] >= 1
    assert ok["cost_usd"] == 0.005 and calls[1]["cost_usd"] == 0.0
    failed = (await ds.client.get("/-/research/usage.json?outcome=failed", cookies=root)).json()[
        "calls"
    ]
    assert [c["question"] for c in failed] == [NO_LOCAL]
    none = (await ds.client.get("/-/research/usage.json?provider=exa", cookies=root)).json()
    assert none["calls"] == [] and none["filters"] == {"provider": "exa", "outcome": ""}
    page = (await ds.client.get("/-/research/usage?outcome=ok", cookies=root)).text
    table = page.split('class="rows-and-columns dbrain-usage dbrain-calls"')[1]
    assert "sqlite fts5" in table and NO_LOCAL not in table
    assert 'href="/-/research/runs/' in table and BRAVE_KEY not in page


@pytest.fixture
def stalled_brave(monkeypatch) -> Stalled:
    """The web stage on a clock the test moves, Brave stalled: each of its requests uses up all
    the time it was given (recorded) and times out; Exa's go to the fake. Each provider's share
    is then a decision the test reads, with no time spent and no deadline to meet."""
    clock = Clock()
    stalled = Stalled(forward=lambda path: not path.startswith("/brave/"), clock=clock)
    monkeypatch.setattr(WebStage, "clock", staticmethod(clock))
    monkeypatch.setattr(WebStage, "transport", httpx.MockTransport(stalled))
    return stalled


def given(stalled: Stalled, provider: str) -> list[float]:
    """The time each of ``provider``'s requests was given."""
    return [t for path, t in stalled.timeouts.items() if path.startswith(f"/{provider}/")]


async def test_a_stalled_provider_gets_its_share_then_the_next_is_tried(brain, fake, stalled_brave):
    ds = await web_ds(brain, fake, providers=["brave", "exa"], timeout=60, provider_timeout=20)
    pack = await ask(ds, q="sqlite fts5 ranking", external="always")
    assert pack["external_search"]["providers"] == ["exa"] and pack["external_evidence"]
    warning = next(w for w in pack["warnings"] if w["code"] == "provider_timeout")
    assert warning["provider"] == "brave" and "did not answer within 20.0 s" in warning["message"]
    assert "provider_fallback" in codes(pack)
    # Brave was given its 20 s and cut there; Exa its own 20 s of the 40 left.
    assert given(stalled_brave, "brave") == [20] and set(given(stalled_brave, "exa")) == {20}
    brave = next(r for r in ledger_rows(brain) if r["provider"] == "brave")
    assert brave["error"] == "provider_timeout" and brave["cost_usd"] == 0


async def test_without_provider_timeout_the_time_left_is_shared(brain, fake, stalled_brave):
    # Brave gets half of the 60 s, Exa what is left.
    ds = await web_ds(brain, fake, providers=["brave", "exa"], timeout=60)
    pack = await ask(ds, q="sqlite fts5 ranking", external="always")
    assert pack["external_search"]["providers"] == ["exa"]
    assert "provider_timeout" in codes(pack)
    assert given(stalled_brave, "brave") == [30] and set(given(stalled_brave, "exa")) == {30}


PRIVATE = (
    "http://127.0.0.1:8080/admin/gluon-notes",
    "http://192.168.1.20/wiki/gluon-lattice",
    "http://169.254.169.254/latest/meta-data/gluon",
    "http://[fd00::7]/gluon",
    "http://localhost/gluon-lattice",
    "http://2130706433/gluon",
)


@pytest.fixture(scope="module")
def poisoned():
    """A provider index holding pages on private and loopback hosts among public ones."""
    pages = [
        Page(
            url=url,
            title=f"Gluon lattice notes {i}",
            text="Gluon lattice chromodynamics notes kept on an internal host. " * 8,
            kind="web",
        )
        for i, url in enumerate(PRIVATE)
    ]
    with FakeWeb(brave_keys=(BRAVE_KEY,), exa_keys=(EXA_KEY,), pages=(*PAGES, *pages)) as server:
        yield server


@pytest.fixture
def poisoned_fake(poisoned, monkeypatch):
    monkeypatch.setenv("TEST_BRAVE_KEY", BRAVE_KEY)
    monkeypatch.setenv("TEST_EXA_KEY", EXA_KEY)
    poisoned.reset()
    return poisoned


async def test_results_on_private_hosts_never_become_web_rows(brain, poisoned_fake):
    ds = await web_ds(brain, poisoned_fake, count=10)
    pack = await ask(ds, q=NO_LOCAL, external="always", external_count=10)
    shown = [r["url"] for r in pack["external_evidence"]] + [
        r["url"] for r in pack["external_search"]["returned"]
    ]
    for url in shown:
        for private in ("127.0.0.1", "192.168.", "169.254.", "fd00", "localhost", "2130706433"):
            assert private not in url
    warning = next(w for w in pack["warnings"] if w["code"] == "external_url_not_public")
    assert "dropped" in warning["message"]
    dropped = [d for d in pack["merge_decisions"] if d["decision"] == "dropped_not_public"]
    assert {d["host"] for d in dropped} >= {"192.168.1.20", "169.254.169.254", "localhost"}
    trace = await trace_of(ds, pack)
    traced = [
        e["data"]
        for e in trace["events"]
        if e["name"] == "external_result_deduped" and e["data"]["decision"] == "dropped_not_public"
    ]
    assert len(traced) == len(dropped)


async def test_fetch_allow_networks_admits_results_on_those_networks(brain, poisoned_fake):
    ds = await web_ds(brain, poisoned_fake, count=10, fetch_allow_networks=["192.168.0.0/16"])
    pack = await ask(ds, q=NO_LOCAL, external="always", external_count=10)
    urls = [r["url"] for r in pack["external_evidence"]]
    assert any("192.168.1.20" in url for url in urls)
    assert not any("169.254." in url or "127.0.0.1" in url for url in urls)


async def test_dbrain_plans_mode_name_is_accepted(brain, fake):
    ds = await web_ds(brain, fake)
    pack = await ask(ds, q="espresso", external="on_weak_local_evidence")
    assert pack["external_search"]["mode"] == "on_weak"
    settings = Settings.from_config({"external_search": {"default_mode": "on_weak_local_evidence"}})
    assert settings.web.default_mode == "on_weak"


@pytest.mark.parametrize(
    "external, fragment",
    [
        ({"budgets": {"brave": {"daily_calls": -1}}}, "budgets.brave.daily_calls"),
        ({"budgets": {"brave": {"monthly_usd": "5"}}}, "budgets.brave.monthly_usd"),
        ({"budgets": {"brave": {"weekly": 3}}}, "budgets.brave"),
        ({"budgets": ["brave"]}, "external_search.budgets"),
        ({"provider_timeout": 0.0001 - 1}, "provider_timeout"),
        ({"brave": {"price_per_call": -0.1}}, "brave.price_per_call"),
    ],
)
def test_ledger_config_errors_name_the_key(external, fragment):
    with pytest.raises(ConfigError) as info:
        Settings.from_config({"external_search": external})
    assert fragment in str(info.value)


async def test_keys_set_for_dbrain_search_the_web_and_never_show(brain, fake, monkeypatch):
    monkeypatch.delenv("TEST_BRAVE_KEY")
    monkeypatch.setenv("DBRAIN_BRAVE_SEARCH_API_KEY", BRAVE_KEY)
    ds = await web_ds(brain, fake)
    pack = await ask(ds, q=NO_LOCAL, external="always")
    assert pack["external_search"]["ran"] and pack["external_evidence"]
    assert [r["status"] for r in ledger_rows(brain)] == [200]
    trace = await trace_of(ds, pack)
    assert BRAVE_KEY not in str(trace)


async def test_concurrent_searches_never_make_more_calls_than_the_cap(brain, fake):
    ds = await web_ds(brain, fake, budgets={"brave": {"daily_calls": 5}})
    root = actor_cookies(ds, "root")

    async def search(n: int):
        response = await ds.client.get(
            "/-/research.json",
            params={"q": f"lattice qcd {n}", "external": "always"},
            cookies=root,
        )
        assert response.status_code == 200
        return response.json()

    packs = await asyncio.gather(*(search(n) for n in range(20)))
    assert len([r for r in fake.requests if r.provider == "brave"]) == 5
    skipped = [p for p in packs if "provider_budget_exhausted" in codes(p)]
    assert len(skipped) == 15
    rows = ledger_rows(brain)
    assert len(rows) == 5 and {r["error"] for r in rows} == {""}  # no reservation left behind
