"""The provider ledger: every call to a web search provider (and to the language model,
``MODEL``), what it cost, and the caps on it.

Each HTTP request a provider makes (an Exa search and its ``/contents`` are two) becomes one row
in the plugin database with its endpoint, status, latency, result count and estimated cost
(``price_per_call`` for answers the provider bills: only successful ones). ``external_search.
budgets`` caps a provider's calls per UTC day and estimated spend per UTC month; a provider over
its cap is skipped before any request is made. ``/-/research/usage`` reads the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from .config import Budget
from .runs_db import LEDGER_TABLE, RUNS_TABLE, bounded_write
from .schema import sqlite_database

KEEP_DAYS = 400  # a year of usage, plus the month a monthly cap is counted over
# A row that holds one call's place under a provider's caps from before the request until the
# call itself is recorded; one a crashed run left behind stops counting after a while.
RESERVED = "reserved"
RESERVATION_MINUTES = 10
MODEL = "model"  # the ledger's "provider" for language model calls (``answer.daily_calls``)


@dataclass(frozen=True)
class Spent:
    """A provider's use so far: calls today and estimated dollars this month (UTC)."""

    calls_today: int = 0
    usd_this_month: float = 0.0


def over_budget(
    label: str, budget: Budget | None, spent: Spent, setting: str = "external_search.budgets"
) -> str | None:
    """Why a provider (or the model, ``MODEL``) may not be called now, or None (pure; 0 in a
    cap means no cap); ``setting`` names where the cap is set."""
    if budget is None:
        return None
    if budget.daily_calls and spent.calls_today >= budget.daily_calls:
        return (
            f"{label} reached its budget of {budget.daily_calls:,} calls today "
            f"({setting}); it was not called."
        )
    if budget.monthly_usd and spent.usd_this_month >= budget.monthly_usd:
        return (
            f"{label} reached its budget of ${budget.monthly_usd:,.2f} this month "
            f"(about ${spent.usd_this_month:,.2f} spent; {setting}); "
            "it was not called."
        )
    return None


def rows_for(
    provider: str,
    calls: Sequence[Mapping[str, Any]],
    results: int,
    price: float,
    actor_id: str,
    run_id: str,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """Ledger rows for one provider's calls; the results are credited to its last good call."""
    now = now or datetime.now(UTC)
    last_ok = max((i for i, c in enumerate(calls) if 200 <= c.get("status", 0) < 300), default=-1)
    return [
        {
            "at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "day": now.strftime("%Y-%m-%d"),
            "provider": provider,
            "endpoint": str(call.get("endpoint", "")),
            "status": int(call.get("status", 0)),
            "error": str(call.get("error", "")),
            "latency_ms": round(float(call.get("latency_ms", 0.0)), 3),
            "results": results if i == last_ok else 0,
            "cost_usd": price if 200 <= call.get("status", 0) < 300 else 0.0,
            "actor_id": actor_id,
            "run_id": run_id,
        }
        for i, call in enumerate(calls)
    ]


async def record(db: Any, rows: list[dict[str, Any]], release: list[int] | None = None) -> None:
    """Write a run's calls, in the same transaction as releasing the places ``reserve`` held
    for them (so a cap never sees a call twice, or not at all)."""
    if not rows and not release:
        return
    cutoff = (datetime.now(UTC) - timedelta(days=KEEP_DAYS)).strftime("%Y-%m-%d")

    def write(conn: Any) -> None:
        with conn:
            conn.execute(f"delete from {LEDGER_TABLE} where day < ?", [cutoff])
            conn.executemany(
                f"delete from {LEDGER_TABLE} where id = ? and error = ?",
                [(row_id, RESERVED) for row_id in release or ()],
            )
            if rows:
                sqlite_database(conn).table(LEDGER_TABLE).insert_all(rows)

    await bounded_write(db, write)


async def reserve(
    db: Any,
    provider: str,
    budget: Budget,
    label: str,
    price: float,
    actor_id: str = "",
    run_id: str = "",
    now: datetime | None = None,
    setting: str = "external_search.budgets",
) -> int | str:
    """Hold a place for one call under ``budget``: the reservation's row id, or why the
    provider may not be called. The check and the hold are one transaction on the plugin
    database's single write thread, so concurrent searches can never pass one cap together."""
    now = now or datetime.now(UTC)
    stale = (now - timedelta(minutes=RESERVATION_MINUTES)).strftime("%Y-%m-%dT%H:%M:%SZ")
    row = rows_for(provider, [{"endpoint": "", "status": 0}], 0, price, actor_id, run_id, now)[0]
    row |= {"error": RESERVED, "cost_usd": price}

    def write(conn: Any) -> int | str:
        with conn:
            conn.execute(
                f"delete from {LEDGER_TABLE} where error = ? and at < ?", [RESERVED, stale]
            )
            reason = over_budget(label, budget, _spent(conn, provider, now), setting)
            if reason:
                return reason
            table = sqlite_database(conn).table(LEDGER_TABLE)
            table.insert(row)
            return int(table.last_rowid or 0)

    return await bounded_write(db, write)


async def spent(db: Any, provider: str, now: datetime | None = None) -> Spent:
    return await db.execute_fn(lambda conn: _spent(conn, provider, now or datetime.now(UTC)))


def _spent(conn: Any, provider: str, now: datetime) -> Spent:
    """Calls today and dollars this month, reserved places included."""
    row = conn.execute(
        "select coalesce(sum(case when day = :today then 1 else 0 end), 0), "
        "coalesce(sum(cost_usd), 0) "
        f"from {LEDGER_TABLE} where provider = :provider and day >= :month_start",
        {
            "today": now.strftime("%Y-%m-%d"),
            "provider": provider,
            "month_start": now.strftime("%Y-%m-01"),
        },
    ).fetchone()
    return Spent(int(row[0]), float(row[1])) if row else Spent()


async def usage(db: Any, days: int = 31, now: datetime | None = None) -> list[dict[str, Any]]:
    """Calls, errors, results, spend and median-ish latency per provider per day, newest first."""
    now = now or datetime.now(UTC)
    since = (now - timedelta(days=days - 1)).strftime("%Y-%m-%d")
    rows = await db.execute(
        "select day, provider, count(*) as calls, "
        "sum(case when status between 200 and 299 then 0 else 1 end) as errors, "
        "sum(results) as results, round(sum(cost_usd), 4) as cost_usd, "
        "round(avg(latency_ms), 1) as avg_latency_ms, "
        "group_concat(distinct endpoint) as endpoints "
        f"from {LEDGER_TABLE} where day >= ? and error != ? group by day, provider "
        "order by day desc, provider",
        [since, RESERVED],
    )
    return [dict(row) for row in rows.rows]


MAX_CALLS = 200
OUTCOMES = ("", "ok", "failed")


async def calls(
    db: Any, provider: str = "", outcome: str = "", limit: int = MAX_CALLS
) -> list[dict[str, Any]]:
    """The newest provider calls, each with the question of the run that made it (filters:
    a provider, and ``ok`` or ``failed``)."""
    where, params = ["l.error != :reserved"], {"limit": limit, "reserved": RESERVED}
    if provider:
        where.append("l.provider = :provider")
        params["provider"] = provider
    if outcome == "ok":
        where.append("l.status between 200 and 299")
    elif outcome == "failed":
        where.append("not (l.status between 200 and 299)")
    rows = await db.execute(
        "select l.at, l.provider, l.endpoint, l.status, l.error, l.results, l.cost_usd, "
        "l.latency_ms, l.run_id, coalesce(r.question, '') as question "
        f"from {LEDGER_TABLE} l left join {RUNS_TABLE} r on r.run_id = l.run_id "
        + f"where {' and '.join(where)} "
        + "order by l.id desc limit :limit",
        params,
    )
    return [dict(row) for row in rows.rows]


async def run_costs(db: Any, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """What each run asked of the providers: its calls (page reads aside) and their cost."""
    if db is None or not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    rows = await db.execute(
        "select run_id, sum(provider != 'page_read') as calls, sum(cost_usd) as cost_usd "
        f"from {LEDGER_TABLE} where run_id in ({marks}) group by run_id",
        run_ids,
    )
    return {row["run_id"]: {"calls": row["calls"], "cost_usd": row["cost_usd"]} for row in rows}
