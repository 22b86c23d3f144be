"""The ASGI guards around the plugin's routes (``asgi_wrapper``): a request body is refused
with 413 as soon as it passes the cap, whoever reads it (``capped_bodies``, which also stamps
when the request arrived: ``arrived_at``), and a form POST Datasette's CSRF layer cannot read
is a 400, not a 500 (``forms_never_500``). Signing in returning to research is ``sign_in``'s.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from datasette import Response
from datasette.utils.asgi import Request

from ..errors import ResearchError
from ..requesters import requester_of
from ..service import shed_refusal
from .common import MAX_BODY, error_response, too_large

log = logging.getLogger("datasette_dbrain_websearch")

FORM_TYPES = (b"multipart/form-data", b"application/x-www-form-urlencoded")


UNREADABLE = (TypeError, ValueError, IndexError, AssertionError)


Asgi = Callable[[dict, Callable[[], Awaitable[dict]], Callable[[dict], Awaitable[None]]], Awaitable]


def forms_never_500(app: Asgi) -> Asgi:
    """ASGI wrapper (outermost): a form POST the CSRF layer cannot read is a 400, not a 500.

    On Datasette 0.65, asgi-csrf parses every cookie-bearing form POST before any route runs.
    asgi-csrf 0.11 (the newest) passes ``FileClass`` to python-multipart's ``FormParser``,
    which python-multipart 0.0.26 removed, so every such multipart POST raised TypeError; it
    also fails on a multipart type without ``; boundary=`` and on a form body that is not
    UTF-8. Pinning python-multipart below 0.0.26 would bring back CVE-2026-40347 and
    CVE-2026-42561. Datasette's router turns its own exceptions into error pages, so one that
    reaches this wrapper before a response started came from reading the body.
    """

    async def wrapped(scope: dict, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers") or []) if scope["type"] == "http" else {}
        content_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
        if content_type not in FORM_TYPES:
            await app(scope, receive, send)
            return
        started = False

        async def watched(message: dict) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, receive, watched)
        except UNREADABLE as exc:
            if started:
                raise
            log.warning("dbrain-websearch: unreadable form POST to %s: %r", scope["path"], exc)
            error = ResearchError(
                "This form could not be read (Datasette's CSRF check could not parse its body); "
                "send it as UTF-8 application/x-www-form-urlencoded or as JSON.",
                400,
                "unreadable_form",
            )
            await error_response(error).asgi_send(send)

    return wrapped


ARRIVED = "dbrain_websearch.arrived"  # the scope's arrival time (``capped_bodies``)


def arrived_at(request: Any) -> float | None:
    """When the request reached the plugin (``time.perf_counter``), before any wait for a
    connection: where its time limit starts."""
    return request.scope.get(ARRIVED)


def timing(scope: dict) -> tuple[bytes, bytes]:
    """A ``Server-Timing`` header: the time from the request reaching the plugin to its answer
    (what ``time_limit_ms`` bounds), shown by browsers' developer tools and read by the
    benchmarks apart from the time a client waits for the server to read its request."""
    took_ms = (time.perf_counter() - scope[ARRIVED]) * 1000
    return b"server-timing", f'plugin;dur={took_ms:.1f};desc="research"'.encode()


RESEARCH_JSON = "/-/research.json"


def shed_at_the_door(app: Asgi, datasette: Any) -> Asgi:
    """ASGI wrapper: a JSON question from a requester shed moments ago (``admission``) is
    answered 503 ``server_busy`` before Datasette routes it, when nothing in the request could
    name someone else (no cookie, no credentials): a client that ignores ``Retry-After`` then
    costs the server a header read per request, not a request's whole way through Datasette."""

    async def wrapped(scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http" and scope.get("path") == RESEARCH_JSON:
            headers = scope.get("headers") or ()
            if not any(name in (b"cookie", b"authorization") for name, _ in headers):
                request = Request(scope, receive)
                refusal = await shed_refusal(datasette, lambda t: requester_of(request, t))
                if refusal is not None:
                    await error_response(refusal).asgi_send(send)
                    return
        await app(scope, receive, send)

    return wrapped


class BodyTooLarge(Exception):
    """A request body passed ``MAX_BODY`` while someone was reading it."""


def capped_bodies(app: Asgi) -> Asgi:
    """ASGI wrapper (outermost): a body sent to the plugin's routes is refused with 413 as
    soon as it passes ``MAX_BODY``, whoever reads it. On Datasette 0.65 asgi-csrf reads a
    cookie-bearing form body whole before any view runs (200 MB held for 80 s), so the cap in
    ``read_body`` alone comes too late; this counts the bytes as ``receive`` hands them on."""

    async def wrapped(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or RESEARCH_ROUTES not in scope.get("path", ""):
            await app(scope, receive, send)
            return
        scope = {**scope, ARRIVED: time.perf_counter()}
        headers = dict(scope.get("headers") or [])
        wanted = headers.get(b"content-type", b"") + headers.get(b"accept", b"")
        refusal = (
            error_response(too_large())
            if b"application/json" in wanted
            else Response.html(f"<h1>413</h1><p>{too_large().message}</p>", status=413)
        )
        declared = headers.get(b"content-length", b"")
        if declared.isdigit() and int(declared) > MAX_BODY:
            await refusal.asgi_send(send)
            return
        size, refused = 0, False

        async def counted() -> dict:
            nonlocal size, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            size += len(message.get("body", b""))
            if size > MAX_BODY:
                refused = True
                await refusal.asgi_send(send)
                raise BodyTooLarge
            return message

        async def unless_refused(message: dict) -> None:
            if refused:  # after the 413, whatever the app answers goes nowhere
                return
            if message.get("type") == "http.response.start":
                message = {**message, "headers": [*message.get("headers", ()), timing(scope)]}
            await send(message)

        with contextlib.suppress(BodyTooLarge):
            await app(scope, counted, unless_refused)

    return wrapped


RESEARCH_ROUTES = "/-/research"
