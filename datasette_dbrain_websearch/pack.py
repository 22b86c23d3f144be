"""The typed ``research_pack.v1``: a run's evidence rows, web search, verdict and answer.

Research builds these values stage by stage (``pipeline``; its rows are ``pack_rows``);
``Pack.to_json()`` is the one place their JSON is written, in dbrain's field names
(``internal/brainresearch/types.go``; additions never rename dbrain's fields) and key order
(pinned by ``tests/research/test_pack_json.py``).
Surfaces and saved runs read that JSON, typed as ``pack_json.PackJSON``; ``row_keys`` and
``is_exact`` read a row of it.
"""

from __future__ import annotations

import secrets
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from .brain import FTS_TABLE
from .cost import Cost
from .judge import RunVerdict
from .pack_json import (
    AnswerJSON,
    CoverageJSON,
    DidYouMeanJSON,
    PackJSON,
    QueryPlanJSON,
    RankingEntryJSON,
    RejectedCitationJSON,
    ResearchJSON,
    WebSearchJSON,
)
from .pack_rows import BrainRow, Row, WebRow, reading_order
from .providers.base import scrub
from .query_plan import QueryPlan
from .retrieval import BrainResult

SCHEMA_VERSION = "research_pack.v1"


def new_run_id(now_ns: int | None = None) -> str:
    """dbrain's run id, ``20060102T150405.000000000Z-<hex>`` (UTC, nanoseconds), with 24 hex
    (96 random bits) where dbrain has 12: an anonymous visitor's run is read by its link."""
    ns = time.time_ns() if now_ns is None else now_ns
    stamp = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}.{ns % 1_000_000_000:09d}Z-{secrets.token_hex(12)}"


@dataclass
class WebSearch:
    """The pack's ``external_search``: what was asked of the web and what happened."""

    mode: str
    current_state_question: bool
    sites: list[str]
    not_sites: list[str]
    skipped_reason: str = ""
    ran: bool = False
    providers: list[str] = field(default_factory=list)
    returned: list[dict[str, Any]] | None = None  # URLs and titles each provider returned
    read: list[dict[str, Any]] | None = None  # the pages read, and how that went

    @property
    def requested(self) -> bool:
        return self.mode != "never"

    def to_json(self) -> WebSearchJSON:
        search: WebSearchJSON = {
            "mode": self.mode,
            "requested": self.requested,
            "ran": self.ran,
            "providers": list(self.providers),
            "skipped_reason": self.skipped_reason,
            "current_state_question": self.current_state_question,
            "sites": list(self.sites),
            "not_sites": list(self.not_sites),
        }
        if self.returned is not None:
            search["returned"] = self.returned
        if self.read is not None:
            search["read"] = self.read
        return search


def _no_citations() -> dict[str, list[str]]:
    return {"local": [], "external": []}


def _not_compared() -> dict[str, Any]:
    return {"status": "not_assessed", "items": []}


@dataclass
class Answer:
    """The pack's ``answer``: text whose every citation was checked against the run's keys."""

    status: str
    synthesizer: str
    message: str
    via: str = ""
    text: str = ""
    sentences: list[dict[str, Any]] = field(default_factory=list)
    removed_sentences: list[dict[str, Any]] = field(default_factory=list)
    draft: str = ""
    citations: dict[str, list[str]] = field(default_factory=_no_citations)
    rejected_citations: list[RejectedCitationJSON] = field(default_factory=list)
    gaps: list[dict[str, Any]] = field(default_factory=list)
    conflicts: dict[str, Any] = field(default_factory=_not_compared)
    web_contribution: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    answerability: dict[str, Any] = field(default_factory=dict)  # ``answer.answerability``

    def to_json(self) -> AnswerJSON:
        return {
            "status": self.status,
            "synthesizer": self.synthesizer,
            "via": self.via,
            "message": self.message,
            "text": self.text,
            "sentences": self.sentences,
            "removed_sentences": self.removed_sentences,
            "draft": self.draft,
            "citations": self.citations,
            "rejected_citations": self.rejected_citations,
            "gaps": self.gaps,
            "conflicts": self.conflicts,
            "web_contribution": self.web_contribution,
            "evidence": self.evidence,
            "answerability": self.answerability,
            "timings_ms": self.timings_ms,
        }


def no_answer() -> Answer:
    """The pack's ``answer`` when none was asked for (same shape, nothing in it)."""
    return Answer("disabled", "", "No answer was asked for (answer=1 writes one).")


def match_query(plan: QueryPlan, mode: str) -> str:
    """The MATCH string that found the rows: BM25's OR query, or dbrain's AND query (its OR
    query after the relaxed fallback)."""
    if mode == "bm25":
        return plan.match_query(plan.prefixed)
    return plan.relaxed_query if mode == "relaxed" else plan.fts_query


def _counts(values: list[str], top: int | None = None) -> list[dict[str, Any]]:
    return [{"key": k, "count": c} for k, c in Counter(v for v in values if v).most_common(top)]


@dataclass
class Pack:
    """One research run, typed: ``to_json()`` writes ``research_pack.v1``."""

    run_id: str
    question: str
    database: str
    plan: QueryPlan
    cost: Cost
    brain: BrainResult
    limit: int
    filters: dict[str, Any]
    profile: str
    semantic_lane: dict[str, Any]
    evidence: list[BrainRow]
    verdict: RunVerdict
    web_search: WebSearch
    web_rows: list[WebRow]
    web_queries: list[dict[str, Any]]
    merge_decisions: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    timings_ms: dict[str, float]
    did_you_mean: DidYouMeanJSON | None = None
    answer: Answer = field(default_factory=no_answer)
    research: ResearchJSON | None = None  # deep research's rounds and stop (``deep``)
    secrets: tuple[str, ...] = ()  # never written: scrubbed from every string of the JSON

    def ranked(self) -> list[Row]:
        """Every row in reading order (``reading_order``)."""
        return reading_order(self.evidence, self.web_rows, self.web_search.current_state_question)

    def ranking(self) -> list[RankingEntryJSON]:
        """The reading order as the pack writes it: each entry names its list and index."""
        where: dict[int, tuple[str, int]] = {
            **{id(r): ("evidence", i) for i, r in enumerate(self.evidence)},
            **{id(r): ("external_evidence", i) for i, r in enumerate(self.web_rows)},
        }
        return [
            {
                "source_key": row.source_key,
                "origin": row.origin,
                "list": where[id(row)][0],
                "index": where[id(row)][1],
            }
            for row in self.ranked()
        ]

    def _query_plan(self) -> QueryPlanJSON:
        plan, brain = self.plan, self.brain
        return {
            "text_query": plan.text_query,
            "fts_query": plan.fts_query,
            "relaxed_query": plan.relaxed_query,
            # The MATCH string that produced the rows.
            "match_query": match_query(plan, brain.mode),
            "ranking": brain.ranking,
            "query_terms": list(plan.query_terms),
            # Words Expand OR-ed into the ranking query; never the judge's or the web's terms.
            "expansion_terms": plan.expansion_terms,
            "excluded_terms": list(plan.excluded_terms),
            # Common terms left out of the ranking query to keep it fast (``cost``).
            "narrowed_terms": list(plan.dropped),
            # What admission weighed: the postings the ranking query reads, and whether that
            # made it heavy (it then took its turn with other heavy questions; ``admission``).
            "cost": {
                "postings": self.cost.postings,
                "heavy": self.cost.heavy,
                "reason": self.cost.reason,
            },
            "syntax": plan.syntax,
            "query_mode": brain.mode,
            "profile": self.profile,
            "limit": self.limit,
            "filters": self.filters,
            "retrieval_lanes": self._lanes(),
            "external_queries": self.web_queries,
        }

    def _lanes(self) -> list[dict[str, Any]]:
        simple = self.plan.syntax == "simple"
        return [
            {
                "name": "exact_lookup",
                "status": "used" if simple else "disabled",
                **({} if simple else {"reason": "raw_syntax"}),
            },
            {
                "name": "lexical",
                "status": "used",
                "store": "sqlite_fts",
                "tables": [FTS_TABLE[k] for k in self.brain.kinds_searched],
                "weights": {FTS_TABLE[k]: w for k, w in self.brain.lane_weights.items()},
            },
            {
                "name": "semantic",
                **{k: v for k, v in self.semantic_lane.items() if k != "message"},
            },
        ]

    def _coverage(self) -> CoverageJSON:
        brain, rows = self.brain, self.evidence
        items, sources = brain.matches.get("item", 0), brain.matches.get("source", 0)
        found = (
            "relaxed matches (some terms)"
            if brain.mode == "relaxed"
            else "rows holding its rarest word"
            if brain.mode == "bm25"
            else "text matches"
        )
        return {
            "evidence_count": len(rows),
            "local_evidence_count": len(rows),
            "by_kind": [
                {"key": k, "count": sum(1 for r in rows if r.kind == k)} for k in ("item", "source")
            ],
            "by_source_type": _counts([r.facts.source_type for r in rows]),
            "top_user_tags": _counts([t for r in rows for t in r.facts.user_tags], 10),
            "exact_matches": brain.exact_count,
            "item_text_matches": items,
            "source_text_matches": sources,
            "external_evidence_count": len(self.web_rows),
            "external_by_provider": _counts([p for r in self.web_rows for p in r.providers]),
            "displayed_limit": self.limit,
            "recall_note": f"exact matches: {brain.exact_count}; {found}: items={items} "
            f"sources={sources}. Returned evidence is a capped working set, not the full corpus.",
        }

    def to_json(self) -> PackJSON:
        """``research_pack.v1``, every string scrubbed of the run's secrets."""
        pack: PackJSON = {
            "ok": True,
            "schema_version": SCHEMA_VERSION,
            "run_id": self.run_id,
            "question": self.question,
            "database": self.database,
            "mode": "evidence_only",
            "query_plan": self._query_plan(),
            "judge": self.verdict.to_json(),
            "external_search": self.web_search.to_json(),
            "coverage": self._coverage(),
            "evidence": [row.to_json() for row in self.evidence],
            "external_evidence": [row.to_json() for row in self.web_rows],
            "ranking": self.ranking(),
            "merge_decisions": self.merge_decisions,
            "warnings": self.warnings,
            "timings_ms": self.timings_ms,
            "did_you_mean": self.did_you_mean,
            "answer": self.answer.to_json(),
        }
        if self.research is not None:
            pack["research"] = self.research
        return cast(PackJSON, scrub(pack, list(self.secrets)))


def row_keys(row: Mapping[str, Any]) -> list[str]:
    """The keys a row of the pack's JSON stands for: its own and, for an item shown with its
    linked page, the page's (both were retrieved, so answers may cite and marks may name
    either)."""
    linked = row.get("linked_source") or {}
    return [row["source_key"], *([linked["source_key"]] if linked.get("source_key") else [])]


def is_exact(row: Mapping[str, Any]) -> bool:
    """Did the question name this row of the pack's JSON exactly (key, URL, id or note path)?"""
    return any(lane["name"] == "exact_lookup" for lane in row["retrieval"]["lanes"])
