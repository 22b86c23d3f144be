"""One research run: options -> local retrieval -> judge -> pack.

The same function serves the page, the JSON API and the CLI, so every surface shows the same
evidence for the same question. ``parse_options`` is where every request parameter is checked;
anything invalid becomes a ``ResearchError`` (400) before a query runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .brain import Filters, LocalResult, retrieve
from .config import Settings
from .errors import ResearchError
from .fts import plan_query
from .judge import judge
from .pack import RowUrl, build_pack, evidence_row, new_run_id

MAX_QUESTION_CHARS = 20_000
SYNTAXES = ("simple", "raw")
KIND_CHOICES = ("", "all", "item", "source")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

Params = Mapping[str, Sequence[str]]
ExecuteFn = Callable[[Callable[[Any], Any]], Awaitable[Any]]


@dataclass(frozen=True)
class Options:
    """A validated research request."""

    question: str
    limit: int
    syntax: str
    filters: Filters


def clean(value: str) -> str:
    """Drop NUL bytes and lone surrogates, which SQLite and UTF-8 output cannot carry."""
    return value.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def _one(params: Params, name: str) -> str:
    values = params.get(name) or []
    return clean(values[-1]).strip() if values else ""


def _many(params: Params, name: str) -> tuple[str, ...]:
    found: list[str] = []
    for value in params.get(name) or []:
        for part in clean(value).split(","):
            part = part.strip().lower()
            if part and part not in found:
                found.append(part)
    return tuple(found)


def parse_options(params: Params, settings: Settings) -> Options:
    """Validate request parameters (``q``, ``limit``, ``tag``, ``source_type``, ``kind``,
    ``syntax``, ``since``, ``until``) into Options."""
    question = _one(params, "q")
    if not question:
        raise ResearchError("Missing the question: pass it as ?q=...", code="missing_q")
    if len(question) > MAX_QUESTION_CHARS:
        raise ResearchError(
            f"The question is {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,}.",
            code="question_too_long",
        )
    limit_raw = _one(params, "limit")
    limit = settings.default_limit
    if limit_raw:
        if not limit_raw.isdigit() or not 1 <= int(limit_raw) <= settings.max_limit:
            raise ResearchError(
                f"limit must be a whole number from 1 to {settings.max_limit}.", code="bad_limit"
            )
        limit = int(limit_raw)
    syntax = _one(params, "syntax").lower() or "simple"
    if syntax not in SYNTAXES:
        raise ResearchError("syntax must be 'simple' or 'raw'.", code="bad_syntax")
    kind = _one(params, "kind").lower()
    if kind not in KIND_CHOICES:
        raise ResearchError("kind must be 'item', 'source' or 'all'.", code="bad_kind")
    dates = {}
    for name in ("since", "until"):
        value = _one(params, name)
        if value and not DATE_RE.match(value):
            raise ResearchError(f"{name} must be a date like 2026-01-31.", code="bad_date")
        dates[name] = value
    filters = Filters(
        tags=_many(params, "tag"),
        source_types=_many(params, "source_type"),
        kind="" if kind == "all" else kind,
        since=dates["since"],
        until=dates["until"],
    )
    return Options(question=question, limit=limit, syntax=syntax, filters=filters)


async def research(
    execute_fn: ExecuteFn,
    database: str,
    options: Options,
    settings: Settings,
    row_url: RowUrl,
) -> dict[str, Any]:
    """Run one local research pass and return the pack."""
    started = time.perf_counter()
    run_id = new_run_id()
    plan = plan_query(options.question, options.syntax)
    local: LocalResult = await execute_fn(
        lambda conn: retrieve(
            conn, options.question, plan, options.filters, options.limit, settings.time_limit_ms
        )
    )
    warnings = list(local.warnings)
    if plan.truncated_terms:
        warnings.append(
            {
                "code": "terms_truncated",
                "message": f"Only the first {len(plan.query_terms)} terms were searched; "
                f"{plan.truncated_terms} more were ignored.",
            }
        )
    if not local.kinds_searched:
        warnings.append(
            {
                "code": "nothing_to_search",
                "message": "This database has no searchable table for the chosen kind.",
            }
        )
    evidence = [evidence_row(h, plan, row_url, settings.excerpt_chars) for h in local.hits]
    judge_started = time.perf_counter()
    verdict = judge(
        rows_found=len(evidence),
        exact_hits=local.exact_count,
        query_terms=plan.query_terms,
        top_matched=[e["retrieval"]["matched_terms"] for e in evidence],
        thresholds=settings.judge,
    )
    timings = {
        **{f"local_{k}": v for k, v in local.timings_ms.items() if k != "local"},
        "local": local.timings_ms["local"],
        "judge": round((time.perf_counter() - judge_started) * 1000, 3),
    }
    timings["total"] = round((time.perf_counter() - started) * 1000, 3)
    return build_pack(
        run_id=run_id,
        question=options.question,
        database=database,
        plan=plan,
        local=local,
        evidence=evidence,
        verdict=verdict,
        limit=options.limit,
        filters=options.filters.active(),
        warnings=warnings,
        timings_ms=timings,
    )
