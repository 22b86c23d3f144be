"""dbrain's own store tests, replayed against the plugin through its public surfaces.

Each test names the dbrain test it replays (darron/dbrain ``internal/store/*_test.go``) and
keeps its fixture rows and its assertion.
"""

from __future__ import annotations

import sqlite3

import pytest

from datasette_dbrain_websearch.fts_rows import FTSWriteError, sync_item_fts, sync_source_fts
from datasette_dbrain_websearch.row_texts import dbrain_snippet, relaxed_texts

from ..helpers import (
    add_item,
    add_source,
    db_rows,
    empty_brain,
    make_datasette,
    post_json,
    promoting_ds,
    web_run,
)

# dbrain's TestSearchSnippetUsesTranscriptMatchText (internal/store/search_test.go): an X
# bookmark whose article is its media transcript, with a summary that does not quote it.
TRANSCRIPT_KEY = "x:test-search-transcript-snippet"
TRANSCRIPT_ITEM = {
    "external_id": "test-search-transcript-snippet",
    "canonical_url": "https://x.com/example/status/test-search-transcript-snippet",
    "title": "Transcript Snippet Item",
    "text": "body without the quote",
    "article_title": "X Media Transcript",
    "article_text": "Transcript:\n\nThe recording says the red balloon promise out loud.",
    "summary_text": "Generic summary that does not include the quoted recording phrase.",
    "note_path": "items/x/2026/test-search-transcript-snippet.md",
}


def transcript_row(**changes):
    return {"source_key": TRANSCRIPT_KEY, **TRANSCRIPT_ITEM, **changes}


@pytest.mark.parametrize(
    "row",
    [
        transcript_row(),
        # dbrain keeps the summary and the transcript in item_enrichments too
        transcript_row(
            summary_text="",
            enrichment_summary=TRANSCRIPT_ITEM["summary_text"],
            enrichment_x_media_transcript=TRANSCRIPT_ITEM["article_text"],
        ),
    ],
)
def test_search_snippet_uses_transcript_match_text(row):
    snippet = dbrain_snippet("item", row, ["red", "balloon", "promise"])
    assert "red balloon promise" in snippet
    # a search the summary answers keeps the summary (dbrain's TestRebuildFTS...Mirror)
    assert dbrain_snippet("item", row, ["generic", "summary"]).startswith("Generic summary")
    assert dbrain_snippet("item", row).startswith("Generic summary")  # no search, no match


def test_transcript_snippet_starts_near_a_match_deep_in_the_transcript():
    filler = "words about other things " * 30
    row = transcript_row(article_text=f"Transcript:\n\n{filler}then the red balloon promise.")
    snippet = dbrain_snippet("item", row, ["balloon", "promise"])
    assert len(snippet) <= 200 and "red balloon promise" in snippet
    assert snippet.startswith(("words", "about", "other", "things"))  # on a word


def test_relaxed_reads_the_transcript_snippet():
    row = transcript_row()
    assert "red balloon promise" in " ".join(relaxed_texts("item", row, ["balloon"]))
    assert "red balloon promise" not in " ".join(relaxed_texts("item", row, ["zeppelin"]))


@pytest.fixture
def transcript_ds(brain):
    """Datasette over the test brain with dbrain's transcript item added."""
    path, _ = brain
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, TRANSCRIPT_KEY, "x_bookmark", **TRANSCRIPT_ITEM)
    conn.close()
    return make_datasette([str(path)])


@pytest.mark.parametrize("ranking", ["bm25", "dbrain"])
async def test_search_shows_the_transcript_that_matched(transcript_ds, ranking):
    """The excerpt of a transcript match is the transcript, not the generic summary."""
    response = await transcript_ds.client.get(
        "/-/research.json", params={"q": "red balloon promise", "ranking": ranking}
    )
    row = response.json()["evidence"][0]
    assert row["source_key"] == TRANSCRIPT_KEY
    assert "red balloon promise" in row["excerpt"]
    assert row["evidence_role"] == "raw_transcript"


async def test_dbrain_relaxed_search_keeps_a_transcript_match(transcript_ds):
    """``ranking=dbrain``'s relaxed query keeps rows holding two of the words in their key,
    title, URL, tags or snippet: the transcript's words count, as the snippet shows them."""
    response = await transcript_ds.client.get(
        "/-/research.json", params={"q": "red balloon promise zeppelin", "ranking": "dbrain"}
    )
    pack = response.json()
    assert [row["source_key"] for row in pack["evidence"]] == [TRANSCRIPT_KEY]
    row = pack["evidence"][0]
    assert "red balloon promise" in row["excerpt"]
    assert any(w["code"] == "relaxed_query" for w in pack["warnings"])


# dbrain's TestSaveSourceUserTagsPropagatesFTSDeleteError and ...FTSInsertError
# (internal/store/sources_test.go): a source's tags are saved, but its sources_fts row cannot be
# rewritten; the error is returned, named by the step that failed.


@pytest.fixture
def source_brain(tmp_path):
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        source_id = add_source(conn, "https://example.com/fts-delete-error", fts=False)
    return conn, source_id


@pytest.mark.parametrize(
    "breakage, step",
    [
        (["DROP TABLE sources_fts"], "delete source fts"),
        (
            ["DROP TABLE sources_fts", "CREATE TABLE sources_fts(rowid INTEGER PRIMARY KEY)"],
            "insert source fts",
        ),
    ],
)
def test_save_source_user_tags_propagates_fts_errors(source_brain, breakage, step):
    conn, source_id = source_brain
    for statement in breakage:
        conn.execute(statement)
    tables = conn.execute("select name, sql from sqlite_master order by name").fetchall()
    with pytest.raises(FTSWriteError, match=step), conn:
        conn.execute("UPDATE sources SET user_tags = 'source-tag' WHERE id = ?", [source_id])
        sync_source_fts(conn, source_id)
    # rolled back with the caller's transaction; no stand-in sources_fts table was created
    assert conn.execute("select user_tags from sources").fetchone() == ("",)
    assert conn.execute("select name, sql from sqlite_master order by name").fetchall() == tables
    conn.close()


def test_item_fts_errors_name_their_step(source_brain):
    conn, _ = source_brain
    with conn:
        item_id = add_item(conn, "manual:fts-error", "manual", text="a note")
    conn.execute("DROP TABLE items_fts")
    with pytest.raises(FTSWriteError, match="delete item fts"):
        sync_item_fts(conn, item_id)
    conn.close()


@pytest.mark.parametrize("existing_first", [True, False])
async def test_promotion_with_a_broken_fts_index_writes_nothing(brain, fake, existing_first):
    """Through the promote endpoint: the page the brain holds gains tags (dbrain's tag
    setter), or a new page is added, but sources_fts cannot be rewritten. The answer is a 409
    naming the failed step, and nothing was written: no tag, no row, no note, no provenance."""
    path = brain[0]
    runs = path.parent / "research_runs.db"
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    held, new = (row["source_key"] for row in pack["external_evidence"][:2])
    first = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [held]})
    assert first.status_code == 200, first.text
    before = {
        "sources": db_rows(path, "select * from sources order by id"),
        "items": db_rows(path, "select * from items order by id"),
        "links": db_rows(path, "select * from item_source_links"),
        "promotions": db_rows(runs, "select * from dbrain_websearch_promotions"),
    }
    conn = sqlite3.connect(path)
    with conn:  # damage the index's structure record: any change to sources_fts now fails
        conn.execute("UPDATE sources_fts_data SET block = x'00' WHERE id = 1")
    conn.close()

    keys = [held, new] if existing_first else [new, held]
    body = {"run_id": pack["run_id"], "source_keys": keys, "tags": ["source-tag"], "note": "n"}
    response = await post_json(ds, body)
    assert response.status_code == 409, response.text
    error = response.json()
    assert error["ok"] is False and error["code"] == "fts_write_failed"
    assert "delete source fts" in error["error"] and "nothing was promoted" in error["error"]
    assert {
        "sources": db_rows(path, "select * from sources order by id"),
        "items": db_rows(path, "select * from items order by id"),
        "links": db_rows(path, "select * from item_source_links"),
        "promotions": db_rows(runs, "select * from dbrain_websearch_promotions"),
    } == before
