"""Did you mean: question words the brain does not hold, and the nearest words it does."""

from __future__ import annotations

import sqlite3

import pytest

from datasette_dbrain_websearch import spelling
from datasette_dbrain_websearch.spelling import (
    Correction,
    corrected,
    edit_distance,
    english_words,
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


def small_brain(tmp_path, rows: list[str]) -> sqlite3.Connection:
    """A brain of one FTS table (dbrain's tokenizer) holding the given rows."""
    conn = sqlite3.connect(tmp_path / "small.db")
    conn.execute("create virtual table items_fts using fts5(text, tokenize='porter unicode61')")
    conn.executemany("insert into items_fts values (?)", [[r] for r in rows])
    conn.commit()
    return conn


def test_the_word_list_is_read_once_and_knows_english_words():
    words = english_words()
    assert words is not None and english_words() is words
    assert all(w in words for w in ("calibration", "calibrate", "quantum", "water"))
    # With how often each occurs: "water" is far commoner than "calibrate".
    assert words["water"] > words["calibrate"] > 0
    assert not any(w in words for w in ("sourdugh", "startr", "calibraton"))


def test_a_word_is_compared_as_typed_not_as_a_stem(tmp_path):
    """ "calibration" stems to "calibr", two edits from "calico"; as spelled they are far apart,
    so even with no word list (``english=frozenset()``) it is not "corrected"."""
    conn = small_brain(tmp_path, [f"a calico cat, number {n}" for n in range(5)])
    for english in (frozenset(), None):
        assert suggest(conn, ["items_fts"], ["calibration"], english=english) == []
        assert suggest(conn, ["items_fts"], ["calibrate", "synth"], english=english) == []
    # a typo of "calico" still is one
    (fix,) = suggest(conn, ["items_fts"], ["callico"])
    assert (fix.suggestion, fix.edits, fix.rows) == ("calico", 1, 5)


def test_an_english_word_the_brain_lacks_is_never_corrected(tmp_path):
    conn = small_brain(tmp_path, [f"silicon wafer lot {n}" for n in range(5)])
    # "water" is one edit from "wafer", which five rows hold; the word list knows "water".
    assert suggest(conn, ["items_fts"], ["water"]) == []
    assert suggest(conn, ["items_fts"], ["silicon", "water"]) == []
    # without the word list it would be taken for a typo
    (fix,) = suggest(conn, ["items_fts"], ["water"], english=frozenset())
    assert fix.suggestion == "wafer"


def test_typos_within_the_edit_limit_for_their_length_are_corrected(tmp_path):
    rows = [f"dough hydration, sponge and wafer notes {n}" for n in range(3)]
    conn = small_brain(tmp_path, rows)

    def fix(word: str) -> str | None:
        found = suggest(conn, ["items_fts"], [word])
        return found[0].suggestion if found else None

    assert fix("hydrtion") == "hydration"  # one edit
    assert fix("hdyrtion") == "hydration"  # two edits: allowed beyond six letters
    assert fix("hidrtion") == "hydration"
    assert fix("wafre") == "wafer"  # one edit in a five-letter word
    assert fix("wfare") is None  # two edits in a five-letter word
    assert fix("sopnge") == "sponge"  # one edit in a six-letter word
    assert fix("sopgne") is None  # two
    assert fix("hdyrtin") is None  # three edits


def test_a_rare_word_is_not_offered_unless_the_word_list_knows_it(tmp_path):
    """A token only one row holds and no word list knows is more likely that row's own typo or
    a rare name than the word meant; a second row makes it a word of the brain."""
    rows = ["the zorblax module", "the sourdough starter"] + [f"filler {n}" for n in range(5)]
    conn = small_brain(tmp_path, rows)
    assert suggest(conn, ["items_fts"], ["zorblx"]) == []  # one row, no dictionary word
    assert [c.suggestion for c in suggest(conn, ["items_fts"], ["sourdugh"])] == ["sourdough"]
    conn.execute("insert into items_fts values ('zorblax again')")
    conn.commit()
    (fix,) = suggest(conn, ["items_fts"], ["zorblx"])
    assert (fix.suggestion, fix.rows) == ("zorblax", 2)


def test_the_suggestion_is_the_brain_s_spelling_nearest_the_typed_word(tmp_path):
    rows = [f"the wing of plane {n}" for n in range(6)] + ["swept wings", "delta wings"]
    conn = small_brain(tmp_path, rows)
    assert [c.suggestion for c in suggest(conn, ["items_fts"], ["wigns"])] == ["wings"]
    assert [c.suggestion for c in suggest(conn, ["items_fts"], ["wign"])] == ["wing"]


def test_without_a_word_list_nothing_is_suggested(brain, monkeypatch):
    monkeypatch.setattr(spelling, "english_words", lambda: None)
    assert suggest(brain_conn(brain), TABLES, ["sourdugh", "startr"]) == []


def test_a_term_of_several_tokens_is_never_corrected(tmp_path):
    """node.js is searched as the phrase node js (issue 30): a brain holding "nodes" but not
    that phrase must not offer "nodes" for it."""
    conn = small_brain(tmp_path, ["graph nodes and edges", "more nodes here", "streams of data"])
    assert suggest(conn, ["items_fts"], ["node.js", "streams"]) == []
