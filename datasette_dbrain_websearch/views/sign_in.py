"""Signing in brings a person back to the research page they were on.

Datasette's sign-in links (``datasette --root`` prints ``/-/auth-token?token=…``) always
redirect to the instance's home page. A signed-out visitor of a research page, the runs list or
the usage page is told to sign in; this ASGI wrapper remembers that page in a short-lived cookie
and, when the sign-in that follows redirects home, sends the person back to it instead.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from http.cookies import CookieError, SimpleCookie
from typing import Any

Asgi = Callable[[dict, Any, Any], Awaitable[None]]

RETURN_COOKIE = "dbrain_ws_return"
# Long enough to find and open the sign-in link, short enough to be forgotten the same day.
RETURN_SECONDS = 3600
MAX_COOKIE_VALUE = 2000
SIGN_IN_PATH = "/-/auth-token"
# How, said wherever a page asks a signed-out visitor to sign in.
HOW_TO_SIGN_IN = (
    "To sign in, open the /-/auth-token link Datasette printed when it was started with --root "
    "(the demo prints one), or use this site's own login if it has one."
)
# The pages that tell a signed-out visitor to sign in (not the JSON API or the event stream).
RESEARCH_MARK = "/-/research"
NOT_PAGES = (".json", "/stream", "/promote", "/feedback")


def return_path(value: str) -> str | None:
    """The research page a cookie names, or None: only a path on this server that is one of
    the plugin's pages may be a place to send someone (never ``//host`` or ``\\host``)."""
    path = urllib.parse.unquote(value)
    if not path.startswith("/") or path[1:2] in ("/", "\\") or "\\" in path:
        return None
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):
        return None
    return path if RESEARCH_MARK in path.split("?", 1)[0] else None


def is_research_page(scope: dict) -> bool:
    path = scope.get("path") or ""
    return scope.get("method") == "GET" and RESEARCH_MARK in path and not path.endswith(NOT_PAGES)


def cookies_of(scope: dict) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for name, value in scope.get("headers") or []:
        if name == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except CookieError:  # a malformed cookie header holds no cookie
                continue
    return {key: morsel.value for key, morsel in jar.items()}


def set_cookie_header(value: str, max_age: int) -> tuple[bytes, bytes]:
    cookie = f"{RETURN_COOKIE}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax"
    return (b"set-cookie", cookie.encode("latin-1"))


def remembering(scope: dict, send: Any) -> Any:
    """``send`` that adds the return cookie to an HTML page shown to a signed-out visitor."""
    target = scope["path"] + (
        f"?{scope['query_string'].decode('latin-1')}" if scope.get("query_string") else ""
    )
    value = urllib.parse.quote(target, safe="/-._~")

    async def wrapped(message: dict) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers") or [])
            kind = {n.lower(): v for n, v in headers}.get(b"content-type", b"")
            fits = len(value) <= MAX_COOKIE_VALUE  # a browser drops a larger cookie anyway
            if kind.startswith(b"text/html") and fits and return_path(value):
                message = {
                    **message,
                    "headers": [*headers, set_cookie_header(value, RETURN_SECONDS)],
                }
        await send(message)

    return wrapped


def returning(destination: str, send: Any) -> Any:
    """``send`` that turns a successful sign-in's redirect home into one back to the page."""

    async def wrapped(message: dict) -> None:
        if message["type"] == "http.response.start" and message.get("status") in (301, 302):
            headers = list(message.get("headers") or [])
            signed_in = any(
                name.lower() == b"set-cookie" and value.startswith(b"ds_actor=")
                for name, value in headers
            )
            if signed_in:
                headers = [(n, v) for n, v in headers if n.lower() != b"location"]
                headers += [
                    (b"location", urllib.parse.quote(destination, safe="/?=&-._~%+").encode()),
                    set_cookie_header("", 0),
                ]
                message = {**message, "headers": headers}
        await send(message)

    return wrapped


def return_after_sign_in(app: Asgi) -> Asgi:
    """ASGI wrapper: remember the research page a signed-out visitor saw, and return there."""

    async def wrapped(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        cookies = cookies_of(scope)
        if scope.get("path", "").endswith(SIGN_IN_PATH):
            destination = return_path(cookies.get(RETURN_COOKIE, ""))
            await app(scope, receive, returning(destination, send) if destination else send)
        elif "ds_actor" not in cookies and is_research_page(scope):
            await app(scope, receive, remembering(scope, send))
        else:
            await app(scope, receive, send)

    return wrapped
