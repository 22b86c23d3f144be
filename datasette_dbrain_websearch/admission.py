"""Admission control: research is admitted by its cost, so ordinary questions stay fast while
others send the costliest questions they can.

Datasette runs every query on a few shared threads; a question that reads a large share of the
brain holds one for up to its ``time_limit_ms``. So, per Datasette, local searches run in turns
(``Gate``), ordered by their estimated cost (``cost``: the postings they read):

- ``slots`` searches run at once (Datasette's ``num_sql_threads`` less one, kept for its own
  pages, promotions and the counts that estimate a question's cost), heavy ones in all but one
  of them; when a heavy one runs, a search that is not heavy and is cheaper than every one
  running may start beside them (the express turn): an ordinary question never waits behind
  heavy ones;
- a running search yields the CPU (it pauses in SQLite's progress handler) while a cheaper one
  runs, so costly searches on every core slow ordinary ones little;
- the others wait: ordinary ones first, the requester that used least time recently first,
  then in order of arrival; then heavy ones, cheapest first. The wait counts against their
  time limit (503 ``time_limit`` when it runs out). At most
  ``queue`` heavy ones wait: then the costliest is shed (503 ``server_busy`` with
  ``Retry-After``) at once, and its requester's next question until then is answered the same
  at once (``Retry-After`` the time left); one asked again after that, ignoring it, is
  answered only when that time is up, so ignoring ``Retry-After`` gains nothing;
- each requester (a signed-in actor, an IPv4 address, or an IPv6 /64 network: one machine holds
  a whole /64) has at most ``PER_REQUESTER`` heavy question in flight (429
  ``too_many_costly_searches``), and at most ``LONG_RUNS`` deep or pro runs (429
  ``too_many_deep_runs``): each spends provider calls, page reads and model calls over many
  rounds, which per-run budgets bound one run at a time only (``Gate.long_run``).

The JSON API, the page, compare, MCP and signed-in agent tool calls count against their
requester; surfaces without one (the CLI, an anonymous agent tool call) take their turn without
per-requester limits. Many addresses sending ordinary questions as fast as they can is a flood;
that is for the proxy in front of Datasette to rate-limit.
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import math
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from .cost import Cost
from .errors import ResearchError

QUEUE = 8
PER_REQUESTER = 1
LONG_RUNS = 2  # deep or pro runs in flight per requester
RETRY_AFTER_S = 2
USAGE_HALF_LIFE_S = 30.0
MAX_REMEMBERED = 10_000  # requesters whose usage is kept before idle ones are forgotten


def requester_key(actor_id: str | None, host: str | None) -> str:
    """Who a request counts against: its actor, else its address (an IPv6 address by its /64,
    the block one machine or home gets)."""
    if actor_id:
        return f"actor:{actor_id}"
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return f"address:{host or ''}"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return f"address:{address.ipv4_mapped}"
        return f"network:{ipaddress.ip_network(f'{address}/64', strict=False)}"
    return f"address:{address}"


def why(cost: Cost | None) -> str:
    """Why a question counts as costly, for the people it is refused to."""
    return f" (this one is costly: {cost.reason})" if cost is not None and cost.reason else ""


def server_busy(cost: Cost | None = None, retry_after: int = RETRY_AFTER_S) -> ResearchError:
    return ResearchError(
        f"The server is busy with other costly searches{why(cost)}; try again in a moment, or "
        "ask a more specific question (rarer words, fewer of them, filters).",
        503,
        "server_busy",
        retry_after=retry_after,
    )


def too_many(cost: Cost) -> ResearchError:
    return ResearchError(
        f"You already have {PER_REQUESTER} costly search running{why(cost)}; wait for it to "
        "finish, then try again.",
        429,
        "too_many_costly_searches",
        retry_after=RETRY_AFTER_S,
    )


def too_many_long_runs() -> ResearchError:
    return ResearchError(
        f"You already have {LONG_RUNS} deep or pro research runs going; wait for one to "
        "finish, then try again.",
        429,
        "too_many_deep_runs",
        retry_after=RETRY_AFTER_S,
    )


@dataclass
class Turn:
    """A search's turn: what it cost to wait, and whether it should yield the CPU now (read
    from SQLite's progress handler on the query thread)."""

    gate: Gate
    cost: Cost
    waited_s: float = 0.0

    def should_yield(self) -> bool:
        return self.gate.cheapest < self.cost.postings


@dataclass
class _Waiter:
    requester: str | None
    cost: Cost
    usage: float
    order: int
    turn: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())

    @property
    def rank(self) -> tuple[bool, int, float, int]:
        """Ordinary searches first, in turn (least recent usage, then arrival: cheaper ones
        must not starve them); then heavy ones, cheapest first."""
        heavy = self.cost.heavy
        return (heavy, self.cost.postings if heavy else 0, self.usage, self.order)


class Gate:
    """One Datasette's admission state (``gate_for``). ``clock`` is injectable for tests."""

    def __init__(
        self,
        slots: int = 2,
        queue: int = QUEUE,
        per_requester: int = PER_REQUESTER,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self.slots, self.queue, self.per_requester = slots, queue, per_requester
        self.clock, self.sleep = clock, sleep
        self.running: Counter[int] = Counter()  # postings of the searches running
        self.heavy_running = 0
        # The cheapest running search's postings, kept rather than derived: query threads read
        # it (``Turn.should_yield``) while the event loop changes ``running``.
        self.cheapest = math.inf
        self.waiting: list[_Waiter] = []
        self.in_flight: Counter[str] = Counter()  # heavy questions per requester
        self.long_runs: Counter[str] = Counter()  # deep or pro runs per requester
        self.usage: dict[str, tuple[float, float]] = {}  # requester -> (seconds, as of)
        self.shed_until: dict[str, float] = {}
        self.told: set[str] = set()  # shed requesters refused since (``refuse_shed``)
        self._order = itertools.count()

    def recent_usage(self, requester: str | None) -> float:
        """Seconds of searches the requester ran recently (halving every 30 s)."""
        if requester is None or requester not in self.usage:
            return 0.0
        seconds, as_of = self.usage[requester]
        return seconds * math.pow(0.5, (self.clock() - as_of) / USAGE_HALF_LIFE_S)

    def can_start(self, cost: Cost) -> bool:
        """A free slot (heavy searches leave one), or the express turn: beside a heavy search,
        for one that is not heavy and is cheaper than every one running."""
        count = sum(self.running.values())
        if cost.heavy:
            return count < self.slots and self.heavy_running < max(1, self.slots - 1)
        express = self.heavy_running > 0 and cost.postings < self.cheapest
        return count < self.slots or (count == self.slots and express)

    def _start(self, cost: Cost) -> None:
        self.running[cost.postings] += 1
        self.heavy_running += cost.heavy
        self.cheapest = min(self.running)

    def _finish(self, cost: Cost) -> None:
        self.heavy_running -= cost.heavy
        self.running[cost.postings] -= 1
        if not self.running[cost.postings]:
            del self.running[cost.postings]
        self.cheapest = min(self.running, default=math.inf)

    def _charge(self, requester: str | None, seconds: float) -> None:
        if requester is None:
            return
        self.usage[requester] = (self.recent_usage(requester) + seconds, self.clock())
        if len(self.usage) > MAX_REMEMBERED:  # many addresses: forget the idle ones
            now = self.clock()
            self.usage = {r: u for r, u in self.usage.items() if self.recent_usage(r) > 0.01}
            self.shed_until = {r: t for r, t in self.shed_until.items() if t > now}
            self.told &= self.shed_until.keys()

    def shed_left(self, requester: str | None) -> int:
        """Seconds (rounded up) until a requester shed less than ``RETRY_AFTER_S`` ago may ask
        again; 0 when it may now."""
        if requester is None or requester not in self.shed_until:
            return 0
        until = self.shed_until[requester]
        left = until - self.clock()
        if left <= 0:
            del self.shed_until[requester]
            self.told.discard(requester)
            return 0
        return max(1, math.ceil(left))

    async def refuse_shed(self, requester: str | None) -> None:
        """Refuse (503) a requester shed less than ``RETRY_AFTER_S`` ago, before any work: the
        first time at once, with the time left as its ``Retry-After``; a question asked again
        inside that time (a client ignoring it) is answered the same only when it is up, so
        ignoring ``Retry-After`` gains nothing, and a client sending without pause is paced
        rather than answered as fast as it can ask (measured: ``bench_fairness``).
        Cookie-less JSON questions are refused before Datasette routes them
        (``views.guards.shed_at_the_door``)."""
        left = self.shed_left(requester)
        if not left or requester is None:
            return
        if requester in self.told:
            await self.sleep(max(0.0, self.shed_until[requester] - self.clock()))
            raise server_busy()
        self.told.add(requester)
        raise server_busy(retry_after=left)

    def _refuse_early(self, requester: str | None, cost: Cost) -> None:
        if requester is not None and cost.heavy and self.in_flight[requester] >= self.per_requester:
            raise too_many(cost)

    def _shed(self, waiter: _Waiter) -> None:
        if waiter.requester is not None:
            self.shed_until[waiter.requester] = self.clock() + RETRY_AFTER_S
            self.told.discard(waiter.requester)

    def _hand_on(self) -> None:
        """Start the waiters whose turn it is, in rank order (``_Waiter.rank``)."""
        for waiter in sorted(self.waiting, key=lambda w: w.rank):
            if not self.can_start(waiter.cost):
                continue
            self.waiting.remove(waiter)
            if not waiter.turn.done():
                self._start(waiter.cost)
                waiter.turn.set_result(None)

    async def _wait_turn(self, waiter: _Waiter, wait_s: float) -> None:
        """Join the queue (shedding its costliest waiter when full), then wait for the turn:
        at once when it is free and no cheaper waiter is first."""
        heavy = [w for w in self.waiting if w.cost.heavy]
        if waiter.cost.heavy and len(heavy) >= self.queue:
            worst = max(heavy, key=lambda w: w.rank)
            if worst.rank <= waiter.rank:
                self._shed(waiter)
                raise server_busy(waiter.cost)
            self.waiting.remove(worst)
            self._shed(worst)
            worst.turn.set_exception(server_busy(worst.cost))
        self.waiting.append(waiter)
        self._hand_on()
        if waiter.turn.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(waiter.turn), max(wait_s, 0.0))
        except (TimeoutError, asyncio.CancelledError):
            if waiter in self.waiting:
                self.waiting.remove(waiter)
            if waiter.turn.done() and not waiter.turn.cancelled() and not waiter.turn.exception():
                self._finish(waiter.cost)  # given its turn just as it gave up: pass it on
                self._hand_on()
            raise

    @asynccontextmanager
    async def admit(
        self, requester: str | None, cost: Cost, wait_s: float, timed_out: Callable[[], Exception]
    ) -> AsyncIterator[Turn]:
        """Run the body in the search's turn.

        ``wait_s`` is what is left of the question's time limit; ``timed_out()`` is raised when
        the turn does not come within it."""
        await self.refuse_shed(requester)
        self._refuse_early(requester, cost)
        counted = requester if requester is not None and cost.heavy else None
        if counted is not None:
            self.in_flight[counted] += 1
        queued = self.clock()
        try:
            waiter = _Waiter(requester, cost, self.recent_usage(requester), next(self._order))
            try:
                await self._wait_turn(waiter, wait_s)
            except TimeoutError as exc:
                raise timed_out() from exc
            started = self.clock()
            try:
                yield Turn(self, cost, started - queued)
            finally:
                self._finish(cost)
                self._charge(requester, self.clock() - started)
                self._hand_on()
        finally:
            if counted is not None:
                self.in_flight[counted] -= 1
                if not self.in_flight[counted]:
                    del self.in_flight[counted]

    @asynccontextmanager
    async def long_run(self, requester: str | None) -> AsyncIterator[None]:
        """Hold one of the requester's ``LONG_RUNS`` places for a deep or pro run; refused
        (429) before anything is spent when they are all taken. No requester: no limit."""
        if requester is not None and self.long_runs[requester] >= LONG_RUNS:
            raise too_many_long_runs()
        if requester is not None:
            self.long_runs[requester] += 1
        try:
            yield
        finally:
            if requester is not None:
                self.long_runs[requester] -= 1
                if not self.long_runs[requester]:
                    del self.long_runs[requester]


_IDLE = Gate()  # nothing ever runs through it: a turn taken beside it never yields


@asynccontextmanager
async def ungated(cost: Cost) -> AsyncIterator[Turn]:
    """A turn no gate watches (a run without a Datasette's gate, such as evals): at once."""
    yield Turn(_IDLE, cost)


_GATES: WeakKeyDictionary[Any, Gate] = WeakKeyDictionary()


def gate_for(datasette: Any) -> Gate:
    """The Datasette's gate, made on first use: one turn fewer than Datasette has query
    threads."""
    gate = _GATES.get(datasette)
    if gate is None:
        threads = int(datasette.setting("num_sql_threads") or 3)
        gate = _GATES[datasette] = Gate(slots=max(1, threads - 1))
    return gate
