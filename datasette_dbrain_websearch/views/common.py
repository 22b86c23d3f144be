"""What the HTTP views share: resolving a request's brain, reading request bodies, the one JSON
error shape and error pages, and the live stream. What any surface does with a Datasette is in
``service``; the ASGI guards around the routes are ``guards``."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import wraps
from typing import Any

from datasette import Forbidden, NotFound, Response
from datasette.utils import tilde_decode
from datasette.utils.asgi import AsgiStream

from .. import citations
from ..config import Settings
from ..errors import ResearchError
from ..options import param
from ..pack import row_keys
from ..pack_json import PackJSON, ranked_row
from ..permissions import RESEARCH
from ..service import (
    brain_databases,
    choose_brain,
    may,
    permission_memo,
)

View = Callable[[Any, Any], Awaitable[Any]]


def with_permission_memo(view: View) -> View:
    """A view whose permission checks are each made once per request (``service.may``)."""

    @wraps(view)
    async def wrapped(request: Any, datasette: Any) -> Any:
        with permission_memo():
            return await view(request, datasette)

    return wrapped


def database_for_route(datasette: Any, route: str) -> str | None:
    """Map a URL's database segment (a tilde-encoded route) to the database name."""
    decoded = tilde_decode(route)
    for name, db in datasette.databases.items():
        if getattr(db, "route", name) == decoded:
            return name
    return None


def error_response(error: ResearchError) -> Response:
    """The one JSON error shape (HTML errors are rendered on the page itself or by
    ``page_error``), with ``Retry-After`` when trying again later will help."""
    return Response.json(error.as_json(), status=error.status, headers=error.headers())


def stream_path(datasette: Any, database: str | None) -> str:
    if database is None:
        return datasette.urls.path("/-/research/stream")
    return datasette.urls.database(database) + "/-/research/stream"


def research_path(datasette: Any, database: str | None, as_json: bool) -> str:
    suffix = "/-/research" + (".json" if as_json else "")
    if database is None:
        return datasette.urls.path(suffix)
    return datasette.urls.database(database) + suffix


async def resolve_brain(
    datasette: Any,
    request: Any,
    settings: Settings,
    params: dict[str, list[str]],
    allowed: Sequence[str],
) -> tuple[str, list[str]]:
    """The brain this request is about and the brains its actor may research (``allowed``:
    ``Access.brains``).

    Raises ResearchError (403 or 404) before anything is read from a brain.
    """
    route = request.url_vars.get("database")
    if route is not None:
        database = database_for_route(datasette, route)
        if database is None:
            raise ResearchError(f"Database not found: {tilde_decode(route)}", 404, "no_database")
        if not await may(datasette, request.actor, RESEARCH, database):
            raise ResearchError("You may not research this brain.", 403, "forbidden")
        if database not in await brain_databases(datasette, settings):
            raise ResearchError(
                f"Database '{database}' is not a dbrain brain (no items/items_fts or "
                "sources/sources_fts tables).",
                404,
                "not_a_brain",
            )
        return database, [database]
    requested = param(params, "database")
    return await choose_brain(datasette, settings, allowed, requested), list(allowed)


async def page_error(datasette: Any, request: Any, error: ResearchError) -> Response:
    """Datasette's own error page for a refused HTML request: its 403 and 404 pages, and its
    error template for the rest (a busy brain: 503 with ``Retry-After``, in the same words as
    the JSON)."""
    if error.status == 403:
        # Datasette's Forbidden, so sign-in plugins may take over (the forbidden hook), with
        # words that say why and how to get in rather than a bare permission name.
        raise Forbidden(error.message) from error
    if error.status == 404:
        raise NotFound(error.message) from error
    context = {"error": error.message, "status": error.status, "title": None}
    html = await datasette.render_template("error.html", context, request=request)
    return Response.html(html, status=error.status, headers=error.headers())


async def refusal(datasette: Any, request: Any, as_json: bool, error: ResearchError) -> Response:
    """A refused request, answered in the form it asked for."""
    return error_response(error) if as_json else await page_error(datasette, request, error)


MODE_LABELS = {"never": "Off", "on_weak": "If local evidence is weak", "always": "Always"}


def citation_anchors(pack: PackJSON | None, labels: dict[str, str]) -> dict[str, dict]:
    """Where each row sits on the page (anchor), its label (``citations``: ``3``, ``W2``) and
    origin badge, by key: for the answer's citation chips and each row's own label."""
    if not pack:
        return {}
    refs = citations.labels(pack)
    anchors: dict[str, dict] = {}
    for n, entry in enumerate(pack["ranking"], start=1):
        row: Mapping[str, Any] = ranked_row(pack, entry)  # a web row's providers, not a brain row's
        brain = entry["list"] == "evidence"
        providers = " + ".join(labels.get(p, p) for p in row.get("providers", []))
        anchor = {
            "id": f"evidence-{n}",
            "label": refs[row["source_key"]],
            "brain": brain,
            "title": row["title"],
            "badge": "Your brain" if brain else f"Outside dbrain corpus / {providers} / ephemeral",
        }
        anchors[row["source_key"]] = anchor
        for key in row_keys(row)[1:]:  # a linked page's citation jumps to its item's row
            anchors.setdefault(key, anchor)
    return anchors


MAX_BODY = 1024 * 1024


def json_body(request: Any) -> bool:
    return "application/json" in request.headers.get("content-type", "")


def wants_json(request: Any) -> bool:
    """A JSON reply: for a JSON body, or a form the page's script posts with Accept JSON."""
    return json_body(request) or "application/json" in request.headers.get("accept", "")


def too_large() -> ResearchError:
    return ResearchError(
        f"The request body is too large (at most {MAX_BODY:,} bytes).", 413, "too_large"
    )


async def read_body(request: Any, as_json: bool) -> dict[str, Any]:
    """A POST body: a JSON object, or a form as ``{name: [values]}``.

    Read a chunk at a time from the ASGI ``receive`` and refused (413) as soon as it passes
    ``MAX_BODY``, with or without a Content-Length (chunked): reading it all first would let
    one request hold hundreds of megabytes and a worker for as long as the client likes.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise too_large()
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ResearchError("The request body ended early.", code="body_incomplete")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise too_large()
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    raw = b"".join(chunks)
    if not as_json:
        return urllib.parse.parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
    try:
        body = json.loads(raw or b"null")
    except (ValueError, RecursionError) as exc:
        raise ResearchError("The body is not valid JSON.", code="bad_json") from exc
    if not isinstance(body, dict):
        raise ResearchError("The JSON body must be an object.", code="bad_json")
    return body


class Stream(AsgiStream):
    """Datasette's ``AsgiStream`` that can also carry cookies: Datasette sets the flash-message
    cookie on every response a view returns, and ``AsgiStream`` has no ``set_cookie``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cookies = Response("")  # Datasette's own cookie formatting, headers only

    def set_cookie(self, *args: Any, **kwargs: Any) -> None:
        self.cookies.set_cookie(*args, **kwargs)

    async def asgi_send(self, send: Any) -> None:
        async def with_cookies(message: dict) -> None:
            if message["type"] == "http.response.start":
                cookies = [[b"set-cookie", c.encode()] for c in self.cookies._set_cookie_headers]
                message = {**message, "headers": [*message["headers"], *cookies]}
            await send(message)

        await super().asgi_send(with_cookies)
