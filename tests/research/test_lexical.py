"""The BM25 lane's pure parts and its cache of document frequencies."""

from __future__ import annotations

import sqlite3

import pytest

from datasette_dbrain_websearch import lexical
from datasette_dbrain_websearch.brain import Filters
from datasette_dbrain_websearch.query_plan import plan_query
from datasette_dbrain_websearch.retrieval import retrieve

from ..helpers import add_item, empty_brain


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


def _ranked_keys(tmp_path, question: str, rows: list[tuple[str, str]], limit: int = 3):
    """The item keys retrieval ranks for a question, and the MATCH expressions it ran."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        for n, (title, text) in enumerate(rows):
            add_item(conn, f"manual:{n}", "manual", title=title, text=text)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    found = retrieve(conn, question, plan_query(question), Filters(), limit)
    matches = [s for s in statements if "[items_fts] match" in s and "bm25" in s]
    return [h.row["source_key"] for h in found.hits], matches


def test_a_keyword_question_reads_only_rows_holding_every_keyword_when_they_fill_the_page(
    tmp_path,
):
    """Re-scoring ranks every row holding all keywords above any row lacking one, so when such
    rows fill the re-scored pool, the OR query (every posting of every word) is not run."""
    both = [(f"lattice muon {n}", "lattice muon") for n in range(25)]
    one = [("lattice lattice lattice", "lattice lattice lattice")] * 5
    keys, matches = _ranked_keys(tmp_path, "lattice muon", one + both)
    assert keys and all(int(k.split(":")[1]) >= len(one) for k in keys)
    assert matches and not any(" OR " in m for m in matches)


def test_too_few_rows_holding_every_keyword_still_reads_the_rest(tmp_path):
    both = [("lattice muon", "lattice muon")]
    one = [("lattice", "lattice lattice")] * 5
    keys, matches = _ranked_keys(tmp_path, "lattice muon", one + both)
    assert keys[0] == f"manual:{len(one)}"  # the row holding both comes first
    assert len(keys) == 3  # and rows holding one keyword fill the page
    assert any(" OR " in m for m in matches)


def test_re_scoring_a_pool_of_rows_stops_at_the_runs_checkpoint(tmp_path):
    """Reading which words a pool of long pages holds is paced: the run's deadline can stop
    it between rows, not only at the next SQLite query."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        for n in range(30):
            add_item(conn, f"manual:{n}", "manual", title=f"lattice {n}", text="lattice " * 50)
    calls: list[int] = []

    class Stopped(Exception):
        pass

    def checkpoint() -> None:
        calls.append(1)
        if len(calls) > 2:
            raise Stopped

    question = "lattice"
    found = retrieve(conn, question, plan_query(question), Filters(), 10)
    assert len(found.hits) == 10  # unbounded, the same call answers
    with pytest.raises(Stopped):
        retrieve(conn, question, plan_query(question), Filters(), 10, checkpoint=checkpoint)
