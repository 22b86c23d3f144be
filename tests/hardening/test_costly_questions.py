"""Expensive questions, through HTTP: heavy ones take turns and are limited per requester,
raw FTS5 questions too costly by construction are refused before they run, and a question
of many common words is narrowed."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

from datasette_dbrain_websearch import brain_stage, cost, service
from datasette_dbrain_websearch.admission import LONG_RUNS, gate_for
from datasette_dbrain_websearch.requesters import requester_of

from ..helpers import actor_cookies, make_datasette


def held_raw(monkeypatch) -> tuple[threading.Semaphore, threading.Event]:
    """Raw questions held inside the brain search until ``release`` is set; ``inside`` is
    released as each one gets there."""
    real = brain_stage.retrieve
    inside = threading.Semaphore(0)
    release = threading.Event()

    def slow_raw(conn, question, plan, *args, **kwargs):
        if plan.syntax == "raw":
            inside.release()
            release.wait(10)
        return real(conn, question, plan, *args, **kwargs)

    monkeypatch.setattr(brain_stage, "retrieve", slow_raw)
    return inside, release


async def test_heavy_questions_take_turns_and_are_limited_per_requester(brain, monkeypatch):
    """Heavy questions (here raw ones with three-letter prefixes) run one at a time; each
    requester has one in flight; light questions never wait behind them."""
    ds = make_datasette([str(brain[0])], settings={"num_sql_threads": 3})
    await ds.invoke_startup()
    inside, release = held_raw(monkeypatch)
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
        gate = gate_for(ds)
        for _ in range(1000):  # a bound on polling, not a duration asserted
            if len(gate.waiting) == 2:
                break
            await asyncio.sleep(0.01)
        # Bob and the anonymous visitor wait their turn at the gate, neither running.
        waiting = [w.requester for w in gate.waiting]
        assert len(waiting) == 2 and "actor:bob" in waiting, waiting
        assert not inside.acquire(False)
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


async def test_deep_and_pro_runs_are_limited_per_requester(brain, monkeypatch):
    """Each deep or pro run spends provider calls, page reads and model calls over rounds: a
    requester has at most ``LONG_RUNS`` going (429 with Retry-After past them, before anything
    is spent); another requester is not held up by them, and a place frees when a run ends."""
    ds = make_datasette([str(brain[0])])
    await ds.invoke_startup()
    real = service.run_deep
    started = asyncio.Semaphore(0)
    release = asyncio.Event()
    ran: list[str] = []

    async def held(request, context):
        ran.append(context.requester)
        started.release()
        await release.wait()
        return await real(request, context)

    monkeypatch.setattr(service, "run_deep", held)
    alice, bob = actor_cookies(ds, "alice"), actor_cookies(ds, "bob")
    deep = {"q": "espresso", "depth": "deep"}

    async def ask(cookies, **params):
        return await ds.client.get("/-/research.json", params={**deep, **params}, cookies=cookies)

    going = [asyncio.create_task(ask(alice)) for _ in range(LONG_RUNS)]
    for _ in going:
        await asyncio.wait_for(started.acquire(), 10)
    try:
        refused = await ask(alice)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "2"
        assert refused.json()["code"] == "too_many_deep_runs"
        pro = await ask(alice, depth="", strategy="pro")
        assert (pro.status_code, pro.json()["code"]) == (429, "too_many_deep_runs")
        assert ran == ["actor:alice"] * LONG_RUNS  # the refused ones never started
        light = await ds.client.get("/-/research.json", params={"q": "espresso"}, cookies=alice)
        assert light.status_code == 200  # a quick question is not a long run
        other = asyncio.create_task(ask(bob))
        await asyncio.wait_for(started.acquire(), 10)
        assert ran[-1] == "actor:bob"
    finally:
        release.set()
    assert [r.status_code for r in await asyncio.gather(*going, other)] == [200] * (LONG_RUNS + 1)
    assert (await ask(alice)).status_code == 200  # a place is free again


async def test_a_forwarded_for_header_escapes_no_per_address_limit(brain, monkeypatch):
    """Anyone who reaches Datasette directly can write ``X-Forwarded-For`` (uvicorn believes it
    from loopback): unless the config trusts a proxy to set it, requests carrying it share one
    requester, so a new address in it per request gets no new heavy question in flight."""
    ds = make_datasette([str(brain[0])], settings={"num_sql_threads": 3})
    await ds.invoke_startup()
    inside, release = held_raw(monkeypatch)
    heavy = {"q": "esp* OR gri*", "syntax": "raw"}

    async def ask(forwarded):
        headers = {"x-forwarded-for": forwarded}
        return await ds.client.get("/-/research.json", params=heavy, headers=headers)

    first = asyncio.create_task(ask("203.0.113.1"))
    assert await asyncio.to_thread(inside.acquire, True, 10)
    try:
        for address in ("203.0.113.2", "198.51.100.7", "2001:db8::1"):
            refused = await ask(address)
            assert (refused.status_code, refused.json()["code"]) == (
                429,
                "too_many_costly_searches",
            )
    finally:
        release.set()
    assert (await first).status_code == 200


def test_a_trusted_proxys_forwarded_address_is_the_requester():
    # As the server hands the request on, the address taken from the header.
    request = SimpleNamespace(
        actor=None,
        headers={"x-forwarded-for": "203.0.113.9"},
        scope={"client": ("203.0.113.9", 4321)},
    )
    assert requester_of(request, trust_forwarded_for=True) == "address:203.0.113.9"
    assert requester_of(request) == "forwarded"
    request.actor = {"id": "alice"}  # a signed-in person is counted by name either way
    assert requester_of(request) == "actor:alice"
