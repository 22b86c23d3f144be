"""Proposing an eval case from a saved run and the feedback given on it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..pack_json import PackJSON
from ..providers.replay import ERROR_CODES
from ..runs_db import DEFAULT_FILENAME, FEEDBACK_TABLE, RunFileError, read_saved_run
from ..urls import try_normalize_url
from .cases import (
    EXPECT_VALUES,
    FORBID_VALUES,
    EvalInputError,
)

PROPOSE_TOP = 3  # rows a proposal without feedback takes from the run's top evidence


def plugin_database_path(database: str | None, brain: str | None) -> Path:
    """``--database``, else ``research_runs.db`` next to BRAIN, else in the working directory."""
    if database:
        candidates = [Path(database)]
    else:
        candidates = [Path(brain).resolve().parent / DEFAULT_FILENAME] if brain else []
        candidates.append(Path.cwd() / DEFAULT_FILENAME)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise EvalInputError(f"no plugin database found (tried {tried}); pass --database PATH")


def load_run(path: Path, run_id: str) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The saved trace and its feedback (key -> last value given), None without a table."""
    try:
        return read_saved_run(path, run_id)
    except RunFileError as exc:
        raise EvalInputError(str(exc)) from exc


def propose_case(
    trace: Mapping[str, Any], feedback: Mapping[str, str] | None
) -> tuple[dict[str, Any], str]:
    """A case that replays the run offline and checks what the feedback marked; also returns
    a note on where the expectations came from."""
    pack = trace["pack"]
    plan = pack["query_plan"]
    web = pack["external_search"]
    case: dict[str, Any] = {
        "name": f"run {pack['run_id']}: {pack['question'][:60]}",
        "question": pack["question"],
        "limit": plan["limit"],
        **plan["filters"],
    }
    for key, default in (("syntax", "simple"), ("profile", "general")):
        if plan.get(key, default) != default:
            case[key] = plan[key]
    case["external"] = web["mode"]
    if web["ran"]:
        case.update(_recorded_web(pack))
    answer_status = pack.get("answer", {}).get("status", "disabled")
    if answer_status != "disabled":
        case.update(answer=True, expect_answer_status=answer_status)
    urls = {row["source_key"]: row["canonical_url"] for row in pack["external_evidence"]}
    marked = {k: v for k, v in (feedback or {}).items() if v in EXPECT_VALUES + FORBID_VALUES}
    if marked:
        expected = [k for k, v in marked.items() if v in EXPECT_VALUES]
        forbidden = [k for k, v in marked.items() if v in FORBID_VALUES]
        note = (
            f"expectations from feedback: {len(expected)} key(s) marked relevant/more, "
            f"{len(forbidden)} marked irrelevant/less"
        )
    else:
        expected = [e["source_key"] for e in pack["ranking"][:PROPOSE_TOP]]
        forbidden = []
        case["expect_verdict"] = pack["judge"]["verdict"]
        why = (
            f"the plugin database has no {FEEDBACK_TABLE} table"
            if feedback is None
            else "this run has no relevant/irrelevant/more/less feedback"
        )
        note = (
            f"{why}: expectations taken from the run's top {len(expected)} evidence row(s) "
            "and its verdict; review them before adding the case"
        )
    web_expected = [urls[k] for k in expected if k in urls]
    case["expect_any_source_keys"] = [k for k in expected if k not in urls]
    if web_expected:
        case["expect_external_urls"] = web_expected
    if forbidden:
        case["forbid_source_keys"] = forbidden
    return {k: v for k, v in case.items() if v != []}, note


def _recorded_web(pack: PackJSON) -> dict[str, Any]:
    """providers, provider and fixtures that make the replay ask and answer as the run did.

    The trace keeps each provider's first 10 results (URL, title, rank); texts come from the
    web rows the pack kept. Failed providers are replayed as recorded failures.
    """
    answered = [q["provider"] for q in pack["query_plan"]["external_queries"] if not q.get("error")]
    failed: dict[str, dict[str, str]] = {}
    for warning in pack["warnings"]:
        provider = warning.get("provider")
        if provider and warning["code"] in ERROR_CODES and provider not in answered:
            failed.setdefault(provider, {"error": warning["code"], "message": warning["message"]})
    rows = {row["canonical_url"]: row for row in pack["external_evidence"]}
    fixtures: dict[str, Any] = {name: [] for name in answered}
    for hit in pack["external_search"].get("returned", []):
        if hit["provider"] not in fixtures:
            continue
        recorded: dict[str, Any] = {"url": hit["url"], "title": hit["title"], "rank": hit["rank"]}
        normalized = try_normalize_url(hit["url"])
        row = rows.get(normalized.canonical_url) if normalized else None
        if row is not None:
            recorded.update(snippet=row["excerpt"], text=row["text"])
            if row["published_at"]:
                recorded["published_at"] = row["published_at"]
        fixtures[hit["provider"]].append(recorded)
    fixtures.update(failed)
    result: dict[str, Any] = {"fixtures": fixtures}
    if len(answered) > 1:  # only provider=all gets answers from more than one provider
        result["providers"] = answered + list(failed)
        result["provider"] = "all"
    else:
        result["providers"] = list(failed) + answered
    queries = [q for q in pack["query_plan"]["external_queries"] if not q.get("error")]
    if queries:
        params = queries[0]["params"]
        result["external_count"] = params["count"]
        if params.get("freshness"):
            result["freshness"] = params["freshness"]
    return result
