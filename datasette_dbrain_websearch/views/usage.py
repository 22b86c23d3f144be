"""``/-/research/usage``: what the web search providers were asked, answered and cost.

The page and its JSON read the provider ledger (ledger.py) and set it beside the configured
caps. It shows who pays for what, so it is for root by default (``dbrain-view-usage``).
"""

from __future__ import annotations

import urllib.parse
from datetime import UTC, datetime
from typing import Any

from datasette import Response

from .. import ledger, reading, traces
from ..config import Settings
from ..errors import ResearchError
from ..options import param
from ..permissions import USAGE, can
from ..providers import registered_providers
from ..runs_db import plugin_database
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


DAYS = 31


async def usage_view(request: Any, datasette: Any) -> Response:
    if not await can(datasette, request.actor, USAGE):
        return await refusal(
            datasette, request, request.url_vars.get("format") == ".json", usage_refused(request)
        )
    settings = Settings.from_datasette(datasette)
    db = plugin_database(datasette)
    now = datetime.now(UTC)
    days = await ledger.usage(db, DAYS, now) if db is not None else []
    names = list(dict.fromkeys([*settings.web.providers, *(d["provider"] for d in days)]))
    labels = {name: p.label for name, p in registered_providers(datasette).items()}
    labels[reading.LEDGER_NAME] = "Page reads"
    for day in days:
        day["label"] = labels.get(day["provider"], day["provider"])
    providers = []
    for name in names:
        spent = await ledger.spent(db, name, now) if db is not None else ledger.Spent()
        budget = settings.web.budgets.get(name)
        providers.append(
            {
                "provider": name,
                "label": labels.get(name, name),
                "calls_today": spent.calls_today,
                "usd_this_month": round(spent.usd_this_month, 4),
                "daily_calls_cap": budget.daily_calls if budget else 0,
                "monthly_usd_cap": budget.monthly_usd if budget else 0.0,
                "price_per_call": settings.web.price_per_call(name),
                "over_budget": bool(ledger.over_budget(labels.get(name, name), budget, spent)),
            }
        )
    query = urllib.parse.parse_qs(request.query_string)
    chosen = param(query, "provider")
    outcome = param(query, "outcome")
    chosen = chosen if chosen in names or chosen in labels else ""
    outcome = outcome if outcome in ledger.OUTCOMES else ""
    calls = await ledger.calls(db, chosen, outcome) if db is not None else []
    for call in calls:
        call["label"] = labels.get(call["provider"], call["provider"])
        call["run_url"] = traces.run_path(datasette, call["run_id"]) if call["run_id"] else ""
    data = {
        "days": days,
        "providers": providers,
        "calls": calls,
        "filters": {"provider": chosen, "outcome": outcome},
        "recording": db is not None,
    }
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
