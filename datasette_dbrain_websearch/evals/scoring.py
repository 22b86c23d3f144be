"""Scoring eval cases: ranking metrics, the checks a case makes, and the report table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from ..display import terminal_safe
from ..pack import row_keys
from ..pack_json import PackJSON, ranked_row
from ..query_plan import matched_terms
from .cases import (
    Case,
)


@dataclass(frozen=True)
class Score:
    """Where the expected rows landed in one ranking."""

    rank: int | None
    reciprocal_rank: float
    recall_at_k: float


@dataclass(frozen=True)
class CitationCounts:
    """What the verifier made of one case's answer."""

    valid: int
    rejected: int
    sentences: int
    supported: int

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> CitationCounts:
        """Counted over every sentence the synthesizer wrote, those the verifier removed as
        unsupported included: the eval measures the synthesizer, not what was shown."""
        sentences = [*answer["sentences"], *answer.get("removed_sentences", [])]
        return cls(
            valid=sum(len(s["citations"]) for s in sentences)
            + sum(len(c["citations"]) for c in answer["conflicts"]["items"]),
            rejected=len(answer["rejected_citations"]),
            sentences=len(sentences),
            supported=sum(1 for s in sentences if s["supported"]),
        )

    @property
    def precision(self) -> float | None:
        cited = self.valid + self.rejected
        return round(self.valid / cited, 4) if cited else None


@dataclass
class CaseResult:
    """The outcome of one case, as the table and ``--json`` report it."""

    name: str
    question: str
    reasons: list[str]
    latency_ms: float
    k: int
    score: Score | None
    verdict: str = ""
    providers_called: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    top: list[str] = field(default_factory=list)
    citations: CitationCounts | None = None
    answer_status: str = ""

    @property
    def passed(self) -> bool:
        return not self.reasons

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "question": self.question,
            "passed": self.passed,
            "reasons": self.reasons,
            "latency_ms": self.latency_ms,
            "verdict": self.verdict,
            "k": self.k,
            "rank": self.score.rank if self.score else None,
            "reciprocal_rank": self.score.reciprocal_rank if self.score else None,
            "recall_at_k": self.score.recall_at_k if self.score else None,
            "providers_called": self.providers_called,
            "warnings": self.warnings,
            "top": self.top,
            "answer_status": self.answer_status,
            "citation_precision": self.citations.precision if self.citations else None,
            "sentences": self.citations.sentences if self.citations else None,
            "supported_sentences": self.citations.supported if self.citations else None,
            "rejected_citations": self.citations.rejected if self.citations else None,
        }


def score_ranking(ranking: Sequence[AbstractSet[str]], expected: AbstractSet[str], k: int) -> Score:
    """Rank, RR and recall@k of ``expected`` in a ranking whose rows each carry a set of ids
    (a local row its source_key; a web row its ext: key and canonical URL)."""
    rank = next((n for n, ids in enumerate(ranking, start=1) if ids & expected), None)
    found = set().union(*ranking[:k]) & expected if ranking[:k] else set()
    return Score(
        rank=rank,
        reciprocal_rank=1 / rank if rank else 0.0,
        recall_at_k=len(found) / len(expected) if expected else 0.0,
    )


def ranked_ids(pack: PackJSON) -> list[frozenset[str]]:
    """Each ranked row's ids: its keys (an item's and its linked page's), plus its canonical URL
    for a web row."""
    ids = []
    for entry in pack["ranking"]:
        row: Mapping[str, Any] = ranked_row(pack, entry)
        if entry["list"] == "external_evidence":
            ids.append(frozenset((entry["source_key"], row["canonical_url"])))
        else:
            ids.append(frozenset(row_keys(row)))
    return ids


def summarize(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Overall metrics: means over the cases with expectations, and the pass/fail counts."""
    scored = [r.score for r in results if r.score is not None]
    answered = [r.citations for r in results if r.citations is not None]
    valid = sum(c.valid for c in answered)
    cited = valid + sum(c.rejected for c in answered)
    sentences = sum(c.sentences for c in answered)
    return {
        "recall_at_k": _mean([s.recall_at_k for s in scored]),
        "mrr": _mean([s.reciprocal_rank for s in scored]),
        "passed": sum(1 for r in results if r.passed),
        "failed": sum(1 for r in results if not r.passed),
        "scored": len(scored),
        "answered": len(answered),
        "citation_precision": round(valid / cited, 4) if cited else None,
        "supported_sentence_rate": (
            round(sum(c.supported for c in answered) / sentences, 4) if sentences else None
        ),
        "invented_keys_rejected": sum(c.rejected for c in answered),
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def check_case(case: Case, pack: PackJSON, called: Sequence[str], latency_ms: float) -> list[str]:
    """Every failed expectation, worded like dbrain's eval failures; empty when it passes."""
    reasons: list[str] = []
    ranking = pack["ranking"]
    rows = [ranked_row(pack, e) for e in ranking]
    keys = {key for row in rows for key in row_keys(row)}
    if len(ranking) < case.min_evidence:
        reasons.append(
            f"evidence_count={len(ranking)} below min_evidence={case.min_evidence} "
            "(local and web rows)"
        )
    if case.expect_any_source_keys and not keys & set(case.expect_any_source_keys):
        reasons.append(
            "missing any expected source_key from " + ", ".join(case.expect_any_source_keys)
        )
    if case.expect_top_source_keys:
        if not ranking:
            reasons.append("missing top evidence for expected top source_key check")
        elif not set(row_keys(rows[0])) & set(case.expect_top_source_keys):
            reasons.append(
                f"top source_key {ranking[0]['source_key']} not in expected set "
                + ", ".join(case.expect_top_source_keys)
            )
    reasons += [f"forbidden source_key returned {k}" for k in case.forbid_source_keys if k in keys]
    text = "\n".join(
        str(row.get(name) or "") for row in rows for name in ("title", "url", "excerpt", "text")
    ).lower()
    reasons += [f"missing expected text {t!r}" for t in case.expect_text if t.lower() not in text]
    if case.max_latency_ms is not None and latency_ms > case.max_latency_ms:
        reasons.append(f"duration_ms={latency_ms:g} above max_latency_ms={case.max_latency_ms:g}")
    web_urls = {row["canonical_url"] for row in pack["external_evidence"]}
    reasons += [
        f"missing expected external URL {url}"
        for url in case.expect_external_urls
        if url not in web_urls
    ]
    if case.expect_providers is not None and set(called) != set(case.expect_providers):
        reasons.append(
            f"providers called [{', '.join(called)}], expected [{', '.join(case.expect_providers)}]"
        )
    if case.forbid_provider_calls and called:
        reasons.append(f"provider calls are forbidden, but {', '.join(called)} was called")
    codes = [w["code"] for w in pack["warnings"]]
    reasons += [
        f"missing expected warning {code} (got: {', '.join(codes) or 'none'})"
        for code in case.expect_warnings
        if code not in codes
    ]
    verdict = pack["judge"]["verdict"]
    if case.expect_verdict and verdict != case.expect_verdict:
        reasons.append(f"verdict={verdict}, want {case.expect_verdict}")
    return reasons + check_answer(case, pack)


def cited_ids(pack: PackJSON) -> set[str]:
    """The valid citations of a pack's answer: keys (a cited item shown with its linked page
    cites the page too), plus the canonical URL of a cited web row."""
    citations = pack["answer"]["citations"]
    urls = {row["source_key"]: row["canonical_url"] for row in pack["external_evidence"]}
    brain = set(citations["local"])
    brain |= {k for row in pack["evidence"] if row["source_key"] in brain for k in row_keys(row)}
    return brain | {
        value for key in citations["external"] for value in (key, urls.get(key, ""))
    } - {""}


def check_answer(case: Case, pack: PackJSON) -> list[str]:
    """The answer's expectations: status, keys it must or must not cite, words it must say."""
    answer = pack["answer"]
    reasons: list[str] = []
    if case.expect_answer_status and answer["status"] != case.expect_answer_status:
        reasons.append(f"answer_status={answer['status']}, want {case.expect_answer_status}")
    cited = cited_ids(pack)
    reasons += [f"missing expected citation {c}" for c in case.expected_citations if c not in cited]
    reasons += [f"forbidden citation cited {c}" for c in case.forbidden_citations if c in cited]
    said = set(matched_terms(case.expected_answer_terms, [answer["text"]]))
    reasons += [f"answer does not say {t!r}" for t in case.expected_answer_terms if t not in said]
    return reasons


def render_table(results: Sequence[CaseResult]) -> str:
    """The readable report: one line per case, its reasons under it, then the totals."""

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    width = min(48, max(len("case"), *(len(r.name) for r in results)))
    header = f"{'case':<{width}}  {'result':<6}  {'ms':>7}  {'k':>3}  {'recall@k':>8}  {'RR':>5}"
    lines = [header, "-" * len(header)]
    for r in results:
        name = r.name if len(r.name) <= width else r.name[: width - 1] + "…"
        lines.append(
            f"{name:<{width}}  {'PASS' if r.passed else 'FAIL':<6}  {r.latency_ms:>7.1f}  "
            f"{r.k:>3}  {number(r.score.recall_at_k if r.score else None):>8}  "
            f"{number(r.score.reciprocal_rank if r.score else None):>5}"
        )
        lines += [f"    - {reason}" for reason in r.reasons]
    totals = summarize(results)
    lines.append("")
    lines.append(
        f"{totals['passed']} passed, {totals['failed']} failed; "
        f"recall@k {number(totals['recall_at_k'])}, MRR {number(totals['mrr'])} "
        f"(over {totals['scored']} case(s) with expected keys)"
    )
    if totals["answered"]:
        lines.append(
            f"answers: citation precision {number(totals['citation_precision'])}, "
            f"supported sentences {number(totals['supported_sentence_rate'])}, "
            f"{totals['invented_keys_rejected']} invented key(s) rejected "
            f"(over {totals['answered']} case(s) with an answer)"
        )
    return terminal_safe("\n".join(lines))
