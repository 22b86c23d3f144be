"""The runs database (the plugin's own SQLite file) when it cannot be written: a read-only
filesystem, a failed save, another program's lock. Research still answers, nothing is lost
quietly, a run's link says whether it was saved, and writes wait a bounded time."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from datasette_dbrain_websearch import traces

from ..helpers import actor_cookies, db_rows, make_datasette, post_json, promoting_ds, web_run


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
