"""Regression tests for hostile inputs and edge cases found in review."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote, quote_plus

import pytest

from datasette_dbrain_websearch import traces
from datasette_dbrain_websearch.providers import Provider, ProviderError, WebResult

from .helpers import (
    BRAVE_KEY,
    actor_cookies,
    ask,
    csrf,
    db_rows,
    make_datasette,
    post_json,
    promoting_ds,
    registered,
    web_config,
    web_ds,
    web_run,
)


class LeakyProvider(Provider):
    """Fails with a message that echoes its own key, and returns a broken title otherwise."""

    name = "leaky"
    label = "Leaky"
    requires_api_key = True
    fail = True

    async def search(self, request, ctx):
        if self.fail:
            raise ProviderError("provider_failed", f"upstream said: bad token {ctx.api_key}")
        return [
            WebResult(
                url="https://leaky.example/a",
                title="Lattice \ud800 QCD",
                snippet="lattice \x00 qcd",
                rank=1,
            )
        ]


@pytest.fixture
def leaky(monkeypatch):
    monkeypatch.setenv("TEST_LEAKY_KEY", BRAVE_KEY)
    with registered(LeakyProvider()) as provider:
        yield provider


async def test_stream_progress_never_carries_a_key(brain, fake, leaky):
    ds = await web_ds(
        brain, fake, providers=["leaky"], leaky={"api_key": {"$env": "TEST_LEAKY_KEY"}}
    )
    response = await ds.client.get(
        "/-/research/stream",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    assert "upstream said: bad token ***" in response.text
    assert BRAVE_KEY not in response.text


async def test_broken_unicode_from_a_provider_is_cleaned(brain, fake, leaky):
    leaky.fail = False
    ds = await web_ds(
        brain, fake, providers=["leaky"], leaky={"api_key": {"$env": "TEST_LEAKY_KEY"}}
    )
    root = actor_cookies(ds, "root")
    _, pack = await ask(ds, q="lattice qcd", external="always")
    (row,) = pack["external_evidence"]
    assert row["title"] == "Lattice ? QCD" and "\x00" not in row["excerpt"]
    assert "trace_url" in pack
    page = await ds.client.get(
        "/-/research", params={"q": "lattice qcd", "external": "always"}, cookies=root
    )
    assert page.status_code == 200 and "Lattice ? QCD" in page.text


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000 + b"]" * 100_000, json.dumps({"run_id": "\ud800", "source_keys": ["x"]})],
)
async def test_hostile_post_bodies_are_400(brain, fake, body):
    ds = await promoting_ds(brain, fake)
    cookies, headers, _ = await csrf(ds, actor_cookies(ds, "root"))
    headers = {**headers, "content-type": "application/json"}
    for path in (
        "/-/research/promote",
        "/-/research/runs/20260101T000000.000000000Z-000000000000/feedback",
    ):
        response = await ds.client.post(path, content=body, cookies=cookies, headers=headers)
        assert response.status_code in (400, 404), (path, response.status_code)


async def test_promoting_into_a_brain_without_sources_is_409(tmp_path, fake):
    from .helpers import build_fixture_brain

    path = tmp_path / "items_only.db"
    build_fixture_brain(path)
    conn = sqlite3.connect(path)
    conn.execute("drop table sources_fts")
    conn.execute("drop table item_source_links")
    conn.execute("drop table sources")
    conn.commit()
    conn.close()
    ds = make_datasette(
        [str(path)], plugin_config=web_config(fake), permissions={"dbrain-promote": {"id": "root"}}
    )
    await ds.invoke_startup()
    pack = await web_run(ds)
    page = await ds.client.get(
        "/-/research",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    assert 'name="promote_one"' not in page.text
    body = {"run_id": pack["run_id"], "source_keys": [pack["external_evidence"][0]["source_key"]]}
    response = await post_json(ds, body)
    assert response.status_code == 409 and response.json()["code"] == "no_sources_table"


async def test_per_database_stream_searches_that_brain(brain, tmp_path, fake):
    from .helpers import build_fixture_brain

    other = tmp_path / "other.db"
    build_fixture_brain(other)
    conn = sqlite3.connect(other)
    conn.execute("delete from items_fts")
    conn.execute("delete from sources_fts")
    conn.commit()
    conn.close()
    ds = make_datasette([str(brain[0]), str(other)])
    response = await ds.client.get("/other/-/research/stream", params={"q": "espresso"})
    events = [json.loads(line) for line in response.text.splitlines() if line]
    local = next(e for e in events if e["stage"] == "local" and e["status"] == "done")
    assert local["count"] == 0
    assert events[-1]["url"].startswith("/other/-/research?")
    page = await ds.client.get("/other/-/research")
    assert 'data-stream-url="/other/-/research/stream"' in page.text


async def test_refined_runs_keep_the_parent_brain_and_filters(brain, tmp_path, fake):
    from .helpers import build_fixture_brain

    first = tmp_path / "aaa.db"
    build_fixture_brain(first)
    ds = make_datasette([str(first), str(brain[0])], plugin_config=web_config(fake))
    root = actor_cookies(ds, "root")
    parent = (
        await ds.client.get(
            "/brain/-/research.json",
            params={"q": "espresso", "kind": "source", "tag": "espresso"},
            cookies=root,
        )
    ).json()
    child = (
        await ds.client.get(
            "/-/research.json", params={"refine_from": parent["run_id"]}, cookies=root
        )
    ).json()
    assert child["database"] == "brain"
    assert child["query_plan"]["filters"] == {"tag": ["espresso"], "kind": "source"}
    assert child["parent_run_id"] == parent["run_id"]


async def test_runs_are_private_to_their_actor(ds):
    alice, bob = actor_cookies(ds, "alice"), actor_cookies(ds, "bob")
    pack = (await ds.client.get("/-/research.json?q=espresso", cookies=alice)).json()
    assert (await ds.client.get(pack["trace_url"] + ".json", cookies=alice)).status_code == 200
    assert (await ds.client.get(pack["trace_url"] + ".json", cookies=bob)).status_code == 404
    assert (await ds.client.get(pack["trace_url"])).status_code == 404
    assert pack["run_id"] not in (await ds.client.get("/-/research/runs", cookies=bob)).text
    assert pack["run_id"] in (await ds.client.get("/-/research/runs", cookies=alice)).text
    root = actor_cookies(ds, "root")
    assert pack["run_id"] in (await ds.client.get("/-/research/runs", cookies=root)).text


async def test_redirect_targets_with_control_characters_are_refused(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    cookies, _, token = await csrf(ds, actor_cookies(ds, "root"))
    form = {
        "csrftoken": token,
        "run_id": pack["run_id"],
        "promote_one": pack["external_evidence"][0]["source_key"],
        "next": "/\t/evil.example/x",
    }
    response = await ds.client.post("/-/research/promote", data=form, cookies=cookies)
    assert response.headers["location"] == "/-/research"


def test_retention_has_a_hard_ceiling(tmp_path, monkeypatch):
    from datasette_dbrain_websearch import runs_db

    from .helpers import INSERT_RUN

    monkeypatch.setattr(traces, "MAX_RUNS", 3)
    path = tmp_path / "runs.db"
    runs_db.create(path)
    conn = sqlite3.connect(path)
    for n in range(5):
        started = f"2026-11-2{n}T00:00:00.000Z"
        conn.execute(INSERT_RUN, [f"run-{n}", started, started])
    with conn:
        traces.prune(conn, "2026-06-03T00:00:00.000Z")
    kept = [r[0] for r in conn.execute(f"select run_id from {runs_db.RUNS_TABLE} order by run_id")]
    assert kept == ["run-2", "run-3", "run-4"]


ODD_KEY = "Odd-Key/with+plus&amp?"


class EchoProvider(Provider):
    """Echoes its key back in other letter cases and URL-encoded, as a careless API might."""

    name = "echo"
    label = "Echo"
    requires_api_key = True

    async def search(self, request, ctx):
        key = ctx.api_key
        return [
            WebResult(
                url=f"https://echo.example/lattice?token={quote(key.upper(), safe='')}",
                title=f"Lattice QCD for {key.upper()}",
                snippet=f"lattice qcd token={quote_plus(key)} and {key.lower()}",
                rank=1,
            )
        ]


def leaked(text: str) -> list[str]:
    forms = (ODD_KEY, quote(ODD_KEY, safe=""), quote_plus(ODD_KEY, safe=""))
    return [form for form in forms if form.lower() in text.lower()]


async def test_a_key_echoed_in_any_case_or_encoding_never_shows(brain, fake, monkeypatch):
    monkeypatch.setenv("TEST_ECHO_KEY", ODD_KEY)
    with registered(EchoProvider()):
        ds = await web_ds(
            brain, fake, providers=["echo"], echo={"api_key": {"$env": "TEST_ECHO_KEY"}}
        )
        root = actor_cookies(ds, "root")
        response = await ds.client.get(
            "/-/research.json", params={"q": "lattice qcd", "external": "always"}, cookies=root
        )
        pack = response.json()
        assert pack["external_evidence"] and not leaked(response.text)
        page = await ds.client.get(
            "/-/research", params={"q": "lattice qcd", "external": "always"}, cookies=root
        )
        trace = await ds.client.get(pack["trace_url"] + ".json", cookies=root)
    assert "***" in response.text
    assert not leaked(page.text) and not leaked(trace.text)


async def test_a_read_only_filesystem_still_serves_research(brain, monkeypatch, caplog):
    """Where the runs database cannot be created (an immutable brain on a read-only mount:
    SQLite says so with OperationalError), research works and runs are not saved."""
    from datasette_dbrain_websearch import runs_db

    def read_only(path):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(runs_db, "create", read_only)
    ds = make_datasette([str(brain[0])])
    await ds.invoke_startup()
    response = await ds.client.get("/-/research.json", params={"q": "espresso"})
    assert response.status_code == 200 and response.json()["evidence"]
    assert "runs are not saved" in caplog.text
    runs = await ds.client.get("/-/research/runs.json", cookies=actor_cookies(ds, "root"))
    assert runs.json()["message"].startswith("Runs are not being saved")


async def test_a_run_whose_save_failed_says_so_on_its_link(ds, monkeypatch):
    """The page and the JSON answer before the run is saved; when the save then fails (a
    locked runs database), the run's link says what happened instead of a bare 404."""

    async def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    async def at_once(seconds: float) -> None:
        """The save's pauses between attempts, not waited: every attempt is refused."""

    monkeypatch.setattr(traces, "_write", locked)
    monkeypatch.setattr(traces, "pause_before_retry", at_once)
    pack = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    assert pack["evidence"]
    response = await ds.client.get(pack["trace_url"] + ".json")
    body = response.json()
    assert (response.status_code, body["code"]) == (404, "trace_not_saved")
    assert "could not be saved" in body["error"] and "OperationalError" in body["error"]
    page = await ds.client.get(pack["trace_url"])
    assert page.status_code == 404 and "could not be saved" in page.text


async def test_a_runs_database_another_program_locked_loses_nothing_quietly(
    brain, fake, monkeypatch
):
    """Writes wait a bounded time for the lock (``runs_db.WRITE_WAIT_MS``), then a promotion
    writes neither its source rows nor their provenance, and says so; once the lock is gone
    it goes through."""
    from datasette_dbrain_websearch import runs_db

    monkeypatch.setattr(runs_db, "WRITE_WAIT_MS", 50)
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    key = pack["external_evidence"][0]["source_key"]
    sources_before = db_rows(brain[0], "select count(*) as n from sources")[0]["n"]
    with runs_database_locked(ds):
        promoted = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [key]})
    assert promoted.status_code == 503, promoted.text
    assert promoted.json()["code"] == "provenance_not_saved"
    assert promoted.headers["retry-after"] == "2"
    assert db_rows(brain[0], "select count(*) as n from sources")[0]["n"] == sources_before
    retried = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [key]})
    assert retried.status_code == 200 and retried.json()["results"][0]["status"] == "created"
    # The wait is the plugin's, on Datasette's shared write connection only while it writes.
    timeout = "pragma busy_timeout"
    plugin_db = runs_db.plugin_database(ds)
    inside = await runs_db.bounded_write(plugin_db, lambda conn: conn.execute(timeout).fetchone())
    after = await plugin_db.execute_write_fn(lambda conn: conn.execute(timeout).fetchone())
    assert (inside[0], after[0]) == (50, 5000)


@contextmanager
def runs_database_locked(ds) -> Iterator[sqlite3.Connection]:
    """Another program's write lock on the plugin's database (``BEGIN EXCLUSIVE``), held for
    the block. The file is WAL: readers go on, writers are refused."""
    from datasette_dbrain_websearch import runs_db

    locker = sqlite3.connect(runs_db.plugin_database(ds).path, isolation_level=None)
    assert locker.execute("pragma journal_mode").fetchone()[0] == "wal"
    locker.execute("begin exclusive")
    try:
        yield locker
    finally:
        if locker.in_transaction:
            locker.execute("rollback")
        locker.close()


def not_saved_warnings(pack: dict) -> list[str]:
    return [w["message"] for w in pack["warnings"] if w["code"] == "trace_not_saved"]


async def test_a_run_answered_while_the_runs_database_is_locked_says_it_was_not_saved(
    ds, monkeypatch
):
    """Issue 31: the answer linked to a run its save, beside the response, could not write.
    Seeing the lock, the run is saved before the answer instead; refused, the answer says so
    and links to no run (no pauses: that wait is for a lock that comes after the look)."""
    from datasette_dbrain_websearch import runs_db

    pauses: list[float] = []

    async def recorded(seconds: float) -> None:
        pauses.append(seconds)

    monkeypatch.setattr(runs_db, "WRITE_WAIT_MS", 0)
    monkeypatch.setattr(traces, "pause_before_retry", recorded)
    run_link = re.compile(r"/-/research/runs/\d{8}T")
    with runs_database_locked(ds):
        response = await ds.client.get("/-/research.json", params={"q": "espresso"})
        page = await ds.client.get("/-/research", params={"q": "espresso"})
    pack = response.json()
    assert response.status_code == 200 and pack["evidence"]
    assert "trace_url" not in pack
    (message,) = not_saved_warnings(pack)
    assert "another program holds it locked" in message
    assert page.status_code == 200
    assert 'data-code="trace_not_saved"' in page.text and not run_link.search(page.text)
    assert pauses == []
    # The lock gone, the next run is saved beside its answer, and its link works.
    again = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    assert not not_saved_warnings(again)
    link = await ds.client.get(again["trace_url"] + ".json")
    assert link.status_code == 200, link.text
    page = await ds.client.get("/-/research", params={"q": "espresso"})
    assert "trace_not_saved" not in page.text and run_link.search(page.text)


async def test_a_lock_taken_after_the_look_is_waited_out_beside_the_answer(ds, monkeypatch):
    """The rare lock that comes between the look (``write_locked``) and the save beside the
    response: the answer already links to the run, so the save tries again after a pause
    (injected here: the other program lets go during it) and the link works."""
    from datasette_dbrain_websearch import runs_db

    monkeypatch.setattr(runs_db, "WRITE_WAIT_MS", 0)
    monkeypatch.setattr(traces, "write_locked", lambda db: False)
    pauses: list[float] = []
    with runs_database_locked(ds) as locker:

        async def lock_released(seconds: float) -> None:
            pauses.append(seconds)
            locker.execute("rollback")

        monkeypatch.setattr(traces, "pause_before_retry", lock_released)
        pack = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    assert pack["evidence"] and not not_saved_warnings(pack)
    assert pauses == [traces.SAVE_RETRY_PAUSES_S[0]]  # refused once, saved at the next try
    link = await ds.client.get(pack["trace_url"] + ".json")
    assert link.status_code == 200, link.text


async def test_while_a_save_waits_out_a_lock_the_next_run_says_it_was_not_saved(ds, monkeypatch):
    """A save of ours retrying behind another program's lock is that lock seen: the next run
    does not save beside its answer (its link would be dead) but before it, and says so."""
    from datasette_dbrain_websearch import runs_db

    monkeypatch.setattr(runs_db, "WRITE_WAIT_MS", 0)
    monkeypatch.setattr(traces, "write_locked", lambda db: False)  # the look missed it
    retrying, release = asyncio.Event(), asyncio.Event()

    async def held(seconds: float) -> None:
        retrying.set()
        await release.wait()

    monkeypatch.setattr(traces, "pause_before_retry", held)
    with runs_database_locked(ds) as locker:
        # The request ends once its run is saved: it is answered, then waits with its save.
        asked = asyncio.create_task(ds.client.get("/-/research.json", params={"q": "espresso"}))
        await retrying.wait()
        second = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
        locker.execute("rollback")
    release.set()
    first = (await asked).json()
    assert "trace_url" in first  # saved, after waiting
    assert (await ds.client.get(first["trace_url"] + ".json")).status_code == 200
    assert "trace_url" not in second and not_saved_warnings(second)


async def test_the_look_at_the_lock_tries_it_without_waiting(ds):
    """``write_locked``: free, held by another program, free again; our own write under way
    is no other program's lock (the answer's save waits its turn beside the answer); and the
    look never keeps the lock (a write right after it goes through without waiting)."""
    from datasette_dbrain_websearch import runs_db

    db = runs_db.plugin_database(ds)
    assert not runs_db.write_locked(db)
    with runs_database_locked(ds):
        assert runs_db.write_locked(db)
    assert not runs_db.write_locked(db)

    def looked_while_writing(conn: sqlite3.Connection) -> tuple[bool, bool]:
        with conn:
            conn.execute(f"delete from {runs_db.FEEDBACK_TABLE} where 0")
            return conn.in_transaction, runs_db.write_locked(db)

    assert await runs_db.bounded_write(db, looked_while_writing) == (True, False)
    other = sqlite3.connect(db.path, isolation_level=None, timeout=0)
    other.execute("begin immediate")
    other.execute("rollback")
    other.close()


async def test_a_write_of_ours_waiting_on_another_programs_lock_does_not_hide_it(ds, monkeypatch):
    """A save of ours that began before another program took the lock waits for it (up to
    WRITE_WAIT_MS): a refusal then is that program's, not our write's, once ours has been
    under way for longer than our writes take (OWN_WRITE_S, on the injected clock)."""
    from datasette_dbrain_websearch import runs_db

    db = runs_db.plugin_database(ds)
    now = [100.0]
    monkeypatch.setattr(runs_db, "clock", lambda: now[0])

    def looked(conn: sqlite3.Connection, after: float) -> bool:
        with conn:
            conn.execute(f"delete from {runs_db.FEEDBACK_TABLE} where 0")
            now[0] += after
            return runs_db.write_locked(db)

    assert await runs_db.bounded_write(db, lambda conn: looked(conn, 0.001)) is False
    assert await runs_db.bounded_write(db, lambda conn: looked(conn, 0.5)) is True


async def test_the_bounded_wait_covers_the_start_of_the_write(ds):
    """The lock is waited for when the write begins its transaction; Datasette 1.0 begins it
    before the plugin's function runs, so the bounded wait must already be set then."""
    from datasette_dbrain_websearch import runs_db

    db = runs_db.plugin_database(ds)
    statements: list[str] = []
    await db.execute_write_fn(lambda conn: conn.set_trace_callback(statements.append))
    await runs_db.bounded_write(
        db, lambda conn: conn.execute(f"delete from {runs_db.FEEDBACK_TABLE} where 0")
    )
    statements = list(statements)  # what the write ran, before anything else is traced
    await db.execute_write_fn(lambda conn: conn.set_trace_callback(None))
    wait = f"pragma busy_timeout = {runs_db.WRITE_WAIT_MS}"
    begins = [i for i, s in enumerate(statements) if s.upper().startswith("BEGIN")]
    restored = max(i for i, s in enumerate(statements) if s.startswith("pragma busy_timeout ="))
    assert begins and wait in statements, statements
    assert all(statements.index(wait) < i < restored for i in begins), statements
