"""The BM25 lane's pure parts and its cache of document frequencies."""

from __future__ import annotations

import sqlite3

from datasette_dbrain_websearch import lexical
from datasette_dbrain_websearch.fts import plan_query

from .helpers import add_item, empty_brain


def test_document_frequencies_are_counted_again_after_any_write(tmp_path):
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    conn.execute("pragma journal_mode = wal")
    with conn:
        add_item(conn, "manual:1", "manual", title="zeta", text="zeta lattice")
    plan = plan_query("zeta lattice")
    reader = sqlite3.connect(path)
    assert lexical.document_frequencies(
        reader, "items_fts", plan, set(), lexical.brain_version(reader)
    ) == {
        "zeta": 1,
        "lattice": 1,
    }
    with conn:
        add_item(conn, "manual:2", "manual", title="zeta again", text="zeta")
    assert (
        lexical.document_frequencies(
            reader, "items_fts", plan, set(), lexical.brain_version(reader)
        )["zeta"]
        == 2
    )
    conn.execute("pragma wal_checkpoint(truncate)")
    with conn:
        add_item(conn, "manual:3", "manual", title="zeta thrice", text="zeta")
    assert (
        lexical.document_frequencies(
            reader, "items_fts", plan, set(), lexical.brain_version(reader)
        )["zeta"]
        == 3
    )


def test_keyword_questions_put_rows_holding_every_keyword_first():
    """A row holding both keywords beats the row bm25 prefers; for prose, coverage is a small
    bounded bonus; the semantic cosine, weighted, can reorder."""
    scores = lexical.rescore([-9.0, -4.0], [0.5, 1.0], [False, False], lexical.Signals(), 2)
    assert scores[1] > scores[0]
    prose = lexical.rescore([-9.0, -4.0], [0.5, 1.0], [False, False], lexical.Signals(), 8)
    assert prose[0] > prose[1]
    mixed = lexical.rescore(
        [-9.0, -4.0], [1.0, 1.0], [False, False], lexical.Signals(), 8, [0.1, 0.9], 0.9
    )
    assert mixed[1] > mixed[0]


def test_coverage_counts_keywords_and_weighs_prose_by_rarity():
    idf = {"rare": 5.0, "common": 0.5, "other": 0.5, "more": 0.5}
    assert lexical.coverage({"rare"}, ["rare", "common"], idf) == 0.5  # keywords: a share
    prose = ["rare", "common", "other", "more"]
    assert lexical.coverage({"common", "other", "more"}, prose, idf) < 0.25
    assert lexical.coverage({"rare"}, prose, idf) > 0.75
