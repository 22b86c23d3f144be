"""What a person does to a run: promote its web rows into the brain and mark its rows
(relevance feedback), as JSON for scripts and the page's script or as no-JS form posts."""

from __future__ import annotations

from typing import Any

from datasette import Forbidden, Response

from ..errors import ResearchError
from ..options import param
from ..permissions import PROMOTE
from ..promotion_request import MAX_KEYS, parse_request
from ..promotions import promotion_brain, promotion_message, write_promotion
from ..service import (
    mark_rows,
    may,
    owned_trace,
    saved_trace,
)
from .common import (
    error_response,
    json_body,
    page_error,
    read_body,
    research_path,
    wants_json,
    with_permission_memo,
)
from .own_runs import own_runs, sees_whole_run


async def promote_view(request: Any, datasette: Any) -> Response:
    """``POST /-/research/promote``: JSON for scripts and the page's script, a form
    (post/redirect/get back to the saved run) without JavaScript."""
    as_json = json_body(request)
    replies_json = wants_json(request)
    if not await may(datasette, request.actor, PROMOTE):
        if replies_json:
            return error_response(
                ResearchError("You may not promote results (dbrain-promote).", 403, "forbidden")
            )
        raise Forbidden(PROMOTE)
    if request.method != "POST":
        return error_response(ResearchError("Use POST.", status=405, code="method_not_allowed"))
    try:
        bodies, back = await _promotion_bodies(request, as_json)
        promotions = [parse_request(body) for body in bodies]
        # A passed-on link shows the run's cited rows only: not the owner's to promote from.
        trace = await owned_trace(
            datasette, request.actor, promotions[0].run_id, own_runs(datasette, request)
        )
        brain = promotion_brain(datasette, trace)
        results = [
            result
            for promotion in promotions
            for result in await write_promotion(
                datasette, request.actor, trace, promotion, brain, request
            )
        ]
    except ResearchError as exc:
        if replies_json:
            return error_response(exc)
        if exc.status == 413:
            return await page_error(datasette, request, exc)
        datasette.add_message(request, f"Nothing promoted: {exc.message}", datasette.ERROR)
        return Response.redirect(safe_back(datasette, request, locals().get("back")))
    shown = [
        {
            "source_key": r["source_key"],
            "status": r["status"],
            "local_source_key": r["local_source_key"],
            "title": r["title"],
            "fetch": r["fetch"],
            "message": promotion_message(r),
            "row_url": str(datasette.urls.row(trace["database"], "sources", str(r["row_id"]))),
            **({"tags": r["tags"]} if "tags" in r else {}),
            **({"note_key": r["note_key"]} if r.get("note_key") else {}),
            **({"warning": r["warning"]} if r.get("warning") else {}),
        }
        for r in results
    ]
    if replies_json:
        return Response.json({"ok": True, "run_id": trace["run_id"], "results": shown})
    summary = " ".join(r["message"] for r in shown)
    datasette.add_message(request, f"Promoted into {trace['database']}: {summary}", datasette.INFO)
    return Response.redirect(safe_back(datasette, request, back))


async def _promotion_bodies(request: Any, as_json: bool) -> tuple[list[dict[str, Any]], str]:
    """The promotions asked for and the page to return to (forms only).

    A JSON body is one promotion. A form names the rows (``promote_one``, else the ticked
    ``source_keys``); each row takes its own tags and note (``tags:<key>``, ``note:<key>``,
    the fields beside its button), else the batch's (``tags``, ``note``): rows annotated
    alike are one promotion."""
    body = await read_body(request, as_json)
    if as_json:
        return [body], ""
    form = body
    keys = form.get("promote_one") or form.get("source_keys") or []
    batch_tags = [t for t in form.get("tags") or [] if t.strip()]
    groups: dict[tuple[tuple[str, ...], str], list[str]] = {}
    for key in keys:
        tags = [t for t in form.get(f"tags:{key}") or [] if t.strip()] or batch_tags
        note = param(form, f"note:{key}") or param(form, "note")
        groups.setdefault((tuple(tags), note), []).append(key)
    shared = {"run_id": param(form, "run_id"), "fetch": (form.get("fetch") or ["false"])[-1]}
    if not groups or len(keys) > MAX_KEYS:  # refused by ``parse_request`` as one request
        return [{**shared, "source_keys": keys}], param(form, "next")
    bodies = [
        {**shared, "source_keys": group, "tags": list(tags), "note": note}
        for (tags, note), group in groups.items()
    ]
    return bodies, param(form, "next")


def safe_back(datasette: Any, request: Any, back: str | None) -> str:
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


@with_permission_memo
async def feedback_view(request: Any, datasette: Any) -> Response:
    """``POST /-/research/runs/<run_id>/feedback``: marks that re-rank the run and refine it,
    from the run's owner (``own_runs``; anyone else holding an anonymous run's link: 404)."""
    as_json = json_body(request)
    replies_json = wants_json(request)
    run_id = request.url_vars["run_id"]
    try:
        trace = await saved_trace(datasette, request.actor, run_id)
        if not sees_whole_run(datasette, request, trace):
            # Marks re-rank the run and reply with its whole order: its owner's to give.
            raise ResearchError(f"No saved run {run_id}.", 404, "no_such_run")
        if request.method != "POST":
            raise ResearchError("Use POST.", status=405, code="method_not_allowed")
        body, back = await _feedback_body(request, as_json)
        reply = await mark_rows(datasette, request.actor, trace, body)
    except ResearchError as exc:
        if replies_json:
            return error_response(exc)
        if exc.status in (403, 404, 413):
            return await page_error(datasette, request, exc)
        datasette.add_message(request, f"Feedback not saved: {exc.message}", datasette.ERROR)
        return Response.redirect(safe_back(datasette, request, locals().get("back")))
    if not replies_json:
        return Response.redirect(safe_back(datasette, request, back))
    return Response.json(reply)


async def _feedback_body(request: Any, as_json: bool) -> tuple[Any, str]:
    """JSON ``{"feedback": [...]}``, or a form button ``mark=<key>|<value>``."""
    body = await read_body(request, as_json)
    if as_json:
        return body.get("feedback"), ""
    form = body
    key, _, value = param(form, "mark").rpartition("|")
    return [{"key": key, "value": value}], param(form, "next")
