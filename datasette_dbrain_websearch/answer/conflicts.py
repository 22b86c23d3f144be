"""Offline conflict detection: where the answer says one thing and another row it was written
from says otherwise, on a number, a date or a denied claim (pure functions, deterministic).

Each sentence of the answer is compared with the claims of every other row the answer read
(an item and its linked page are separate texts). A false "sources disagree" costs more trust
than a missed one, so a pair counts only when all of these hold:

- the same subject: both sentences hold the same question terms, share two content words and
  half of the shorter one's, and do not each name something the other does not ("the Encore"
  against "the Virtuoso");
- a number or date: each sentence holds exactly one of its kind and unit (a sentence with two
  years is not compared on years), neither hedged ("about 40"), a range ("40-55") nor a name's
  number ("Python 3"); the words just before or after both are the same (the quantity's cue:
  "founded in 911" against "founded in 912", never "costs $40 new" against "$55 used"); the
  values differ beyond the precision written (5 km is 5,200 m rounded; 3.5 is 3.52); units are
  converted within a family (km and m) and never compared across them ($ and €);
- a denial: one sentence is negated and the other not, each a single plain clause (no "but",
  "if", "not only"), their content words the same but for at most one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..brain_access import Checkpoint, paced, unbounded
from ..stemming import TermMatcher, fold, stem
from ..word_lists import STOP_WORDS
from .extractive import Passage, claims
from .quantities import NEGATION_WORDS, Quantity, quantities
from .text import content_words

MOST_CONFLICTS = 5
MIN_SHARED = 2  # content words two sentences about one subject share, at least
MIN_OVERLAP = 0.5  # of the shorter sentence's content words
DENIAL_MIN_SHARED = 3
DENIAL_MAX_DIFFERENT = 1
QUOTE_CHARS = 140

_NEGATION = re.compile(r"\b(?:not|never|no|cannot|neither|nor)\b|\w+n['\u2019]t\b")
_NOT_A_DENIAL = re.compile(
    r"\b(?:not (?:only|just|merely|necessarily|always|all|every)|no (?:longer|more|less|doubt|"
    r"matter))\b"
)
# A clause that qualifies another: its negation may deny only part of what the sentence says.
_QUALIFIED = re.compile(
    r"\b(?:but|although|though|while|whereas|however|unless|if|except|yet|whether|only)\b"
)


@dataclass(frozen=True)
class Claim:
    """A sentence with what a comparison needs of it."""

    key: str
    origin: str
    text: str
    words: frozenset[str]  # content words, without numbers and negations
    terms: frozenset[str]  # question terms it holds
    names: frozenset[str]  # capitalized words inside it, as content words
    quantities: tuple[Quantity, ...]
    negated: bool
    plain: bool  # one unqualified clause with at most one negation: a denial can be read


def claim(key: str, origin: str, text: str, matcher: TermMatcher) -> Claim:
    """A sentence read once for every comparison it takes part in."""
    folded = fold(text)
    negations = _NEGATION.findall(folded)
    return Claim(
        key,
        origin,
        text,
        frozenset(w for w in content_words(text, NEGATION_WORDS) if not w[0].isdigit()),
        frozenset(name for _, _, name in matcher.finditer(text)),
        _names(text),
        tuple(quantities(text)),
        bool(negations),
        len(negations) <= 1
        and not _NOT_A_DENIAL.search(folded)
        and not _QUALIFIED.search(folded)
        and not re.search(r"[,;:]", text),
    )


def _names(text: str) -> frozenset[str]:
    """Capitalized words past the first: what a sentence names."""
    found = [m.group() for m in re.finditer(r"[^\W\d_]+", text)][1:]
    return frozenset(
        stem(fold(w)) for w in found if w[0].isupper() and fold(w) not in STOP_WORDS and len(w) > 2
    )


def same_subject(a: Claim, b: Claim) -> bool:
    """Do two sentences speak of the same thing: the same question terms, content words
    shared, and no name on each side the other lacks?"""
    shared = a.words & b.words
    return (
        bool(a.terms)
        and a.terms == b.terms
        and len(shared) >= MIN_SHARED
        and len(shared) >= MIN_OVERLAP * min(len(a.words), len(b.words))
        and not (a.names - b.words and b.names - a.words)
    )


def _agree(x: Quantity, y: Quantity) -> bool:
    """Equal as far as both were written: a date to the coarser one's precision, a number
    within half the coarser one's step."""
    if x.kind == "date":
        common = min(len(x.value), len(y.value))
        return x.value[:common] == y.value[:common]
    return abs(x.value[0] - y.value[0]) <= max(x.step, y.step) / 2 * (1 + 1e-9)


def _same_cue(x: Quantity, y: Quantity) -> bool:
    """The words either side name the same quantity: some are shared, and none of the sides
    where both have words disagrees."""
    sides = ((x.before, y.before), (x.after, y.after))
    if any(p and q and not p & q for p, q in sides):
        return False
    return any(p & q for p, q in sides)


def differing(a: Claim, b: Claim) -> list[tuple[str, Quantity, Quantity]]:
    """(kind, a's, b's) for each quantity two sentences about one subject state differently."""
    found = []
    for x in a.quantities:
        if not x.comparable:
            continue
        same_a = [q for q in a.quantities if (q.kind, q.unit) == (x.kind, x.unit)]
        same_b = [q for q in b.quantities if (q.kind, q.unit) == (x.kind, x.unit)]
        if len(same_a) != 1 or len(same_b) != 1:
            continue
        y = same_b[0]
        if y.comparable and _same_cue(x, y) and not _agree(x, y):
            found.append((x.kind, x, y))
    return found


def denies(a: Claim, b: Claim) -> bool:
    """Does one sentence deny what the other says, in the same words?"""
    return (
        a.negated != b.negated
        and a.plain
        and b.plain
        and len(a.words & b.words) >= DENIAL_MIN_SHARED
        and len(a.words ^ b.words) <= DENIAL_MAX_DIFFERENT
    )


ORIGIN_LABELS = {"local": "brain", "external": "web"}


def _label(x: Quantity) -> str:
    if x.kind == "date":
        return "The year differs" if len(x.value) == 1 else "The date differs"
    if x.unit in ("USD", "EUR", "GBP"):
        return "The amount differs"
    return "The percentage differs" if x.unit == "%" else "The number differs"


def _short(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rstrip() + "\u2026"


def conflict(a: Claim, b: Claim) -> dict[str, Any] | None:
    """The item ``conflicts`` lists for two sentences that disagree, or None."""
    if not same_subject(a, b):
        return None
    side = f"({ORIGIN_LABELS[a.origin]})", f"({ORIGIN_LABELS[b.origin]})"
    kind = ""
    differ = differing(a, b)
    if differ:
        kind, x, y = differ[0]
        text = f"{_label(x)}: \u201c{x.phrase}\u201d {side[0]} vs \u201c{y.phrase}\u201d {side[1]}"
    elif denies(a, b):
        kind = "negation"
        text = (
            "One denies what the other says: "
            f"\u201c{_short(a.text)}\u201d {side[0]} vs \u201c{_short(b.text)}\u201d {side[1]}"
        )
    if not kind:
        return None
    return {
        "text": text,
        "citations": [a.key, b.key],
        "kind": kind,
        "quotes": [{"key": a.key, "text": a.text}, {"key": b.key, "text": b.text}],
    }


def find_conflicts(
    terms: Sequence[str],
    sentences: Sequence[Mapping[str, Any]],
    passages: Sequence[Passage],
    checkpoint: Checkpoint = unbounded,
) -> list[dict[str, Any]]:
    """Where an answer's sentences (``text`` and ``citations``, as verified) and the claims of
    the other rows it was written from disagree: at most one item for two rows, the answer's
    sentence first, at most ``MOST_CONFLICTS``. ``checkpoint`` runs before each passage."""
    matcher = TermMatcher.for_words(terms)
    origins = {p.key: p.origin for p in passages}
    stated = [
        claim(key, origins[key], s["text"], matcher)
        for s in sentences
        for key in s["citations"][:1]
        if key in origins
    ]
    stated = [c for c in stated if c.terms]
    denied = any(c.negated for c in stated)
    found: list[dict[str, Any]] = []
    pairs: set[frozenset[str]] = set()
    for passage in paced(passages, checkpoint, every=1):
        if not stated or len(found) >= MOST_CONFLICTS:
            break
        others = [c for c in stated if c.key != passage.key]
        for _, text, _ in claims(passage, tuple(terms)) if others else []:
            if not _may_conflict(text, matcher, denied):
                continue
            said = claim(passage.key, passage.origin, text, matcher)
            if not said.terms:
                continue
            for a in others:
                pair = frozenset((a.key, said.key))
                if pair in pairs or len(found) >= MOST_CONFLICTS:
                    continue
                item = conflict(a, said)
                if item is not None:
                    pairs.add(pair)
                    found.append(item)
    return found


def _may_conflict(text: str, matcher: TermMatcher, denied: bool) -> bool:
    """A cheap look before a sentence is read whole (``claim``): it must hold a question term,
    and a number or a date (each has digits) or a negation, unless a stated sentence is the
    denial (then any sentence may be what it denies)."""
    if next(matcher.finditer(text), None) is None:
        return False
    return denied or any(c.isdigit() for c in text) or _NEGATION.search(fold(text)) is not None
