"""Is the local evidence enough? A deterministic verdict with the numbers that decided it.

Two rules, chosen by ``judge.mode``:

**calibrated** (the default): the verdict stands on the best of the top ``top_k`` rows that hold
at least one of the question's words, each given an *evidence score* (0..1) from the signals
the run already has (``Evidence``):
- *weight*: the share of the question's weight the row holds, each word weighing its rarity in
  the brain (idf; a word the brain never holds weighs the most, so a question about something
  else scores low however many of its common words match);
- *closeness*: the row's cosine with the question, from the semantic lane;
- *rare words*: how many of the brain's rarest words' worth it holds (specific, not generic).
The score is a logistic function of the three, its weights fitted on public collections asked
their own questions and other collections' (``bench/bench_verdict.py --fit``; without the
semantic lane, a lexical-only fit). Rules, first that applies wins:
0. only common words, no exact hit                -> no_evidence     (``no_content_words``)
1. no rows                                         -> no_evidence     (``no_rows``)
2. an exact key/URL/id/path hit                    -> enough_evidence (``exact_match``)
3. no row holds any of the question's words        -> no_evidence     (``meaning_only``)
4. a list of 1-3 keywords (no other word), and no
   top row holds every one of them                 -> weak_evidence   (``missing_keyword``)
5. the best row's score is ``min_score`` or more, and
   a sentence of the rows answers the question     -> enough_evidence (``answered``)
6. ... but no sentence answers it                  -> weak_evidence   (``not_answered``)
7. otherwise                                       -> weak_evidence   (``weak_match``)

Holding the topic is not answering the question: rule 5 asks the answer check
(``answer.answerability``: the question's type and focus against each sentence of the rows an
answer reads), passed in as ``Answered``; without it (a caller that does not run the check),
rule 5 stands on the score alone (``strong_match``). Its messages are plain words naming rows
by their labels ("[3]"); the numbers that decided stay in ``inputs`` (the page's details).

A row found by meaning alone (no word in common) is shown, labelled, but never counts.

**dbrain**: dbrain's own rule (``internal/researchrun/judge.go``), for ``ranking: dbrain`` and
raw FTS5 questions (which have no term weights), or by choice:
0. only common words, no exact hit           -> no_evidence      (``no_content_words``)
1. no rows                                   -> no_evidence      (``no_rows``)
2. an exact key/URL/id/path hit              -> enough_evidence  (``exact_match``)
3. fewer rows than ``min_evidence``          -> weak_evidence    (``too_few_rows``)
4. the best of the top ``top_k`` rows covers
   fewer than ``min_term_coverage`` of terms -> weak_evidence    (``missing_terms``)
5. otherwise                                 -> enough_evidence  (``enough_rows``)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .config import JudgeThresholds
from .display import plural
from .lexical import idf
from .pack_json import JudgeJSON

NO_EVIDENCE = "no_evidence"
WEAK_EVIDENCE = "weak_evidence"
ENOUGH_EVIDENCE = "enough_evidence"
VERDICTS = (NO_EVIDENCE, WEAK_EVIDENCE, ENOUGH_EVIDENCE)
CALIBRATED, DBRAIN = "calibrated", "dbrain"
STRONG_MATCH = "strong_match"  # rows that hold the question, before the answer check


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


@dataclass(frozen=True)
class Evidence:
    """What the judge reads of one row, in ranked order: the question's terms it holds, its
    cosine with the question (None without the semantic lane), whether only its meaning
    brought it (no word in common), and the label people see it by ("3", "W2")."""

    held: frozenset[str]
    cosine: float | None = None
    meaning_only: bool = False
    label: str = ""


@dataclass(frozen=True)
class Answered:
    """What the answer check found in the rows judged: whether a sentence answers the
    question, that said in plain words ("[2] says “Bergen”."; "nothing says where: ..."),
    and its record for the verdict's inputs."""

    answered: bool
    says: str
    record: dict[str, Any]


@dataclass(frozen=True)
class Calibration:
    """The evidence score's weights: ``z = weight * w + closeness * c + rare * r + bias``,
    score = 1 / (1 + e^-z). Fitted by ``bench/bench_verdict.py --fit``."""

    weight: float
    closeness: float
    rare: float
    bias: float

    def score(self, weight: float, closeness: float, rare: float) -> float:
        z = self.weight * weight + self.closeness * closeness + self.rare * rare + self.bias
        return 1.0 / (1.0 + math.exp(-z))


# Fitted on the shared collections (Cranfield, SQuAD, HotpotQA as brains; each asked its own
# questions and the others'), balanced per brain: docs/benchmarks.md#the-verdict.
SEMANTIC_CALIBRATION = Calibration(weight=4.63, closeness=6.95, rare=0.96, bias=-5.99)
LEXICAL_CALIBRATION = Calibration(weight=6.9, closeness=0.0, rare=1.37, bias=-5.33)


def term_weights(rows: int, frequencies: Mapping[str, int], terms: Sequence[str]) -> dict:
    """Each term's weight: its idf in the brain (``rows`` rows, ``frequencies`` rows holding
    it); a term no row holds weighs as a word held by none (the most)."""
    return {t: round(idf(rows, frequencies.get(t, 0)), 4) for t in dict.fromkeys(terms)}


@dataclass(frozen=True)
class RowScore:
    """One row's evidence score and the signals it came from."""

    score: float
    weight: float
    closeness: float | None
    rare: float

    def to_json(self) -> dict:
        return {
            "score": round(self.score, 3),
            "weight_share": round(self.weight, 3),
            "cosine": None if self.closeness is None else round(self.closeness, 3),
            "rare_words": round(self.rare, 3),
        }


def row_score(row: Evidence, weights: Mapping[str, float], rows: int) -> RowScore:
    """A row's evidence score (``Calibration``): the semantic fit when the row has a cosine,
    else the lexical one."""
    total = sum(weights.values())
    share = sum(w for t, w in weights.items() if t in row.held) / total if total else 0.0
    rarest = idf(max(rows, 2), 1)
    rare = sum(min(w, rarest) for t, w in weights.items() if t in row.held) / rarest
    if row.cosine is None:
        return RowScore(LEXICAL_CALIBRATION.score(share, 0.0, rare), share, None, rare)
    closeness = max(0.0, row.cosine)
    return RowScore(SEMANTIC_CALIBRATION.score(share, closeness, rare), share, closeness, rare)


def _found(rows: int, exact_hits: int, common_words: Sequence[str], inputs: dict) -> Verdict | None:
    """The rules both modes share: only common words, no rows, an exact hit."""
    if common_words and not exact_hits:
        return Verdict(
            NO_EVIDENCE,
            "no_content_words",
            "The question has only common words ("
            + ", ".join(common_words[:6])
            + "): nothing specific to search for. Add a word that names what you want.",
            inputs,
        )
    if rows == 0:
        message = "Nothing in the brain matches this question."
        return Verdict(NO_EVIDENCE, "no_rows", message, inputs)
    if exact_hits:
        return Verdict(
            ENOUGH_EVIDENCE,
            "exact_match",
            "The question names a row in the brain exactly (key, URL, id or note path).",
            inputs,
        )
    return None


def assess(
    evidence: Sequence[Evidence],
    exact_hits: int,
    query_terms: Sequence[str],
    weights: Mapping[str, float],
    rows_in_brain: int,
    thresholds: JudgeThresholds,
    common_words: Sequence[str] = (),
    keywords: bool = False,
    answered: Answered | None = None,
) -> Verdict:
    """The calibrated verdict (module docstring) on the rows in ranked order; ``keywords``: the
    question is a list of keywords (``question_terms.is_keyword_list``), each of which one row must
    hold; ``answered``: what the answer check found in the rows."""
    terms = list(dict.fromkeys(query_terms))
    matching = [r for r in evidence if r.held and not r.meaning_only]
    meaning = sum(1 for r in evidence if r.meaning_only)
    top = matching[: thresholds.top_k]
    scored = [row_score(r, weights, rows_in_brain) for r in top]
    # A list of keywords wants each of them: a row lacking one cannot be enough.
    wanted = set(terms) if keywords else set()
    whole = [i for i, r in enumerate(top) if wanted <= r.held]
    best = max(whole or range(len(scored)), key=lambda i: scored[i].score, default=None)
    covered = set().union(*(r.held for r in top)) if top else set()
    missing = [t for t in terms if t not in covered]
    inputs: dict = {
        "mode": CALIBRATED,
        "rows_found": len(matching),
        "meaning_only_rows": meaning,
        "exact_hits": exact_hits,
        "query_terms": terms,
        "top_k": thresholds.top_k,
        "term_weights": dict(weights),
        "best_row": None
        if best is None
        else {"rank": best + 1, "label": top[best].label, **scored[best].to_json()},
        "missing_terms_in_top_rows": missing,
        "min_score": thresholds.min_score,
        "rows_in_brain": rows_in_brain,
    }
    if answered is not None:
        inputs["answer_check"] = answered.record
    found = _found(len(evidence), exact_hits, common_words, inputs)
    if found is not None:
        return found
    if best is None:
        return Verdict(
            NO_EVIDENCE,
            "meaning_only",
            "No row of your brain holds any of the question's words"
            + (f"; {plural(meaning, 'row')} only read close to it." if meaning else "."),
            inputs,
        )
    row = top[best]
    if not whole and wanted:
        held = [t for t in terms if t in row.held]
        lacking = [t for t in terms if t not in row.held]
        return Verdict(
            WEAK_EVIDENCE,
            "missing_keyword",
            f"No row holds every keyword: {_named(row)} holds {_words(held)} but "
            f"not {_words(lacking)}.",
            inputs,
        )
    if scored[best].score < thresholds.min_score:
        says = answered.says if answered is not None and not answered.answered else ""
        return Verdict(WEAK_EVIDENCE, "weak_match", says or _why(row, terms), inputs)
    if answered is None:
        return Verdict(ENOUGH_EVIDENCE, STRONG_MATCH, _why(row, terms), inputs)
    if answered.answered:
        holds = "holds" if answered.record.get("asks") == "topic" else "answers"
        says = f"Your brain {holds} it: {answered.says}"
        return Verdict(ENOUGH_EVIDENCE, "answered", says, inputs)
    return Verdict(WEAK_EVIDENCE, "not_answered", answered.says, inputs)


def _named(row: Evidence) -> str:
    """A row as people see it: "the closest row, [3]" (by its label, never by a position
    that can change), or "the closest row" without one."""
    return f"the closest row, [{row.label}]," if row.label else "the closest row"


def _words(terms: Sequence[str]) -> str:
    quoted = [f"“{t}”" for t in terms]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _why(row: Evidence, terms: Sequence[str]) -> str:
    """What the closest row holds of the question, in words: "The closest row, [2], holds
    “heat” and “pump” but not “cold”." (its evidence score and the signals behind it are in
    the inputs, which the page shows under its details)."""
    held = [t for t in terms if t in row.held]
    lacking = [t for t in terms if t not in row.held]
    named = _named(row)
    named = named[:1].upper() + named[1:]
    if not lacking:
        return f"{named} holds every word of the question."
    if not held:
        return f"{named} reads close to the question but holds none of its words."
    return f"{named} holds {_words(held)} but not {_words(lacking)}."


def judge(
    rows_found: int,
    exact_hits: int,
    query_terms: Sequence[str],
    top_matched: Sequence[Sequence[str]],
    thresholds: JudgeThresholds,
    common_words: Sequence[str] = (),
) -> Verdict:
    """dbrain's rule: decide from counts and the matched terms of the rows in ranked order."""
    top = [set(m) for m in top_matched[: thresholds.top_k]]
    terms = list(dict.fromkeys(query_terms))
    best = max((len(m & set(terms)) for m in top), default=0)
    coverage = round(best / len(terms), 3) if terms else 1.0
    covered_by_top = set().union(*top) if top else set()
    missing = [t for t in terms if t not in covered_by_top]
    inputs = {
        "mode": DBRAIN,
        "rows_found": rows_found,
        "exact_hits": exact_hits,
        "query_terms": terms,
        "top_k": thresholds.top_k,
        "top_row_term_coverage": coverage,
        "missing_terms_in_top_rows": missing,
        "min_evidence": thresholds.min_evidence,
        "min_term_coverage": thresholds.min_term_coverage,
    }
    found = _found(rows_found, exact_hits, common_words, inputs)
    if found is not None:
        return found
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


@dataclass(frozen=True)
class Rule:
    """How a run's rows are judged (``judge.mode``), with what the calibrated rule needs to
    know of the brain: the question's term weights and the brain's size. The brain's rows and
    the web's are judged by the same rule."""

    thresholds: JudgeThresholds
    mode: str = CALIBRATED
    weights: Mapping[str, float] | None = None
    rows_in_brain: int = 0
    # the question is a list of keywords (``question_terms.is_keyword_list``)
    keywords: bool = False

    def verdict(
        self,
        evidence: Sequence[Evidence],
        exact_hits: int,
        query_terms: Sequence[str],
        common_words: Sequence[str] = (),
        answered: Answered | None = None,
    ) -> Verdict:
        if self.mode == CALIBRATED and self.weights is not None:
            return assess(
                evidence,
                exact_hits,
                query_terms,
                self.weights,
                self.rows_in_brain,
                self.thresholds,
                common_words,
                self.keywords,
                answered,
            )
        counted = [r for r in evidence if not r.meaning_only]
        matched = [sorted(r.held) for r in counted]
        return judge(len(counted), exact_hits, query_terms, matched, self.thresholds, common_words)


def web_part(
    rule: Rule,
    query_terms: Sequence[str],
    evidence: Sequence[Evidence],
    searched: bool,
    answered: Answered | None = None,
) -> dict:
    """The web's side of the verdict: its rows that hold any of the question's words judged
    alone, by the brain's rule (with the answer check over the web's rows, ``answered``), and
    said in a few words ("3 rows; [W1] says “Bergen”.")."""
    if not searched:
        return {
            "searched": False,
            "verdict": "",
            "reason": "not_searched",
            "summary": "not searched",
            "missing_terms": [],
        }
    terms = list(dict.fromkeys(query_terms))
    matching = [r for r in evidence if r.held]
    found = rule.verdict(matching, 0, terms, answered=answered if matching else None)
    if not matching:
        found = replace(
            found, verdict=NO_EVIDENCE, reason="no_rows" if not evidence else "no_match"
        )
    missing = found.inputs["missing_terms_in_top_rows"] if matching else terms
    rows = len(evidence)
    whole = sum(1 for r in evidence if set(terms) <= r.held)
    counted = plural(rows, "row")
    if not rows:
        summary = "nothing found"
    elif answered is not None and found.verdict == ENOUGH_EVIDENCE:
        summary = f"{counted}; {answered.says}"
    elif answered is not None and found.reason == "not_answered":
        summary = f"{counted}; none answers it"
    elif missing:
        summary = f"{counted}; none mentions {', '.join(missing)}"
    elif whole == rows:
        summary = f"{counted} cover every term" if rows > 1 else "1 row covers every term"
    elif whole:
        summary = f"{whole} of {counted} {'covers' if whole == 1 else 'cover'} every term"
    else:
        summary = f"{counted}; none covers every term"
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
    brain: Verdict, brain_rows: int, web_ran: bool, web_rows: int, surfaced: int
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
    if not brain_rows and web_ran:
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
    web: dict[str, Any]
    combined: dict[str, Any]

    def to_json(self) -> JudgeJSON:
        brain = self.brain.to_json()
        return {
            "verdict": brain["verdict"],
            "reason": brain["reason"],
            "message": brain["message"],
            "inputs": brain["inputs"],
            "web": self.web,
            "combined": self.combined,
        }


def run_verdict(
    brain: Verdict,
    rule: Rule,
    query_terms: Sequence[str],
    web_evidence: Sequence[Evidence],
    web_ran: bool,
    brain_rows: int,
    surfaced: int,
    web_answered: Answered | None = None,
) -> RunVerdict:
    """The run's verdict once the web stage is over (``web_evidence``: the web rows, in
    order; ``web_answered``: the answer check over them)."""
    web = web_part(rule, query_terms, web_evidence, web_ran, web_answered)
    reported = with_web_findings(brain, brain_rows, web_ran, len(web_evidence), surfaced)
    return RunVerdict(reported, web, combined(brain, web))
