"""Excerpt windows, field choice and marking (escaping before marking).

The ``dbrain_*`` tests port darron/dbrain ``internal/ask/run_test.go`` @0b78933
(``TestEvidenceFrom...``): the same rows, terms and sizes, through ``excerpt_fields``.
"""

import random
import sqlite3
from collections import Counter

from datasette_dbrain_websearch.excerpts import _window, best_excerpt, find_matches, mark
from datasette_dbrain_websearch.fts_rows import sync_item_fts
from datasette_dbrain_websearch.row_texts import excerpt_fields

from ..helpers import NOW, add_item, make_datasette


def test_mark_escapes_text_and_marks_terms():
    html = mark("<script>alert(1)</script> uses SQLite & FTS5", ["sqlite", "script"])
    assert "<script>" not in html
    assert "&lt;<mark>script</mark>&gt;" in html
    assert "<mark>SQLite</mark> &amp; FTS5" in html


def test_window_is_centred_on_the_terms_with_ellipses():
    text = "filler " * 200 + "the espresso grinder burr set " + "tail " * 200
    excerpt = best_excerpt([("text", "raw_item_window", text)], ["espresso", "burr"], 120)
    assert excerpt.text.startswith("...") and excerpt.text.endswith("...")
    assert "espresso grinder burr" in excerpt.text
    assert len(excerpt.text) <= 126
    assert "<mark>espresso</mark>" in excerpt.html
    assert excerpt.matched_terms == ("espresso", "burr")


def test_window_prefers_the_place_with_more_distinct_terms():
    text = "sqlite " + "x " * 300 + "sqlite fts5 bm25 ranking " + "y " * 300
    excerpt = best_excerpt([("text", "raw", text)], ["sqlite", "fts5", "bm25"], 80)
    assert "fts5 bm25" in excerpt.text


def test_field_fallback_takes_the_first_field_covering_most_terms():
    fields = [
        ("summary", "derived_summary", "A note about coffee."),
        ("ocr", "raw_ocr", ""),
        ("text", "raw_item_window", "Espresso and coffee grinders compared."),
    ]
    assert best_excerpt(fields, ["coffee"], 200).field == "summary"
    picked = best_excerpt(fields, ["coffee", "espresso"], 200)
    assert picked.field == "text" and picked.role == "raw_item_window"


def test_no_match_falls_back_to_first_non_empty_field_start():
    fields = [("summary", "derived_summary", ""), ("text", "raw", "Plain words\nhere")]
    excerpt = best_excerpt(fields, ["absent"], 200)
    assert excerpt.text == "Plain words here"
    assert excerpt.matched_terms == ()


def test_empty_fields_give_empty_excerpt():
    assert best_excerpt([("text", "raw", "")], ["x"], 100).text == ""


def test_compact_text_holding_two_terms_is_shown_before_raw_text():
    fields = [
        ("summary", "derived_summary", "Espresso and coffee notes."),
        ("text", "raw_item_window", "Espresso, coffee and grinder settings compared."),
    ]
    assert best_excerpt(fields, ["espresso", "coffee", "grinder"], 200).field == "summary"


def test_among_matching_fields_the_rarer_term_wins():
    fields = [
        ("summary", "derived_summary", "Carney spoke. Carney left. Carney returned."),
        ("ocr", "raw_ocr", "A slide about GFANZ."),
    ]
    assert best_excerpt(fields, ["carney", "gfanz"], 200).field == "ocr"


def source(**cols):
    return {"source_key": "src:x", "canonical_url": "https://example.com/x", **cols}


def test_dbrain_source_uses_query_window_for_excerpt():
    extracted = "navigation menu footer cookie settings " * 12 + (
        "Mark Carney appears in the substantive paragraph about saved evidence and policy."
    )
    fields = excerpt_fields("source", source(extracted_text=extracted))
    excerpt = best_excerpt(fields, ["mark", "carney"], 120)
    assert "Mark Carney" in excerpt.text
    assert not excerpt.text.startswith("navigation menu footer")


def test_dbrain_source_prefers_rarer_query_term_for_excerpt():
    extracted = (
        "Mark Carney policy context " * 25
        + "navigation menu footer cookie settings " * 12
        + "GFANZ appears in the substantive paragraph about bank climate commitments."
    )
    fields = excerpt_fields("source", source(extracted_text=extracted))
    excerpt = best_excerpt(fields, ["mark", "carney", "gfanz"], 120)
    assert "GFANZ" in excerpt.text
    assert not excerpt.text.removeprefix("...").startswith("Mark Carney policy context Mark")


def test_dbrain_source_uses_compact_summary_before_raw_extract():
    sentence = (
        "Calgary police charged a father after his two children were found dead in a vehicle."
    )
    row = source(
        summary_text=sentence,
        extracted_text="navigation related stories newsletter advertisement " * 2000 + sentence,
    )
    excerpt = best_excerpt(excerpt_fields("source", row), ["father", "kill", "children"], 160)
    assert "father" in excerpt.text and "children" in excerpt.text
    assert "navigation related stories" not in excerpt.text
    assert excerpt.role == "derived_summary"


def test_dbrain_source_falls_back_to_raw_extract_when_summary_misses_query():
    row = source(
        summary_text="This source has a broad derived summary about politics and finance.",
        extracted_text="boilerplate navigation newsletter " * 120
        + "The buried primary extract says Mark Carney discussed GFANZ policy in detail.",
    )
    excerpt = best_excerpt(excerpt_fields("source", row), ["mark", "carney", "gfanz"], 180)
    assert "Mark Carney" in excerpt.text and "GFANZ" in excerpt.text
    assert excerpt.role == "raw_extract_window"


def test_dbrain_source_falls_back_to_raw_extract_when_compact_text_is_absent():
    row = source(extracted_text="Buried raw article text says Mark Carney discussed GFANZ policy.")
    excerpt = best_excerpt(excerpt_fields("source", row), ["mark", "carney", "gfanz"], 160)
    assert "Mark Carney" in excerpt.text and "GFANZ" in excerpt.text


def test_dbrain_item_includes_ocr_match_in_excerpt():
    row = {
        "x_post_text": "short post text without the visual keyword",
        "summary_text": "derived media summary",
        "ocr_text": "The image says Mark Carney in visible text.",
    }
    excerpt = best_excerpt(excerpt_fields("item", row), ["mark", "carney"], 80)
    assert "Mark Carney" in excerpt.text and excerpt.role == "raw_ocr"


def test_dbrain_item_chooses_strongest_query_window_across_fields():
    row = {
        "title": "Carney cabinet thread",
        "x_post_text": "Here are posts from people in Mark Carney's cabinet including Carney "
        "himself.",
        "ocr_text": "policy screenshot text " * 8
        + "Mark Carney referenced the Net Zero Banking Alliance and GFANZ.",
    }
    excerpt = best_excerpt(excerpt_fields("item", row), ["mark", "carney", "gfanz"], 120)
    assert "GFANZ" in excerpt.text


async def test_the_excerpt_shows_the_text_that_matched(brain):
    path, _ = brain
    conn = sqlite3.connect(path)
    with conn:
        talk = add_item(
            conn,
            "x:talk",
            "x",
            title="A video post",
            text="watch this",
            enrichment_summary="A talk about databases and indexing.",
        )
        conn.execute(
            "insert into item_enrichments (item_id, role, status, text, created_at, updated_at) "
            "values (?, 'x_media_transcript', 'ok', ?, ?, ?)",
            [talk, "Here the speaker explains Parquet columnar files in depth.", NOW, NOW],
        )
        sync_item_fts(conn, talk)
        add_item(
            conn,
            "x:mirrored",
            "x",
            title="Another video",
            article_title="X Media Transcript",
            article_text="A transcript on Arrow columnar memory.",
        )
        add_item(
            conn,
            "x:thread",
            "x",
            title="A thread",
            x_post_text="Thread on Parquet encodings.",
            article_text="The linked article is about gardens.",
        )
        add_item(
            conn,
            "x:article",
            "x",
            title="Reading list",
            enrichment_summary="Links saved this week.",
            article_text="Calibrating a burr grinder for espresso, step by step.",
        )
    conn.close()
    ds = make_datasette([str(path)])

    async def first(question):
        response = await ds.client.get("/-/research.json", params={"q": question})
        return response.json()["evidence"][0]

    row = await first("parquet columnar")
    assert (row["source_key"], row["evidence_role"]) == ("x:talk", "raw_transcript")
    assert "<mark>Parquet</mark> <mark>columnar</mark>" in row["excerpt_html"]
    row = await first("arrow columnar")
    assert (row["source_key"], row["evidence_role"]) == ("x:mirrored", "raw_transcript")
    row = await first("parquet encodings")
    assert row["source_key"] == "x:thread" and row["excerpt"] == "Thread on Parquet encodings."
    row = await first("calibrating burr")
    assert (row["source_key"], row["evidence_role"]) == ("x:article", "raw_item_window")
    assert row["excerpt"].startswith("Calibrating a burr grinder")


def _every_window(text, matches, max_chars, counts):
    """dbrain's ``queryWindowScore`` over every anchor, window by window (the reference)."""
    lead, best = max_chars // 4, (-1, 0, 0)
    for anchor, _, term in matches:
        start = max(0, min(anchor - lead, len(text) - max_chars))
        inside = {t for s, e, t in matches if s >= start and e <= start + max_chars}
        score = len(term) + sum(100 + 1000 // counts[t] + len(t) for t in inside)
        best = max(best, (score, -start, start))
    return best[2], min(len(text), best[2] + max_chars), best[0]


def test_the_sliding_window_scores_as_every_window_would():
    rng = random.Random(7)
    words = ["lattice", "muon", "anomaly", "filler", "the", "of", "magnetic", "moments"]
    terms = ["lattice", "muon", "anomaly", "magnetic"]
    for _ in range(300):
        text = " ".join(rng.choice(words) + rng.choice(["", "s", ","]) for _ in range(60))
        matches = find_matches(text, terms)
        if not matches:
            continue
        counts = Counter(m[2] for m in matches)
        for max_chars in (20, 60, 200, 1000):
            assert _window(text, matches, max_chars, counts) == _every_window(
                text, matches, max_chars, counts
            )
