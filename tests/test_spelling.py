"""Did you mean: question words the brain does not hold, and the nearest words it does."""

from __future__ import annotations

import sqlite3

import pytest

from datasette_dbrain_websearch.spelling import (
    Correction,
    corrected,
    edit_distance,
    suggest,
)

TABLES = ["items_fts", "sources_fts"]


@pytest.mark.parametrize(
    "a, b, distance",
    [
        ("sourdough", "sourdough", 0),
        ("sourdugh", "sourdough", 1),  # a letter left out
        ("pmup", "pump", 1),  # two neighbours swapped
        ("startr", "starter", 1),
        ("schedular", "scheduler", 1),
        ("kitten", "sitting", 3),  # more than the limit: limit + 1
        ("a", "abcdef", 3),
    ],
)
def test_edit_distance_counts_swaps_as_one_and_stops_at_the_limit(a, b, distance):
    assert edit_distance(a, b, 2) == min(distance, 3)


def test_corrected_replaces_only_the_unknown_words_and_keeps_punctuation():
    fixes = [Correction("sourdugh", "sourdough", 1, 3), Correction("startr", "starter", 1, 2)]
    assert corrected("My Sourdugh startr?", fixes) == "My sourdough starter?"


def brain_conn(brain) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{brain[0]}?mode=ro", uri=True)


def test_typos_are_corrected_to_words_the_brain_holds(brain):
    conn = brain_conn(brain)
    fixes = suggest(conn, TABLES, ["sourdugh", "startr"])
    assert [(c.word, c.suggestion, c.edits) for c in fixes] == [
        ("sourdugh", "sourdough", 1),
        ("startr", "starter", 1),
    ]
    assert all(c.rows >= 1 for c in fixes)


def test_known_words_and_questions_about_what_the_brain_lacks_get_no_suggestion(brain):
    conn = brain_conn(brain)
    assert suggest(conn, TABLES, ["espresso", "grinder"]) == []  # every word is in a row
    # "qcd" has nothing near it: the question is about something else, not a typo.
    assert suggest(conn, TABLES, ["quantum", "qcd"]) == []
    assert suggest(conn, TABLES, ["xq"]) == []  # too short to correct


def test_the_question_s_other_words_choose_between_equally_near_words(tmp_path):
    """ "startr" is one edit from "start" and from "starter"; beside "sourdough" it is the
    starter, though more rows say "start"."""
    path = tmp_path / "b.db"
    conn = sqlite3.connect(path)
    conn.execute("create virtual table items_fts using fts5(text, tokenize='porter unicode61')")
    rows = [f"start the engine {n}" for n in range(6)] + ["feed the sourdough starter"]
    conn.executemany("insert into items_fts values (?)", [[r] for r in rows])
    conn.commit()
    (alone,) = suggest(conn, ["items_fts"], ["startr"])
    assert alone.suggestion == "start" and alone.rows == 6
    fixes = suggest(conn, ["items_fts"], ["sourdough", "startr"])
    assert [(c.word, c.suggestion) for c in fixes] == [("startr", "starter")]


async def test_the_pack_and_the_page_offer_the_corrected_question(ds):
    response = await ds.client.get("/-/research.json", params={"q": "sourdugh startr"})
    pack = response.json()
    assert pack["did_you_mean"]["question"] == "sourdough starter"
    assert [c["suggestion"] for c in pack["did_you_mean"]["corrections"]] == [
        "sourdough",
        "starter",
    ]
    fixed = (await ds.client.get("/-/research.json", params={"q": "sourdough starter"})).json()
    assert fixed["did_you_mean"] is None and fixed["evidence"]
    assert fixed["evidence"][0]["source_key"] == "apple-note:sourdough"
    html = (await ds.client.get("/-/research", params={"q": "sourdugh startr"})).text
    offer = html.split('class="dbrain-did-you-mean"')[1].split("</p>")[0]
    assert "Did you mean" in offer and "<strong>sourdough starter</strong>" in offer
    assert "q=sourdough+starter" in offer
    assert html.index("dbrain-did-you-mean") < html.index("dbrain-verdict")
