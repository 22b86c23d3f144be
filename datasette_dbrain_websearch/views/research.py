"""The research page and its JSON API (``/-/research``, ``/<db>/-/research``, ``.json``),
the live progress stream, and the "Research" menu link and database action."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from datasette import Response

from .. import display, traces
from ..config import Settings
from ..config_keys import MODES
from ..errors import ResearchError
from ..feedback import (
    FEEDBACK_VALUES,
)
from ..options import BOOLEAN_VALUES, one_value_each, param, request_from_params
from ..pack_json import PackJSON
from ..permissions import RESEARCH, USAGE
from ..pipeline import WebAccess
from ..promotions import promoted_rows, takes_promotions
from ..providers.base import clean, scrub
from ..requesters import cross_site_with_cookie, requester_of
from ..saved_runs import settle
from ..service import (
    RunOptions,
    access_for,
    actor_id_of,
    brain_databases,
    may,
    refined,
    research,
    researchable_brains,
    seen_run,
    with_feedback,
)
from ..urls import is_web_url
from .common import (
    MODE_LABELS,
    Stream,
    citation_anchors,
    error_response,
    page_error,
    refusal,
    remembering_access,
    research_path,
    resolve_brain,
    stream_path,
)
from .guards import arrived_at
from .own_runs import claim_token, claimed, remember_run, sees_whole_run
from .sign_in import HOW_TO_SIGN_IN

TEMPLATE = "dbrain_websearch_research.html"


def saved_run_url(
    datasette: Any, params: dict[str, list[str]], pack: PackJSON | None, route_db: str | None = None
) -> str:
    """The page for this run as saved (``?run=``): where marks and promotions come back to."""
    if not pack or not pack.get("trace_url"):
        return ""
    query = {k: v for k, v in one_value_each(params).items() if k not in ("run", "refine_from")}
    query["q"] = [pack["question"]]
    query["run"] = [pack["run_id"]]
    path = research_path(datasette, route_db, False)
    return path + "?" + urllib.parse.urlencode(query, True)


async def saved_trace(
    datasette: Any, request: Any, params: dict[str, list[str]]
) -> traces.TraceJSON | None:
    """``?run=<run_id>``: the run a streamed search already saved (no second search), when it
    is this question's and the actor may see it; else None, and the page searches anew."""
    run_id = param(params, "run")
    if not run_id or not traces.RUN_ID.fullmatch(run_id):
        return None
    trace = await seen_run(datasette, request.actor, run_id)
    return trace if trace is not None and trace["question"] == param(params, "q") else None


async def prepare(
    datasette: Any, request: Any
) -> tuple[Settings, dict[str, list[str]], dict[str, Any], str, list[str]]:
    """What every research route needs first: settings, parameters (refined when asked), the
    brain and the brains the actor may research. Raises ResearchError (4xx)."""
    settings = Settings.from_datasette(datasette)
    params = urllib.parse.parse_qs(request.query_string, keep_blank_values=True)
    params, lineage = await refined(
        datasette, request.actor, params, lambda run: sees_whole_run(datasette, request, run)
    )
    database, allowed = await resolve_brain(datasette, request, settings, params)
    return settings, params, lineage, database, allowed


@remembering_access
async def research_view(request: Any, datasette: Any) -> Response:
    """``/-/research[.json]`` and ``/<database>/-/research[.json]``."""
    as_json = bool(request.url_vars.get("format"))
    route = request.url_vars.get("database")
    try:
        settings, params, lineage, database, allowed = await prepare(datasette, request)
    except ResearchError as exc:
        return await refusal(datasette, request, as_json, exc)
    claim = None if as_json else claimed(datasette, request, params)
    if claim is not None:
        return claim
    access = await access_for(datasette, request.actor, cross_site_with_cookie(request))
    web = access.web
    trace = None if as_json else await saved_trace(datasette, request, params)
    if trace is not None and not sees_whole_run(datasette, request, trace):
        # Someone else's run (an anonymous run's link): what it shares, on its own page.
        return Response.redirect(traces.run_path(datasette, trace["run_id"]))
    pack = trace["pack"] if trace else None
    refinement = None
    if pack is not None:
        pack, refinement = await with_feedback(datasette, pack, settings)
    error = None
    has_question = any(param(params, name) for name in ("q", "refine_from"))
    if pack is None and (as_json or has_question):
        try:
            run = RunOptions(
                actor=request.actor,
                surface="json" if as_json else "page",
                settings=settings,
                access=access,
                lineage=lineage,
                requester=requester_of(request),
                wait_for_trace=False,
                arrived=arrived_at(request),
            )
            pack = await research(datasette, database, request_from_params(params, settings), run)
        except ResearchError as exc:
            error = exc
    if as_json:
        if error:
            return error_response(error)
        assert pack is not None  # asked for JSON, the run was made (or refused, above)
        response = Response.json(pack)
        remember_run(datasette, request, response, pack["run_id"] if pack.get("trace_url") else "")
        return then_settle(datasette, response, pack["run_id"])
    try:
        may_promote = pack is not None and access.promote
        can_promote = may_promote and await takes_promotions(datasette, database)
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
        "filters_open": filters_set(_form_values(params), settings.default_limit),
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
        "external": web_controls(settings, web, params),
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
        "expansion_links": expansion_links(datasette, route_db, params, pack),
        "did_you_mean_url": research_url(
            datasette, route_db, params, q=pack["did_you_mean"]["question"]
        )
        if pack and pack["did_you_mean"]
        else "",
        "expand_fields": expand_fields(params),
        "answer_form": answer_controls(settings, params),
        "anchors": citation_anchors(pack, web.labels),
        "labels": web.labels,
        "say": display,
        "feedback_form": True,
        "max_limit": settings.max_limit,
        "default_limit": settings.default_limit,
        "can_promote": can_promote,
        "promotion_refused": None
        if may_promote or not (pack and pack["external_evidence"])
        else promotion_refusal(request.actor),
        "promote_url": datasette.urls.path("/-/research/promote"),
        "stream_url": stream_path(datasette, route_db),
        "promoted": promoted,
        "refinement": refinement,
        "marks": {m["key"]: m["value"] for m in marks_of(pack)},
        "feedback_values": FEEDBACK_VALUES,
        "saved_url": saved_run_url(datasette, params, pack, route_db),
        "is_web_url": is_web_url,
    }
    html = await datasette.render_template(TEMPLATE, context, request=request)
    if error:
        return Response.html(html, status=error.status, headers=error.headers())
    response = Response.html(html)
    if pack is not None and trace is None and pack.get("trace_url"):
        remember_run(datasette, request, response, pack["run_id"])  # a visitor's new run
    return then_settle(datasette, response, pack["run_id"] if pack else "")


def marks_of(pack: PackJSON | None) -> list[dict[str, str]]:
    """The marks a run was re-ranked by (``feedback.apply_feedback``), none for no run."""
    marks: list[dict[str, str]] = (pack.get("feedback", {}) if pack else {}).get("marks", [])
    return marks


def then_settle(datasette: Any, response: Response, run_id: str) -> Response:
    """The response, and once it is sent, the wait for the run's trace to be written: the
    write runs beside the answer instead of before it, and the request ends only when the run
    is saved (a client in the same process, which waits for the app, finds it saved)."""
    send_response = response.asgi_send

    async def asgi_send(send: Any) -> None:
        await send_response(send)
        if run_id:
            await settle(datasette, run_id)

    response.asgi_send = asgi_send
    return response


FRESHNESS_LABELS = [
    ("", "Any time"),
    ("pd", "Past day"),
    ("pw", "Past week"),
    ("pm", "Past month"),
    ("py", "Past year"),
]


def web_controls(settings: Settings, web: WebAccess, params: dict) -> dict[str, Any]:
    """What the page's "Search the web too" controls show for this actor and config."""
    ext = settings.web
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
            start or param(params, "freshness_since"),
            end or param(params, "freshness_until"),
        ),
        "labels": labels,
        "read": ext.read,
    }


def promotion_refusal(actor: dict | None) -> dict[str, str]:
    """Why web rows show a disabled "Save to brain", shortly (beside each) and in full (once,
    and for the ``p`` key): a visitor is told how to sign in, a signed-in person what they
    lack."""
    if not actor:
        return {
            "short": "sign in to save",
            "why": f"Signed-in people who may write to this brain can save a web page to it. "
            f"{HOW_TO_SIGN_IN}",
        }
    return {
        "short": "not allowed for you",
        "why": "Saving a web page to this brain needs the dbrain-promote permission, which "
        "your account does not have.",
    }


def web_offer(
    settings: Settings, web: WebAccess, actor: dict | None, pack: PackJSON | None, url: str
) -> dict[str, Any]:
    """The one-click "Search the web" for a run whose brain evidence is missing, weak or maybe
    out of date; for those who may not search the web, why not and how to get it."""
    ext = settings.web
    if not ext.enabled:
        return {"show": False, "url": "", "reason": ""}
    order = " → ".join(web.labels.get(n, n) for n in ext.providers)
    show, why = False, ""
    # A URL question whose page was read directly: searching would read it again.
    if pack and not pack["external_search"]["ran"] and not pack["external_evidence"]:
        # Offered whenever the run's verdict is not enough, beside a "did you mean" too: a
        # correction may be wrong, and the person chooses.
        verdict = pack["judge"].get("combined", pack["judge"])["verdict"]
        show = verdict != "enough_evidence" or pack["external_search"]["current_state_question"]
        why = {
            "no_evidence": "Nothing in your brain answers this",
            "weak_evidence": "Your brain's evidence is weak",
        }.get(verdict, "This asks about now, and your brain may be out of date")
    if web.permitted:
        return {"show": show, "url": url, "reason": f"{why}; ask {order}." if why else ""}
    reason = (
        "Sign in to search the web too: it needs an account allowed dbrain-external-search "
        "(root, or one named in external_search.allow). " + HOW_TO_SIGN_IN
        if actor is None
        else "Your account may not search the web (permission dbrain-external-search)."
    )
    return {"show": show, "url": "", "reason": f"{why}. {reason}" if why else reason}


EXPANDED = (
    "external",
    "provider",
    "freshness",
    "freshness_since",
    "freshness_until",
    "site",
    "not_site",
    "read",
    "answer",
    "depth",
    "strategy",
)


def expand_fields(params: dict[str, list[str]]) -> list[tuple[str, str]]:
    """What a refined search keeps of this one besides what the run records (web choices)."""
    kept = []
    for name in EXPANDED:
        values = [clean(v) for v in params.get(name) or [] if v.strip()]
        if values:
            kept.append((name, ",".join(values) if name in LISTED_FIELDS else values[-1]))
    return kept


def expansion_links(
    datasette: Any, route_db: str | None, params: dict[str, list[str]], pack: PackJSON | None
) -> dict[str, str]:
    """For each word Expand added, this research without it (the chip's remove link)."""
    if not pack:
        return {}
    words = pack["query_plan"].get("expansion_terms") or []
    base = {**params, "q": [pack["question"]]}
    return {
        word: research_url(
            datasette, route_db, {**base, "expand": [",".join(w for w in words if w != word)]}
        )
        for word in words
    }


def research_url(
    datasette: Any, route_db: str | None, params: dict[str, list[str]], **changes: str
) -> str:
    """This research with some parameters changed; empty ones and run/refine links dropped,
    one value each."""
    query = {
        k: v
        for k, v in one_value_each(params).items()
        if k not in ("run", "refine_from", *changes) and any(x.strip() for x in v)
    }
    query.update({k: [v] for k, v in changes.items()})
    return research_path(datasette, route_db, False) + "?" + urllib.parse.urlencode(query, True)


def answer_controls(settings: Settings, params: dict[str, list[str]]) -> dict[str, Any]:
    """The page's "Write an answer" box: ticked per request, else by ``answer.default``."""
    answer = settings.answer
    value = param(params, "answer").lower()
    llm = answer.synthesizer == "llm"
    return {
        "default": answer.default,
        "checked": BOOLEAN_VALUES.get(value, answer.default),
        "streams": llm,
        "help": "A language model writes it from the evidence"
        if llm
        else "Sentences picked from the evidence, each citing its row",
    }


def filters_set(form: dict[str, str], default_limit: int) -> bool:
    """Whether the Filters drawer opens: a filter differs from its default. A refined run
    (Expand) takes its parent's limit, syntax and profile, which must not open it by itself."""
    return bool(
        any(form[name] for name in ("tag", "source_type", "kind", "since", "until"))
        or form["syntax"] == "raw"
        or form["limit"] not in ("", str(default_limit))
        or form["profile"] not in ("", "general")
    )


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
        "read",
        "profile",
        "answer",
        "depth",
        "strategy",
    )
    form = {n: param(params, n) for n in names}
    # Text fields that take several values show them all, as the search read them.
    for name in LISTED_FIELDS:
        form[name] = ", ".join(clean(v).strip() for v in params.get(name) or [] if v.strip())
    return form


LISTED_FIELDS = ("tag", "source_type", "site", "not_site")


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
        if settings.web.enabled and await may(datasette, actor, USAGE):
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
        if not await may(datasette, actor, RESEARCH, database):
            return []
        return [
            {
                "href": research_path(datasette, database, False),
                "label": "Research this brain",
                "description": "Search items and sources, ranked and explained, with a verdict",
            }
        ]

    return inner


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
    access = await access_for(datasette, request.actor, cross_site_with_cookie(request))
    secrets = settings.secrets()

    async def stream(writer: Any) -> None:
        async def progress(event: dict[str, Any]) -> None:
            await writer.write(json.dumps(scrub(event, secrets)) + "\n")

        try:
            run = RunOptions(
                actor=request.actor,
                surface="page",
                settings=settings,
                access=access,
                progress=progress,
                lineage=lineage,
                requester=requester_of(request),
                arrived=arrived_at(request),
            )
            pack = await research(datasette, database, request_from_params(params, settings), run)
        except ResearchError as exc:
            await progress({"stage": "error", **exc.as_json()})
            return
        url = saved_run_url(datasette, params, pack, database if route else None)
        if url and not actor_id_of(request.actor):  # the page makes the run this browser's
            url += "&" + urllib.parse.urlencode({"claim": claim_token(datasette, pack["run_id"])})
        await progress({"stage": "done", "run_id": pack["run_id"], "url": url})

    return Stream(
        stream,
        content_type="application/x-ndjson; charset=utf-8",
        headers={"cache-control": "no-store"},
    )
