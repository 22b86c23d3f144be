"""A brain another program has locked, deleted or replaced, through HTTP on both Datasette
lines: a 503 that says so, quickly, never a 500."""

from __future__ import annotations

import os
import sqlite3

import pytest

from datasette_dbrain_websearch import brain_access, brain_stage, service
from datasette_dbrain_websearch.brain_access import BUSY_WAIT_MS, reader
from datasette_dbrain_websearch.errors import BUSY_MESSAGE, ResearchError

from ..helpers import actor_cookies, build_fixture_brain, csrf, promoting_ds, web_run


@pytest.fixture
def locked(brain, monkeypatch):
    """Another program writing to the brain: a second connection holding BEGIN EXCLUSIVE,
    in a process that has not seen the brain yet (``service._BRAINS``)."""
    monkeypatch.setattr(service, "_BRAINS", {})
    conn = sqlite3.connect(brain[0], isolation_level=None)
    conn.execute("begin exclusive")
    yield
    conn.execute("rollback")
    conn.close()


async def test_a_locked_brain_is_a_503_that_says_so_quickly(ds, brain, locked, monkeypatch):
    # Every brain query waits BUSY_WAIT_MS for the lock (Datasette alone: 5 s, then a 500).
    waits = await reader(ds.get_database("brain"))(
        lambda conn: conn.execute("pragma busy_timeout").fetchone()[0]
    )
    assert waits == BUSY_WAIT_MS == 1000
    monkeypatch.setattr(brain_access, "BUSY_WAIT_MS", 50)  # the same answers, sooner
    for path in ("/-/research.json", "/brain/-/research.json"):
        response = await ds.client.get(path, params={"q": "espresso"})
        assert response.status_code == 503
        assert response.headers["retry-after"] == "2"
        assert response.json() == {
            "ok": False,
            "error": BUSY_MESSAGE,
            "errors": [BUSY_MESSAGE],
            "status": 503,
            "code": "brain_busy",
        }
    for path in ("/-/research", "/-/research/runs"):
        page = await ds.client.get(path, params={"q": "espresso"})
        assert page.status_code == 503 and BUSY_MESSAGE in page.text
        assert page.headers["retry-after"] == "2"
    stream = await ds.client.get("/-/research/stream", params={"q": "espresso"})
    assert '"code": "brain_busy"' in stream.text


async def test_a_brain_seen_before_its_lock_still_lists_its_runs(ds, brain, monkeypatch):
    """Whether a file is a brain is remembered by its version: once seen, the runs list (the
    plugin's own database) answers while another program holds the brain; research waits for
    the lock and says it is busy."""
    monkeypatch.setattr(brain_access, "BUSY_WAIT_MS", 50)
    assert (await ds.client.get("/-/research/runs")).status_code == 200
    conn = sqlite3.connect(brain[0], isolation_level=None)
    conn.execute("begin exclusive")
    try:
        assert (await ds.client.get("/-/research/runs")).status_code == 200
        busy = await ds.client.get("/-/research.json", params={"q": "espresso"})
        assert busy.status_code == 503 and busy.json()["code"] == "brain_busy"
    finally:
        conn.execute("rollback")
        conn.close()


async def test_a_locked_brain_costs_the_page_one_wait_as_the_json(ds, locked, monkeypatch):
    """Issue 31: the page waited twice for a locked brain (2 s against the JSON's 1 s): once to
    find the brains, once more for the menu of its 503 page. Whether a database is a brain is
    now asked once per request; each path meets the lock once."""
    from contextlib import contextmanager

    real = brain_access.brief_busy_wait
    waited: list[str] = []

    @contextmanager
    def counted(conn, database):
        try:
            with real(conn, database):
                yield
        except ResearchError:
            waited.append(database)
            raise

    monkeypatch.setattr(brain_access, "BUSY_WAIT_MS", 50)
    monkeypatch.setattr(brain_access, "brief_busy_wait", counted)
    for path in ("/-/research.json", "/-/research"):
        waited.clear()
        response = await ds.client.get(path, params={"q": "espresso"})
        assert response.status_code == 503
        assert waited == ["brain"], path


async def test_a_brain_locked_mid_run_is_a_503(ds, brain, monkeypatch):
    monkeypatch.setattr(brain_access, "BUSY_WAIT_MS", 50)  # the same answer, sooner
    real = brain_stage.retrieve

    def retrieve_then_lock(conn, *args, **kwargs):
        other = sqlite3.connect(brain[0], isolation_level=None)
        other.execute("begin exclusive")
        try:
            return real(conn, *args, **kwargs)
        finally:
            other.execute("rollback")
            other.close()

    monkeypatch.setattr(brain_stage, "retrieve", retrieve_then_lock)
    response = await ds.client.get("/-/research.json", params={"q": "espresso"})
    assert response.status_code == 503 and response.json()["code"] == "brain_busy"


def replace_brain(path, empty: bool) -> None:
    """``mv new.db brain.db`` while Datasette serves brain.db (a new inode at the path)."""
    new = path.with_name("new.db")
    build_fixture_brain(new)
    if empty:
        conn = sqlite3.connect(new)
        with conn:
            conn.execute("delete from sources_fts")
            conn.execute("delete from sources")
        conn.close()
    os.replace(new, path)


@pytest.mark.parametrize("change", ["replaced", "deleted"])
async def test_a_replaced_or_deleted_brain_is_a_503_telling_the_operator(brain, fake, change):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    assert (await ds.client.get("/-/research.json", params={"q": "espresso"})).status_code == 200
    if change == "replaced":
        replace_brain(brain[0], empty=True)
    else:
        os.remove(brain[0])
    response = await ds.client.get("/-/research.json", params={"q": "espresso"})
    assert response.status_code == 503, response.text
    body = response.json()
    assert body["code"] == "brain_replaced"
    assert "restart Datasette" in body["error"] and str(brain[0]) not in body["error"]
    page = await ds.client.get("/-/research", params={"q": "espresso"})
    assert page.status_code == 503 and "restart Datasette" in page.text
    cookies, headers, _ = await csrf(ds, actor_cookies(ds, "root"))
    promoted = await ds.client.post(
        "/-/research/promote",
        json={
            "run_id": pack["run_id"],
            "source_keys": [pack["external_evidence"][0]["source_key"]],
        },
        cookies=cookies,
        headers=headers,
    )
    assert promoted.status_code == 503 and promoted.json()["code"] == "brain_replaced"
    assert "readonly" not in promoted.text
