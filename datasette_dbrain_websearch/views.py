"""HTTP handlers: permission check first, then one call into research, then render.

Only this module (and cli.py) knows about requests and responses. Every failure a user can cause
becomes a ``ResearchError`` rendered as ``{"ok": false, "error", "status"}`` or an error box on
the page, never a 500.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import urllib.parse
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any
from weakref import WeakKeyDictionary

from datasette import Forbidden, NotFound, Response
from datasette.utils import tilde_decode
from datasette.utils.asgi import AsgiStream

from . import display, traces
from .answer import AnswerAccess
from .brain import TABLE, check_unchanged, is_brain, reader, table_names
from .compat import EXTERNAL, LLM_ANSWER, PROMOTE, RESEARCH, USAGE, can
from .config import MODES, Settings
from .errors import ResearchError, sqlite_error
from .feedback import (
    FEEDBACK_VALUES,
    RocchioWeights,
    apply_feedback,
    refine_query,
    row_urls,
    validate_marks,
)
from .judge import VERDICTS
from .promote import parse_request, promote, promoted_in_run
from .providers import registered_providers
from .providers.base import clean
from .research import (
    BOOLEAN_VALUES,
    Progress,
    WebAccess,
    is_date,
    parse_options,
    research,
    scrub,
)
from .store import feedback_for, plugin_database, save_feedback
from .urls import is_web_url

TEMPLATE = "dbrain_websearch_research.html"
RUN_TEMPLATE = "dbrain_websearch_run.html"
RUNS_TEMPLATE = "dbrain_websearch_runs.html"
HIDDEN_DATABASES = ("_internal", "_memory")
ROOT = "root"

log = logging.getLogger("datasette_dbrain_websearch")


async def brain_databases(datasette: Any, settings: Settings) -> list[str]:
    """Names of attached databases that are brains (or the configured ``databases``)."""
    if settings.databases is not None:
        return [name for name in settings.databases if name in datasette.databases]
    names = []
    for name, db in datasette.databases.items():
        if name in HIDDEN_DATABASES:
            continue
        if is_brain(await reader(db)(table_names)):
            names.append(name)
    return names


async def researchable_brains(datasette: Any, actor: dict | None, settings: Settings) -> list[str]:
    """The brains this actor may research, in attach order."""
    brains = await brain_databases(datasette, settings)
    return [b for b in brains if await can(datasette, actor, RESEARCH, b)]


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


async def web_access(datasette: Any, actor: dict | None) -> WebAccess:
    """May this actor reach the web, through which providers, with which cache."""
    return WebAccess(
        permitted=await can(datasette, actor, EXTERNAL),
        providers=registered_providers(datasette),
        cache_db=plugin_database(datasette),
        actor_id=_actor_id(actor),
    )


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
        if not await can(datasette, request.actor, RESEARCH, database):
            raise ResearchError("You may not research this brain.", 403, "forbidden")
        if database not in await brain_databases(datasette, settings):
            raise ResearchError(
                f"Database '{database}' is not a dbrain brain (no items/items_fts or "
                "sources/sources_fts tables).",
                404,
                "not_a_brain",
            )
        return database, [database]
    allowed = await researchable_brains(datasette, request.actor, settings)
    requested = (params.get("database") or [""])[-1]
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
    return ResearchError("You may not research any brain here.", 403, "forbidden")


async def page_error(datasette: Any, request: Any, error: ResearchError) -> Response:
    """Datasette's own error page for a refused HTML request: its 403 and 404 pages, and its
    error template for the rest (a busy brain: 503 with ``Retry-After``, in the same words as
    the JSON)."""
    if error.status == 403:
        raise Forbidden(RESEARCH) from error
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
) -> dict[str, Any]:
    """Parse, research, save the trace: the one path every surface (HTTP and CLI) takes.

    ``lineage`` (from ``_refinement``) records a refined run's parent and refinement;
    ``model_permitted`` overrides the actor's ``dbrain-llm-answer`` check (the CLI's shell user);
    ``requester`` (from ``requester_of``) is who a raw question counts against (None: no limit).
    """
    options = parse_options(params, settings)
    db = datasette.get_database(database)
    if model_permitted is None:
        wants_model = options.answer and settings.answer.synthesizer == "llm"
        model_permitted = wants_model and await can(datasette, actor, LLM_ANSWER)
    async with raw_question_slot(datasette, requester if options.syntax == "raw" else None):
        pack = await research(
            reader(db),
            database,
            options,
            settings,
            row_url_for(datasette, database),
            web,
            progress=progress,
            answering=AnswerAccess(model_permitted, datasette, actor),
        )
    pack.update(lineage or {})
    await traces.record(datasette, pack, surface=surface, actor=actor, permitted=web.permitted)
    return pack


RAW_IN_FLIGHT = 2
RAW_RETRY_AFTER_S = 2
# Raw questions running now, per Datasette, by requester.
_RAW_RUNNING: WeakKeyDictionary[Any, Counter[str]] = WeakKeyDictionary()


def requester_of(request: Any) -> str:
    """Who a request counts against: its actor, or for anonymous visitors their address."""
    actor_id = _actor_id(request.actor)
    if actor_id:
        return f"actor:{actor_id}"
    client = request.scope.get("client") or ("",)
    return f"address:{client[0]}"


@asynccontextmanager
async def raw_question_slot(datasette: Any, requester: str | None) -> AsyncIterator[None]:
    """At most ``RAW_IN_FLIGHT`` raw FTS5 questions in flight per requester (429 beyond): a raw
    query can be expensive (prefix and NEAR queries over a large brain), and one visitor must
    not hold every one of Datasette's query threads while others wait."""
    if requester is None:
        yield
        return
    running = _RAW_RUNNING.setdefault(datasette, Counter())
    if running[requester] >= RAW_IN_FLIGHT:
        raise ResearchError(
            f"You already have {RAW_IN_FLIGHT} raw FTS5 searches running; wait for one to "
            "finish, then try again.",
            429,
            "too_many_raw_searches",
            retry_after=RAW_RETRY_AFTER_S,
        )
    running[requester] += 1
    try:
        yield
    finally:
        running[requester] -= 1
        if not running[requester]:
            del running[requester]


async def _refinement(
    datasette: Any, request: Any, params: dict[str, list[str]]
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The parameters a ``refine_from`` request researches, and what to record about it."""
    parent_id = (params.get("refine_from") or [""])[-1]
    if not parent_id:
        return params, {}
    if not traces.RUN_ID.fullmatch(parent_id):
        raise ResearchError("refine_from must be a run id.", code="bad_refine_from")
    parent = await _trace_for(datasette, request, parent_id)
    marks = await feedback_for(plugin_database(datasette), parent_id)
    refinement = refine_query(parent["pack"], marks)
    params = {**inherited(parent["pack"]), **params}
    if not (params.get("q") or [""])[-1].strip():
        params["q"] = [refinement["refined_query"]]
    return params, {"parent_run_id": parent_id, "refinement": refinement}


def inherited(pack: dict[str, Any]) -> dict[str, list[str]]:
    """The parameters a refined run takes from its parent unless the request overrides them:
    brain, filters, syntax, limit, profile and web mode."""
    plan = pack["query_plan"]
    params = {
        "database": [pack["database"]],
        "syntax": [plan["syntax"]],
        "limit": [str(plan["limit"])],
        "profile": [plan.get("profile", "general")],
        "external": [pack["external_search"]["mode"]],
        "answer": ["0" if pack.get("answer", {}).get("status", "disabled") == "disabled" else "1"],
    }
    for name, value in plan["filters"].items():
        params[name] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return params


def saved_run_url(
    datasette: Any, params: dict[str, list[str]], pack: dict | None, route_db: str | None = None
) -> str:
    """The page for this run as saved (``?run=``): where marks and promotions come back to."""
    if not pack or not pack.get("trace_url"):
        return ""
    query = {k: v for k, v in params.items() if k not in ("run", "refine_from")}
    query["q"] = [pack["question"]]
    query["run"] = [pack["run_id"]]
    path = research_path(datasette, route_db, False)
    return path + "?" + urllib.parse.urlencode(query, True)


async def saved_pack(
    datasette: Any, request: Any, params: dict[str, list[str]]
) -> dict[str, Any] | None:
    """``?run=<run_id>``: the pack a streamed run already produced (no second search)."""
    run_id = (params.get("run") or [""])[-1]
    db = plugin_database(datasette)
    if not run_id or db is None or not traces.RUN_ID.fullmatch(run_id):
        return None
    trace = await traces.load(db, run_id)
    if trace is None or trace["question"] != clean((params.get("q") or [""])[-1]).strip():
        return None
    if not await may_see_run(datasette, request.actor, trace):
        return None
    return trace["pack"]


async def prepare(
    datasette: Any, request: Any
) -> tuple[Settings, dict[str, list[str]], dict[str, Any], str, list[str]]:
    """What every research route needs first: settings, parameters (refined when asked), the
    brain and the brains the actor may research. Raises ResearchError (4xx)."""
    settings = Settings.from_datasette(datasette)
    params = urllib.parse.parse_qs(request.query_string, keep_blank_values=True)
    params, lineage = await _refinement(datasette, request, params)
    database, allowed = await resolve_brain(datasette, request, settings, params)
    return settings, params, lineage, database, allowed


async def research_view(request: Any, datasette: Any) -> Response:
    """``/-/research[.json]`` and ``/<database>/-/research[.json]``."""
    as_json = bool(request.url_vars.get("format"))
    route = request.url_vars.get("database")
    try:
        settings, params, lineage, database, allowed = await prepare(datasette, request)
    except ResearchError as exc:
        return await refusal(datasette, request, as_json, exc)
    web = await web_access(datasette, request.actor)
    pack = None if as_json else await saved_pack(datasette, request, params)
    refinement = None
    if pack is not None:
        marks = await feedback_for(plugin_database(datasette), pack["run_id"])
        if marks:
            refinement = refine_query(pack, marks)
            pack = apply_feedback(pack, marks, weights_from(settings))
    error = None
    has_question = any((params.get(name) or [""])[-1].strip() for name in ("q", "refine_from"))
    if pack is None and (as_json or has_question):
        try:
            pack = await run_research(
                datasette,
                request.actor,
                database,
                params,
                settings,
                web,
                "json" if as_json else "page",
                lineage=lineage,
                requester=requester_of(request),
            )
        except ResearchError as exc:
            error = exc
    if as_json:
        return error_response(error) if error else Response.json(pack)
    try:
        can_promote = (
            pack is not None
            and await can(datasette, request.actor, PROMOTE)
            and "sources_fts" in await reader(datasette.get_database(database))(table_names)
        )
        promoted = await promoted_rows(datasette, pack)
    except ResearchError as exc:
        return await page_error(datasette, request, exc)

    query_string = request.query_string
    route_db = database if route is not None else None
    context = {
        "pack": pack,
        "error": error,
        "database": database,
        "brains": allowed,
        "route_database": route is not None,
        "form": _form_values(params),
        "action": research_path(datasette, route_db, False),
        "json_url": research_path(datasette, route_db, True)
        + ("?" + query_string if query_string else ""),
        "kinds": [("", "Items and sources"), ("item", "Items only"), ("source", "Sources only")],
        "profiles": [
            ("general", "General"),
            ("coding", "Coding: docs, repositories, issues"),
            ("academic", "Academic: papers, preprints"),
            ("news", "News: recent first"),
        ],
        "external": external_controls(settings, web, params),
        "web_offer": web_offer(
            settings,
            web,
            request.actor,
            pack,
            research_url(
                datasette, route_db, {**params, "q": [pack["question"]]}, external="always"
            )
            if pack and web.permitted
            else "",
        ),
        "expand_fields": expand_fields(params),
        "answer_form": answer_controls(settings, params),
        "anchors": citation_anchors(pack, web.labels),
        "labels": web.labels,
        "say": display,
        "feedback_form": True,
        "max_limit": settings.max_limit,
        "default_limit": settings.default_limit,
        "can_promote": can_promote,
        "promote_url": datasette.urls.path("/-/research/promote"),
        "stream_url": stream_path(datasette, route_db),
        "promoted": promoted,
        "refinement": refinement,
        "marks": {m["key"]: m["value"] for m in (pack or {}).get("feedback", {}).get("marks", [])},
        "feedback_values": FEEDBACK_VALUES,
        "saved_url": saved_run_url(datasette, params, pack, route_db),
        "is_web_url": is_web_url,
    }
    html = await datasette.render_template(TEMPLATE, context, request=request)
    if error:
        return Response.html(html, status=error.status, headers=error.headers())
    return Response.html(html)


MODE_LABELS = {"never": "Off", "on_weak": "If local evidence is weak", "always": "Always"}
FRESHNESS_LABELS = [
    ("", "Any time"),
    ("pd", "Past day"),
    ("pw", "Past week"),
    ("pm", "Past month"),
    ("py", "Past year"),
]


def external_controls(settings: Settings, web: WebAccess, params: dict) -> dict[str, Any]:
    """What the page's "Search the web too" controls show for this actor and config."""
    ext = settings.external
    labels = web.labels
    order = " → ".join(labels.get(n, n) for n in ext.providers)
    freshness = (params.get("freshness") or [ext.freshness])[-1]
    start, _, end = freshness.partition("to") if freshness not in ("custom", "") else ("", "", "")
    custom = freshness == "custom" or bool(end)
    return {
        "enabled": ext.enabled,
        "permitted": web.permitted,
        "modes": [(m, MODE_LABELS[m]) for m in MODES],
        "mode": (params.get("external") or [ext.default_mode])[-1],
        "providers": [("", f"Configured order ({order})")]
        + [(n, labels.get(n, n)) for n in ext.providers]
        + [("all", "All at once")],
        "freshness": [*FRESHNESS_LABELS, ("custom", "Custom range")],
        "freshness_value": "custom" if custom else freshness,
        "range": (
            start or (params.get("freshness_since") or [""])[-1],
            end or (params.get("freshness_until") or [""])[-1],
        ),
        "labels": labels,
    }


def web_offer(
    settings: Settings, web: WebAccess, actor: dict | None, pack: dict | None, url: str
) -> dict[str, Any]:
    """The one-click "Search the web" for a run whose brain evidence is missing, weak or maybe
    out of date; for those who may not search the web, why not and how to get it."""
    ext = settings.external
    if not ext.enabled:
        return {"show": False, "url": "", "reason": ""}
    order = " → ".join(web.labels.get(n, n) for n in ext.providers)
    show, why = False, ""
    if pack and not pack["external_search"]["ran"]:
        verdict = pack["judge"]["verdict"]
        show = verdict != "enough_evidence" or pack["external_search"]["current_state_question"]
        why = {
            "no_evidence": "Nothing in your brain answers this",
            "weak_evidence": "Your brain's evidence is weak",
        }.get(verdict, "This asks about now, and your brain may be out of date")
    if web.permitted:
        return {"show": show, "url": url, "reason": f"{why}; ask {order}." if why else ""}
    reason = (
        "Sign in to search the web too: it needs an account allowed dbrain-external-search "
        "(root, or one named in external_search.allow)."
        if actor is None
        else "Your account may not search the web (permission dbrain-external-search)."
    )
    return {"show": show, "url": "", "reason": f"{why}. {reason}" if why else reason}


EXPANDED = ("external", "provider", "freshness", "freshness_since", "freshness_until", "answer")


def expand_fields(params: dict[str, list[str]]) -> list[tuple[str, str]]:
    """What a refined search keeps of this one besides what the run records (web choices)."""
    return [(n, clean(params[n][-1])) for n in EXPANDED if (params.get(n) or [""])[-1].strip()]


def research_url(
    datasette: Any, route_db: str | None, params: dict[str, list[str]], **changes: str
) -> str:
    """This research with some parameters changed; empty ones and run/refine links dropped."""
    query = {
        k: v
        for k, v in params.items()
        if k not in ("run", "refine_from", *changes) and any(x.strip() for x in v)
    }
    query.update({k: [v] for k, v in changes.items()})
    return research_path(datasette, route_db, False) + "?" + urllib.parse.urlencode(query, True)


def answer_controls(settings: Settings, params: dict[str, list[str]]) -> dict[str, Any]:
    """The page's "Write an answer" box: ticked per request, else by ``answer.default``."""
    answer = settings.answer
    value = (params.get("answer") or [""])[-1].strip().lower()
    llm = answer.synthesizer == "llm"
    return {
        "default": answer.default,
        "checked": BOOLEAN_VALUES.get(value, answer.default),
        "streams": llm,
        "help": "A language model writes it from the evidence"
        if llm
        else "Sentences picked from the evidence, each citing its row",
    }


def citation_anchors(pack: dict[str, Any] | None, labels: dict[str, str]) -> dict[str, dict]:
    """Where each row sits on the page (anchor, number, origin badge), for citation chips."""
    anchors: dict[str, dict] = {}
    for n, entry in enumerate((pack or {}).get("ranking", []), start=1):
        row = pack[entry["list"]][entry["index"]]
        local = entry["list"] == "evidence"
        providers = " + ".join(labels.get(p, p) for p in row.get("providers", []))
        anchors[row["source_key"]] = {
            "id": f"evidence-{n}",
            "n": n,
            "local": local,
            "title": row["title"],
            "badge": "Your brain" if local else f"Outside dbrain corpus / {providers} / ephemeral",
        }
    return anchors


def _form_values(params: dict[str, list[str]]) -> dict[str, str]:
    """What the form shows back to the user (last value of each field)."""
    names = (
        "q",
        "limit",
        "tag",
        "source_type",
        "kind",
        "syntax",
        "since",
        "until",
        "external",
        "provider",
        "freshness",
        "freshness_since",
        "freshness_until",
        "external_count",
        "profile",
        "answer",
    )
    return {n: clean((params.get(n) or [""])[-1]) for n in names}


def research_menu_links(datasette: Any, actor: dict | None):
    """The "Research" link in Datasette's menu, for actors who may research some brain, and
    "Web search usage" for those allowed to see what the providers cost."""

    async def inner() -> list[dict[str, str]]:
        settings = Settings.from_datasette(datasette)
        try:
            if not await researchable_brains(datasette, actor, settings):
                return []
        except ResearchError:  # a busy brain must not break every Datasette page
            return []
        links = [{"href": research_path(datasette, None, False), "label": "Research"}]
        if settings.external.enabled and await can(datasette, actor, USAGE):
            links.append(
                {"href": datasette.urls.path("/-/research/usage"), "label": "Web search usage"}
            )
        return links

    return inner


def research_database_actions(datasette: Any, actor: dict | None, database: str):
    """A "Research this brain" action on a brain's database page."""

    async def inner() -> list[dict[str, str]]:
        settings = Settings.from_datasette(datasette)
        try:
            if database not in await brain_databases(datasette, settings):
                return []
        except ResearchError:  # a busy brain must not break its database page
            return []
        if not await can(datasette, actor, RESEARCH, database):
            return []
        return [
            {
                "href": research_path(datasette, database, False),
                "label": "Research this brain",
                "description": "Search items and sources, ranked and explained, with a verdict",
            }
        ]

    return inner


async def run_view(request: Any, datasette: Any) -> Response:
    """``/-/research/runs/<run_id>[.json]``: a saved trace, for its own actor and root (and,
    for a run made by an anonymous visitor, whoever has its link); 404 for everyone else."""
    as_json = bool(request.url_vars.get("format"))
    run_id = request.url_vars["run_id"]
    try:
        trace = await _trace_for(datasette, request, run_id)
        if as_json:
            return Response.json(trace)
        promoted = await promoted_rows(datasette, trace["pack"])
    except ResearchError as exc:
        return await refusal(datasette, request, as_json, exc)
    labels = {name: p.label for name, p in registered_providers(datasette).items()}
    marks = await feedback_for(plugin_database(datasette), run_id)
    context = {
        "trace": trace,
        "pack": trace["pack"],
        "events": display.timeline(trace, labels),
        "say": display,
        "marks": {m["key"]: m["value"] for m in marks},
        "promoted": promoted,
        "feedback_form": False,
        "json_url": traces.run_path(datasette, run_id, as_json=True),
        "runs_url": datasette.urls.path("/-/research/runs"),
        "research_url": research_path(datasette, None, False)
        + "?"
        + urllib.parse.urlencode({"q": trace["question"], "database": trace["database"]}),
        "labels": labels,
        "anchors": citation_anchors(trace["pack"], labels),
        "is_web_url": is_web_url,
    }
    html = await datasette.render_template(RUN_TEMPLATE, context, request=request)
    return Response.html(html)


def run_filter(params: dict[str, list[str]], databases: list[str], actor_id: str | None) -> Any:
    """The runs page's filters; values it does not know are ignored, not errors."""

    def one(name: str, allowed: tuple[str, ...] = ()) -> str:
        value = clean((params.get(name) or [""])[-1]).strip()
        return value if not allowed or value in allowed else ""

    since, until = one("since"), one("until")
    return traces.RunFilter(
        databases=tuple(databases),
        actor_id=actor_id,
        verdict=one("verdict", VERDICTS),
        mode=one("mode", MODES),
        web=one("web", ("yes", "no")),
        since=since if is_date(since) else "",
        until=until if is_date(until) else "",
        q=one("q")[:200],
    )


SIGN_IN_FOR_RUNS = (
    "Runs hold people's questions, so each person sees only their own. Sign in to see yours "
    "(anonymous runs are reached only through the link their page gives them)."
)
NOT_SAVING = "Runs are not being saved: the plugin has no database of its own here."


async def runs_view(request: Any, datasette: Any) -> Response:
    """``/-/research/runs[.json]``: recent runs on the brains this actor may research.

    Runs hold people's questions: a signed-in actor sees only their own, root sees everyone's
    (anonymous runs too), and anonymous visitors see none. The actor filter is SQL, so one's own
    runs never hide behind newer runs of others.
    """
    as_json = bool(request.url_vars.get("format"))
    settings = Settings.from_datasette(datasette)
    try:
        allowed = await researchable_brains(datasette, request.actor, settings)
    except ResearchError as exc:
        return await refusal(datasette, request, as_json, exc)
    if not allowed:
        return await refusal(datasette, request, as_json, cannot_research())
    db = plugin_database(datasette)
    me = _actor_id(request.actor)
    params = urllib.parse.parse_qs(request.query_string)
    where = run_filter(params, allowed, None if me == ROOT else me)
    runs = await traces.recent(db, where) if db is not None and me else []
    for run in runs:
        run["url"] = traces.run_path(datasette, run["run_id"])
    if as_json:
        message = NOT_SAVING if db is None else "" if me else SIGN_IN_FOR_RUNS
        return Response.json(
            {"ok": True, "runs": runs, **({"message": message} if message else {})}
        )
    html = await datasette.render_template(
        RUNS_TEMPLATE,
        {
            "runs": runs,
            "saving": db is not None,
            "signed_in": bool(me),
            "filters": where,
            "filtered": any(
                (where.verdict, where.mode, where.web, where.since, where.until, where.q)
            ),
            "verdicts": VERDICTS,
            "modes": [(m, MODE_LABELS[m]) for m in MODES],
            "research_url": research_path(datasette, None, False),
            "runs_url": datasette.urls.path("/-/research/runs"),
        },
        request=request,
    )
    return Response.html(html)


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


async def promote_view(request: Any, datasette: Any) -> Response:
    """``POST /-/research/promote``: JSON for scripts and the page's script, a form
    (post/redirect/get back to the saved run) without JavaScript."""
    as_json = json_body(request)
    replies_json = wants_json(request)
    if not await can(datasette, request.actor, PROMOTE):
        if replies_json:
            return error_response(
                ResearchError("You may not promote results (dbrain-promote).", 403, "forbidden")
            )
        raise Forbidden(PROMOTE)
    if request.method != "POST":
        return error_response(ResearchError("Use POST.", status=405, code="method_not_allowed"))
    try:
        body, back = await _promotion_body(request, as_json)
        promotion = parse_request(body)
        trace = await visible_run(datasette, request.actor, promotion.run_id)
        brain = datasette.databases.get(trace["database"])
        if brain is None:
            raise ResearchError(
                f"The brain '{trace['database']}' is not attached.", 404, "no_brain"
            )
        check_unchanged(brain)
        settings = Settings.from_datasette(datasette)
        try:
            results = await promote(
                brain,
                plugin_database(datasette),
                trace,
                promotion,
                _actor_id(request.actor),
                settings.external.fetch_allow_networks,
            )
        except sqlite3.Error as exc:
            raise sqlite_error(exc, trace["database"]) from exc
    except ResearchError as exc:
        if replies_json:
            return error_response(exc)
        if exc.status == 413:
            return await page_error(datasette, request, exc)
        datasette.add_message(request, f"Nothing promoted: {exc.message}", datasette.ERROR)
        return Response.redirect(_safe_back(datasette, request, locals().get("back")))
    shown = [
        {
            "source_key": r["source_key"],
            "status": r["status"],
            "local_source_key": r["local_source_key"],
            "title": r["title"],
            "fetch": r["fetch"],
            "message": promotion_message(r),
            "row_url": str(datasette.urls.row(trace["database"], "sources", str(r["row_id"]))),
            **({"warning": r["warning"]} if r.get("warning") else {}),
        }
        for r in results
    ]
    if replies_json:
        return Response.json({"ok": True, "run_id": trace["run_id"], "results": shown})
    summary = " ".join(r["message"] for r in shown)
    datasette.add_message(request, f"Promoted into {trace['database']}: {summary}", datasette.INFO)
    return Response.redirect(_safe_back(datasette, request, back))


def promotion_message(result: dict[str, Any]) -> str:
    """One promotion, told by title: added or already there, and what became of the fetch."""
    title = f"“{result['title']}”" if result.get("title") else result["local_source_key"]
    said = (
        f"Added {title} as {result['local_source_key']}."
        if result["status"] == "created"
        else f"{title} was already in your brain as {result['local_source_key']}."
    )
    if result.get("fetch") == "failed":
        said += " The page could not be fetched: kept the provider's text; dbrain will retry."
    return said


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


async def _promotion_body(request: Any, as_json: bool) -> tuple[dict[str, Any], str]:
    """The promotion fields and the page to return to (forms only)."""
    body = await read_body(request, as_json)
    if as_json:
        return body, ""
    form = body
    keys = form.get("promote_one") or form.get("source_keys") or []
    fields = {
        "run_id": (form.get("run_id") or [""])[-1],
        "source_keys": keys,
        "fetch": (form.get("fetch") or ["false"])[-1],
    }
    return fields, (form.get("next") or [""])[-1]


def _safe_back(datasette: Any, request: Any, back: str | None) -> str:
    """Redirect only to a path on this site (never an absolute or scheme-relative URL)."""
    if (
        back
        and back.startswith("/")
        and not back.startswith("//")
        and "\\" not in back
        and not any(ord(c) < 32 or ord(c) == 127 for c in back)
    ):
        return back
    return research_path(datasette, None, False)


def _actor_id(actor: dict | None) -> str:
    return str((actor or {}).get("id") or "")


async def stream_view(request: Any, datasette: Any) -> Any:
    """``/-/research/stream``: the research page's parameters, answered as NDJSON progress.

    Each line is a stage event (local search, judge, each web provider, merge); the last is
    ``{"stage": "done", "url": ...}`` pointing at the page that renders the saved run, or
    ``{"stage": "error", ...}``. The page's script uses it to show live progress; without
    JavaScript the plain form does the same work in one request.
    """
    route = request.url_vars.get("database")
    try:
        settings, params, lineage, database, _ = await prepare(datasette, request)
    except ResearchError as exc:
        return error_response(exc)
    web = await web_access(datasette, request.actor)
    secrets = settings.secrets()

    async def stream(writer: Any) -> None:
        async def progress(event: dict[str, Any]) -> None:
            await writer.write(json.dumps(scrub(event, secrets)) + "\n")

        try:
            pack = await run_research(
                datasette,
                request.actor,
                database,
                params,
                settings,
                web,
                "page",
                progress,
                lineage,
                requester=requester_of(request),
            )
        except ResearchError as exc:
            await progress({"stage": "error", **exc.as_json()})
            return
        url = saved_run_url(datasette, params, pack, database if route else None)
        await progress({"stage": "done", "run_id": pack["run_id"], "url": url})

    return AsgiStream(
        stream,
        content_type="application/x-ndjson; charset=utf-8",
        headers={"cache-control": "no-store"},
    )


async def feedback_view(request: Any, datasette: Any) -> Response:
    """``POST /-/research/runs/<run_id>/feedback``: marks that re-rank the run and refine it."""
    as_json = json_body(request)
    replies_json = wants_json(request)
    run_id = request.url_vars["run_id"]
    try:
        trace = await _trace_for(datasette, request, run_id)
        if request.method != "POST":
            raise ResearchError("Use POST.", status=405, code="method_not_allowed")
        body, back = await _feedback_body(request, as_json)
        try:
            marks = validate_marks(body)
        except ValueError as exc:
            raise ResearchError(str(exc), code="bad_feedback") from exc
        known = {row["source_key"] for row in _rows(trace["pack"])} | {
            url for row in _rows(trace["pack"]) for url in row_urls(row)
        }
        unknown = [m["key"] for m in marks if m["key"] not in known]
        if unknown:
            raise ResearchError(
                f"Not rows of run {run_id}: {', '.join(unknown)}.", code="not_in_run"
            )
        db = plugin_database(datasette)
        try:
            await save_feedback(db, run_id, marks, _actor_id(request.actor))
        except Exception as exc:
            raise ResearchError(
                f"The feedback could not be saved ({type(exc).__name__}).",
                503,
                "feedback_not_saved",
            ) from exc
        settings = Settings.from_datasette(datasette)
        all_marks = await feedback_for(db, run_id)
    except ResearchError as exc:
        if replies_json:
            return error_response(exc)
        if exc.status in (403, 404, 413):
            return await page_error(datasette, request, exc)
        datasette.add_message(request, f"Feedback not saved: {exc.message}", datasette.ERROR)
        return Response.redirect(_safe_back(datasette, request, locals().get("back")))
    if not replies_json:
        return Response.redirect(_safe_back(datasette, request, back))
    reranked = apply_feedback(trace["pack"], all_marks, weights_from(settings))
    return Response.json(
        {
            "ok": True,
            "run_id": run_id,
            "feedback": all_marks,
            "ranking": reranked["ranking"],
            "moves": reranked["feedback"]["moves"],
            "refinement": refine_query(trace["pack"], all_marks),
        }
    )


async def _trace_for(datasette: Any, request: Any, run_id: str) -> dict[str, Any]:
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
    if trace is None or not await may_see_run(datasette, actor, trace):
        raise ResearchError(f"No saved run {run_id}.", 404, "no_such_run")
    return trace


async def may_see_run(datasette: Any, actor: dict | None, trace: dict[str, Any]) -> bool:
    """Runs hold people's questions. A run is for its own actor and for root; a run made by an
    anonymous visitor, for whoever has its link (the run id carries 96 random bits). Always only
    on a brain the actor may research."""
    if not await can(datasette, actor, RESEARCH, trace["database"]):
        return False
    owner, me = trace.get("actor_id", ""), _actor_id(actor)
    return not owner or owner == me or me == ROOT


def _rows(pack: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pack["evidence"], *pack["external_evidence"]]


async def _feedback_body(request: Any, as_json: bool) -> tuple[Any, str]:
    """JSON ``{"feedback": [...]}``, or a form button ``mark=<key>|<value>``."""
    body = await read_body(request, as_json)
    if as_json:
        return body.get("feedback"), ""
    form = body
    key, _, value = (form.get("mark") or [""])[-1].rpartition("|")
    return [{"key": key, "value": value}], (form.get("next") or [""])[-1]


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
