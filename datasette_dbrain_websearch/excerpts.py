"""Excerpts around the matched terms, with matches marked (pure functions).

dbrain picks a window of ``maxChars`` runes that starts about ``maxChars/4`` before the match,
scoring candidate windows by the terms they hold, weighted toward rare terms
(``internal/ask/excerpt.go``). The field falls back in dbrain's order: summary, OCR, transcript,
article text, text (items); summary, extracted text, description (sources).

Marking is the one place HTML is produced from row text: every segment is HTML-escaped and only
our own ``<mark>`` tags are added, so a title or excerpt holding ``<script>`` stays text.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from .fts import term_pattern

ELLIPSIS = "..."


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


def find_matches(text: str, terms: tuple[str, ...] | list[str]) -> list[tuple[int, int, str]]:
    """Every (start, end, term) occurrence of the terms in text, sorted, overlaps removed."""
    spans = sorted(
        (m.start(), m.end(), term)
        for term in terms
        for m in term_pattern(term).finditer(text)
        if m.end() > m.start()
    )
    kept: list[tuple[int, int, str]] = []
    for span in spans:
        if kept and span[0] < kept[-1][1]:
            continue
        kept.append(span)
    return kept


def mark(text: str, terms: tuple[str, ...] | list[str]) -> str:
    """HTML-escape text and wrap each term occurrence in ``<mark>``."""
    out: list[str] = []
    pos = 0
    for start, end, _ in find_matches(text, terms):
        out.append(html.escape(text[pos:start]))
        out.append("<mark>" + html.escape(text[start:end]) + "</mark>")
        pos = end
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _window(text: str, matches: list[tuple[int, int, str]], max_chars: int) -> tuple[int, int]:
    """Choose the window holding the most (rarest-weighted) distinct terms."""
    if len(text) <= max_chars:
        return 0, len(text)
    if not matches:
        return 0, max_chars
    counts: dict[str, int] = {}
    for _, _, term in matches:
        counts[term] = counts.get(term, 0) + 1
    best_start, best_score = 0, -1.0
    lead = max_chars // 4
    for start, _, _ in matches:
        window_start = max(0, min(start - lead, len(text) - max_chars))
        window_end = window_start + max_chars
        inside = {t for s, e, t in matches if s >= window_start and e <= window_end}
        score = sum(1.0 + 1.0 / counts[t] for t in inside)
        if score > best_score:
            best_start, best_score = window_start, score
    return best_start, best_start + max_chars


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


def best_excerpt(
    fields: list[tuple[str, str, str]], terms: tuple[str, ...] | list[str], max_chars: int
) -> Excerpt:
    """Pick the field (``(name, evidence_role, text)``, fallback order) and window to show."""
    best: tuple[int, str, str, str, list[tuple[int, int, str]]] | None = None
    for name, role, raw in fields:
        text = squash(raw or "")
        if not text:
            continue
        matches = find_matches(text, terms)
        covered = len({t for _, _, t in matches})
        if best is None or covered > best[0]:
            best = (covered, name, role, text, matches)
    if best is None:
        return Excerpt("", "", "", "", ())
    _, name, role, text, matches = best
    start, end = _snap(text, *_window(text, matches, max_chars))
    body = text[start:end]
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(text) else ""
    found = tuple(t for t in terms if any(m[2] == t for m in find_matches(body, terms)))
    return Excerpt(
        text=prefix + body + suffix,
        html=html.escape(prefix) + mark(body, terms) + html.escape(suffix),
        field=name,
        role=role,
        matched_terms=found,
    )
