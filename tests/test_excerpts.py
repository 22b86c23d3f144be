"""Excerpt windows, field fallback and marking (escaping before marking)."""

from datasette_dbrain_websearch.excerpts import best_excerpt, mark


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
