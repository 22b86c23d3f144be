"""The numbers and dates a sentence states (pure): each value with its unit, its precision and
the words either side that say what it measures, for ``conflicts`` to compare.

A date is ISO (2021-03-04), "March 4, 2021", "4 March 2021", "March 2021" or a year; a number is
money, a percentage, a unit of measure or a count of a noun ("9 bars"), in its unit family's
base unit (5 km is 5,000 m). Hedged values ("about 40") and either end of a range ("40-55") are
kept but marked not comparable; a name's number ("Python 3", "version 2") is no quantity.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..stemming import fold, stem
from ..word_lists import STOP_WORDS
from .text import content_words

WINDOW = 3  # tokens either side of a quantity that name what it measures

_TOKEN = re.compile(r"[$€£]|\d+(?:[.,]\d+)*|%|[^\W\d_]+|[-\u2013\u2014/]")
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
# What "doesn't", "can't" and "cannot" leave among content words.
NEGATION_WORDS = frozenset(
    "not never cannot neither nor doesn don didn isn aren wasn weren won wouldn shouldn "
    "couldn hasn haven hadn ain".split()
)
HEDGES = frozenset(
    "about around approximately approx roughly nearly almost over under above below more less "
    "fewer least most up some circa estimated est maybe perhaps likely reportedly before after "
    "until till early late mid than within".split()
)
RANGE_WORDS = frozenset({"-", "\u2013", "\u2014", "/", "to", "and", "or"})
# Words before a number that make it a name's: "version 3", "step 2", "#4".
IDENTIFIER_WORDS = frozenset(
    "version v no number model release chapter section page step rule issue item table figure "
    "fig article part level grade type class series gen generation phase stage season episode "
    "vol volume route room".split()
)
YEAR_CUES = frozenset({"in", "since", "circa", "year"})
ERAS = {"ad": 1, "ce": 1, "bc": -1, "bce": -1}
MONTHS = {
    name: n
    for n, names in enumerate(
        [
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ],
        start=1,
    )
    for name in names.split()
}
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
CURRENCIES = {"$": "USD", "€": "EUR", "£": "GBP", "usd": "USD", "eur": "EUR", "gbp": "GBP"}


def _units() -> dict[str, tuple[str, float]]:
    """Unit words and symbols: (family, factor to the family's base)."""
    table: dict[str, tuple[str, float]] = {"%": ("%", 1), "percent": ("%", 1), "pct": ("%", 1)}
    families: dict[str, dict[str, float]] = {
        "USD": {"dollar dollars": 1},
        "EUR": {"euro euros": 1},
        "m": {
            "mm millimeter millimeters millimetre millimetres": 1e-3,
            "cm centimeter centimeters centimetre centimetres": 1e-2,
            "meter meters metre metres": 1,
            "km kilometer kilometers kilometre kilometres": 1e3,
        },
        "g": {"mg milligram milligrams": 1e-3, "g gram grams": 1, "kg kilogram kilograms": 1e3},
        "s": {
            "ms millisecond milliseconds": 1e-3,
            "sec secs second seconds": 1,
            "min mins minute minutes": 60,
            "h hr hrs hour hours": 3600,
            "day days": 86400,
        },
        "B": {"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20},
    }
    for family, words in families.items():
        for names, factor in words.items():
            table.update((name, (family, factor)) for name in names.split())
    return table


UNITS = _units()


@dataclass(frozen=True)
class Quantity:
    """A number or date a sentence states, with what it measures."""

    kind: str  # "date" or "number"
    unit: str  # a unit family ("USD", "m", "%"), a counted noun's stem ("bar"), "" for a date
    value: tuple[float, ...]  # a number in the family's base unit; a date (year[, month[, day]])
    step: float  # a number's precision, in the base unit: 5 km is 1,000 m either way
    phrase: str  # the words that state it ("was founded in 911")
    before: frozenset[str]  # content words just before it
    after: frozenset[str]  # and just after
    comparable: bool  # not hedged, not a range


Token = tuple[str, int, int]  # folded text, start, end


def quantities(sentence: str) -> list[Quantity]:
    """The numbers and dates a sentence states, each with its unit and cue words."""
    folded = fold(sentence)
    tokens: list[Token] = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(folded)]
    found: list[Quantity] = []
    i = 0
    while i < len(tokens):
        date = _date(tokens, i)
        if date is not None:
            value, end = date
            found.append(_quantity("date", "", value, 0.0, sentence, tokens, i, end))
            i = end
            continue
        number = _number_at(sentence, tokens, i)
        if number is not None:
            (unit, amount, step), start, end = number
            found.append(_quantity("number", unit, (amount,), step, sentence, tokens, start, end))
            i = end
            continue
        i += 1
    return found


def _int(token: str) -> int | None:
    return int(token) if token.isdigit() else None


def _glued(tokens: Sequence[Token], i: int) -> bool:
    """Is token ``i`` written against a word after it ("3rd", "1990s", "5km")?"""
    return i + 1 < len(tokens) and tokens[i + 1][1] == tokens[i][2] and tokens[i + 1][0].isalpha()


def _date(tokens: Sequence[Token], i: int) -> tuple[tuple[float, ...], int] | None:
    """A date starting at token ``i`` and the token after it: ISO (2021-03-04), "March 4,
    2021", "4 March 2021", "March 2021", a year (1000-2199, or "in 911")."""
    text = [t for t, _, _ in tokens[i : i + 5]]
    text += [""] * (5 - len(text))
    year = _int(text[0])
    if (
        year
        and len(text[0]) == 4
        and text[1] == "-"
        and (month := _int(text[2]))
        and len(text[2]) == 2
        and 1 <= month <= 12
    ):
        day = _int(text[4]) if text[3] == "-" and len(text[4]) == 2 else None
        return ((year, month, day) if day else (year, month)), i + (5 if day else 3)
    if text[0] in MONTHS and (text[0] != "may" or _int(text[1])):
        month, second, third = MONTHS[text[0]], _int(text[1]), _int(text[2])
        if second and 1 <= second <= 31 and third and len(text[2]) == 4:
            return (third, month, second), i + 3
        if second and len(text[1]) == 4:
            return (second, month), i + 2
        return None
    day, month = _int(text[0]), MONTHS.get(text[1])
    if day and month and 1 <= day <= 31 and (year := _int(text[2])) and len(text[2]) == 4:
        return (year, month, day), i + 3
    if year is None or _glued(tokens, i) or (i and tokens[i - 1][0] in CURRENCIES):
        return None
    after, before = text[1], tokens[i - 1][0] if i else ""
    era = ERAS.get(after, 0)
    plain_after = not after or bool(era) or after in STOP_WORDS
    cued = before in YEAR_CUES
    if len(text[0]) == 4 and 1000 <= year <= 2199:
        dated = (plain_after or cued) and after not in UNITS and after not in SCALES
    else:
        dated = cued and 1 <= year < 1000 and plain_after
    return ((year * (era or 1),), i + (2 if era else 1)) if dated else None


def _number_at(
    sentence: str, tokens: Sequence[Token], i: int
) -> tuple[tuple[str, float, float], int, int] | None:
    """((unit, value, step), first token, token after) of a measured number at token ``i``:
    money, a percentage, a unit of measure, or a count of a noun ("9 bars"). A bare number, a
    name's ("Python 3", "version 2", "#4") or one glued to letters other than a unit is
    not one."""
    token, start, _ = tokens[i]
    currency = ""
    first = i
    if token in CURRENCIES and i + 1 < len(tokens):
        currency, first = CURRENCIES[token], i
        i += 1
        token, start, _ = tokens[i]
    if not _NUMBER.fullmatch(token):
        return None
    previous = tokens[first - 1][0] if first else ""
    if previous in IDENTIFIER_WORDS or sentence[max(0, start - 1) : start] == "#":
        return None
    if not currency and previous.isalpha() and sentence[tokens[first - 1][1]].isupper():
        return None  # "Python 3", "iPhone 15"
    fraction = token.partition(".")[2]
    value, step = float(token.replace(",", "")), 10.0 ** -len(fraction)
    j = i + 1
    if j < len(tokens) and tokens[j][0] in SCALES:
        value, step = value * SCALES[tokens[j][0]], step * SCALES[tokens[j][0]]
        j += 1
    unit_word = tokens[j][0] if j < len(tokens) else ""
    if unit_word in UNITS:
        family, factor = UNITS[unit_word]
        if currency and family != currency:
            return None
        return (family, value * factor, step * factor), first, j + 1
    if _glued(tokens, j - 1) and unit_word.isalpha():
        return None  # "3rd", "1990s", "2x"
    if currency:
        return (currency, value, step), first, j
    if unit_word.isalpha() and unit_word not in STOP_WORDS and len(unit_word) > 2:
        return (stem(unit_word), value, step), first, j + 1
    return None


def _quantity(
    kind: str,
    unit: str,
    value: tuple[float, ...],
    step: float,
    sentence: str,
    tokens: Sequence[Token],
    start: int,
    end: int,
) -> Quantity:
    """A quantity over ``tokens[start:end]``: the phrase that states it, its cue words either
    side, and whether it is hedged or one end of a range."""
    before_tokens = [t for t, _, _ in tokens[max(0, start - WINDOW) : start]]
    after_tokens = [t for t, _, _ in tokens[end : end + WINDOW]]
    attached = _attached(sentence, tokens, end)
    near = before_tokens[-2:]
    ranged = (
        bool(near) and near[-1] in RANGE_WORDS and len(near) == 2 and near[0][0].isdigit()
    ) or (
        len(after_tokens) >= 2
        and after_tokens[0] in RANGE_WORDS
        and (after_tokens[1][0].isdigit() or after_tokens[1] in CURRENCIES)
    )
    hedged = any(t in HEDGES for t in near) or sentence[tokens[end - 1][2] :].startswith("+")
    if "between" in before_tokens:
        ranged = True
    phrase_start = tokens[max(0, start - WINDOW)][1]
    return Quantity(
        kind,
        unit,
        value,
        step,
        sentence[phrase_start : tokens[end - 1][2]],
        _cue(before_tokens, unit),
        _cue(attached, unit),
        not hedged and not ranged,
    )


def _attached(sentence: str, tokens: Sequence[Token], end: int) -> list[str]:
    """The words written right after a quantity, up to a stop word or a stop: what qualifies
    it ("$40 new"), not the next phrase ("911 by two monks")."""
    words: list[str] = []
    for n, (token, start, _) in enumerate(tokens[end : end + WINDOW], start=end):
        if token in STOP_WORDS or sentence[tokens[n - 1][2] : start].strip():
            break
        words.append(token)
    return words


def _cue(window: Sequence[str], unit: str) -> frozenset[str]:
    words = " ".join(t for t in window if t.isalpha() and t not in UNITS and t not in MONTHS)
    return frozenset(w for w in content_words(words, NEGATION_WORDS) if w != unit)
