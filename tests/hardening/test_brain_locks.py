"""Hostile requests and a hostile environment, through HTTP on both Datasette lines: bodies
larger than the cap (chunked), multipart forms with cookies, a brain another program has
locked, deleted or replaced, and expensive raw FTS5 questions. None may produce a 500."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading

import pytest

from datasette_dbrain_websearch import brain_access, cost, pipeline, service
from datasette_dbrain_websearch.brain_access import BUSY_WAIT_MS, reader
from datasette_dbrain_websearch.errors import BUSY_MESSAGE, ResearchError
from datasette_dbrain_websearch.views.common import MAX_BODY

from .helpers import (
    actor_cookies,
    build_fixture_brain,
    csrf,
    make_datasette,
    promoting_ds,
    web_run,
)

CHUNK = 64 * 1024


class Flood:
    """A chunked request body of ``total`` bytes that counts how much the server pulled."""

    def __init__(self, total: int = 200 * 1024 * 1024) -> None:
        self.total = total
        self.sent = 0

    async def __aiter__(self):
        while self.sent < self.total:
            self.sent += CHUNK
            yield b"x" * CHUNK


async def test_a_chunked_body_over_the_cap_is_refused_as_soon_as_it_passes(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    anonymous = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    root_cookies, root_headers, _ = await csrf(ds, actor_cookies(ds, "root"))
    for path, cookies, headers in (
        ("/-/research/promote", root_cookies, root_headers),
        (f"/-/research/runs/{pack['run_id']}/feedback", root_cookies, root_headers),
        (f"/-/research/runs/{anonymous['run_id']}/feedback", root_cookies, root_headers),
    ):
        flood = Flood()
        response = await ds.client.post(
            path,
            content=flood,
            cookies=cookies,
            headers={**headers, "content-type": "application/json"},
        )
        assert response.status_code == 413, (path, response.text)
        assert response.json()["code"] == "too_large"
        assert "content-length" not in response.request.headers  # chunked
        assert flood.sent <= MAX_BODY + 2 * CHUNK, (path, flood.sent)


async def test_a_form_over_the_cap_is_a_413_page(ds):
    pack = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    flood = Flood(4 * MAX_BODY)
    response = await ds.client.post(
        pack["trace_url"] + "/feedback",
        content=flood,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    # Marks are the run's owner's: a visitor without its cookie is refused before any is read.
    assert response.status_code == 404 and flood.sent <= 2 * CHUNK


async def test_a_form_over_the_cap_with_cookies_is_refused_before_anyone_reads_it(ds):
    """On 0.65 asgi-csrf reads a cookie-bearing form body whole before any view runs: the cap
    must hold before it, on both lines."""
    pack = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    # No token header: asgi-csrf looks for the form's csrftoken field in the body itself.
    cookies, _, _ = await csrf(ds, actor_cookies(ds, "root"))
    flood = Flood()
    response = await ds.client.post(
        pack["trace_url"] + "/feedback",
        content=flood,
        cookies=cookies,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 413 and "too large" in response.text
    assert flood.sent <= MAX_BODY + 2 * CHUNK


MULTIPART = {"files": {"upload": ("notes.txt", b"hello")}, "data": {"mark": "x|relevant"}}


@pytest.mark.parametrize(
    "cookie", ["actor", "csrftoken"], ids=["ds_actor cookie", "ds_csrftoken cookie"]
)
async def test_multipart_posts_with_cookies_are_never_a_500(brain, fake, cookie):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    cookies = (
        actor_cookies(ds, "root")
        if cookie == "actor"
        else (await csrf(ds, actor_cookies(ds, "root")))[0]
    )
    for path in (
        "/-/research/promote",
        f"/-/research/runs/{pack['run_id']}/feedback",
        "/brain",  # a plain Datasette page
        "/-/research",
    ):
        response = await ds.client.post(path, cookies=cookies, **MULTIPART)
        assert response.status_code < 500, (path, response.status_code)
        bare = await ds.client.post(
            path,
            content=b"--x\r\n\r\n",
            cookies=cookies,
            headers={"content-type": "multipart/form-data"},  # no boundary
        )
        assert bare.status_code < 500, (path, bare.status_code)
        latin = await ds.client.post(
            path,
            content="q=caf\xe9".encode("latin-1"),
            cookies=cookies,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert latin.status_code < 500, (path, latin.status_code)


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
    real = pipeline.retrieve

    def retrieve_then_lock(conn, *args, **kwargs):
        other = sqlite3.connect(brain[0], isolation_level=None)
        other.execute("begin exclusive")
        try:
            return real(conn, *args, **kwargs)
        finally:
            other.execute("rollback")
            other.close()

    monkeypatch.setattr(pipeline, "retrieve", retrieve_then_lock)
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


async def test_heavy_questions_take_turns_and_are_limited_per_requester(brain, monkeypatch):
    """Heavy questions (here raw ones with three-letter prefixes) run one at a time; each
    requester has one in flight; light questions never wait behind them."""
    ds = make_datasette([str(brain[0])], settings={"num_sql_threads": 3})
    await ds.invoke_startup()
    real = pipeline.retrieve
    inside = threading.Semaphore(0)
    release = threading.Event()

    def slow_raw(conn, question, plan, *args, **kwargs):
        if plan.syntax == "raw":
            inside.release()
            release.wait(10)
        return real(conn, question, plan, *args, **kwargs)

    monkeypatch.setattr(pipeline, "retrieve", slow_raw)
    alice, bob = actor_cookies(ds, "alice"), actor_cookies(ds, "bob")
    heavy = {"q": "esp* OR gri*", "syntax": "raw"}

    async def ask(cookies, params=heavy):
        return await ds.client.get("/-/research.json", params=params, cookies=cookies)

    first = asyncio.create_task(ask(alice))
    assert await asyncio.to_thread(inside.acquire, True, 10)
    try:
        refused = await ask(alice)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "2"
        assert refused.json()["code"] == "too_many_costly_searches"
        assert "costly: a prefix of three characters" in refused.json()["error"]
        page = await ds.client.get("/-/research", params=heavy, cookies=alice)
        assert page.status_code == 429 and "costly search running" in page.text
        light = await ask(alice, {"q": "espresso"})  # a light question does not wait
        assert light.status_code == 200
        queued = [asyncio.create_task(ask(cookies)) for cookies in (bob, {})]
        await asyncio.sleep(0.05)
        assert not inside.acquire(False)  # bob and the anonymous visitor wait their turn
        assert (await ask({})).status_code == 429  # one per address
    finally:
        release.set()
    for task in [first, *queued]:
        assert (await task).status_code == 200
    assert (await ask(alice)).status_code == 200  # turns come back


async def test_a_one_letter_prefix_is_refused_before_it_runs(ds):
    response = await ds.client.get("/-/research.json", params={"q": "a* OR b*", "syntax": "raw"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "prefix_too_short" and '"a*"' in body["error"]


async def test_a_raw_query_too_costly_by_construction_is_refused_at_once(ds):
    """Issue 31: 3,000 words OR-ed in a raw query ran into its time limit (7 s against 3 s) and
    came back 503 "try again": it never would fit. It is a 400 naming the limit, before any
    posting is read; 64 words still run."""
    many = " OR ".join(f"word{n}" for n in range(1000))
    response = await ds.client.get("/-/research.json", params={"q": many, "syntax": "raw"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "too_many_terms" and "at most 64 words" in body["error"]
    assert "retry-after" not in response.headers
    fits = " OR ".join(["espresso", *(f"word{n}" for n in range(63))])
    response = await ds.client.get("/-/research.json", params={"q": fits, "syntax": "raw"})
    assert response.status_code == 200 and response.json()["evidence"]


async def test_a_question_of_many_common_words_is_narrowed(ds, monkeypatch):
    """Over the postings budget, the commonest terms leave the ranking query (and say so);
    the rows are still judged on every word."""
    question = "espresso grinder burrs review"
    whole = (await ds.client.get("/-/research.json", params={"q": question})).json()
    assert whole["query_plan"]["narrowed_terms"] == []
    monkeypatch.setattr(cost, "postings_budget", lambda rows: 1)
    narrowed = (await ds.client.get("/-/research.json", params={"q": question})).json()
    dropped = narrowed["query_plan"]["narrowed_terms"]
    kept = [t for t in whole["query_plan"]["query_terms"] if t not in dropped]
    assert len(kept) == 1 and dropped
    assert all(f'"{t}' not in narrowed["query_plan"]["match_query"] for t in dropped)
    assert f'"{kept[0]}' in narrowed["query_plan"]["match_query"]
    warning = next(w for w in narrowed["warnings"] if w["code"] == "query_narrowed")
    assert all(t in warning["message"] for t in dropped)
    assert narrowed["query_plan"]["query_terms"] == whole["query_plan"]["query_terms"]
