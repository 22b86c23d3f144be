"""The research page and its JSON API (``/-/research``, ``/<db>/-/research``, ``.json``), and
the live progress stream. What the page's form and controls show is ``research_form``'s; the
"Research" menu link and database action are ``menu``'s."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from datasette import Response

from .. import display, traces
from ..config import Settings
from ..errors import ResearchError
from ..feedback import FEEDBACK_VALUES
from ..options import one_value_each, param, request_from_params
from ..pack_json import PackJSON
from ..promotions import promoted_rows, takes_promotions
from ..providers.base import scrub
from ..requesters import cross_site_with_cookie, requester_of
from ..saved_runs import settle
from ..service import (
    Access,
    RunOptions,
    access_for,
    actor_id_of,
    refined,
    research,
    seen_trace,
    with_feedback,
)
from ..urls import is_web_url
from .common import (
    Stream,
    citation_anchors,
    error_response,
    page_error,
    refusal,
    research_path,
    resolve_brain,
    stream_path,
    with_permission_memo,
)
from .guards import arrived_at
from .own_runs import (
    claim_token,
    claimant,
    claimant_cookie,
    claimed,
    own_runs,
    remember_run,
    sees_whole_run,
)
from .research_form import (
    answer_controls,
    expand_fields,
    expansion_links,
    filters_set,
    form_values,
    promotion_refusal,
    research_url,
    web_controls,
    web_offer,
)

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


async def requested_trace(
    datasette: Any, request: Any, params: dict[str, list[str]]
) -> traces.TraceJSON | None:
    """``?run=<run_id>``: the run a streamed search already saved (no second search), when it
    is this question's and the actor may see it; else None, and the page searches anew."""
    run_id = param(params, "run")
    if not run_id or not traces.RUN_ID.fullmatch(run_id):
        return None
    trace = await seen_trace(datasette, request.actor, run_id)
    return trace if trace is not None and trace["question"] == param(params, "q") else None


async def prepare(
    datasette: Any, request: Any
) -> tuple[Settings, Access, dict[str, list[str]], dict[str, Any], str, list[str]]:
    """What every research route needs first: settings, what the actor may do (``Access``,
    decided once here), parameters (refined when asked), the brain and the brains the actor may
    research. Raises ResearchError (4xx)."""
    settings = Settings.from_datasette(datasette)
    cross_site = cross_site_with_cookie(request, settings.same_site_spends)
    access = await access_for(datasette, request.actor, settings, cross_site)
    params = urllib.parse.parse_qs(request.query_string, keep_blank_values=True)
    params, lineage = await refined(datasette, request.actor, params, own_runs(datasette, request))
    database, allowed = await resolve_brain(datasette, request, settings, params, access.brains)
    return settings, access, params, lineage, database, allowed


@with_permission_memo
async def research_view(request: Any, datasette: Any) -> Response:
    """``/-/research[.json]`` and ``/<database>/-/research[.json]``."""
    as_json = bool(request.url_vars.get("format"))
    route = request.url_vars.get("database")
    try:
        settings, access, params, lineage, database, allowed = await prepare(datasette, request)
    except ResearchError as exc:
        return await refusal(datasette, request, as_json, exc)
    claim = None if as_json else claimed(datasette, request, params)
    if claim is not None:
        return claim
    web = access.web
    trace = None if as_json else await requested_trace(datasette, request, params)
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
                requester=requester_of(request, settings.trust_forwarded_for),
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
        "form": form_values(params),
        "filters_open": filters_set(form_values(params), settings.default_limit),
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
        "web_controls": web_controls(settings, web, params),
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


async def stream_view(request: Any, datasette: Any) -> Any:
    """``/-/research/stream``: the research page's parameters, answered as NDJSON progress.

    Each line is a stage event (local search, judge, each web provider, merge); the last is
    ``{"stage": "done", "url": ...}`` pointing at the page that renders the saved run, or
    ``{"stage": "error", ...}``. The page's script uses it to show live progress; without
    JavaScript the plain form does the same work in one request.
    """
    route = request.url_vars.get("database")
    try:
        settings, access, params, lineage, database, _ = await prepare(datasette, request)
    except ResearchError as exc:
        return error_response(exc)
    secrets = settings.secrets()
    anonymous = not actor_id_of(request.actor)
    browser = claimant(request) if anonymous else ""  # whose claim the "done" address carries

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
                requester=requester_of(request, settings.trust_forwarded_for),
                arrived=arrived_at(request),
            )
            pack = await research(datasette, database, request_from_params(params, settings), run)
        except ResearchError as exc:
            await progress({"stage": "error", **exc.as_json()})
            return
        url = saved_run_url(datasette, params, pack, database if route else None)
        if url and anonymous:  # the page makes the run this browser's
            claim = claim_token(datasette, pack["run_id"], browser)
            url += "&" + urllib.parse.urlencode({"claim": claim})
        await progress({"stage": "done", "run_id": pack["run_id"], "url": url})

    headers = {"cache-control": "no-store"}
    if anonymous:
        headers["set-cookie"] = claimant_cookie(datasette, browser)
    return Stream(stream, content_type="application/x-ndjson; charset=utf-8", headers=headers)
