"""dbrain's own store tests, replayed against the plugin through its public surfaces.

Each test names the dbrain test it replays (darron/dbrain ``internal/store/*_test.go``) and
keeps its fixture rows and its assertion.
"""

from __future__ import annotations

import sqlite3

import pytest

from datasette_dbrain_websearch.brain import dbrain_snippet, relaxed_texts

from .helpers import add_item, make_datasette

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
    assert "red balloon promise" in " ".join(relaxed_texts("item", row))


@pytest.mark.parametrize("ranking", ["bm25", "dbrain"])
async def test_search_shows_the_transcript_that_matched(brain, ranking):
    """The excerpt of a transcript match is the transcript, not the generic summary."""
    path, _ = brain
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, TRANSCRIPT_KEY, "x_bookmark", **TRANSCRIPT_ITEM)
    conn.close()
    ds = make_datasette([str(path)])
    response = await ds.client.get(
        "/-/research.json", params={"q": "red balloon promise", "ranking": ranking}
    )
    row = response.json()["evidence"][0]
    assert row["source_key"] == TRANSCRIPT_KEY
    assert "red balloon promise" in row["excerpt"]
    assert row["evidence_role"] == "raw_transcript"


async def test_dbrain_relaxed_search_keeps_a_transcript_match(brain):
    """``ranking=dbrain``'s relaxed query keeps rows holding two of the words in their key,
    title, URL, tags or snippet: the transcript's words count, as the snippet shows them."""
    path, _ = brain
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, TRANSCRIPT_KEY, "x_bookmark", **TRANSCRIPT_ITEM)
    conn.close()
    ds = make_datasette([str(path)])
    response = await ds.client.get(
        "/-/research.json", params={"q": "red balloon promise zeppelin", "ranking": "dbrain"}
    )
    pack = response.json()
    assert [row["source_key"] for row in pack["evidence"]] == [TRANSCRIPT_KEY]
    row = pack["evidence"][0]
    assert "red balloon promise" in row["excerpt"]
    assert any(w["code"] == "relaxed_query" for w in pack["warnings"])
