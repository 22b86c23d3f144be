"""Web search usage as the usage page shows it (``views.usage``): the provider ledger's days,
each provider (and the language model, page reads) beside its configured caps, and the calls,
filtered by provider and outcome."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from . import ledger, reading, traces
from .config import Budget, Settings
from .providers import registered_providers
from .runs_db import plugin_database

DAYS = 31


async def usage_report(
    datasette: Any, settings: Settings, provider: str, outcome: str
) -> dict[str, Any]:
    """The page's data; ``provider`` and ``outcome`` filter the calls (unknown ones: all)."""
    db = plugin_database(datasette)
    now = datetime.now(UTC)
    days = await ledger.usage(db, DAYS, now) if db is not None else []
    names = list(dict.fromkeys([*settings.web.providers, *(d["provider"] for d in days)]))
    labels = {name: p.label for name, p in registered_providers(datasette).items()}
    labels[reading.LEDGER_NAME] = "Page reads"
    labels[ledger.MODEL] = "Language model"
    for day in days:
        day["label"] = labels.get(day["provider"], day["provider"])
    providers = []
    for name in names:
        spent = await ledger.spent(db, name, now) if db is not None else ledger.Spent()
        budget = (
            Budget(daily_calls=settings.answer.daily_calls)
            if name == ledger.MODEL
            else settings.web.budgets.get(name)
        )
        providers.append(
            {
                "provider": name,
                "label": labels.get(name, name),
                "calls_today": spent.calls_today,
                "usd_this_month": round(spent.usd_this_month, 4),
                "daily_calls_cap": budget.daily_calls if budget else 0,
                "monthly_usd_cap": budget.monthly_usd if budget else 0.0,
                "price_per_call": 0.0
                if name == ledger.MODEL
                else settings.web.price_per_call(name),
                "over_budget": bool(ledger.over_budget(labels.get(name, name), budget, spent)),
            }
        )
    chosen = provider if provider in names or provider in labels else ""
    outcome = outcome if outcome in ledger.OUTCOMES else ""
    calls = await ledger.calls(db, chosen, outcome) if db is not None else []
    for call in calls:
        call["label"] = labels.get(call["provider"], call["provider"])
        call["run_url"] = traces.run_path(datasette, call["run_id"]) if call["run_id"] else ""
    return {
        "days": days,
        "providers": providers,
        "calls": calls,
        "filters": {"provider": chosen, "outcome": outcome},
        "recording": db is not None,
    }
