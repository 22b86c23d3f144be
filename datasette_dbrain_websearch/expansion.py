"""Expand's words (pure): the content words the rows marked more/relevant suggest adding to
the question (``refine_query``), and the words never suggested (``filler_kind``).

A candidate is a stem of the marked rows' vectors (``feedback_space``), weighed by the marks'
strengths; ``refinement`` gives ties to the word fewer of the brain's rows hold.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .display import plural
from .feedback import MARK_STRENGTH, resolve_marks, validate_marks
from .feedback_space import SKIP, TOKEN, vector_space
from .pack_json import PackJSON
from .question_terms import trim_token
from .stemming import fold, stem
from .word_lists import NEGATIONS

MAX_ADDED_TERMS = 4
MAX_CANDIDATES = 20

# Words Expand never adds: they say little of what a row is about, in any brain
# (docs/research.md lists them). Verbs are matched by stem: "makes", "made" and "making" too.
GENERIC_VERBS = frozenset(
    """
    add allow appear apply ask base become began begin begun bring brought came come
    consider contain continue create describe determine discuss enable find follow found
    gave get give given go gone got happen held help hold include involve keep kept know
    known let like look made make mean meant need obtain offer perform produce provide put
    ran remain require return run said saw say see seem seen show shown start take tell
    think thought told took try turn use want went write written wrote
    """.split()
)
NUMBER_WORDS = frozenset(
    """
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand million billion trillion dozen half once twice first second third
    fourth fifth tenth
    """.split()
)
# Hedges and connectives, words of time and quantity, kinds of capture (what a row is, not
# what it says) and the parts of web addresses.
FILLER_WORDS = frozenset(
    """
    able actually almost already also although always amp another anyway approximately
    around article available away bad basically best better big blog certain com currently
    day days different easy else even ever every example examples fact former good great
    hence however htm html http https just kind last lot lots many may maybe might much must
    nbsp net new next nice now often old org part per perhaps php place possible post pretty
    probably quite quot rather re really shall since something sometimes still sure thing
    things though thus time times today transcript tweet usually various video way ways
    website week well whole www year years yet
    """.split()
)
_VERB_STEMS = frozenset(stem(v) for v in GENERIC_VERBS)
# A number with a unit or an ordinal ("30s", "1st", "10x", "2kg"), or a source key's hex run.
_NUMBER = re.compile(r"\d+[a-z]{0,3}|(?=[a-f]*\d)[0-9a-f]{6,}")


def filler_kind(word: str) -> str:
    """Why a word is no content word ("a stop word", "a number", "a generic verb", "filler"),
    or "" when it is one: Expand adds content words only."""
    word = fold(word)
    if word in SKIP or len(word) < 2:
        return "a stop word"
    if word in NUMBER_WORDS or _NUMBER.fullmatch(word):
        return "a number"
    if stem(word) in _VERB_STEMS:
        return "a generic verb"
    if word in FILLER_WORDS:
        return "filler"
    return ""


def _matched_by(term: str, words: list[str], prefix: bool) -> str:
    """The query word that already finds a term: same stem, or (simple syntax) FTS5's prefix."""
    return next((w for w in words if stem(w) == stem(term) or (prefix and term.startswith(w))), "")


def _words(terms: list[str]) -> list[str]:
    return [t for term in terms for t in TOKEN.findall(term.lower())]


def _extend(original: str, added: list[str], raw: bool) -> str:
    """Append terms so they keep their meaning: a raw query is grouped first, and a trailing
    "not"/"without" (which excluded nothing) is dropped rather than left to swallow a term."""
    if not added:
        return original
    if raw:
        return f"({original}) {' '.join(added)}"
    words = original.split()
    if words and trim_token(words[-1]).lower() in NEGATIONS:
        words.pop()
    return " ".join([*words, *added])


def refine_query(
    pack: PackJSON,
    marks: list[dict[str, str]],
    max_terms: int = MAX_ADDED_TERMS,
    brain_rows: Callable[[Iterable[str]], Mapping[str, int]] | None = None,
) -> dict:
    """Suggest up to ``max_terms`` content words from the rows marked ``more``/``relevant``.

    A candidate (a stem shown as its commonest form in the positive rows) has a positive and a
    negative weight: the sums of ``strength * w(t, d)`` over the positive and the negative rows
    holding it; its score is their difference. It is suppressed when the query already finds it
    (same stem, or a prefix match of a simple query's ``"term"*``), the question excluded it, it
    is no content word (``filler_kind``), or it comes mainly from negative rows (negative
    weight >= positive weight). The best unsuppressed candidates are added. Equal scores (the
    words of one marked row) go to the rarer word in the brain: ``brain_rows`` tells how many
    of the brain's rows hold each stem (a stem it does not count is held by none); then to the
    rarer in the pack, then to the one the marked rows say first (never to the alphabet).
    """
    if isinstance(max_terms, bool) or not isinstance(max_terms, int):
        raise ValueError(f"max_terms must be an integer, not {max_terms!r}")
    if not 0 <= max_terms <= MAX_ADDED_TERMS:
        raise ValueError(f"max_terms must be between 0 and {MAX_ADDED_TERMS}: {max_terms}")
    marks = validate_marks(marks)
    space = vector_space(pack)
    _, by_row = resolve_marks(marks, space.rows)
    plan = pack.get("query_plan") or {}
    prefix = plan.get("syntax") != "raw"
    query_words = _words([*(plan.get("query_terms") or []), *(plan.get("expansion_terms") or [])])
    excluded = _words(plan.get("excluded_terms") or [])
    weight: dict[int, dict[str, float]] = {1: {}, -1: {}}
    surfaces: dict[str, Counter[str]] = {}
    sources: dict[str, list[dict[str, str]]] = {}
    for a, value in by_row.items():
        strength = MARK_STRENGTH[value]
        if not strength:
            continue
        sign = 1 if strength > 0 else -1
        for t, w in space.vectors[a].items():
            weight[sign][t] = weight[sign].get(t, 0.0) + abs(strength) * w
            sources.setdefault(t, []).append(
                {"source_key": space.rows[a].get("source_key", ""), "mark": value}
            )
        if sign > 0:
            for token, tf in space.surfaces[a].items():
                surfaces.setdefault(stem(token), Counter())[token] += tf
    candidates: list[dict[str, Any]] = []
    rarity: dict[str, tuple[float, int]] = {}
    stems: dict[str, str] = {}
    for seen, (t, pos) in enumerate(weight[1].items()):
        term = min(surfaces[t].items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0]
        rarity[term] = (space.idf.get(t, 0.0), seen)
        stems[term] = t
        neg = weight[-1].get(t, 0.0)
        found_by = _matched_by(term, query_words, prefix)
        excluded_by = _matched_by(term, excluded, prefix)
        filler = filler_kind(term)
        if found_by:
            reason = f"already in the query as {found_by!r}"
        elif excluded_by:
            reason = f"excluded by the question ({excluded_by!r})"
        elif filler:
            reason = f"not a content word: {filler}"
        elif neg >= pos:
            reason = f"mainly from rows marked less/irrelevant ({neg:.3f} vs {pos:.3f})"
        else:
            reason = ""
        candidates.append(
            {
                "term": term,
                "score": round(pos - neg, 6),
                "positive_weight": round(pos, 6),
                "negative_weight": round(neg, 6),
                "suppressed": bool(reason),
                "reason": reason,
                "sources": sources[t],
            }
        )
    held: Mapping[str, int] = {}
    if brain_rows is not None:
        held = brain_rows(sorted({stems[c["term"]] for c in candidates if not c["suppressed"]}))
    candidates.sort(
        key=lambda c: (
            -c["score"],
            held.get(stems[c["term"]], 0),
            -rarity[c["term"]][0],
            rarity[c["term"]][1],
        )
    )
    added: list[str] = []
    for c in candidates:
        if c["suppressed"]:
            continue
        if len(added) < max_terms:
            added.append(c["term"])
            rows = sum(1 for s in c["sources"] if MARK_STRENGTH[s["mark"]] > 0)
            c["reason"] = f"added: from {plural(rows, 'row')} marked more/relevant"
        else:
            c["reason"] = f"not added: below the best {max_terms}"
    original = str(pack.get("question") or plan.get("text_query") or "").strip()
    return {
        "original_query": original,
        "added_terms": added,
        "refined_query": _extend(original, added, raw=not prefix),
        "candidates": [
            c for n, c in enumerate(candidates) if n < MAX_CANDIDATES or c["term"] in added
        ],
    }
