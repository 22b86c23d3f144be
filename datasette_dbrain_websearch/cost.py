"""What a question will cost before it runs, and how a costly one is made affordable (pure).

The ranking query ORs every search word, so its work is the postings it reads: the sum of its
terms' document frequencies, counted beforehand with cheap, cached counts (``survey.Survey``).
BM25 spends about a microsecond per posting, so 32 words each in every row of a 100,000-row
brain would take seconds. Such a question is **narrowed**: its commonest terms (the ones BM25
weighs least) leave the ranking query until what is left reads at most ``postings_budget``; they
still count as the question's words for coverage and the judge.

A question that still reads more than ``HEAVY_POSTINGS`` is **heavy**: ``admission`` lets each
requester have one in flight, and every question waits only behind cheaper ones. Raw FTS5
queries are not counted (a short prefix costs as much to count as to run): prefixes of under
three characters, or more than four prefixes, are refused, and three-character prefixes,
``NEAR`` groups or many terms make a raw query heavy. ``ranking: dbrain`` searches every term
as a prefix: short or many terms make it heavy. Uncounted questions are ordered as if they
read half of ``HEAVY_POSTINGS`` (light) or their whole budget (heavy). A simple question of
more than ``MAX_QUESTION_WORDS`` words is refused before it is planned.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import ResearchError

POSTINGS_BUDGET = 200_000  # at least this many postings are always searched (~0.2 s)
HEAVY_POSTINGS = 100_000
# A raw prefix is expanded inside FTS5 before the first row, where SQLite's progress handler
# cannot stop or pause it: a two-letter prefix takes a fifth of a second on a 63k brain, eight
# three-letter ones a tenth. So raw prefixes need three characters, and at most four of them.
MIN_RAW_PREFIX = 3  # characters before a raw query's ``*``
MAX_RAW_PREFIXES = 4
SHORT_PREFIX = 4  # a prefix shorter than this expands to a large share of the vocabulary
LIGHT_RAW_TERMS = 4  # a raw query with more words than this is heavy
LIGHT_DBRAIN_TERMS = 8
# A raw query ORing thousands of words reads thousands of posting lists (3,000 words took 7 s
# against a 3 s limit): refused at once.
MAX_RAW_WORDS = 64
# Planning reads every word of a simple question (3,000 words took a quarter of a second before
# any search, growing with the square of the words): more are refused at once. Of fewer, the
# first ``question_terms.MAX_TERMS`` terms are searched.
MAX_QUESTION_WORDS = 500
_RAW_OPERATORS = frozenset({"AND", "OR", "NOT", "NEAR"})

# An FTS5 token: a quoted string (whose inner ``*`` is plain text) or a bareword, each a prefix
# when ``*`` follows it.
_RAW_TOKEN = re.compile(r'"((?:[^"]|"")*)"(\s*\*)?|([^\s"():^*+]+)(\s*\*)?')
_NEAR = re.compile(r"\bNEAR\s*\(", re.IGNORECASE)


@dataclass(frozen=True)
class Cost:
    """A question's estimated cost: the ``postings`` it reads (for raw and ``ranking: dbrain``
    questions, which are not counted, ``LIGHT`` or ``uncounted_heavy``), and whether it is heavy,
    with the reason."""

    postings: int = 0
    heavy: bool = False
    reason: str = ""


# Raw and ``ranking: dbrain`` questions are not counted: a light one is assumed to read half
# of what makes a question heavy, a heavy one its whole budget.
LIGHT = Cost(HEAVY_POSTINGS // 2)


def uncounted_heavy(reason: str) -> Cost:
    return Cost(POSTINGS_BUDGET, True, reason)


def postings_budget(rows: int) -> int:
    """The postings a question may read: ``POSTINGS_BUDGET``, or twice the rows searched on a
    brain large enough that ordinary questions read more."""
    return max(POSTINGS_BUDGET, 2 * rows)


def narrowed_terms(frequencies: Mapping[str, int], budget: int) -> tuple[str, ...]:
    """The terms to leave out of the ranking query, commonest first, until the rest read at
    most ``budget`` postings; the rarest term always stays."""
    total = sum(frequencies.values())
    dropped: list[str] = []
    for name, rows in sorted(frequencies.items(), key=lambda kv: (-kv[1], kv[0])):
        if total <= budget or len(dropped) == len(frequencies) - 1:
            break
        dropped.append(name)
        total -= rows
    return tuple(dropped)


def counted_cost(postings: int) -> Cost:
    """A simple question's cost from the postings its ranking query reads."""
    if postings > HEAVY_POSTINGS:
        return Cost(postings, True, f"reads about {postings:,} postings")
    return Cost(postings)


def raw_prefix_stems(query: str) -> list[str]:
    """The stems a raw FTS5 query searches as prefixes: ``sql*`` -> ``sql``, ``"a b"*`` -> ``b``."""
    stems = []
    for match in _RAW_TOKEN.finditer(query):
        quoted = match.group(1) is not None
        token, star = (match.group(1), match.group(2)) if quoted else match.group(3, 4)
        if star:
            words = re.findall(r"\w+", token)
            stems.append(words[-1] if words else "")
    return stems


def raw_words(query: str) -> int:
    """About how many words a raw FTS5 query searches: its tokens (each word of a quoted
    phrase too) but the boolean operators (column names and ``NEAR`` distances count: it is
    a bound, not a count to the word)."""
    searched = [
        word
        for match in _RAW_TOKEN.finditer(query)
        for word in re.findall(r"\w+", match.group(1) or match.group(3) or "")
        if match.group(1) is not None or word.upper() not in _RAW_OPERATORS
    ]
    return len(searched)


def check_words(question: str) -> None:
    """Refuse (400) a simple question of more than ``MAX_QUESTION_WORDS`` words before it is
    planned: too costly by construction, and most of its words would never be searched."""
    words = len(re.findall(r"\w+", question))
    if words > MAX_QUESTION_WORDS:
        raise ResearchError(
            f"A question may have at most {MAX_QUESTION_WORDS} words (this one has {words:,}), "
            "and only its first terms are searched: ask with the words that matter.",
            code="too_many_terms",
        )


def raw_cost(query: str, words: Sequence[str]) -> Cost:
    """A raw query's cost, from its shape; more than ``MAX_RAW_WORDS`` words, a prefix of under
    ``MIN_RAW_PREFIX`` characters, or more than ``MAX_RAW_PREFIXES`` prefixes, is refused (400):
    too costly by construction, it would never fit its time limit."""
    searched = raw_words(query)
    if searched > MAX_RAW_WORDS:
        raise ResearchError(
            f"A raw query may search at most {MAX_RAW_WORDS} words (this one has {searched:,}): "
            "every word is another posting list to read. Search the few that matter.",
            code="too_many_terms",
        )
    stems = raw_prefix_stems(query)
    short = [s for s in stems if len(s) < MIN_RAW_PREFIX]
    if short:
        raise ResearchError(
            f"A prefix search needs at least {MIN_RAW_PREFIX} characters before the *: "
            f'"{short[0]}*" would read a large share of every row. Add letters, or drop the *.',
            code="prefix_too_short",
        )
    if len(stems) > MAX_RAW_PREFIXES:
        raise ResearchError(
            f"A raw query may search at most {MAX_RAW_PREFIXES} prefixes (this one has "
            f"{len(stems)}); search whole words for some of them.",
            code="too_many_prefixes",
        )
    if any(len(s) < SHORT_PREFIX for s in stems):
        return uncounted_heavy("a prefix of three characters")
    if _NEAR.search(query):
        return uncounted_heavy("a NEAR group")
    if len(words) > LIGHT_RAW_TERMS:
        return uncounted_heavy(f"{len(words)} words")
    return LIGHT


def dbrain_cost(terms: Sequence[str]) -> Cost:
    """``ranking: dbrain`` searches each term as a prefix: short or many terms are heavy."""
    if any(len(t) < SHORT_PREFIX for t in terms):
        return uncounted_heavy("a prefix of under three characters")
    if len(terms) > LIGHT_DBRAIN_TERMS:
        return uncounted_heavy(f"{len(terms)} prefixes")
    return LIGHT
