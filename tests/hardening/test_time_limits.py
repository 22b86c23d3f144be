"""Time limits that hold (issue 31): ``time_limit_ms`` bounds every phase of a run, and running
out says whether the question is too costly in itself (400) or load made it slow (503).

Every decision is asserted with injected clocks (``Clocks``): the run's wall and CPU clocks
move only when a test says the run computed or waited, so no test depends on this machine's
speed or asserts a wall-clock duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch import brain_access, brain_stage, pipeline, semantic, web_part
from datasette_dbrain_websearch.admission import gate_for
from datasette_dbrain_websearch.answer import stage
from datasette_dbrain_websearch.brain_access import (
    COSTLY_SHARE,
    TimeBudget,
    out_of_time,
    paced,
)
from datasette_dbrain_websearch.cost import MAX_QUESTION_WORDS, Cost
from datasette_dbrain_websearch.errors import ResearchError
from datasette_dbrain_websearch.views import research as research_view

from ..helpers import actor_cookies, add_item, make_datasette, web_config

LIMIT_MS = 5000
LIMIT_S = LIMIT_MS / 1000
COUNT = "with recursive c(x) as (select 1 union all select x + 1 from c limit 200000) "
COUNT += "select count(*) from c"


class Clocks:
    """A run's wall and CPU clocks, moved by the test: ``compute`` (the run's own work, on the
    CPU for ``cpu_share`` of it) and ``wait`` (load: the wall clock only). With ``tick``, each
    read of the wall clock is that much more computing (a checkpoint's work)."""

    def __init__(self, tick: float = 0.0, cpu_share: float = 1.0) -> None:
        self.wall = self.cpu = 0.0
        self.tick, self.cpu_share = tick, cpu_share

    def compute(self, seconds: float, cpu_share: float | None = None) -> None:
        self.wall += seconds
        self.cpu += seconds * (self.cpu_share if cpu_share is None else cpu_share)

    def wait(self, seconds: float) -> None:
        self.wall += seconds

    def read_wall(self) -> float:
        if self.tick:
            self.compute(self.tick)
        return self.wall

    def budget(self, limit_ms: int, database: str, arrived: float | None = None) -> TimeBudget:
        return TimeBudget(limit_ms, database, clock=self.read_wall, cpu_clock=lambda: self.cpu)


@pytest.fixture
def clocks(monkeypatch) -> Clocks:
    """Every run's budget on the test's clocks."""
    found = Clocks()
    monkeypatch.setattr(pipeline, "TimeBudget", found.budget)
    return found


async def limited(brain: tuple[Path, Any], **config: Any):
    ds = make_datasette([str(brain[0])], plugin_config={"time_limit_ms": LIMIT_MS, **config})
    await ds.invoke_startup()
    return ds


def slowed(monkeypatch, owner: Any, name: str, clocks: Clocks, seconds: float, **how) -> None:
    """``owner.name`` computing for ``seconds`` of the test's clocks each time it is called."""
    real = getattr(owner, name)

    def slow(*args: Any, **kwargs: Any) -> Any:
        clocks.compute(seconds, **how)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, slow)


def assert_costly(response: Any) -> None:
    """Too costly in itself: a 400 naming the limit, no Retry-After (asking again will not
    help), saying how to narrow the question."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "exceeds_time_limit" and f"{LIMIT_MS:,} ms" in body["error"]
    assert "Narrow it" in body["error"]
    assert "retry-after" not in response.headers


def assert_load(response: Any) -> None:
    """Slowed by load: a 503 with Retry-After."""
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "time_limit"
    assert response.headers["retry-after"] == str(brain_access.TIME_LIMIT_RETRY_SECONDS)


# The decision, pure: (limit, wall, cpu, queued) in ms -> 400 or 503.


@pytest.mark.parametrize(
    "wall_ms, cpu_ms, queued_ms, status",
    [
        (1000, 1000, 0, 400),  # computed the whole limit, nothing else ran: too costly
        (1100, 1050, 30, 400),  # stopped a little past the limit, a short wait: still its own
        (1000, 800, 0, 400),  # COSTLY_SHARE of the limit on the CPU
        (1000, 790, 0, 503),  # less: the CPU was shared, it may fit on a calmer server
        (1000, 300, 0, 503),  # starved: its wall time far above its computing
        (1000, 0, 1000, 503),  # waited the whole limit for a turn
        (1100, 850, 250, 503),  # computed most of the limit, but only after waiting its turn
        (1100, 850, 199, 400),  # a wait under the rest of COSTLY_SHARE does not change it
    ],
)
def test_running_out_is_too_costly_or_load_by_cpu_and_queue(wall_ms, cpu_ms, queued_ms, status):
    error = out_of_time(1000, wall_ms, cpu_ms, queued_ms)
    assert error.status == status
    if status == 400:
        assert error.code == "exceeds_time_limit" and error.retry_after is None
        assert "1,000 ms" in error.message and "Narrow it" in error.message
    else:
        assert error.code == "time_limit" and error.retry_after == 2
        assert "try again" in error.message


def test_the_share_that_makes_a_question_costly():
    assert out_of_time(100, 100, COSTLY_SHARE * 100, 0).status == 400
    assert out_of_time(100, 100, COSTLY_SHARE * 100 - 0.01, 0).status == 503


# The budget: one deadline, phases, pauses and waits, on injected clocks.


def test_a_query_is_stopped_at_the_first_progress_call_past_the_deadline():
    """The progress handler reads the budget's clock: the query computing 1 ms per call is cut
    at the first call past 50 ms, then the decision reads its CPU (all its own: a 400)."""
    clocks = Clocks(tick=0.001)
    budget = clocks.budget(50, "x")
    conn = sqlite3.connect(":memory:")
    with pytest.raises(ResearchError) as raised:
        budget.run(conn, lambda c: c.execute(COUNT).fetchone())
    assert raised.value.code == "exceeds_time_limit"
    assert 0.050 < clocks.wall <= 0.053  # the cutting call, and the phase's closing reads
    assert conn.execute("select 1").fetchone() == (1,)  # the handler is gone afterwards


def test_a_starved_query_is_a_503():
    clocks = Clocks(tick=0.001, cpu_share=0.25)  # three quarters of its time, others ran
    with pytest.raises(ResearchError) as raised:
        clocks.budget(50, "x").run(
            sqlite3.connect(":memory:"), lambda c: c.execute(COUNT).fetchone()
        )
    assert raised.value.code == "time_limit" and raised.value.status == 503


def test_phases_share_one_deadline_and_pauses_are_not_charged():
    clocks = Clocks()
    budget = clocks.budget(1000, "x")
    with budget.phase():
        clocks.compute(0.6)
    with budget.paused():  # the web: its own timeout
        clocks.wait(30)
    assert budget.left_s() == pytest.approx(0.4) and budget.cpu_s == pytest.approx(0.6)
    conn = sqlite3.connect(":memory:")
    assert budget.run(conn, lambda c: c.execute("select 1").fetchone()) == (1,)
    with pytest.raises(ResearchError) as raised, budget.phase():
        clocks.compute(0.5)  # together past the limit: stopped as the phase ends
    assert raised.value.code == "exceeds_time_limit"
    with pytest.raises(ResearchError):  # nothing left: the next query never starts
        budget.run(conn, lambda c: pytest.fail("ran"))


async def test_time_waiting_for_a_connection_is_charged_and_is_load():
    """A query that waited in the pool longer than the whole limit is refused before it runs:
    a server busy with costly questions sheds new ones (503) instead of queueing them."""
    clocks = Clocks()
    budget = clocks.budget(100, "x")
    conn = sqlite3.connect(":memory:")

    async def busy_pool(fn):
        clocks.wait(0.2)  # every connection busy for longer than the limit
        return fn(conn)

    with pytest.raises(ResearchError) as raised:
        await budget.bind(busy_pool)(lambda c: pytest.fail("ran"))
    assert (raised.value.code, raised.value.status) == ("time_limit", 503)
    assert budget.queued_s == pytest.approx(0.2)


def test_a_loop_reads_the_clock_every_few_rows():
    reads: list[int] = []
    rows = list(paced(range(10), lambda: reads.append(1), every=4))
    assert rows == list(range(10)) and len(reads) == 3  # before rows 0, 4 and 8


# Through HTTP: every phase under the limit, and the decision each way.

PHASES: dict[str, tuple[Any, str]] = {
    "planning": (brain_stage, "plan_query"),
    "excerpts": (brain_stage, "brain_evidence_row"),
    "judge": (pipeline, "_rule"),
    "extractive answer": (stage, "extract"),
    "verification": (stage, "verify"),
}


@pytest.mark.parametrize("cpu_share, expected", [(1.0, assert_costly), (0.2, assert_load)])
@pytest.mark.parametrize("phase", PHASES)
async def test_every_phase_is_under_the_time_limit(
    brain, clocks, monkeypatch, phase, cpu_share, expected
):
    """A phase outside SQLite that computes past the limit stops the run: a 400 when the run
    computed it (too costly), a 503 when it mostly waited for the CPU (load)."""
    ds = await limited(brain)
    params = {"q": "espresso", "answer": "1"}
    assert (await ds.client.get("/-/research.json", params=params)).status_code == 200
    owner, name = PHASES[phase]
    slowed(monkeypatch, owner, name, clocks, 2 * LIMIT_S, cpu_share=cpu_share)
    expected(await ds.client.get("/-/research.json", params=params))


async def test_the_semantic_lane_is_under_the_time_limit(brain, clocks, monkeypatch):
    result = CliRunner().invoke(cli, ["dbrain-websearch", "index", str(brain[0])])
    if result.exit_code:
        pytest.skip(f"no semantic lane here: {result.output}")
    ds = await limited(brain)
    answered = await ds.client.get("/-/research.json", params={"q": "espresso grinder"})
    lanes = answered.json()["query_plan"]["retrieval_lanes"]
    assert next(x for x in lanes if x["name"] == "semantic")["status"] == "used"
    slowed(monkeypatch, semantic.SemanticLane, "cosines", clocks, 2 * LIMIT_S)
    assert_costly(await ds.client.get("/-/research.json", params={"q": "espresso grinder"}))


async def test_a_loop_over_rows_stops_at_the_first_row_past_the_deadline(
    brain, clocks, monkeypatch
):
    """Excerpts are built row by row, each checked: none is built once the limit is spent."""
    conn = sqlite3.connect(brain[0])
    with conn:
        for n in range(12):
            add_item(conn, f"apple-note:many{n}", "apple_note", title=f"Espresso note {n}")
    conn.close()
    ds = await limited(brain)
    built: list[float] = []
    real = brain_stage.brain_evidence_row

    def row(*args: Any, **kwargs: Any) -> Any:
        clocks.compute(0.3 * LIMIT_S)
        built.append(clocks.wall)
        return real(*args, **kwargs)

    monkeypatch.setattr(brain_stage, "brain_evidence_row", row)
    assert_costly(await ds.client.get("/-/research.json", params={"q": "espresso", "limit": 20}))
    assert len(built) == 4 and built[-2] < LIMIT_S < built[-1]  # the fourth crossed it: stop


async def test_time_on_the_web_is_not_charged(brain, fake, clocks, monkeypatch):
    ds = await limited(brain, **web_config(fake))
    real = web_part.WebStage.run

    async def slow_web(self: Any, *args: Any) -> Any:
        clocks.wait(10 * LIMIT_S)  # the provider took long: its own timeout's business
        return await real(self, *args)

    monkeypatch.setattr(web_part.WebStage, "run", slow_web)
    response = await ds.client.get(
        "/-/research.json",
        params={"q": "lattice qcd", "external": "always", "answer": "1"},
        cookies=actor_cookies(ds, "root"),
    )
    assert response.status_code == 200, response.text
    assert response.json()["external_search"]["providers"] == ["brave"]


async def test_one_time_limit_covers_every_local_query_of_a_run(brain, fake, clocks, monkeypatch):
    """Retrieval uses 60% of the limit and the lookup of web results the brain holds wants
    60% more: together they pass it, so the run stops (each alone would fit)."""
    ds = await limited(brain, **web_config(fake))
    slowed(monkeypatch, brain_stage, "retrieve", clocks, 0.6 * LIMIT_S)
    local_only = await ds.client.get("/-/research.json", params={"q": "espresso"})
    assert local_only.status_code == 200
    slowed(monkeypatch, web_part, "sources_by_url", clocks, 0.6 * LIMIT_S)
    response = await ds.client.get(
        "/-/research.json",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    assert_costly(response)


async def test_a_question_that_waited_for_its_turn_is_load_though_it_computed(
    brain, clocks, monkeypatch
):
    """Every turn taken, the question waits 30% of its limit, then computes 85% of it: past the
    limit, and most of it its own work, but without the wait it would have fit: a 503."""
    ds = await limited(brain)
    gate = gate_for(ds)
    gate.clock = lambda: clocks.wall
    release = asyncio.Event()

    async def hold() -> None:
        async with gate.admit(None, Cost(0), 60, Exception):
            await release.wait()

    holders = [asyncio.create_task(hold()) for _ in range(gate.slots)]
    slowed(monkeypatch, brain_stage, "brain_evidence_row", clocks, 0.85 * LIMIT_S)
    asked = asyncio.create_task(ds.client.get("/-/research.json", params={"q": "espresso"}))
    for _ in range(1000):  # a bound on polling, not a duration asserted
        if gate.waiting:
            break
        await asyncio.sleep(0.01)
    assert gate.waiting, "the question never queued"
    clocks.wait(0.3 * LIMIT_S)
    release.set()
    await asyncio.gather(*holders)
    assert_load(await asked)


def words(count: int) -> str:
    return " ".join(f"espresso{n}" for n in range(count))


async def test_a_question_too_long_by_construction_is_refused_at_once(ds, monkeypatch):
    """Planning reads every word: a question of more than MAX_QUESTION_WORDS words is a 400
    naming the limit before it is planned; one of that many is searched (its first terms)."""
    planned: list[str] = []
    real = brain_stage.plan_query
    monkeypatch.setattr(brain_stage, "plan_query", lambda q, *a: planned.append(q) or real(q, *a))
    response = await ds.client.get("/-/research.json", params={"q": words(MAX_QUESTION_WORDS + 1)})
    assert response.status_code == 400 and "retry-after" not in response.headers
    body = response.json()
    assert (
        body["code"] == "too_many_terms" and f"at most {MAX_QUESTION_WORDS} words" in body["error"]
    )
    assert planned == []
    fits = await ds.client.get("/-/research.json", params={"q": words(MAX_QUESTION_WORDS)})
    assert fits.status_code == 200
    assert "terms_truncated" in [w["code"] for w in fits.json()["warnings"]]


def test_the_limit_starts_when_the_request_arrived():
    """A request that waited before its run (every connection busy finding its brain) has
    used that time: ten seconds after it arrived, a one-second limit is gone, and it was load."""
    budget = TimeBudget(1000, "x", arrived=time.perf_counter() - 10)
    with pytest.raises(ResearchError) as stopped:
        budget.check()
    assert (stopped.value.status, stopped.value.code) == (503, "time_limit")


async def test_a_request_that_waited_before_its_run_is_stopped_as_load(brain, monkeypatch):
    """The research view hands the request's arrival to the run's budget."""
    ds = await limited(brain)
    monkeypatch.setattr(research_view, "arrived_at", lambda request: time.perf_counter() - 10)
    assert_load(await ds.client.get("/-/research.json", params={"q": "espresso"}))


def test_a_query_given_up_on_is_judged_by_what_it_computed_on_its_own_thread():
    """Given up on mid-step (``bind``), a query is too costly when its thread computed most
    of the limit, load when it waited or was starved of the CPU, and load when it never ran."""
    clocks = Clocks()
    costly = clocks.budget(1000, "x")
    clocks.wait(0.05)  # waited for a connection
    with pytest.raises(ResearchError), costly.phase():  # (the phase's end is past the limit)
        clocks.compute(1.1)  # then computed past the limit in one step
        error = costly.overran(submitted=0.0, began=0.05)
    assert (error.status, error.code) == (400, "exceeds_time_limit")
    starved = clocks.budget(1000, "x")
    with pytest.raises(ResearchError), starved.phase():
        clocks.compute(1.1, cpu_share=0.1)  # its thread had the CPU a tenth of the time
        error = starved.overran(submitted=clocks.wall - 1.1, began=clocks.wall - 1.1)
    assert (error.status, error.code) == (503, "time_limit")
    never = clocks.budget(1000, "x")
    clocks.wait(1.1)
    error = never.overran(submitted=clocks.wall - 1.1, began=None)
    assert (error.status, error.code) == (503, "time_limit")
    assert never.queued_s == pytest.approx(1.1)


def test_another_threads_computing_is_read_from_its_own_clock():
    """With the real clocks, the CPU of the thread running the query, read from the loop's:
    a thread that computes shows it, one that sleeps does not."""
    budget = TimeBudget(1000, "x")
    started, stop = threading.Event(), threading.Event()
    threads: list[int] = []

    def work(busy: bool) -> None:
        threads.append(threading.get_ident())
        with contextlib.suppress(ResearchError), budget.phase():
            started.set()
            while not stop.is_set():
                if not busy:
                    stop.wait(0.01)
        started.clear()

    for busy in (True, False):
        worker = threading.Thread(target=work, args=(busy,))
        worker.start()
        started.wait(60)
        spent = time.thread_time()
        while time.thread_time() - spent < 0.05:  # the loop's own computing must not count
            pass
        computed = budget.open_phase_cpu(threads[-1])
        stop.set()
        worker.join(60)
        stop.clear()
        assert (computed > 0.02) is busy, computed
    assert budget.open_phase_cpu(None) == 0.0


class Interruptible(sqlite3.Connection):
    interrupted = 0

    def interrupt(self) -> None:
        type(self).interrupted += 1
        super().interrupt()


async def test_a_query_stuck_in_one_step_is_answered_without_it_and_interrupted():
    """One SQLite step can outlast the deadline (FTS5 reads a prefix's postings in one): the
    run answers at the limit plus ``OVERRUN_SHARE`` of it, interrupts the query and does not
    wait for it. The run's clock is the test's; the step blocks until the test releases it."""
    clocks = Clocks()
    budget = clocks.budget(1000, "x")
    conn = sqlite3.connect(":memory:", check_same_thread=False, factory=Interruptible)
    release = threading.Event()

    def one_long_step(c: sqlite3.Connection) -> None:
        clocks.compute(1.2)  # past the limit inside one step: no progress call stops it
        release.wait(60)

    async def pool(fn):
        return await asyncio.to_thread(fn, conn)

    with pytest.raises(ResearchError) as stopped:
        await budget.bind(pool)(one_long_step)
    assert not release.is_set(), "answered without waiting for the step to end"
    assert (stopped.value.status, stopped.value.code) == (400, "exceeds_time_limit")
    assert Interruptible.interrupted == 1
    release.set()


async def test_every_research_answer_says_how_long_the_server_took(brain):
    """``Server-Timing``: from the request reaching the plugin to its answer, what the time
    limit bounds (a client's own wait for the server to read its request is not in it)."""
    ds = await limited(brain)
    for params in ({"q": "espresso"}, {"q": "x" * 6000}):
        response = await ds.client.get("/-/research.json", params=params)
        name, duration, description = response.headers["server-timing"].split(";")
        assert name == "plugin" and description == 'desc="research"'
        assert 0 < float(duration.removeprefix("dur=")) < LIMIT_MS * 1.1
    assert "server-timing" not in (await ds.client.get("/-/versions.json")).headers
