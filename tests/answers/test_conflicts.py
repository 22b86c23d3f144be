"""Offline conflict detection: which pairs of sentences disagree on a number, a date or a denied
claim, and (as important) which do not."""

from __future__ import annotations

import pytest

from datasette_dbrain_websearch.answer.conflicts import (
    MOST_CONFLICTS,
    claim,
    conflict,
    find_conflicts,
)
from datasette_dbrain_websearch.answer.extractive import Passage
from datasette_dbrain_websearch.answer.quantities import quantities
from datasette_dbrain_websearch.stemming import TermMatcher


def compare(terms: str, first: str, second: str) -> dict | None:
    matcher = TermMatcher.for_words(terms.split())
    return conflict(claim("a", "local", first, matcher), claim("w", "external", second, matcher))


@pytest.mark.parametrize(
    ("terms", "first", "second", "kind", "text"),
    [
        (
            "acme founded",
            "Acme Widgets was founded in 911 by two monks.",
            "The company Acme Widgets was founded in 912 in the north.",
            "date",
            "The year differs: \u201cwas founded in 911\u201d (brain) vs "
            "\u201cwas founded in 912\u201d (web)",
        ),
        (
            "encore price",
            "The Encore grinder costs $40 at most shops.",
            "The Encore grinder costs $55 at most shops today.",
            "number",
            "The amount differs: \u201cEncore grinder costs $40\u201d (brain) vs "
            "\u201cEncore grinder costs $55\u201d (web)",
        ),
        (
            "tokio release",
            "The tokio 1.0 release came out on 2020-12-23 after years of work.",
            "The tokio 1.0 release came out on December 24, 2020 to much praise.",
            "date",
            None,
        ),
        (
            "espresso pressure",
            "An espresso machine brews at 9 bars of pump pressure.",
            "An espresso machine brews at 15 bars of pump pressure.",
            "number",
            None,
        ),
        (
            "trail length",
            "The ridge trail runs 5 km from the car park to the summit.",
            "The ridge trail runs 7,500 meters from the car park to the summit.",
            "number",
            None,
        ),
        (
            "sqlite window functions",
            "SQLite supports window functions in every build.",
            "SQLite does not support window functions in every build.",
            "negation",
            "One denies what the other says: \u201cSQLite supports window functions in every "
            "build.\u201d (brain) vs \u201cSQLite does not support window functions in every "
            "build.\u201d (web)",
        ),
        (
            "datasette plugins",
            "Datasette plugins can't write to immutable databases at all.",
            "Datasette plugins can write to immutable databases at all.",
            "negation",
            None,
        ),
    ],
)
def test_disagreements_are_found(terms, first, second, kind, text):
    found = compare(terms, first, second)
    assert found is not None
    assert found["kind"] == kind and found["citations"] == ["a", "w"]
    assert found["quotes"] == [{"key": "a", "text": first}, {"key": "w", "text": second}]
    if text:
        assert found["text"] == text


@pytest.mark.parametrize(
    ("terms", "first", "second"),
    [
        # They agree, as far as both were written.
        ("acme founded", "Acme was founded in 911 by monks.", "Acme was founded in 911 by a king."),
        (
            "tokio release",
            "The tokio 1.0 release came in December 2020.",
            "The tokio 1.0 release came on 2020-12-23 at last.",
        ),
        (
            "trail length",
            "The ridge trail runs 5 km to the summit.",
            "The ridge trail runs 5,200 m to the summit.",
        ),
        (
            "pump pressure",
            "The pump delivers 3.5 bars of pressure.",
            "The pump delivers 3.52 bars of pressure.",
        ),
        # Different subjects.
        (
            "grinder settings",
            "The Encore grinder has 40 settings for espresso.",
            "The Virtuoso grinder has 30 settings for espresso.",
        ),
        (
            "python print",
            "Python 3 uses print as a function.",
            "Python 2 uses print as a function.",
        ),
        (
            "acme founded",
            "Acme was founded in 911 by monks.",
            "The abbey near the river was founded in 912 by monks.",
        ),
        # Different quantities, or not comparable ones.
        (
            "encore price",
            "The Encore costs $40 new at most shops.",
            "The Encore costs $55 used at most shops.",
        ),
        (
            "encore price",
            "The Encore costs $40 at most shops.",
            "The Encore costs \u20ac55 at most shops.",
        ),
        (
            "encore price",
            "The Encore costs about $40 at most shops.",
            "The Encore costs $55 at most shops.",
        ),
        (
            "encore price",
            "The Encore costs $40-$60 at most shops.",
            "The Encore costs $55 at most shops.",
        ),
        (
            "acme history",
            "Acme was founded in 911 and moved in 950.",
            "Acme was founded in 912 and moved in 950.",
        ),
        (
            "acme workers",
            "Acme employs 40 engineers across the company.",
            "Acme employs 55 designers across the company.",
        ),
        ("acme founded", "Acme was founded in 911 by monks.", "Acme was renamed in 912 by monks."),
        # A denial of part of what was said, or a hedged one.
        (
            "sqlite functions",
            "SQLite supports window functions but not lateral joins.",
            "SQLite supports window functions and lateral joins.",
        ),
        (
            "sqlite functions",
            "SQLite supports window functions in every build.",
            "Not only does SQLite support window functions in every build.",
        ),
        (
            "sqlite functions",
            "SQLite supports window functions in every build.",
            "SQLite does not support JSON functions in older builds.",
        ),
        # Nothing of the question.
        (
            "espresso grinder",
            "Acme was founded in 911 by monks.",
            "Acme was founded in 912 by monks.",
        ),
    ],
)
def test_agreement_and_unrelated_claims_are_no_conflict(terms, first, second):
    assert compare(terms, first, second) is None


def test_quantities_read_units_scales_dates_and_names():
    found = {
        q.phrase: (q.kind, q.unit, q.value, q.comparable)
        for q in quantities(
            "Since 2019 it sold 1.2 million units for $3 billion, 40% abroad; Python 3 shipped "
            "on 4 March 2021 in about 25 minutes."
        )
    }
    assert found == {
        "Since 2019": ("date", "", (2019,), True),
        "2019 it sold 1.2 million units": ("number", "unit", (1_200_000.0,), True),
        "million units for $3 billion": ("number", "USD", (3e9,), True),
        "$3 billion, 40%": ("number", "%", (40.0,), True),
        "3 shipped on 4 March 2021": ("date", "", (2021, 3, 4), True),
        "2021 in about 25 minutes": ("number", "s", (1500.0,), False),
    }


def passage(key: str, origin: str, text: str, rank: int = 0) -> Passage:
    return Passage(key, origin, text, "", rank=rank)


def test_find_conflicts_compares_the_answer_with_the_other_rows_it_read():
    passages = [
        passage("src:brain", "local", "Acme Widgets was founded in 911 by two monks.", 0),
        passage("src:agree", "local", "Acme Widgets was founded in 911 in the valley.", 1),
        passage("ext:web", "external", "Some say Acme Widgets was founded in 912 in Paris.", 2),
    ]
    answer = [{"text": "Acme Widgets was founded in 911 by two monks.", "citations": ["src:brain"]}]
    found = find_conflicts(["acme", "founded"], answer, passages)
    assert [(c["citations"], c["kind"]) for c in found] == [(["src:brain", "ext:web"], "date")]
    assert found[0]["text"].endswith("(brain) vs \u201cwas founded in 912\u201d (web)")


def test_find_conflicts_lists_two_rows_once_and_at_most_a_few():
    said = "Acme Widgets was founded in 911 by two monks."
    others = [
        passage(
            f"ext:{n}",
            "external",
            f"Acme Widgets was founded in {912 + n} in Paris. "
            f"Acme Widgets was founded in {950 + n} or so in Lyon.",
            n + 1,
        )
        for n in range(MOST_CONFLICTS + 2)
    ]
    found = find_conflicts(
        ["acme", "founded"],
        [{"text": said, "citations": ["src:brain"]}],
        [passage("src:brain", "local", said), *others],
    )
    assert [c["citations"][1] for c in found] == [f"ext:{n}" for n in range(MOST_CONFLICTS)]


def test_find_conflicts_ignores_keys_it_was_not_given():
    found = find_conflicts(
        ["acme", "founded"],
        [{"text": "Acme Widgets was founded in 911 by two monks.", "citations": ["src:gone"]}],
        [passage("ext:web", "external", "Acme Widgets was founded in 912 in Paris.")],
    )
    assert found == []
