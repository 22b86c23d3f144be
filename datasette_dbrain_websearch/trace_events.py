"""A research trace's events: the run's steps, in order and timed, read from its pack (pure).

Events use dbrain-style names plus the web-stage names ``external_search_skipped``,
``external_query_built``, ``external_provider_request``, ``external_provider_response``,
``external_result_deduped``, ``external_evidence_selected`` and ``external_merge_completed``, the
deep rounds' ``deep_*``, and for answered runs ``answer_synthesized`` and ``answer_verified`` (the
verifier's decisions). Its own module beside ``traces``, which builds, stores and loads the trace
these events go into.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from .pack_json import PackJSON
from .web import BUDGET_EXHAUSTED


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def events_for(pack: PackJSON, started: datetime) -> list[dict[str, Any]]:
    """The run's events, in order, timed from the stage timings (pure)."""
    timings = pack["timings_ms"]
    plan = pack["query_plan"]
    web = pack["external_search"]
    events: list[dict[str, Any]] = []

    def add(name: str, after_ms: float, data: dict[str, Any]) -> None:
        events.append(
            {"at": iso(started + timedelta(milliseconds=after_ms)), "name": name, "data": data}
        )

    add(
        "query_plan_built",
        0,
        {
            k: plan[k]
            for k in ("text_query", "fts_query", "query_terms", "syntax", "filters", "limit")
        },
    )
    if "cost" in plan:  # runs saved before the cost was recorded have none
        add(
            "local_search_admitted",
            timings.get("local_survey", 0.0) + timings.get("local_turn", 0.0),
            {
                **plan["cost"],
                "narrowed_terms": plan.get("narrowed_terms", []),
                "waited_ms": timings.get("local_turn", 0.0),
            },
        )
    local_ms = timings.get("local", 0.0)
    add(
        "local_search_completed",
        local_ms,
        {
            "query_mode": plan["query_mode"],
            "match_query": plan["match_query"],
            "exact_matches": pack["coverage"]["exact_matches"],
            "item_text_matches": pack["coverage"]["item_text_matches"],
            "source_text_matches": pack["coverage"]["source_text_matches"],
            "rows": [row["source_key"] for row in pack["evidence"]],
        },
    )
    add("judge", local_ms, pack["judge"])
    if not web["ran"]:
        add(
            "external_search_skipped",
            local_ms,
            {"mode": web["mode"], "reason": web["skipped_reason"]},
        )
    else:
        for query in plan["external_queries"]:
            provider = query["provider"]
            add(
                "external_query_built",
                local_ms,
                {"provider": provider, "query": query["query"], "params": query["params"]},
            )
            if query.get("error") == BUDGET_EXHAUSTED:
                add(
                    "external_provider_skipped",
                    local_ms,
                    {"provider": provider, "reason": BUDGET_EXHAUSTED},
                )
                continue
            add(
                "external_provider_request",
                local_ms,
                {"provider": provider, "cached": query["cached"]},
            )
            response = {
                "provider": provider,
                "results": query["results"],
                "cached": query["cached"],
                "returned": [r for r in web.get("returned", []) if r["provider"] == provider],
            }
            if query.get("error"):
                response["error"] = query["error"]
                response["message"] = next(
                    (
                        w["message"]
                        for w in pack["warnings"]
                        if w.get("provider") == provider and w["code"] == query["error"]
                    ),
                    "",
                )
            add(
                "external_provider_response",
                local_ms + timings.get(f"external_{provider}", 0.0),
                response,
            )
        web_done = local_ms + timings.get("external", 0.0)
        for decision in pack["merge_decisions"]:
            add("external_result_deduped", web_done, decision)
        add(
            "external_evidence_selected",
            web_done,
            {
                "rows": [
                    {
                        "source_key": r["source_key"],
                        "url": r["canonical_url"],
                        "providers": r["providers"],
                    }
                    for r in pack["external_evidence"]
                ]
            },
        )
        add(
            "external_merge_completed",
            web_done,
            {
                "external_rows": len(pack["external_evidence"]),
                "local_rows_credited": sum(1 for r in pack["evidence"] if r.get("also_found_by")),
                "decisions": len(pack["merge_decisions"]),
                "warnings": [w["code"] for w in pack["warnings"] if w.get("provider") is not None],
            },
        )
    research = pack.get("research")
    if research:
        deep_ms = timings.get("deep_rounds", 0.0)
        for done in research["rounds"]:
            add("deep_round", deep_ms, {"round": done["round"], "gaps": done["gaps"]})
            for query in done["queries"]:
                add("deep_query", deep_ms, {"round": done["round"], **query})
        for step in research.get("proposals", []):
            add("deep_proposal", deep_ms, step)
        add(
            "deep_stopped",
            deep_ms,
            {k: research[k] for k in ("stop_reason", "stop_message", "confidence", "spent")},
        )
    answer = pack.get("answer") or {}
    if answer.get("status", "disabled") != "disabled":
        answered = timings.get("total", 0.0)
        add(
            "answer_synthesized",
            answered,
            {
                "synthesizer": answer["synthesizer"],
                "status": answer["status"],
                "sentences": len(answer["sentences"]),
                "evidence": answer["evidence"],
                "timings_ms": answer["timings_ms"],
            },
        )
        add("answer_verified", answered, verifier_decisions(answer))
    add(
        "evidence_selected",
        timings.get("total", 0.0),
        {"local": len(pack["evidence"]), "external": len(pack["external_evidence"])},
    )
    return events


def verifier_decisions(answer: dict[str, Any]) -> dict[str, Any]:
    """What the citation verifier decided: kept keys by origin, rejected keys, unsupported
    sentences and the conflicts it kept or dropped."""
    return {
        "citations": answer["citations"],
        "rejected_citations": answer["rejected_citations"],
        "unsupported_sentences": [
            {"sentence": n, **s["support"]}
            for n, s in enumerate(answer["sentences"], start=1)
            if not s["supported"]
        ],
        "conflicts": {
            "status": answer["conflicts"]["status"],
            "kept": len(answer["conflicts"]["items"]),
            "dropped": answer["conflicts"].get("dropped", []),
        },
        "gaps": [gap["code"] for gap in answer["gaps"]],
    }
