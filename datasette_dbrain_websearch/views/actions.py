"""What a person does to a run: promote its web rows into the brain and mark its rows
(relevance feedback), as JSON for scripts and the page's script or as no-JS form posts."""

from __future__ import annotations

from typing import Any

from datasette import Forbidden, Response

from ..brain_access import check_unchanged
from ..errors import ResearchError
from ..options import param
from ..permissions import PROMOTE
from ..promote import parse_request
from ..service import (
    mark_rows,
    may,
    promotion_message,
    saved_run,
    visible_run,
    write_promotion,
)
from .common import (
    error_response,
    json_body,
    page_error,
    read_body,
    remembering_access,
    research_path,
    wants_json,
)


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
        body, back = await _promotion_body(request, as_json)
        promotion = parse_request(body)
        trace = await visible_run(datasette, request.actor, promotion.run_id)
        brain = datasette.databases.get(trace["database"])
        if brain is None:
            raise ResearchError(
                f"The brain '{trace['database']}' is not attached.", 404, "no_brain"
            )
        check_unchanged(brain)
        results = await write_promotion(datasette, request.actor, trace, promotion, brain, request)
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


async def _promotion_body(request: Any, as_json: bool) -> tuple[dict[str, Any], str]:
    """The promotion fields and the page to return to (forms only)."""
    body = await read_body(request, as_json)
    if as_json:
        return body, ""
    form = body
    keys = form.get("promote_one") or form.get("source_keys") or []
    fields = {
        "run_id": param(form, "run_id"),
        "source_keys": keys,
        "fetch": (form.get("fetch") or ["false"])[-1],
        "tags": form.get("tags") or [],
        "note": param(form, "note"),
    }
    return fields, param(form, "next")


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


@remembering_access
async def feedback_view(request: Any, datasette: Any) -> Response:
    """``POST /-/research/runs/<run_id>/feedback``: marks that re-rank the run and refine it."""
    as_json = json_body(request)
    replies_json = wants_json(request)
    run_id = request.url_vars["run_id"]
    try:
        trace = await saved_run(datasette, request.actor, run_id)
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
