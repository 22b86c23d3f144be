"""What every surface shares: which brains an actor may research and with which
permissions, running research, reading request bodies, the one JSON error shape, who may see a
saved run, and the ASGI guard that keeps unreadable forms from becoming 500s."""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import urllib.parse
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from functools import partial, wraps
from typing import Any

from datasette import Forbidden, NotFound, Response
from datasette.utils import tilde_decode
from datasette.utils.asgi import AsgiStream

from .. import traces
from ..admission import gate_for, requester_key
from ..answer import AnswerAccess
from ..brain import TABLE, is_brain, reader, table_names
from ..compat import (
    EXTERNAL,
    LLM_ANSWER,
    RESEARCH,
    can,
    track_promotion,
    with_stored_keys,
    write_options,
)
from ..config import Settings
from ..errors import ResearchError, sqlite_error
from ..feedback import (
    RocchioWeights,
)
from ..pack import row_keys
from ..promote import promote, promoted_in_run
from ..providers import registered_providers
from ..research import (
    Progress,
    WebAccess,
    param,
    parse_options,
    research,
)
from ..store import plugin_database

HIDDEN_DATABASES = ("_internal", "_memory")


ROOT = "root"


log = logging.getLogger("datasette_dbrain_websearch")


View = Callable[[Any, Any], Awaitable[Any]]


# The permission answers of the request a research view is handling: each is asked once, though
# the view, the page's menu and the saved-run checks ask it again (on Datasette 1.0 every
# question is a query).
_ACCESS: ContextVar[dict[tuple[Any, ...], bool] | None] = ContextVar("dbrain_access", default=None)


async def may(datasette: Any, actor: dict | None, action: str, database: str | None = None) -> bool:
    """``can``, remembered for the rest of the request inside a ``remembering_access`` view."""
    memo = _ACCESS.get()
    if memo is None:
        return await can(datasette, actor, action, database)
    key = (json.dumps(actor, sort_keys=True, default=str), action, database)
    if key not in memo:
        memo[key] = await can(datasette, actor, action, database)
    return memo[key]


def remembering_access(view: View) -> View:
    """A view whose permission checks are each made once per request (see ``may``)."""

    @wraps(view)
    async def wrapped(request: Any, datasette: Any) -> Any:
        token = _ACCESS.set({})
        try:
            return await view(request, datasette)
        finally:
            _ACCESS.reset(token)

    return wrapped


async def brain_databases(datasette: Any, settings: Settings) -> list[str]:
    """Names of attached databases that are brains (or the configured ``databases``); the
    plugin's own database never is one, so it is not read on every request."""
    if settings.databases is not None:
        return [name for name in settings.databases if name in datasette.databases]
    names = []
    own = plugin_database(datasette)
    for name, db in datasette.databases.items():
        if name in HIDDEN_DATABASES or db is own:
            continue
        if is_brain(await reader(db)(table_names)):
            names.append(name)
    return names


async def researchable_brains(datasette: Any, actor: dict | None, settings: Settings) -> list[str]:
    """The brains this actor may research, in attach order."""
    brains = await brain_databases(datasette, settings)
    return [b for b in brains if await may(datasette, actor, RESEARCH, b)]


def database_for_route(datasette: Any, route: str) -> str | None:
    """Map a URL's database segment (a tilde-encoded route) to the database name."""
    decoded = tilde_decode(route)
    for name, db in datasette.databases.items():
        if getattr(db, "route", name) == decoded:
            return name
    return None


def row_url_for(datasette: Any, database: str):
    """The Datasette row page of an evidence row (``/brain/sources/12``)."""

    def row_url(kind: str, row_id: int) -> str:
        return str(datasette.urls.row(database, TABLE[kind], str(row_id)))

    return row_url


async def web_access(datasette: Any, actor: dict | None, request: Any = None) -> WebAccess:
    """May this actor reach the web, through which providers, with which cache (and, for an
    HTTP request, did another site send it)."""
    return WebAccess(
        permitted=await may(datasette, actor, EXTERNAL),
        providers=registered_providers(datasette),
        cache_db=plugin_database(datasette),
        actor_id=actor_id_of(actor),
        cross_site=request is not None and cross_site_with_cookie(request),
    )


SAME_SITE = ("same-origin", "same-site", "none")  # Sec-Fetch-Site: "none" is a typed URL


def cross_site_with_cookie(request: Any) -> bool:
    """A browser request another site made (a link, a form, a script), signed in by this
    person's cookie. Browsers say so in ``Sec-Fetch-Site`` (older ones in ``Origin``); a
    request with an API token, or without a cookie, is nobody's browser session."""
    if request.headers.get("authorization") or "ds_actor" not in request.cookies:
        return False
    fetch_site = request.headers.get("sec-fetch-site", "").lower()
    if fetch_site:
        return fetch_site not in SAME_SITE
    origin = request.headers.get("origin", "")
    return bool(origin) and urllib.parse.urlsplit(origin).netloc != request.host


def index_path(datasette: Any) -> str | None:
    """The plugin database's file, where the semantic lane's vectors are (None: no file)."""
    db = plugin_database(datasette)
    return getattr(db, "path", None) if db is not None else None


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
    datasette: Any, request: Any, settings: Settings, params: dict[str, list[str]]
) -> tuple[str, list[str]]:
    """The brain this request is about and the brains its actor may research.

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
    return await choose_brain(datasette, request.actor, settings, requested)


async def choose_brain(
    datasette: Any, actor: dict | None, settings: Settings, requested: str | None
) -> tuple[str, list[str]]:
    """The brain asked for by name (or the first) and every brain the actor may research; a
    brain the actor may not research reads as unknown. The page, the JSON API and the agent
    tools refuse alike."""
    allowed = await researchable_brains(datasette, actor, settings)
    if not allowed:
        if await brain_databases(datasette, settings):
            raise cannot_research()
        raise ResearchError("No dbrain brain is attached to this Datasette.", 404, "no_brain")
    if requested and requested not in allowed:
        raise ResearchError(
            f"Unknown brain '{requested}'; choose one of: {', '.join(allowed)}.",
            404,
            "unknown_brain",
        )
    return requested or allowed[0], allowed


def cannot_research() -> ResearchError:
    return ResearchError(
        "You may not research any brain here (permission dbrain-research); if you have an "
        "account that may, sign in first.",
        403,
        "forbidden",
    )


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


async def run_research(
    datasette: Any,
    actor: dict | None,
    database: str,
    params: dict[str, list[str]],
    settings: Settings,
    web: WebAccess,
    surface: str,
    progress: Progress | None = None,
    lineage: dict[str, Any] | None = None,
    model_permitted: bool | None = None,
    requester: str | None = None,
    wait_for_trace: bool = True,
) -> dict[str, Any]:
    """Parse, research, save the trace: the one path every surface (HTTP and CLI) takes.

    ``lineage`` (from ``_refinement``) records a refined run's parent and refinement;
    ``model_permitted`` overrides the actor's ``dbrain-llm-answer`` check (the CLI's shell user);
    ``requester`` (from ``requester_of``) is who a heavy question counts against (None: no
    per-requester limit; ``admission``);
    ``wait_for_trace=False`` returns before the trace is written (see ``then_settle``).
    """
    options = parse_options(params, settings)
    if options.external.mode != "never":
        settings = await with_stored_keys(datasette, settings, actor_id_of(actor))
    db = datasette.get_database(database)
    if model_permitted is None:
        wants_model = options.answer and settings.answer.synthesizer == "llm"
        model_permitted = wants_model and await may(datasette, actor, LLM_ANSWER)
    pack = await research(
        reader(db),
        database,
        options,
        settings,
        row_url_for(datasette, database),
        web,
        progress=progress,
        answering=AnswerAccess(model_permitted, datasette, actor),
        semantic_index=index_path(datasette),
        gate=gate_for(datasette),
        requester=requester,
    )
    pack.update(lineage or {})
    await traces.record(
        datasette, pack, surface=surface, actor=actor, permitted=web.permitted, wait=wait_for_trace
    )
    return pack


def requester_of(request: Any) -> str:
    """Who a request counts against (``admission.requester_key``)."""
    client = request.scope.get("client") or ("",)
    return requester_key(actor_id_of(request.actor), client[0])


MODE_LABELS = {"never": "Off", "on_weak": "If local evidence is weak", "always": "Always"}


def citation_anchors(pack: dict[str, Any] | None, labels: dict[str, str]) -> dict[str, dict]:
    """Where each row sits on the page (anchor, number, origin badge), for citation chips."""
    anchors: dict[str, dict] = {}
    for n, entry in enumerate((pack or {}).get("ranking", []), start=1):
        row = pack[entry["list"]][entry["index"]]
        local = entry["list"] == "evidence"
        providers = " + ".join(labels.get(p, p) for p in row.get("providers", []))
        anchor = {
            "id": f"evidence-{n}",
            "n": n,
            "local": local,
            "title": row["title"],
            "badge": "Your brain" if local else f"Outside dbrain corpus / {providers} / ephemeral",
        }
        anchors[row["source_key"]] = anchor
        for key in row_keys(row)[1:]:  # a linked page's citation jumps to its item's row
            anchors.setdefault(key, anchor)
    return anchors


MAX_BODY = 1024 * 1024


async def promoted_rows(datasette: Any, pack: dict[str, Any] | None) -> dict[str, dict]:
    """For a saved run: the web rows already promoted, with the local row to link to."""
    db = plugin_database(datasette)
    if pack is None or db is None or not pack.get("trace_url"):
        return {}
    promoted = await promoted_in_run(db, pack["run_id"])
    for ext_key, info in promoted.items():
        brain = info["database"]
        if brain not in datasette.databases:
            continue
        row_id = await reader(datasette.get_database(brain))(
            partial(source_id, source_key=info["local_source_key"])
        )
        promoted[ext_key]["row_url"] = (
            str(datasette.urls.row(brain, "sources", str(row_id))) if row_id else ""
        )
    return promoted


def source_id(conn: sqlite3.Connection, source_key: str) -> int | None:
    row = conn.execute("select id from sources where source_key = ?", [source_key]).fetchone()
    return row[0] if row else None


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


def actor_id_of(actor: dict | None) -> str:
    return str((actor or {}).get("id") or "")


async def trace_for(datasette: Any, request: Any, run_id: str) -> dict[str, Any]:
    """A saved run the actor may see: permission first (403 for those who may research no brain
    here), then ``visible_run``."""
    settings = Settings.from_datasette(datasette)
    if not await researchable_brains(datasette, request.actor, settings):
        raise cannot_research()
    return await visible_run(datasette, request.actor, run_id)


async def visible_run(datasette: Any, actor: dict | None, run_id: str) -> dict[str, Any]:
    """The saved run, or the same 404 whether it does not exist or is not this actor's: a run
    id must not reveal that someone asked something."""
    db = plugin_database(datasette)
    trace = await traces.load(db, run_id) if db is not None else None
    if trace is None and traces.not_saved(run_id):
        # Its answer was shown, then its save failed: say so (the id reveals nothing more).
        raise ResearchError(
            f"Run {run_id} was answered but could not be saved (the runs database refused "
            f"the write: {traces.not_saved(run_id)}); ask the question again to research it "
            "anew.",
            404,
            "trace_not_saved",
        )
    if trace is None or not await may_see_run(datasette, actor, trace):
        raise ResearchError(f"No saved run {run_id}.", 404, "no_such_run")
    return trace


async def may_see_run(datasette: Any, actor: dict | None, trace: dict[str, Any]) -> bool:
    """Runs hold people's questions. A run is for its own actor and for root; a run made by an
    anonymous visitor, for whoever has its link (the run id carries 96 random bits). Always only
    on a brain the actor may research."""
    if not await may(datasette, actor, RESEARCH, trace["database"]):
        return False
    owner, me = trace.get("actor_id", ""), actor_id_of(actor)
    return not owner or owner == me or me == ROOT


def weights_from(settings: Settings) -> RocchioWeights:
    return RocchioWeights(settings.feedback.alpha, settings.feedback.beta, settings.feedback.gamma)


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
            if not refused:  # after the 413, whatever the app answers goes nowhere
                await send(message)

        with contextlib.suppress(BodyTooLarge):
            await app(scope, counted, unless_refused)

    return wrapped


RESEARCH_ROUTES = "/-/research"


async def write_promotion(
    datasette: Any,
    actor: dict | None,
    trace: dict[str, Any],
    promotion: Any,
    brain: Any,
    request: Any = None,
) -> list[dict[str, Any]]:
    """Promote a run's web rows into its brain as this actor (the endpoint and the tools all
    come here once their checks pass), with SQLite failures in the plugin's words; Datasette
    1.0 hears of it (``track_event``, and ``request=`` for its write hooks)."""
    settings = Settings.from_datasette(datasette)
    try:
        results = await promote(
            brain,
            plugin_database(datasette),
            trace,
            promotion,
            actor_id_of(actor),
            settings.external.fetch_allow_networks,
            settings.semantic.model,
            write_options(brain, request),
        )
    except sqlite3.Error as exc:
        raise sqlite_error(exc, trace["database"]) from exc
    await track_promotion(datasette, actor, trace, results)
    return results
