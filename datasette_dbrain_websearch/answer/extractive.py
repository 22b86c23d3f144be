"""The extractive synthesizer: an answer made of the evidence's own sentences (pure, offline,
deterministic).

Sentences that mention the question's terms are picked greedily, MMR-style: each pick favours
terms no earlier pick covered (rarer terms weigh more), higher-ranked rows and rows from the
brain, and skips near-duplicates of what is already picked. Each sentence cites the row it was
taken from, so the verifier finds every word of it in the cited row. A row the question names
exactly (a URL, a key) answers with its leading claims.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..fts import matched_terms
from .text import content_words, split_sentences
from .verify import strip_citations

MIN_CHARS = 25
MAX_CHARS = 400
MIN_WORDS = 5  # words outside URLs: "Good write-up: https://…" is not a claim
SAME_AS_TITLE = 0.7  # Jaccard similarity of content words with the row's title
URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+", re.IGNORECASE)
MAX_PER_ROW = 2
NEAR_DUPLICATE = 0.6  # Jaccard similarity of content words
ROW_PRIOR = 0.5  # weight of a row's rank: ROW_PRIOR / (1 + index)
LOCAL_PRIOR = 0.3
COVERED_WEIGHT = 0.25  # a term an earlier pick already covered still counts a little


@dataclass(frozen=True)
class Passage:
    """A row's text as a synthesizer sees it."""

    key: str
    origin: str  # "local" or "external"
    text: str
    title: str = ""
    exact: bool = False  # the question names this row: its leading claims answer it


@dataclass(frozen=True)
class _Candidate:
    row: int
    position: int
    key: str
    local: bool
    sentence: str
    terms: frozenset[str]
    words: frozenset[str]


def _candidates(terms: Sequence[str], passages: Sequence[Passage]) -> list[_Candidate]:
    """Sentences that read as claims and mention the question's terms (cheapest tests first):
    no questions, link-only lines, fragments or repeats of the row's title."""
    found: list[_Candidate] = []
    for row, passage in enumerate(passages):
        title_words = frozenset(content_words(passage.title))
        for position, raw in enumerate(split_sentences(passage.text)):
            sentence = strip_citations(raw)
            if sentence.endswith("?") or not MIN_CHARS <= len(sentence) <= MAX_CHARS:
                continue
            prose = URL.sub(" ", sentence)
            if len(prose.split()) < MIN_WORDS:
                continue
            hits = frozenset(terms if passage.exact else matched_terms(terms, [prose]))
            if not hits:
                continue
            claim = frozenset(content_words(prose))
            if not claim or (title_words and _similarity(claim, title_words) >= SAME_AS_TITLE):
                continue
            found.append(
                _Candidate(
                    row, position, passage.key, passage.origin == "local", sentence, hits, claim
                )
            )
    return found


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def extract(terms: Sequence[str], passages: Sequence[Passage], max_sentences: int) -> str:
    """The draft answer: one picked sentence per line, each ending with ``[its row's key]``.

    Sentences must hold at least half of the question's terms when any do (otherwise one).
    Returns ``""`` when no sentence mentions any term.
    """
    candidates = _candidates(terms, passages)
    need = max(1, math.ceil(len(terms) / 2))
    pool = [c for c in candidates if len(c.terms) >= need] or candidates
    frequency = Counter(t for c in pool for t in c.terms)
    weight = {t: math.log(1 + len(pool) / (1 + n)) for t, n in frequency.items()}
    picked: list[_Candidate] = []
    covered: set[str] = set()
    per_row: Counter[int] = Counter()
    overlap = [0.0] * len(pool)  # each candidate's highest similarity to a picked sentence
    while len(picked) < max_sentences:
        best: tuple[float, int, int] | None = None
        choice: int | None = None
        for i, c in enumerate(pool):
            if overlap[i] >= NEAR_DUPLICATE or per_row[c.row] >= MAX_PER_ROW:
                continue
            gain = sum(weight[t] for t in c.terms - covered) + COVERED_WEIGHT * sum(
                weight[t] for t in c.terms & covered
            )
            score = ROW_PRIOR / (1 + c.row) + (LOCAL_PRIOR if c.local else 0.0) - overlap[i]
            rank = (gain + score, -c.row, -c.position)
            if best is None or rank > best:
                best, choice = rank, i
        if choice is None:
            break
        chosen = pool[choice]
        picked.append(chosen)
        covered |= chosen.terms
        per_row[chosen.row] += 1
        overlap = [
            max(o, _similarity(c.words, chosen.words)) for o, c in zip(overlap, pool, strict=True)
        ]
        overlap[choice] = 1.0  # picked: never again
    picked.sort(key=lambda c: (not c.local, c.row, c.position))
    return "\n".join(f"{c.sentence} [{c.key}]" for c in picked)
