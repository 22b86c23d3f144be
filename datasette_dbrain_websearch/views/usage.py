"""``/-/research/usage``: what the web search providers were asked, answered and cost.

The page and its JSON show the provider ledger beside the configured caps (``usage_report``).
It shows who pays for what, so it is for root by default (``dbrain-view-usage``).
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from datasette import Response

from ..config import Settings
from ..errors import ResearchError
from ..options import param
from ..permissions import USAGE, can
from ..usage_report import DAYS, usage_report
from .common import refusal
from .sign_in import HOW_TO_SIGN_IN

USAGE_TEMPLATE = "dbrain_websearch_usage.html"


def usage_refused(request: Any) -> ResearchError:
    """Why this page is not for this visitor, and how to get it."""
    if request.actor is None:
        message = (
            "Web search usage shows what was asked of the providers and what it cost, so it is "
            "for root and the actors allowed dbrain-view-usage. Sign in as one of them. "
            + HOW_TO_SIGN_IN
        )
    else:
        message = "Your account may not see web search usage (permission dbrain-view-usage)."
    return ResearchError(message, 403, "forbidden")


async def usage_view(request: Any, datasette: Any) -> Response:
    if not await can(datasette, request.actor, USAGE):
        return await refusal(
            datasette, request, request.url_vars.get("format") == ".json", usage_refused(request)
        )
    query = urllib.parse.parse_qs(request.query_string)
    data = await usage_report(
        datasette,
        Settings.from_datasette(datasette),
        param(query, "provider"),
        param(query, "outcome"),
    )
    if request.url_vars.get("format") == ".json":
        return Response.json(data)
    html = await datasette.render_template(
        USAGE_TEMPLATE,
        {
            **data,
            "period_days": DAYS,
            "json_url": datasette.urls.path("/-/research/usage.json"),
            "research_url": datasette.urls.path("/-/research"),
        },
        request=request,
    )
    return Response.html(html)
