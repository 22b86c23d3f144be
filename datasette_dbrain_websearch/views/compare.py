"""``/-/research/compare?a=RUN&b=RUN``: two saved runs side by side (``.json`` too).

``b=brain`` compares a run with the same question researched now without the web: a GET shows
the run and a button; only its POST (from this site, within the requester's limits) researches
and saves the new run, and the page moves to its own address, so a reload never researches
again. Both runs go through the saved-run check (someone else's run is a 404), and a run the
requester does not own (an anonymous run's link) is compared as it is shared: its question,
answer and cited rows, no verdict, counts, time or cost.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from typing import Any

from datasette import Response

from .. import display, exports, traces
from ..compare import compare_runs
from ..config import Settings
from ..errors import ResearchError
from ..options import param, request_from_params, run_params
from ..providers import provider_labels, registered_providers
from ..requesters import cross_site_with_cookie, requester_of
from ..saved_runs import costs_of
from ..service import (
    RunOptions,
    access_for,
    research,
    saved_trace,
)
from ..traces import TraceJSON
from ..web_gate import CROSS_SITE_WARNING
from .common import (
    refusal,
    with_permission_memo,
)
from .guards import arrived_at
from .own_runs import remember_run, sees_whole_run

TEMPLATE = "dbrain_websearch_compare.html"
BRAIN_ONLY = "brain"


def compare_path(datasette: Any, a: str, b: str, as_json: bool = False) -> str:
    query = urllib.parse.urlencode({"a": a, "b": b})
    return datasette.urls.path("/-/research/compare" + (".json" if as_json else "")) + "?" + query


def run_id_param(params: dict[str, list[str]], name: str, brain_only: bool = False) -> str:
    value = param(params, name)
    if brain_only and value == BRAIN_ONLY:
        return value
    if not traces.RUN_ID.fullmatch(value):
        raise ResearchError(
            f"{name} must be a saved run's id"
            + (f", or '{BRAIN_ONLY}' for the same question without the web" if brain_only else "")
            + ".",
            code="bad_run_id",
        )
    return value


def cross_site_refused() -> ResearchError:
    return ResearchError(
        "This request came from another site, so no run was made on your account; compare "
        "again from this site's page.",
        403,
        CROSS_SITE_WARNING,
    )


def post_to_research() -> ResearchError:
    return ResearchError(
        f"b={BRAIN_ONLY} researches the question again and saves a run: send it as a POST "
        "(the compare page's button does).",
        405,
        "method_not_allowed",
    )


async def brain_only(datasette: Any, request: Any, trace: TraceJSON) -> TraceJSON:
    """The run's question researched again as it was (for anyone but its owner, the question
    alone), but never on the web; saved. Only on a POST from this site, within the requester's
    limits (``admission``), as research is."""
    settings = Settings.from_datasette(datasette)
    if cross_site_with_cookie(request, settings.same_site_spends):
        raise cross_site_refused()
    # Its owner re-runs it with its settings; anyone else holding its link, with what it
    # shares: the question, never the owner's filters or sites.
    kept = run_params(trace["pack"]) if sees_whole_run(datasette, request, trace) else {}
    params = {**kept, "q": [trace["pack"]["question"]]}
    params["external"] = ["never"]
    run = RunOptions(
        actor=request.actor,
        surface="page",
        settings=settings,
        access=await access_for(datasette, request.actor, settings, cross_site=False),
        requester=requester_of(request, settings.trust_forwarded_for),
        arrived=arrived_at(request),
    )
    pack = await research(datasette, trace["database"], request_from_params(params, settings), run)
    return await saved_trace(datasette, request.actor, pack["run_id"])


READING = ("GET", "HEAD")


@with_permission_memo
async def compare_view(request: Any, datasette: Any) -> Response:
    as_json = bool(request.url_vars.get("format"))
    params = urllib.parse.parse_qs(request.query_string)
    try:
        a = await saved_trace(datasette, request.actor, run_id_param(params, "a"))
        b_id = run_id_param(params, "b", brain_only=True)
        if b_id == BRAIN_ONLY:
            if request.method in READING and not as_json:
                return await offer(datasette, request, a)
            if request.method != "POST":
                raise post_to_research()
            b = await brain_only(datasette, request, a)
            if not as_json:
                response = Response.redirect(compare_path(datasette, a["run_id"], b["run_id"]), 303)
                remember_run(datasette, request, response, b["run_id"])  # a visitor's new run
                return response
        else:
            b = await saved_trace(datasette, request.actor, b_id)
    except ResearchError as exc:
        response = await refusal(datasette, request, as_json, exc)
        if exc.status == 405:
            response.headers["Allow"] = "POST"
        return response
    costs = await costs_of(datasette, [a["run_id"], b["run_id"]])
    # A b=brain run was made by this request: the requester's own.
    made = b_id == BRAIN_ONLY
    comparison = compare_runs(
        as_seen(datasette, request, a), b if made else as_seen(datasette, request, b), costs
    )
    if as_json:
        return Response.json(comparison)
    html = await datasette.render_template(
        TEMPLATE,
        {
            **page_context(datasette),
            "comparison": comparison,
            "offer": None,
            "json_url": compare_path(datasette, a["run_id"], b["run_id"], as_json=True),
        },
        request=request,
    )
    return Response.html(html)


def as_seen(datasette: Any, request: Any, trace: TraceJSON) -> Mapping[str, Any]:
    """The run as this request may see it: whole for its owner, else what it shares (an
    anonymous run's link), as on its own page."""
    if sees_whole_run(datasette, request, trace):
        return trace
    return {**trace, "pack": exports.shared(trace["pack"])}


def page_context(datasette: Any) -> dict[str, Any]:
    return {
        "labels": provider_labels(registered_providers(datasette)),
        "say": display,
        "run_url": lambda run_id: traces.run_path(datasette, run_id),
        "runs_url": datasette.urls.path("/-/research/runs"),
    }


async def offer(datasette: Any, request: Any, a: TraceJSON) -> Response:
    """``b=brain`` on a GET: the run and a button that researches it without the web. A link
    (or another site) never makes a run; the button's POST does."""
    pack = a["pack"]
    context = {
        **page_context(datasette),
        "comparison": None,
        "offer": {
            "run_id": a["run_id"],
            "question": pack["question"],
            "started_at": a.get("started_at", ""),
            "action": compare_path(datasette, a["run_id"], BRAIN_ONLY),
        },
    }
    html = await datasette.render_template(TEMPLATE, context, request=request)
    return Response.html(html)
