"""Stand-ins for the time and the network, so a web test asserts what was decided (the time
each request was given, what was cut) and never waits on, or bounds, the wall clock."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx


class Clock:
    """A monotonic clock that moves only when the test moves it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def forward(request: httpx.Request) -> httpx.Response:
    """``request`` sent on to the fake over loopback, with the timeout it was given, and its
    answer read whole. Cancelled with the request waiting for it, it hangs up on the fake."""
    async with httpx.AsyncClient() as real:
        answer = await real.send(request)
    kept = {
        k: v
        for k, v in answer.headers.items()
        if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    }
    return httpx.Response(answer.status_code, headers=kept, content=answer.content)


class Stalled:
    """A transport whose server never answers in time: each request's timeout is recorded (by
    path), ``clock`` is moved on by it (the stall used up all it was given) and the request
    times out, as it does at a stalled server when that time runs out. Paths ``forward``
    accepts go on to the fake (their timeouts recorded too)."""

    def __init__(
        self, forward: Callable[[str], bool] = lambda path: False, clock: Clock | None = None
    ) -> None:
        self.timeouts: dict[str, float] = {}
        self.forward = forward
        self.clock = clock

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        given = request.extensions["timeout"]["read"]
        self.timeouts[request.url.path] = given
        if self.forward(request.url.path):
            return await forward(request)
        if self.clock is not None:
            self.clock.advance(given)
        raise httpx.ReadTimeout("the server did not answer in time", request=request)


class Forwarded:
    """A transport that passes every request on to the fake, then moves ``clock`` on by what
    ``took`` says a path took (its answer arriving that much later on the test's clock)."""

    def __init__(self, clock: Clock, took: Mapping[str, float]) -> None:
        self.clock = clock
        self.took = took

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        answer = await forward(request)
        self.clock.advance(self.took.get(request.url.path, 0.0))
        return answer
