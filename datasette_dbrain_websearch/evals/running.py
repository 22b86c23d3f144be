"""Running eval cases in-process against a brain, the web replayed from their fixtures."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import Settings
from ..config_keys import PLUGIN_NAME, ConfigError
from ..errors import ResearchError
from ..options import ResearchRequest, request_from_params
from ..pipeline import WebAccess
from ..providers.replay import ReplayProvider
from .cases import (
    Case,
    EvalInputError,
)
from .scoring import (
    CaseResult,
    CitationCounts,
    Score,
    check_case,
    ranked_ids,
    score_ranking,
)


@dataclass
class _Prepared:
    """A case with its settings and request, checked before any case runs."""

    case: Case
    settings: Settings
    request: ResearchRequest


def case_settings(base: Mapping[str, Any], case: Case) -> Settings:
    """The plugin config with web search on, the case's providers, and no cache."""
    web = dict(base.get("external_search") or {})
    web.update(enabled=True, providers=list(case.providers), cache_ttl=0, default_mode="never")
    return Settings.from_config({**base, "external_search": web})


def replay_providers(case: Case) -> dict[str, ReplayProvider]:
    """A fresh replay provider for every configured provider (no fixture = no results)."""
    from ..providers import builtin_providers

    labels = {p.name: p.label for p in builtin_providers()}
    return {
        name: ReplayProvider.from_fixture(name, case.fixtures.get(name, []), labels.get(name, ""))
        for name in case.providers
    }


def check_brain(path: Path) -> None:
    """BRAIN must be SQLite with dbrain's searchable tables, or every case would fail alike."""
    from ..brain import brain_shape

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            kinds = brain_shape(conn).searchable_kinds()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise EvalInputError(f"{path}: not a readable SQLite database ({exc})") from exc
    if not kinds:
        raise EvalInputError(
            f"{path}: not a dbrain brain (no items/items_fts or sources/sources_fts tables)"
        )


async def run_cases(
    brain: Path, cases: Sequence[Case], metadata: Mapping[str, Any] | None = None
) -> list[CaseResult]:
    """Every case through an in-process Datasette, as ``dbrain-research`` runs a question.

    Startup is not invoked: it would create ``research_runs.db`` next to the brain, and an eval
    saves no runs.
    """
    from datasette.app import Datasette

    datasette = Datasette([str(brain)], metadata=dict(metadata or {}))
    base = datasette.plugin_config(PLUGIN_NAME) or {}
    database = brain.stem
    prepared = []
    for case in cases:
        try:
            settings = case_settings(base, case)
            prepared.append(_Prepared(case, settings, request_from_params(case.params, settings)))
        except (ConfigError, ResearchError) as exc:
            message = exc.message if isinstance(exc, ResearchError) else str(exc)
            raise EvalInputError(f"case {case.name!r}: {message}") from exc
    return [await _run_one(datasette, database, item) for item in prepared]


async def _run_one(datasette: Any, database: str, item: _Prepared) -> CaseResult:
    """One case through the service, as the CLI's research: replayed providers, a model
    allowed, no run saved; then its checks and its score."""
    from ..service import Access, RunOptions, research

    case = item.case
    providers = replay_providers(case)
    run = RunOptions(
        actor=None,
        surface="eval",
        settings=item.settings,
        access=Access(WebAccess(True, providers, cache_db=None), model=True, promote=False),
        save=False,
    )
    k = item.request.limit
    started = time.perf_counter()
    try:
        pack = await research(datasette, database, item.request, run)
    except ResearchError as exc:
        latency = round((time.perf_counter() - started) * 1000, 1)
        reason = f"research failed ({exc.code}): {exc.message}"
        score = Score(None, 0.0, 0.0) if case.expected else None
        return CaseResult(case.name, case.question, [reason], latency, k, score)
    latency = round((time.perf_counter() - started) * 1000, 1)
    called = [name for name, p in providers.items() if p.calls]
    return CaseResult(
        name=case.name,
        question=case.question,
        reasons=check_case(case, pack, called, latency),
        latency_ms=latency,
        k=k,
        score=score_ranking(ranked_ids(pack), case.expected, k) if case.expected else None,
        verdict=pack["judge"]["verdict"],
        providers_called=called,
        warnings=[w["code"] for w in pack["warnings"]],
        top=[e["source_key"] for e in pack["ranking"][:k]],
        citations=CitationCounts.of(pack["answer"]) if item.request.answer else None,
        answer_status=pack["answer"]["status"],
    )
