"""Saved runs: ``/-/research/runs`` (each actor's own; root sees all) and one run's page
and JSON (``/-/research/runs/<run_id>``)."""

from __future__ import annotations

import urllib.parse
from typing import Any

from datasette import Response

from .. import display, exports, traces
from ..config import Settings
from ..config_keys import MODES
from ..errors import ResearchError
from ..judge import VERDICTS
from ..options import is_date, param
from ..promotions import promoted_rows
from ..providers import provider_labels, registered_providers
from ..saved_runs import marks_on, recent_runs, saving
from ..service import (
    ROOT,
    actor_id_of,
    cannot_research,
    researchable_brains,
    saved_trace,
)
from ..traces import TraceJSON
from ..urls import is_web_url
from .common import (
    MODE_LABELS,
    citation_anchors,
    refusal,
    research_path,
    with_permission_memo,
)
from .own_runs import sees_whole_run
from .sign_in import HOW_TO_SIGN_IN

RUN_TEMPLATE = "dbrain_websearch_run.html"


RUNS_TEMPLATE = "dbrain_websearch_runs.html"


@with_permission_memo
async def run_view(request: Any, datasette: Any) -> Response:
    """``/-/research/runs/<run_id>[.json|.md|.csv]``: a saved trace (or its Markdown and CSV
    exports), whole for its owner and root (``own_runs``); for a run made by an anonymous
    visitor, what it shares for whoever else has its link; 404 for everyone else."""
    form = request.url_vars.get("format") or ""
    as_json = bool(form)
    run_id = request.url_vars["run_id"]
    labels = provider_labels(registered_providers(datasette))
    try:
        trace = await saved_trace(datasette, request.actor, run_id)
        whole = sees_whole_run(datasette, request, trace)
        if form == ".json":
            if whole:
                return Response.json(trace)
            return Response.json(
                {**exports.shared(trace["pack"]), "started_at": trace["started_at"]}
            )
        if form:
            return export_response(datasette, request, trace, form, labels, not whole)
        promoted = await promoted_rows(datasette, trace["pack"]) if whole else {}
    except ResearchError as exc:
        return await refusal(datasette, request, as_json, exc)
    marks = await marks_on(datasette, run_id) if whole else []
    pack = trace["pack"] if whole else exports.shared(trace["pack"])
    anchors = citation_anchors(trace["pack"], labels)
    context = {
        "trace": trace,
        "pack": pack,
        "shared": not whole,
        "events": display.timeline(trace, labels) if whole else [],
        "say": display,
        "marks": {m["key"]: m["value"] for m in marks},
        "promoted": promoted,
        "feedback_form": False,
        "json_url": traces.run_path(datasette, run_id, ".json"),
        "markdown_url": traces.run_path(datasette, run_id, ".md"),
        "csv_url": traces.run_path(datasette, run_id, ".csv"),
        "runs_url": datasette.urls.path("/-/research/runs"),
        "research_url": research_path(datasette, None, False)
        + "?"
        + urllib.parse.urlencode({"q": trace["question"], "database": trace["database"]}),
        "labels": labels,
        "anchors": anchors if whole else {k: anchors[k] for k in exports.cited_keys(pack)},
        "is_web_url": is_web_url,
    }
    html = await datasette.render_template(RUN_TEMPLATE, context, request=request)
    return Response.html(html)


EXPORT_TYPES = {".md": "text/markdown; charset=utf-8", ".csv": "text/csv; charset=utf-8"}


def export_response(
    datasette: Any,
    request: Any,
    trace: TraceJSON,
    form: str,
    labels: dict[str, str],
    share: bool,
) -> Response:
    """A run as a Markdown or CSV file, its links absolute so they work wherever it goes
    (``share``: what the run shares, for someone other than its owner)."""

    def link(path: str) -> str:
        return datasette.absolute_url(request, path)

    pack = trace["pack"]
    if form == ".md":
        body = exports.markdown(pack, trace["started_at"], labels, link, share)
    else:
        body = exports.csv_text(pack, labels, link, share)
    name = f"research-{trace['run_id']}{form}"
    return Response(
        body,
        content_type=EXPORT_TYPES[form],
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


def run_filter(params: dict[str, list[str]], databases: list[str], actor_id: str | None) -> Any:
    """The runs page's filters; values it does not know are ignored, not errors."""

    def one(name: str, allowed: tuple[str, ...] = ()) -> str:
        value = param(params, name)
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
    "(anonymous runs are reached only through the link their page gives them). " + HOW_TO_SIGN_IN
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
    saves = saving(datasette)
    me = actor_id_of(request.actor)
    params = urllib.parse.parse_qs(request.query_string)
    where = run_filter(params, allowed, None if me == ROOT else me)
    runs = await recent_runs(datasette, where) if me else []
    for run in runs:
        run["url"] = traces.run_path(datasette, run["run_id"])
    if as_json:
        message = NOT_SAVING if not saves else "" if me else SIGN_IN_FOR_RUNS
        return Response.json(
            {"ok": True, "runs": runs, **({"message": message} if message else {})}
        )
    html = await datasette.render_template(
        RUNS_TEMPLATE,
        {
            "runs": runs,
            "saving": saves,
            "signed_in": bool(me),
            "sign_in_note": SIGN_IN_FOR_RUNS,
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
