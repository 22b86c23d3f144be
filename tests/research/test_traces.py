"""Every run is saved as research_trace.v1; traces render, respect permissions and retention."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch import runs_db, traces

from ..helpers import BRAVE_KEY, EXA_KEY, INSERT_RUN, actor_cookies, ask, make_datasette, web_ds


def plugin_db_rows(brain_path, sql, params=()):
    conn = sqlite3.connect(brain_path.parent / "research_runs.db")
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def test_a_json_run_is_saved_and_served_as_a_trace(ds):
    response = await ds.client.get("/-/research.json", params={"q": "espresso grinder"})
    pack = response.json()
    assert pack["trace_url"] == f"/-/research/runs/{pack['run_id']}"
    # An anonymous run: root reads the whole trace (anyone else, what it shares:
    # test_sharing.py).
    root = actor_cookies(ds, "root")
    trace = (await ds.client.get(pack["trace_url"] + ".json", cookies=root)).json()
    assert trace["schema_version"] == "research_trace.v1"
    assert trace["run_id"] == pack["run_id"] and trace["surface"] == "json"
    assert trace["pack"] == pack
    assert trace["stop_reason"] == "enough_evidence"
    names = [e["name"] for e in trace["events"]]
    assert names == [
        "query_plan_built",
        "local_search_admitted",
        "local_search_completed",
        "judge",
        "external_search_skipped",
        "evidence_selected",
    ]
    admitted = trace["events"][1]["data"]
    assert admitted["heavy"] is False and admitted["postings"] > 0
    assert admitted["waited_ms"] == pack["timings_ms"]["local_turn"]
    skipped = trace["events"][4]["data"]
    assert skipped == {"mode": "never", "reason": "mode_never"}
    assert trace["started_at"] <= trace["completed_at"]
    assert trace["metrics"]["evidence_count"] == 2


async def test_the_run_page_speaks_plainly(ds):
    """Issue 19: no "brain brain", no "the actor", no reason codes."""
    pack = (await ds.client.get("/-/research.json", params={"q": "espresso grinder"})).json()
    html = (await ds.client.get(pack["trace_url"], cookies=actor_cookies(ds, "root"))).text
    postings = pack["query_plan"]["cost"]["postings"]
    assert f"Admitted: reads {postings:,} postings, a light one" in html
    assert f"asked of <code>{pack['database']}</code>" in html
    assert "not used (the request said never)" in html
    assert "whoever asked was" in html
    assert "the actor" not in html and "mode never" not in html


async def test_page_runs_are_saved_too_and_link_to_their_trace(ds, brain):
    html = (await ds.client.get("/-/research", params={"q": "tokio"})).text
    (surface,) = plugin_db_rows(brain[0], "select surface from dbrain_websearch_runs")[0:1]
    assert surface == ("page",)
    assert 'href="/-/research/runs/' in html and ">trace</a>" in html


async def test_web_run_trace_has_every_stage_and_no_secret(brain, fake):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    _, pack = await ask(ds, q="sqlite fts5 bm25 ranking", external="always", provider="all")
    # Root's run: visible to root only; to anyone else it does not exist.
    assert (await ds.client.get(pack["trace_url"] + ".json")).status_code == 404
    trace_json = await ds.client.get(pack["trace_url"] + ".json", cookies=actor_cookies(ds, "root"))
    page = await ds.client.get(pack["trace_url"], cookies=actor_cookies(ds, "root"))
    for text in (trace_json.text, page.text):
        assert BRAVE_KEY not in text and EXA_KEY not in text
    stored = plugin_db_rows(brain[0], "select trace_json from dbrain_websearch_runs")
    assert BRAVE_KEY not in stored[0][0] and EXA_KEY not in stored[0][0]
    trace = trace_json.json()
    names = [e["name"] for e in trace["events"]]
    for name in (
        "external_query_built",
        "external_provider_request",
        "external_provider_response",
        "external_result_deduped",
        "external_evidence_selected",
        "external_merge_completed",
    ):
        assert name in names, name
    responses = [e["data"] for e in trace["events"] if e["name"] == "external_provider_response"]
    assert {r["provider"] for r in responses} == {"brave", "exa"}
    assert all(r["returned"] and len(r["returned"]) <= 10 for r in responses)
    assert all(len(item["title"]) <= 200 for r in responses for item in r["returned"])
    deduped = [
        e["data"]["decision"] for e in trace["events"] if e["name"] == "external_result_deduped"
    ]
    assert "collapsed_onto_local_source" in deduped
    assert page.status_code == 200
    assert "Outside dbrain corpus / Brave" in page.text and "external_merge_completed" in page.text
    (row,) = plugin_db_rows(
        brain[0],
        "select external_ran, providers, verdict, external_evidence_count "
        "from dbrain_websearch_runs",
    )
    assert row[0] == 1 and set(row[1].split(",")) == {"brave", "exa"}
    assert row[3] == len(pack["external_evidence"])


def test_cli_runs_are_saved(brain):
    path, _ = brain
    result = CliRunner().invoke(cli, ["dbrain-research", str(path), "espresso", "--json"])
    run_id = json.loads(result.output)["run_id"]
    assert plugin_db_rows(
        path, "select surface from dbrain_websearch_runs where run_id = ?", [run_id]
    ) == [("cli",)]


async def test_traces_follow_the_research_permission(brain):
    ds = make_datasette([str(brain[0])], databases={"brain": {"allow": {"id": "alice"}}})
    alice = actor_cookies(ds, "alice")
    pack = (await ds.client.get("/-/research.json?q=espresso", cookies=alice)).json()
    url = pack["trace_url"]
    assert (await ds.client.get(url, cookies=alice)).status_code == 200
    assert (await ds.client.get(url + ".json", cookies=alice)).status_code == 200
    for cookies in ({}, actor_cookies(ds, "mallory")):
        assert (await ds.client.get(url, cookies=cookies)).status_code == 403
        assert (await ds.client.get(url + ".json", cookies=cookies)).status_code == 403
        assert (await ds.client.get("/-/research/runs", cookies=cookies)).status_code == 403
    runs = (await ds.client.get("/-/research/runs", cookies=alice)).text
    assert pack["run_id"] in runs and "espresso" in runs


async def test_unknown_runs_are_404(ds):
    missing = "/-/research/runs/20260101T000000.000000000Z-000000000000"
    assert (await ds.client.get(missing)).status_code == 404
    body = (await ds.client.get(missing + ".json")).json()
    assert body["status"] == 404 and body["code"] == "no_such_run"
    assert (await ds.client.get("/-/research/runs/../../etc")).status_code == 404


def test_run_started_reads_dbrain_run_ids():
    moment = traces.run_started("20261130T093000.123456789Z-0a1b2c3d4e5f")
    assert moment == datetime(2026, 11, 30, 9, 30, 0, 123456, tzinfo=UTC)


def test_retention_keeps_500_newest_plus_180_days(tmp_path):
    path = tmp_path / "runs.db"
    runs_db.create(path)
    conn = sqlite3.connect(path)
    old = [f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z" for i in range(520)]
    recent = ["2026-11-01T00:00:00.000Z", "2026-11-02T00:00:00.000Z"]
    for n, started in enumerate(old + recent):
        conn.execute(
            INSERT_RUN,
            [f"run-{n:04d}", started, started],
        )
        conn.execute(
            f"insert into {runs_db.EVENTS_TABLE} (run_id, seq, at, name, data_json) "
            "values (?, 0, ?, 'judge', '{}')",
            [f"run-{n:04d}", started],
        )
    with conn:
        traces.prune(conn, "2026-06-03T00:00:00.000Z")
    kept = [r[0] for r in conn.execute(f"select run_id from {runs_db.RUNS_TABLE} order by run_id")]
    # the 500 newest are the 2 recent ones plus the 498 newest old ones; 22 old ones go
    assert len(kept) == 500
    assert "run-0000" not in kept and "run-0021" not in kept and "run-0022" in kept
    assert {"run-0520", "run-0521"} <= set(kept)
    events = conn.execute(f"select count(*) from {runs_db.EVENTS_TABLE}").fetchone()[0]
    assert events == 500
    conn.close()


@pytest.mark.parametrize("recent_count", [600])
def test_retention_keeps_every_run_younger_than_180_days(tmp_path, recent_count):
    path = tmp_path / "runs.db"
    runs_db.create(path)
    conn = sqlite3.connect(path)
    for n in range(recent_count):
        started = f"2026-11-{1 + n % 28:02d}T00:00:{n % 60:02d}.000Z"
        conn.execute(
            INSERT_RUN,
            [f"run-{n:04d}", started, started],
        )
    with conn:
        traces.prune(conn, "2026-06-03T00:00:00.000Z")
    assert conn.execute(f"select count(*) from {runs_db.RUNS_TABLE}").fetchone()[0] == recent_count
    conn.close()


@pytest.mark.parametrize(
    ("removed", "kept"),
    [
        ([], ["run-2", "run-3", "run-4"]),
        # Row ids 1..5, two runs removed by hand: the span of ids says 5, the count is 3.
        (["run-1", "run-3"], ["run-0", "run-2", "run-4"]),
        # One removed: four runs, one over the ceiling.
        (["run-2"], ["run-1", "run-3", "run-4"]),
    ],
)
def test_retention_has_a_hard_ceiling_on_the_count_of_runs(tmp_path, monkeypatch, removed, kept):
    from datasette_dbrain_websearch import runs_db

    from ..helpers import INSERT_RUN

    monkeypatch.setattr(traces, "MAX_RUNS", 3)
    path = tmp_path / "runs.db"
    runs_db.create(path)
    conn = sqlite3.connect(path)
    for n in range(5):
        started = f"2026-11-2{n}T00:00:00.000Z"
        conn.execute(INSERT_RUN, [f"run-{n}", started, started])
    conn.executemany(f"delete from {runs_db.RUNS_TABLE} where run_id = ?", [[r] for r in removed])
    with conn:
        traces.prune(conn, "2026-06-03T00:00:00.000Z")
    found = [r[0] for r in conn.execute(f"select run_id from {runs_db.RUNS_TABLE} order by run_id")]
    assert found == kept
    conn.close()


def test_retention_of_an_empty_runs_file(tmp_path):
    path = tmp_path / "runs.db"
    runs_db.create(path)
    conn = sqlite3.connect(path)
    with conn:
        traces.prune(conn, "2026-06-03T00:00:00.000Z")
    assert conn.execute(f"select count(*) from {runs_db.RUNS_TABLE}").fetchone()[0] == 0
    conn.close()
