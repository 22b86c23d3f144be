"""Is the local evidence enough? A deterministic verdict with the numbers that decided it.

Modelled on dbrain's judge (``internal/researchrun/judge.go``): the first rule that applies wins.
0. only common words, no exact hit           -> no_evidence      (``no_content_words``)
1. no rows                                   -> no_evidence      (``no_rows``)
2. an exact key/URL/id/path hit              -> enough_evidence  (``exact_match``)
3. fewer rows than ``min_evidence``          -> weak_evidence    (``too_few_rows``)
4. the best of the top ``top_k`` rows covers
   fewer than ``min_term_coverage`` of terms -> weak_evidence    (``missing_terms``)
5. otherwise                                 -> enough_evidence  (``enough_rows``)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .config import JudgeThresholds
from .display import plural
from .pack_json import JudgeJSON

NO_EVIDENCE = "no_evidence"
WEAK_EVIDENCE = "weak_evidence"
ENOUGH_EVIDENCE = "enough_evidence"
VERDICTS = (NO_EVIDENCE, WEAK_EVIDENCE, ENOUGH_EVIDENCE)


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str
    message: str
    inputs: dict

    def to_json(self) -> dict:
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "message": self.message,
            "inputs": self.inputs,
        }


def judge(
    rows_found: int,
    exact_hits: int,
    query_terms: Sequence[str],
    top_matched: Sequence[Sequence[str]],
    thresholds: JudgeThresholds,
    common_words: Sequence[str] = (),
) -> Verdict:
    """Decide from counts and the matched terms of the rows in ranked order."""
    top = [set(m) for m in top_matched[: thresholds.top_k]]
    terms = list(dict.fromkeys(query_terms))
    best = max((len(m & set(terms)) for m in top), default=0)
    coverage = round(best / len(terms), 3) if terms else 1.0
    covered_by_top = set().union(*top) if top else set()
    missing = [t for t in terms if t not in covered_by_top]
    inputs = {
        "rows_found": rows_found,
        "exact_hits": exact_hits,
        "query_terms": terms,
        "top_k": thresholds.top_k,
        "top_row_term_coverage": coverage,
        "missing_terms_in_top_rows": missing,
        "min_evidence": thresholds.min_evidence,
        "min_term_coverage": thresholds.min_term_coverage,
    }
    if common_words and not exact_hits:
        return Verdict(
            NO_EVIDENCE,
            "no_content_words",
            "The question has only common words ("
            + ", ".join(common_words[:6])
            + "): nothing specific to search for. Add a word that names what you want.",
            inputs,
        )
    if rows_found == 0:
        message = "Nothing in the brain matches this question."
        return Verdict(NO_EVIDENCE, "no_rows", message, inputs)
    if exact_hits:
        return Verdict(
            ENOUGH_EVIDENCE,
            "exact_match",
            "The question names a row in the brain exactly (key, URL, id or note path).",
            inputs,
        )
    if rows_found < thresholds.min_evidence:
        return Verdict(
            WEAK_EVIDENCE,
            "too_few_rows",
            f"Only {rows_found} row{'' if rows_found == 1 else 's'} found; at least "
            f"{thresholds.min_evidence} are wanted.",
            inputs,
        )
    if coverage < thresholds.min_term_coverage:
        return Verdict(
            WEAK_EVIDENCE,
            "missing_terms",
            f"The best of the top {thresholds.top_k} rows matches {coverage:.0%} of the terms"
            + (f"; missing: {', '.join(missing)}." if missing else "."),
            inputs,
        )
    return Verdict(
        ENOUGH_EVIDENCE,
        "enough_rows",
        f"{rows_found} rows found and the top rows match the question's terms.",
        inputs,
    )


LABELS = {
    NO_EVIDENCE: "no evidence",
    WEAK_EVIDENCE: "weak evidence",
    ENOUGH_EVIDENCE: "enough evidence",
}


def web_part(
    query_terms: Sequence[str],
    web_matched: Sequence[Sequence[str]],
    searched: bool,
    thresholds: JudgeThresholds,
) -> dict:
    """The web's side of the verdict: its rows judged alone, by the brain's rules, and said in
    a few words ("5 rows cover every term")."""
    if not searched:
        return {
            "searched": False,
            "verdict": "",
            "reason": "not_searched",
            "summary": "not searched",
            "missing_terms": [],
        }
    found = judge(len(web_matched), 0, query_terms, web_matched, thresholds)
    rows = len(web_matched)
    missing = found.inputs["missing_terms_in_top_rows"]
    counted = f"{rows} row{'' if rows == 1 else 's'}"
    if not rows:
        summary = "nothing found"
    elif missing:
        summary = f"{counted}; none mentions {', '.join(missing)}"
    else:
        summary = f"{counted} cover every term"
    return {
        "searched": True,
        "verdict": found.verdict,
        "reason": found.reason,
        "summary": summary,
        "missing_terms": missing,
    }


def combined(brain: Verdict, web: dict) -> dict:
    """The run's verdict over everything on the screen: the brain's alone when the web was not
    searched, else the stronger of the brain's and the web's (a run has enough evidence when
    either side has). Its message says both parts: "Your brain: no evidence · Web: 5 rows
    cover every term"; its reason names the side that decided (``web:enough_rows``)."""
    if not web["searched"]:
        return {"verdict": brain.verdict, "reason": brain.reason, "message": brain.message}
    stronger = VERDICTS.index(web["verdict"]) > VERDICTS.index(brain.verdict)
    return {
        "verdict": web["verdict"] if stronger else brain.verdict,
        "reason": f"web:{web['reason']}" if stronger else f"brain:{brain.reason}",
        "message": f"Your brain: {LABELS[brain.verdict]} \u00b7 Web: {web['summary']}",
    }


def with_web_findings(
    brain: Verdict, local_rows: int, web_ran: bool, web_rows: int, surfaced: int
) -> Verdict:
    """The brain's verdict, its message saying what the web search changed for the brain:
    pages it pointed to that the brain already holds, and what it found when the brain had
    no row."""
    message = brain.message
    if surfaced:
        message += (
            f" The web search pointed to {plural(surfaced, 'more page')} already in your brain "
            '(marked "also found by").'
        )
    if not local_rows and web_ran:
        message += (
            f" The web search found {plural(web_rows, 'row')} outside your brain."
            if web_rows
            else " The web search found nothing usable outside your brain (see warnings)."
        )
    return replace(brain, message=message)


@dataclass(frozen=True)
class RunVerdict:
    """The pack's ``judge``: the brain's verdict (its message says what the web changed), the
    web's rows judged alone, and the run's verdict over both."""

    brain: Verdict
    web: dict
    combined: dict

    def to_json(self) -> JudgeJSON:
        return {**self.brain.to_json(), "web": self.web, "combined": self.combined}


def run_verdict(
    brain: Verdict,
    query_terms: Sequence[str],
    web_matched: Sequence[Sequence[str]],
    web_ran: bool,
    thresholds: JudgeThresholds,
    local_rows: int,
    surfaced: int,
) -> RunVerdict:
    """The run's verdict once the web stage is over (``web_matched``: the web rows' matched
    terms, in order)."""
    web = web_part(query_terms, web_matched, web_ran, thresholds)
    reported = with_web_findings(brain, local_rows, web_ran, len(web_matched), surfaced)
    return RunVerdict(reported, web, combined(brain, web))
