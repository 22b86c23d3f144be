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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .stemming import TermMatcher

ELLIPSIS = "..."
# Evidence roles of the compact fields dbrain reads before the raw ones.
COMPACT_ROLES = frozenset({"derived_summary", "excerpt"})
Field = tuple[str, str, str]  # (name, evidence_role, text)
Terms = TermMatcher | Sequence[str]  # a plan's matcher, or plain words matched by their stems


@dataclass(frozen=True)
class Excerpt:
    text: str
    html: str
    field: str
    role: str
    matched_terms: tuple[str, ...]


def squash(text: str) -> str:
    """Collapse runs of white space (newlines included) into single spaces."""
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
    """``mark`` with the matches already found."""
    out: list[str] = []
    pos = 0
    for start, end, _ in matches:
        out.append(html.escape(text[pos:start]))
        out.append("<mark>" + html.escape(text[start:end]) + "</mark>")
        pos = end
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _window(
    text: str, matches: list[tuple[int, int, str]], max_chars: int, counts: dict[str, int]
) -> tuple[int, int, int]:
    """(start, end, score) of the best window, scored as dbrain's ``queryWindowScore``: the
    anchoring term's length plus, per distinct term inside, 100 + 1000/occurrences + length.
    Equal scores go to the earlier window.

    Windows move only forward as the anchor does, so the terms inside are kept as the window
    slides (one pass over the matches, however many a long page holds)."""
    lead = max_chars // 4
    inside: dict[str, int] = {}
    held = 0  # the score of the distinct terms inside

    def enter(term: str) -> None:
        nonlocal held
        inside[term] = inside.get(term, 0) + 1
        if inside[term] == 1:
            held += 100 + 1000 // counts[term] + len(term)

    def leave(term: str) -> None:
        nonlocal held
        inside[term] -= 1
        if not inside[term]:
            held -= 100 + 1000 // counts[term] + len(term)

    best = (-1, 0, 0)  # score, -start, start
    low = high = 0  # the matches starting in the window: matches[low:high]
    for anchor, _, term in matches:
        window_start = max(0, min(anchor - lead, len(text) - max_chars))
        window_end = window_start + max_chars
        while high < len(matches) and matches[high][0] <= window_end:
            enter(matches[high][2])
            high += 1
        while low < high and matches[low][0] < window_start:
            leave(matches[low][2])
            low += 1
        score = len(term) + held
        # Matches do not overlap: only the last one starting inside can end outside.
        if high > low and matches[high - 1][1] > window_end:
            last = matches[high - 1][2]
            if inside[last] == 1:
                score -= 100 + 1000 // counts[last] + len(last)
        best = max(best, (score, -window_start, window_start))
    return best[2], min(len(text), best[2] + max_chars), best[0]


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
    the start of the first non-empty field, compact ones first."""
    texts = [(name, role, squash(raw or "")) for name, role, raw in fields]
    compact = [f for f in texts if f[2] and f[1] in COMPACT_ROLES]
    raw = [f for f in texts if f[2] and f[1] not in COMPACT_ROLES]
    matcher = matcher_for(terms)
    unique = matcher.names
    in_compact = [find_matches(f[2], matcher) for f in compact]
    covered = {m[2] for matches in in_compact for m in matches}
    candidates = compact if compact and len(covered) >= min(2, len(unique)) else compact + raw
    if not candidates:
        return Excerpt("", "", "", "", ())
    found = in_compact + [find_matches(f[2], matcher) for f in candidates[len(compact) :]]
    counts = Counter(m[2] for matches in found for m in matches)
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
