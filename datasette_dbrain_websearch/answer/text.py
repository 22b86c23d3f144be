"""Sentences and content words: the text rules the extractive synthesizer and the verifier share
(pure functions).

Both sides must cut text the same way: the verifier re-reads what the extractive synthesizer
wrote, so a sentence it picked is the sentence it checks.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..stemming import fold, stem
from ..word_lists import STOP_WORDS

# A sentence ends at . ! ? (or a run of them, maybe closed by a quote or bracket) followed by
# white space and a letter or digit (technical prose starts sentences with "bm25" too).
# Abbreviations ("e.g.", "U.S."), single initials and a free-standing "..." are not ends.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?\w)")
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al mr mrs ms dr prof st jr sr no fig approx inc ltd co corp".split()
)
_WORD = re.compile(r"[^\W_]+")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+")
HEADING_WORDS = 8
_CLOSED = re.compile(r"[.!?:;\"'\u201d\u2019)\]]$")
# How dbrain's importers describe a capture: metadata lines and "captured from" notes.
_BOILERPLATE = re.compile(
    r"^(?:device|url|title|last viewed|saved|captured|source|tags?|author|published|date)"
    r"\s*:|\bcaptured (?:from|via|with)\b"
    r"|^(?:starred|bookmarked|saved|liked) (?:for|on|from|via|in)\b",
    re.IGNORECASE,
)

# Words that say where a claim comes from rather than what it claims: a sentence is not less
# supported for saying "according to your notes".
ATTRIBUTION_WORDS = frozenset(
    """
    according also another answer article based brain cited cites describes describe
    evidence explains explain however indicates mention mentions note notes noted page pages
    report reports result results said saved says source sources state states suggests
    suggest shows show web website while whereas which
    """.split()
)


def split_sentences(text: str, headings: bool = True) -> list[str]:
    """Cut text into sentences: paragraphs and list items first, then sentence ends.

    Markdown headings (``# ...``) are never sentences; with ``headings=False`` neither is a
    short line without a closing stop that more text follows ("Espresso machine maintenance"
    above a note's list)."""
    return [sentence for sentence, _ in marked_sentences(text, headings)]


def marked_sentences(text: str, headings: bool = True) -> list[tuple[str, bool]]:
    """``split_sentences``, each sentence with whether it stands in a list item ("- ...",
    "1. ..."): items of a list enumerate, and an answer keeps them as bullets."""
    sentences: list[tuple[str, bool]] = []
    lines = text.splitlines()
    for n, raw in enumerate(lines):
        item = bool(_BULLET.match(raw))
        line = _BULLET.sub("", raw).strip()
        if not line or line.startswith("#"):
            continue
        if not headings and _is_heading(line, raw, lines[n + 1 :]):
            continue
        start = 0
        for match in _BOUNDARY.finditer(line):
            piece = line[start : match.start()].strip()
            if _ends_with_abbreviation(piece):
                continue
            if piece:
                sentences.append((line[start : match.end()].strip(), item))
            start = match.end()
        rest = line[start:].strip()
        if rest:
            sentences.append((rest, item))
    return sentences


def _is_heading(line: str, raw: str, after: list[str]) -> bool:
    """A short line, not a list item, with no closing stop, above more text."""
    return (
        not _BULLET.match(raw)
        and len(line.split()) <= HEADING_WORDS
        and not _CLOSED.search(line)
        and any(a.strip() for a in after)
    )


def is_boilerplate(sentence: str) -> bool:
    """Does the sentence describe how a row was captured rather than say anything
    ("Safari tab captured from iCloud Tabs.", "Device: Demo MacBook")?"""
    return bool(_BOILERPLATE.search(sentence))


def _ends_with_abbreviation(piece: str) -> bool:
    """Is the period at the end of ``piece`` part of an abbreviation or an initial?"""
    last = piece.rsplit(None, 1)[-1] if piece.strip() else ""
    if last.strip(".\u2026") == "":  # a free-standing ellipsis: "CREATE TABLE ... USING"
        return bool(last)
    word = last.rstrip(".").lower()
    return word in _ABBREVIATIONS or "." in word or (len(word) == 1 and word.isalpha())


def words(text: str) -> list[str]:
    """Folded word tokens (lowercase, Latin diacritics removed, as FTS5 reads them)."""
    return _WORD.findall(fold(text))


def content_words(text: str, ignore: frozenset[str] = frozenset()) -> list[str]:
    """The stems of the words that carry a sentence's claim: no stop words, no attribution
    words, nothing shorter than three letters except numbers; in order, without repeats."""
    found: dict[str, None] = {}
    for word in words(text):
        if word in STOP_WORDS or word in ignore or word in ATTRIBUTION_WORDS:
            continue
        if len(word) < 3 and not word.isdigit():
            continue
        found[stem(word)] = None
    return list(found)


@lru_cache(maxsize=8192)
def stem_sequence(text: str) -> tuple[str, ...]:
    """Every word's stem, in order (the answer check reads which word stands where;
    remembered: a run's answer check, answer and verifier read the same sentences)."""
    return tuple(stem(w) for w in words(text))


@lru_cache(maxsize=8192)
def stems(text: str) -> frozenset[str]:
    """Every word stem in a text (what a cited row can support)."""
    return frozenset(stem_sequence(text))
