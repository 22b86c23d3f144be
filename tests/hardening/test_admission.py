"""Admission control (``admission.Gate``) and question costs (``cost``): the decisions, with an
injected clock and no wall-clock deadlines."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import threading

import pytest

from datasette_dbrain_websearch import brain_access, cost
from datasette_dbrain_websearch.admission import (
    RETRY_AFTER_S,
    Gate,
    Turn,
    gate_for,
    requester_key,
)
from datasette_dbrain_websearch.brain_access import TimeBudget
from datasette_dbrain_websearch.cost import Cost
from datasette_dbrain_websearch.errors import ResearchError
from datasette_dbrain_websearch.query_plan import plan_query

from ..helpers import make_datasette

HEAVY = Cost(500_000, True, "test")
ORDINARY = Cost(40_000)
CHEAP = Cost(10)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Expired(Exception):
    pass


class Runner:
    """Searches holding their turn until released, recording the order they got it."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.order: list[str] = []
        self.release: dict[str, asyncio.Event] = {}
        self.turns: dict[str, Turn] = {}

    def start(
        self, name: str, requester: str | None, cost: Cost = HEAVY, wait_s: float = 60
    ) -> asyncio.Task:
        self.release[name] = asyncio.Event()

        async def run() -> float:
            async with self.gate.admit(requester, cost, wait_s, Expired) as turn:
                self.order.append(name)
                self.turns[name] = turn
                await self.release[name].wait()
                return turn.waited_s

        return asyncio.create_task(run())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_question_never_waits_behind_costlier_ones():
    gate = Gate(slots=1)
    runner = Runner(gate)
    tasks = [runner.start("heavy", "a")]
    await settle()
    tasks.append(runner.start("same cost", "b"))
    tasks.append(runner.start("ordinary", "c", ORDINARY))  # the express turn
    await settle()
    assert runner.order == ["heavy", "ordinary"] and len(gate.waiting) == 1
    # The heavy search yields the CPU while a much cheaper one runs; the cheap one never does.
    assert runner.turns["heavy"].should_yield() and not runner.turns["ordinary"].should_yield()
    tasks.append(runner.start("cheap", "d", CHEAP))
    await settle()
    assert runner.order == ["heavy", "ordinary"]  # the express turn is taken: it waits, first
    runner.release["ordinary"].set()
    await settle()
    assert runner.order == ["heavy", "ordinary", "cheap"]
    runner.release["cheap"].set()
    await settle()
    assert not runner.turns["heavy"].should_yield()  # alone again
    runner.release["heavy"].set()
    await settle()
    assert runner.order[-1] == "same cost"
    runner.release["same cost"].set()
    await asyncio.gather(*tasks)
    assert not gate.running and gate.cheapest == float("inf")


async def test_waiters_of_one_cost_go_least_recent_usage_first():
    clock = Clock()
    gate = Gate(slots=1, clock=clock)
    runner = Runner(gate)
    # "busy" ran a search for 10 s a moment ago; "calm" never did.
    async with gate.admit("busy", HEAVY, 60, Expired):
        clock.now += 10
    assert gate.recent_usage("busy") == pytest.approx(10)
    first = runner.start("first", "other")
    await settle()
    later = [runner.start("busy", "busy"), runner.start("calm", "calm")]
    await settle()
    assert runner.order == ["first"] and len(gate.waiting) == 2
    runner.release["first"].set()
    await settle()
    assert runner.order == ["first", "calm"]  # arrived after "busy", served before it
    runner.release["calm"].set()
    runner.release["busy"].set()
    await asyncio.gather(first, *later)
    assert runner.order == ["first", "calm", "busy"]
    clock.now += 30  # usage halves every 30 s
    assert gate.recent_usage("busy") == pytest.approx(5)


async def test_one_heavy_question_per_requester():
    gate = Gate()
    async with gate.admit("alice", HEAVY, 60, Expired):
        with pytest.raises(ResearchError) as refused:
            async with gate.admit("alice", HEAVY, 60, Expired):
                pass
        assert refused.value.status == 429 and refused.value.code == "too_many_costly_searches"
        assert "(this one is costly: test)" in refused.value.message
        assert refused.value.headers()["Retry-After"] == str(RETRY_AFTER_S)
        async with gate.admit("alice", ORDINARY, 60, Expired):  # ordinary ones are not counted
            pass
    async with gate.admit("alice", HEAVY, 60, Expired):  # free again once it finished
        pass
    assert not gate.in_flight


async def test_a_full_queue_sheds_the_costliest_heavy_waiter_until_retry_after():
    clock = Clock()
    gate = Gate(slots=1, queue=2, clock=clock)
    runner = Runner(gate)
    tasks = [runner.start("running", None)]
    await settle()
    costly, costlier = Cost(300_000, True), Cost(200_000, True)
    tasks += [runner.start("heavy", "heavy-user"), runner.start("other", "other", costly)]
    await settle()
    assert len(gate.waiting) == 2
    # A cheaper newcomer takes the place of the costliest waiter, which is shed.
    tasks.append(runner.start("newcomer", "newcomer", costlier))
    await settle()
    shed = tasks[1].exception()
    assert isinstance(shed, ResearchError) and shed.status == 503 and shed.code == "server_busy"
    assert shed.headers()["Retry-After"] == str(RETRY_AFTER_S)
    # A newcomer that would be the costliest waiter is shed itself.
    with pytest.raises(ResearchError) as itself:
        async with gate.admit("late", HEAVY, 60, Expired):
            pass
    assert itself.value.code == "server_busy"
    # Ordinary questions are never shed: this one takes the express turn.
    tasks.append(runner.start("ordinary", "light", ORDINARY))
    await settle()
    assert runner.order == ["running", "ordinary"]
    # Coming back before Retry-After gains nothing: the same answer at once, with the time
    # still to wait, however cheap the question...
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    gate.sleep = sleep
    clock.now += 0.5
    with pytest.raises(ResearchError) as again:
        async with gate.admit("heavy-user", CHEAP, 60, Expired):
            pass
    assert again.value.code == "server_busy" and slept == []
    assert again.value.headers()["Retry-After"] == str(math.ceil(RETRY_AFTER_S - 0.5))
    # ...and asking once more, ignoring it, is answered only when that time is up.
    with pytest.raises(ResearchError) as ignored:
        async with gate.admit("heavy-user", CHEAP, 60, Expired):
            pass
    assert ignored.value.code == "server_busy" and slept == [RETRY_AFTER_S - 0.5]
    for name in ("running", "ordinary", "other", "newcomer"):
        runner.release[name].set()
    await asyncio.gather(tasks[0], *tasks[2:])
    clock.now += RETRY_AFTER_S + 1
    async with gate.admit("heavy-user", HEAVY, 60, Expired):
        pass
    assert not gate.running and not gate.waiting and not gate.in_flight
    assert gate.heavy_running == 0


async def test_a_turn_that_does_not_come_within_the_time_left_is_a_time_limit():
    gate = Gate(slots=1, clock=Clock())
    runner = Runner(gate)
    holder = runner.start("holder", "a", CHEAP)
    await settle()
    with pytest.raises(Expired):
        async with gate.admit("b", HEAVY, 0, Expired):
            pass
    assert not gate.waiting and "b" not in gate.in_flight
    runner.release["holder"].set()
    await holder
    async with gate.admit("b", HEAVY, 0, Expired) as turn:  # a free slot needs no waiting
        assert sum(gate.running.values()) == 1 and turn.waited_s == 0


async def test_a_waiter_that_goes_away_leaves_no_slot_behind():
    gate = Gate(slots=1)
    runner = Runner(gate)
    holder = runner.start("holder", "a")
    await settle()
    gone = runner.start("gone", "b")
    await settle()
    gone.cancel()
    await settle()
    runner.release["holder"].set()
    await holder
    assert not gate.running and not gate.waiting and not gate.in_flight


def test_a_yielding_query_pauses_in_sqlites_progress_handler(monkeypatch):
    pauses: list[float] = []
    this_thread, sleep = threading.get_ident(), brain_access.time.sleep

    def pause(seconds: float) -> None:
        """This test's pauses are recorded; another thread's sleep (time.sleep is global) is
        left to sleep, and not counted."""
        if threading.get_ident() == this_thread:
            pauses.append(seconds)
        else:
            sleep(seconds)

    monkeypatch.setattr(brain_access.time, "sleep", pause)
    conn = sqlite3.connect(":memory:")
    count = "with recursive c(x) as (select 1 union all select x + 1 from c limit 200000) "
    count += "select count(*) from c"
    budget = TimeBudget(60_000, "brain", yielding=lambda: False)
    assert budget.run(conn, lambda c: c.execute(count).fetchone()[0]) == 200000 and not pauses
    budget.yielding = lambda: True
    assert budget.run(conn, lambda c: c.execute(count).fetchone()[0]) == 200000
    assert len(pauses) > 10 and set(pauses) == {brain_access.YIELD_S}


def test_requesters_are_actors_addresses_or_ipv6_networks():
    assert requester_key("alice", "10.0.0.1") == "actor:alice"
    assert requester_key(None, "10.0.0.1") == requester_key(None, "::ffff:10.0.0.1")
    assert requester_key(None, "10.0.0.1") != requester_key(None, "10.0.0.2")
    one, two = requester_key(None, "2001:db8:1:2::1"), requester_key(None, "2001:db8:1:2:ff::9")
    assert one == two == "network:2001:db8:1:2::/64"
    assert requester_key(None, "2001:db8:1:3::1") != one
    assert requester_key(None, "testclient") == "address:testclient"
    assert requester_key(None, None) == "address:"


def test_narrowing_drops_the_commonest_terms_and_keeps_the_rarest():
    frequencies = {"rare": 10, "common": 900, "commonest": 1000, "middling": 300}
    assert cost.narrowed_terms(frequencies, 2220) == ()
    assert cost.narrowed_terms(frequencies, 1300) == ("commonest",)
    assert cost.narrowed_terms(frequencies, 320) == ("commonest", "common")
    assert cost.narrowed_terms(frequencies, 0) == ("commonest", "common", "middling")
    assert cost.postings_budget(10) == cost.POSTINGS_BUDGET
    assert cost.postings_budget(10 * cost.POSTINGS_BUDGET) == 20 * cost.POSTINGS_BUDGET


def test_a_narrowed_plan_leaves_dropped_terms_out_of_the_ranking_only():
    plan = plan_query("espresso grinder review").narrowed(["review"])
    assert '"review"' not in plan.match_query() and '"espresso"' in plan.match_query()
    assert "review" not in plan.all_terms_query()
    assert plan.query_terms == ("espresso", "grinder", "review")
    assert plan.narrowed(["review", "grinder"]).all_terms_query() == ""


def test_raw_costs_come_from_the_query_shape():
    assert cost.raw_prefix_stems('sql* OR "fts five"* OR "x" * OR plain') == ["sql", "five", "x"]
    assert cost.raw_prefix_stems('"e* f*" OR title:tokio OR NEAR(a b, 5)') == []  # quoted: text
    with pytest.raises(ResearchError) as refused:
        cost.raw_cost("sq* OR sqlite", ["sq", "sqlite"])
    assert refused.value.code == "prefix_too_short" and refused.value.status == 400
    with pytest.raises(ResearchError) as many:
        cost.raw_cost("abc* OR bcd* OR cde* OR def* OR efg*", ["abc", "bcd", "cde", "def", "efg"])
    assert many.value.code == "too_many_prefixes" and many.value.status == 400
    assert cost.raw_cost("sql* OR fts", ["sql", "fts"]).heavy
    assert cost.raw_cost("NEAR(sqlite fts, 5)", ["sqlite", "fts"]).heavy
    assert cost.raw_cost("a OR b OR c OR d OR e", list("abcde")).heavy
    assert not cost.raw_cost('sqlite* OR "full text"', ["sqlite", "full", "text"]).heavy
    assert cost.dbrain_cost(["go", "tokio"]).heavy
    assert not cost.dbrain_cost(["tokio", "runtime"]).heavy
    assert cost.counted_cost(cost.HEAVY_POSTINGS + 1).heavy
    assert not cost.counted_cost(cost.HEAVY_POSTINGS).heavy


async def test_a_shed_address_is_refused_before_datasette_routes_its_question(brain, monkeypatch):
    """A cookie-less JSON question from a shed address is answered at the door (the research
    view never runs): first at once with the time left, then, asked again inside it, held
    until it is up. A request with a cookie (it may name someone else) goes the whole way."""
    from datasette_dbrain_websearch.views import research as research_view

    ds = make_datasette([str(brain[0])])
    await ds.invoke_startup()
    views: list[str] = []
    real = research_view.prepare

    async def counted(*args, **kwargs):
        views.append("ran")
        return await real(*args, **kwargs)

    monkeypatch.setattr(research_view, "prepare", counted)
    clock = Clock()
    gate = gate_for(ds)
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(gate, "clock", clock)
    monkeypatch.setattr(gate, "sleep", sleep)
    gate.shed_until["address:127.0.0.1"] = clock.now + 1.5
    first = await ds.client.get("/-/research.json", params={"q": "espresso"})
    assert (first.status_code, first.json()["code"]) == (503, "server_busy")
    assert first.headers["retry-after"] == "2" and slept == []
    again = await ds.client.get("/-/research.json", params={"q": "espresso"})
    assert (again.status_code, again.json()["code"]) == (503, "server_busy")
    assert slept == [1.5] and views == []
    clock.now += 2  # Retry-After is up: asked again, it is answered
    answered = await ds.client.get("/-/research.json", params={"q": "espresso"})
    assert answered.status_code == 200 and views == ["ran"]
