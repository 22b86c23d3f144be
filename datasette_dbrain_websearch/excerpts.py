"""Excerpts around the matched terms, with matches marked (pure functions).

The field and window follow dbrain's ``evidenceExcerpt`` (``internal/ask/excerpt.go`` and
``excerpt_window.go``, darron/dbrain @9cdb6e3): the compact text (summary, description) is read
first, and the raw text (post, transcript, article, text, OCR, extracted text) joins when the
compact text holds fewer than two of the terms. Every matching field offers its best window of
``maxChars`` characters, starting ``maxChars/4`` before a match and scored by the distinct terms
it holds, rare ones weighing more; the best window of all wins, so a transcript match shows the
transcript and an article match the article. Terms match as FTS5 found them (same porter stem,
``stemming.TermMatcher``), where dbrain tests substrings, and windows are snapped to word edges.

Marking is the one place HTML is produced from row text: every segment is HTML-escaped and only
our own ``<mark>`` tags are added, so a title or excerpt holding ``<script>`` stays text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .stemming import TermMatcher

ELLIPSIS = "..."
# Evidence roles of the compact fields dbrain reads before the raw ones.
COMPACT_ROLES = frozenset({"derived_summary", "excerpt"})
Field = tuple[str, str, str]  # (name, evidence_role, text)
Terms = TermMatcher | Sequence[str]  # a plan's matcher, or plain words matched by their stems
# The ASCII white space but " " (tab, newline, ...), searched for one at a time: a C scan each.
_ASCII_SPACES = tuple(c for c in map(chr, range(128)) if c.isspace() and c != " ")
_ESCAPED = re.compile("[&<>\"']")  # the characters html.escape replaces


@dataclass(frozen=True)
class Excerpt:
    text: str
    html: str
    field: str
    role: str
    matched_terms: tuple[str, ...]


def squash(text: str) -> str:
    """Collapse runs of white space (newlines included) into single spaces. An ASCII text whose
    only white space is single spaces between words is returned as it is, without splitting
    it into words (most texts are stored squashed)."""
    if (
        text.isascii()
        and "  " not in text
        and not text.startswith(" ")
        and not text.endswith(" ")
        and not any(space in text for space in _ASCII_SPACES)
    ):
        return text
    return " ".join(text.split())


def matcher_for(terms: Terms) -> TermMatcher:
    return terms if isinstance(terms, TermMatcher) else TermMatcher.for_words(terms)


def find_matches(text: str, terms: Terms) -> list[tuple[int, int, str]]:
    """Every (start, end, term) occurrence of the terms in text, in order, without overlaps."""
    return list(matcher_for(terms).finditer(text))


def mark(text: str, terms: Terms) -> str:
    """HTML-escape text and wrap each term occurrence in ``<mark>``."""
    return _marked(text, find_matches(text, terms))


def _marked(text: str, matches: list[tuple[int, int, str]]) -> str:
    """``mark`` with the matches already found. A text without a character ``html.escape``
    changes is joined as it stands (escaping each segment would give the same)."""
    escape = _as_is if _ESCAPED.search(text) is None else html.escape
    out: list[str] = []
    pos = 0
    for start, end, _ in matches:
        out.append(escape(text[pos:start]))
        out.append("<mark>" + escape(text[start:end]) + "</mark>")
        pos = end
    out.append(escape(text[pos:]))
    return "".join(out)


def _as_is(text: str) -> str:
    """``_marked``'s escape for a text with nothing to escape."""
    return text


def _window(
    text: str, matches: list[tuple[int, int, str]], max_chars: int, counts: dict[str, int]
) -> tuple[int, int, int]:
    """(start, end, score) of the best window, scored as dbrain's ``queryWindowScore``: the
    anchoring term's length plus, per distinct term inside, 100 + 1000/occurrences + length.
    Equal scores go to the earlier window.

    Windows move only forward as the anchor does, so the terms inside are kept as the window
    slides (one pass over the matches, however many a long page holds)."""
    lead = max_chars // 4
    weight = {term: 100 + 1000 // count + len(term) for term, count in counts.items()}
    inside = dict.fromkeys(weight, 0)
    held = 0  # the score of the distinct terms inside
    best_score, best_start = -1, 0
    low = high = 0  # the matches starting in the window: matches[low:high]
    total, last_start = len(matches), len(text) - max_chars
    for anchor, _, term in matches:
        window_start = max(0, min(anchor - lead, last_start))
        window_end = window_start + max_chars
        while high < total and matches[high][0] <= window_end:
            entering = matches[high][2]
            inside[entering] += 1
            if inside[entering] == 1:
                held += weight[entering]
            high += 1
        while low < high and matches[low][0] < window_start:
            leaving = matches[low][2]
            inside[leaving] -= 1
            if not inside[leaving]:
                held -= weight[leaving]
            low += 1
        score = len(term) + held
        # Matches do not overlap: only the last one starting inside can end outside.
        if high > low and matches[high - 1][1] > window_end:
            last = matches[high - 1][2]
            if inside[last] == 1:
                score -= weight[last]
        # Windows start in order, so a later one wins only with a higher score.
        if score > best_score:
            best_score, best_start = score, window_start
    return best_start, min(len(text), best_start + max_chars), best_score


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """Move window edges off the middle of words so excerpts start and end cleanly."""
    if start > 0:
        space = text.find(" ", start, min(len(text), start + 20))
        if space != -1:
            start = space + 1
    if end < len(text):
        space = text.rfind(" ", max(start, end - 20), end)
        if space != -1:
            end = space
    return start, end


def best_excerpt(fields: Sequence[Field], terms: Terms, max_chars: int) -> Excerpt:
    """Pick the field and the window to show (see the module docstring); nothing matched gives
    the start of the first non-empty field, compact ones first. Raw fields are read only when
    the compact ones hold too few terms."""
    compact = [
        (name, role, text)
        for name, role, raw in fields
        if role in COMPACT_ROLES and (text := squash(raw or ""))
    ]
    matcher = matcher_for(terms)
    unique = matcher.names
    in_compact = [find_matches(f[2], matcher) for f in compact]
    covered = {m[2] for matches in in_compact for m in matches}
    candidates = compact
    if not compact or len(covered) < min(2, len(unique)):
        candidates = compact + [
            (name, role, text)
            for name, role, raw in fields
            if role not in COMPACT_ROLES and (text := squash(raw or ""))
        ]
    if not candidates:
        return Excerpt("", "", "", "", ())
    found = in_compact + [find_matches(f[2], matcher) for f in candidates[len(compact) :]]
    counts: dict[str, int] = {}
    for matches in found:
        for _, _, term in matches:
            counts[term] = counts.get(term, 0) + 1
    best: tuple[int, Field, int, int, list[tuple[int, int, str]]] | None = None
    for field, matches in zip(candidates, found, strict=True):
        if matches:
            start, end, score = _window(field[2], matches, max_chars, counts)
            if best is None or score > best[0]:
                best = (score, field, start, end, matches)
    if best is None:
        field, matches = candidates[0], []
        start, end = 0, min(len(field[2]), max_chars)
    else:
        _, field, start, end, matches = best
    name, role, text = field
    start, end = _snap(text, start, end)
    body = text[start:end]
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(text) else ""
    # The field's own matches inside the window: a word the window's edge cuts is not one.
    shown = [(a - start, b - start, t) for a, b, t in matches if a >= start and b <= end]
    inside = {m[2] for m in shown}
    return Excerpt(
        text=prefix + body + suffix,
        html=html.escape(prefix) + _marked(body, shown) + html.escape(suffix),
        field=name,
        role=role,
        matched_terms=tuple(t for t in unique if t in inside),
    )
