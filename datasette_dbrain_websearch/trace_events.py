"""A research trace's events: the run's steps, in order and timed, read from its pack (pure).

Events use dbrain-style names plus the web-stage names ``external_search_skipped``,
``external_query_built``, ``external_provider_request``, ``external_provider_response``,
``external_result_deduped``, ``external_evidence_selected`` and ``external_merge_completed``, the
deep rounds' ``deep_*``, and for answered runs ``answer_synthesized`` and ``answer_verified`` (the
verifier's decisions). Their kinds and shapes are ``trace_event_types``; ``traces`` builds, stores
and loads the trace (``traces.TraceJSON``) these events go into.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from .pack_json import AnswerJSON, PackJSON
from .trace_event_types import AnswerVerifiedData, ProviderResponseData, TraceEvent
from .web import BUDGET_EXHAUSTED


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def events_for(pack: PackJSON, started: datetime) -> list[TraceEvent]:
    """The run's events, in order, timed from the stage timings (pure)."""
    timings = pack["timings_ms"]
    plan = pack["query_plan"]
    web = pack["external_search"]
    events: list[TraceEvent] = []

    def at(after_ms: float) -> str:
        return iso(started + timedelta(milliseconds=after_ms))

    events.append(
        {
            "at": at(0),
            "name": "query_plan_built",
            "data": {
                "text_query": plan["text_query"],
                "fts_query": plan["fts_query"],
                "query_terms": plan["query_terms"],
                "syntax": plan["syntax"],
                "filters": plan["filters"],
                "limit": plan["limit"],
            },
        }
    )
    events.append(
        {
            "at": at(timings.get("local_survey", 0.0) + timings.get("local_turn", 0.0)),
            "name": "local_search_admitted",
            "data": {
                **plan["cost"],
                "narrowed_terms": plan["narrowed_terms"],
                "waited_ms": timings.get("local_turn", 0.0),
            },
        }
    )
    brain_ms = timings.get("local", 0.0)
    coverage = pack["coverage"]
    events.append(
        {
            "at": at(brain_ms),
            "name": "local_search_completed",
            "data": {
                "query_mode": plan["query_mode"],
                "match_query": plan["match_query"],
                "exact_matches": coverage["exact_matches"],
                "item_text_matches": coverage["item_text_matches"],
                "source_text_matches": coverage["source_text_matches"],
                "rows": [row["source_key"] for row in pack["evidence"]],
            },
        }
    )
    events.append({"at": at(brain_ms), "name": "judge", "data": pack["judge"]})
    if not web["ran"]:
        events.append(
            {
                "at": at(brain_ms),
                "name": "external_search_skipped",
                "data": {"mode": web["mode"], "reason": web["skipped_reason"]},
            }
        )
    else:
        events += _web_events(pack, at)
    research = pack.get("research")
    if research:
        deep_ms = at(timings.get("deep_rounds", 0.0))
        for done in research["rounds"]:
            events.append(
                {
                    "at": deep_ms,
                    "name": "deep_round",
                    "data": {"round": done["round"], "gaps": done["gaps"]},
                }
            )
            for query in done["queries"]:
                events.append(
                    {"at": deep_ms, "name": "deep_query", "data": {"round": done["round"], **query}}
                )
        for step in research["proposals"]:
            events.append({"at": deep_ms, "name": "deep_proposal", "data": step})
        events.append(
            {
                "at": deep_ms,
                "name": "deep_stopped",
                "data": {
                    "stop_reason": research["stop_reason"],
                    "stop_message": research["stop_message"],
                    "confidence": research["confidence"],
                    "spent": research["spent"],
                },
            }
        )
    answer = pack["answer"]
    if answer["status"] != "disabled":
        answered = at(timings.get("total", 0.0))
        events.append(
            {
                "at": answered,
                "name": "answer_synthesized",
                "data": {
                    "synthesizer": answer["synthesizer"],
                    "status": answer["status"],
                    "sentences": len(answer["sentences"]),
                    "evidence": answer["evidence"],
                    "timings_ms": answer["timings_ms"],
                },
            }
        )
        events.append(
            {"at": answered, "name": "answer_verified", "data": verifier_decisions(answer)}
        )
    events.append(
        {
            "at": at(timings.get("total", 0.0)),
            "name": "evidence_selected",
            "data": {"local": len(pack["evidence"]), "external": len(pack["external_evidence"])},
        }
    )
    return events


def _web_events(pack: PackJSON, at: Callable[[float], str]) -> list[TraceEvent]:
    """The web stage's events: each provider asked (or skipped) and answered, then the merge."""
    timings = pack["timings_ms"]
    brain_ms = timings.get("local", 0.0)
    returned = pack["external_search"].get("returned", [])
    events: list[TraceEvent] = []
    for query in pack["query_plan"]["external_queries"]:
        provider = query["provider"]
        events.append(
            {
                "at": at(brain_ms),
                "name": "external_query_built",
                "data": {"provider": provider, "query": query["query"], "params": query["params"]},
            }
        )
        if query.get("error") == BUDGET_EXHAUSTED:
            events.append(
                {
                    "at": at(brain_ms),
                    "name": "external_provider_skipped",
                    "data": {"provider": provider, "reason": BUDGET_EXHAUSTED},
                }
            )
            continue
        events.append(
            {
                "at": at(brain_ms),
                "name": "external_provider_request",
                "data": {"provider": provider, "cached": query["cached"]},
            }
        )
        response: ProviderResponseData = {
            "provider": provider,
            "results": query["results"],
            "cached": query["cached"],
            "returned": [r for r in returned if r["provider"] == provider],
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
        events.append(
            {
                "at": at(brain_ms + timings.get(f"external_{provider}", 0.0)),
                "name": "external_provider_response",
                "data": response,
            }
        )
    web_done = at(brain_ms + timings.get("external", 0.0))
    for decision in pack["merge_decisions"]:
        events.append({"at": web_done, "name": "external_result_deduped", "data": decision})
    events.append(
        {
            "at": web_done,
            "name": "external_evidence_selected",
            "data": {
                "rows": [
                    {
                        "source_key": r["source_key"],
                        "url": r["canonical_url"],
                        "providers": r["providers"],
                    }
                    for r in pack["external_evidence"]
                ]
            },
        }
    )
    events.append(
        {
            "at": web_done,
            "name": "external_merge_completed",
            "data": {
                "external_rows": len(pack["external_evidence"]),
                "local_rows_credited": sum(1 for r in pack["evidence"] if r.get("also_found_by")),
                "decisions": len(pack["merge_decisions"]),
                "warnings": [w["code"] for w in pack["warnings"] if w.get("provider") is not None],
            },
        }
    )
    return events


def verifier_decisions(answer: AnswerJSON) -> AnswerVerifiedData:
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
            # Conflicts not assessed (no sentence answered) have none to drop.
            "dropped": answer["conflicts"].get("dropped", []),
        },
        "gaps": [gap["code"] for gap in answer["gaps"]],
    }
