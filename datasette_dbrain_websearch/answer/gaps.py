"""What the answer cannot say, and what the web added to it (pure functions).

Gaps are deterministic, whatever wrote the answer: question terms no row covers, how old the
brain's evidence is for a question about now, a web lane that failed or was not used while the
brain's evidence is weak, and an answer that rests on web rows alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..judge import ENOUGH_EVIDENCE, RunVerdict
from ..pack import WebSearch
from ..pack_rows import BrainRow, Row, WebRow

SKIPPED = {
    "disabled": "web search is turned off in this Datasette's config",
    "not_permitted": "your account may not search the web",
    "empty_query": "the question has no words to send to a web search",
    "mode_never": "External web was set to Off",
}


def covered_terms(rows: Sequence[Row], terms: Sequence[str]) -> set[str]:
    """The question terms some row mentions; a row the question names exactly covers all."""
    if any(row.is_exact for row in rows):
        return set(terms)
    return {t for row in rows for t in row.retrieval.matched_terms}


def newest_brain_date(brain_rows: Sequence[BrainRow]) -> str:
    """The newest date among local rows (published, else saved), as YYYY-MM-DD."""
    dates = [(r.published_at or r.saved_at)[:10] for r in brain_rows]
    return max((d for d in dates if d), default="")


def find_gaps(
    terms: Sequence[str],
    brain_rows: Sequence[BrainRow],
    web_rows: Sequence[WebRow],
    web: WebSearch,
    brain_verdict: str,
    cited_brain: Sequence[str],
    cited_web: Sequence[str],
) -> list[dict[str, Any]]:
    """The answer's gaps, each ``{code, message, ...}``, in a fixed order."""
    gaps: list[dict[str, Any]] = []
    missing = [t for t in terms if t not in covered_terms([*brain_rows, *web_rows], terms)]
    if missing:
        gaps.append(
            {
                "code": "terms_not_covered",
                "message": "No evidence row mentions " + ", ".join(f"“{t}”" for t in missing) + ".",
                "terms": missing,
            }
        )
    if web.current_state_question and brain_rows:
        newest = newest_brain_date(brain_rows)
        if newest:
            gaps.append(
                {
                    "code": "local_evidence_dated",
                    "message": f"Your brain's newest evidence on this is from {newest}.",
                    "date": newest,
                }
            )
    unavailable = web_unavailable(web, brain_verdict, bool(web_rows))
    if unavailable:
        gaps.append(unavailable)
    if cited_web and not cited_brain:
        gaps.append(
            {
                "code": "external_only",
                "message": "The answer rests only on web results outside your brain; nothing "
                "in your brain confirms it.",
            }
        )
    return gaps


def web_unavailable(
    web: WebSearch, brain_verdict: str, found_web_rows: bool
) -> dict[str, Any] | None:
    """A web lane that failed, or was skipped while the brain's evidence is not enough."""
    if web.ran:
        if web.providers or found_web_rows:
            return None
        return {
            "code": "web_unavailable",
            "reason": "failed",
            "message": "The web search failed (see warnings); the answer rests on your brain "
            "alone.",
        }
    reason = web.skipped_reason
    if reason not in SKIPPED or (reason == "mode_never" and brain_verdict == ENOUGH_EVIDENCE):
        return None
    return {
        "code": "web_unavailable",
        "reason": reason,
        "message": f"The web was not searched: {SKIPPED[reason]}.",
    }


def web_contribution(
    terms: Sequence[str],
    ranked: Sequence[Row],
    verdict: RunVerdict,
    web: WebSearch,
    sentences: Sequence[Mapping[str, Any]],
    web_keys: Sequence[str],
) -> dict[str, Any]:
    """The local-only state beside the merged one: the brain's verdict and the run's combined
    one, newly covered terms, web rows, answer sentences that cite the web. ``ranked`` is every
    row in the pack's reading order."""
    brain_rows = [r for r in ranked if isinstance(r, BrainRow)]
    web_rows = [r for r in ranked if isinstance(r, WebRow)]
    web_cited = set(web_keys)
    citing = [
        n for n, s in enumerate(sentences, start=1) if any(k in web_cited for k in s["citations"])
    ]
    before_terms = covered_terms(brain_rows, terms)
    return {
        "web_searched": web.ran,
        "verdict_before": verdict.brain.verdict,
        "verdict_after": verdict.combined["verdict"],
        "terms_newly_covered": [
            t for t in terms if t not in before_terms and t in covered_terms(web_rows, terms)
        ],
        "web_rows_kept": len(web_rows),
        "local_rows_also_found_on_web": sum(1 for r in brain_rows if r.also_found_by),
        "sentences_citing_web": citing,
    }
