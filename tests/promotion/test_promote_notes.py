"""Promotions that carry meaning: tags written as dbrain writes them (so a tag search finds the
page), a note kept as a dbrain manual item linked to the page, re-promotion that adds tags and
never duplicates, and the promoted row's page naming the run that found it."""

from __future__ import annotations

import json
import sqlite3

import pytest
from datasette import hookimpl
from datasette.plugins import pm

from datasette_dbrain_websearch.fts_rows import item_fts_row
from datasette_dbrain_websearch.pack import row_keys
from datasette_dbrain_websearch.promotion_request import dbrain_tags
from datasette_dbrain_websearch.promotion_write import merged_tags
from datasette_dbrain_websearch.schema import item_content_hash

from ..helpers import DATASETTE_1, actor_cookies, db_rows, post_json, promoting_ds, web_run

NOTES = "select * from items where source_type = 'manual' and text like '%Saved from research%'"
NOTE = "For Thursday's reading group: <b>skim</b> the methods & the error budget."


async def promote(ds, pack, key, **extra):
    response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [key], **extra})
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    return result


async def test_tags_and_a_note_become_dbrain_rows_a_search_finds(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    row = pack["external_evidence"][0]
    result = await promote(ds, pack, row["source_key"], tags=["Physics", "to read"], note=NOTE)
    assert result["status"] == "created" and result["tags"] == "physics,to-read"
    assert "Tags: physics,to-read." in result["message"]
    (source,) = db_rows(
        brain[0], "select * from sources where source_key = ?", [result["local_source_key"]]
    )
    assert source["user_tags"] == "physics,to-read"
    (fts,) = db_rows(brain[0], "select * from sources_fts where rowid = ?", [source["id"]])
    assert fts["summary_text"] == "physics,to-read"  # packed as dbrain packs tags
    # The note: a manual item, its FTS row as dbrain writes it, linked to the page.
    (item,) = db_rows(brain[0], "select * from items where source_key = ?", [result["note_key"]])
    assert item["source_type"] == "manual" and item["source_key"].startswith("manual:")
    assert item["text"].startswith(NOTE)
    assert f"“{pack['question']}”" in item["text"] and pack["run_id"] in item["text"]
    assert item["canonical_url"] == source["canonical_url"]
    assert item["user_tags"] == "physics,to-read"
    assert item["links_json"] == json.dumps([source["canonical_url"]], separators=(",", ":"))
    assert item["note_path"].startswith("items/manual/") and item["note_path"].endswith(".md")
    assert item["content_hash"] == item_content_hash(item)
    assert item["imported_at"] == item["updated_at"] == item["saved_at"]
    assert None not in item.values()
    (item_fts,) = db_rows(brain[0], "select rowid, * from items_fts where rowid = ?", [item["id"]])
    assert tuple(item_fts.values()) == item_fts_row(item)
    (link,) = db_rows(brain[0], "select * from item_source_links where item_id = ?", [item["id"]])
    assert link["source_id"] == source["id"] and link["original_url"] == row["provider_url"]
    # The next search finds the page by its tag, and the note by its words.
    root = actor_cookies(ds, "root")
    found = await ds.client.get("/-/research.json", params={"q": "physics"}, cookies=root)
    keys = {k for e in found.json()["evidence"] for k in row_keys(e)}
    assert {source["source_key"], item["source_key"]} <= keys
    tagged = await ds.client.get(
        "/-/research.json", params={"q": "lattice", "tag": "to-read"}, cookies=root
    )
    tagged_keys = {k for e in tagged.json()["evidence"] for k in row_keys(e)}
    assert {source["source_key"], item["source_key"]} <= tagged_keys
    note = await ds.client.get("/-/research.json", params={"q": "reading group"}, cookies=root)
    assert item["source_key"] in [e["source_key"] for e in note.json()["evidence"]]


async def test_promoting_again_adds_tags_and_never_duplicates(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    key = pack["external_evidence"][0]["source_key"]
    first = await promote(ds, pack, key, tags="physics, to-read", note=NOTE)
    again = await promote(ds, pack, key, tags=["PHYSICS", "reading group"], note=NOTE)
    assert again["status"] == "exists"
    assert again["tags"] == "physics,to-read,reading-group"
    assert again["note_key"] == first["note_key"]
    (source,) = db_rows(
        brain[0], "select * from sources where source_key = ?", [first["local_source_key"]]
    )
    assert source["user_tags"] == "physics,to-read,reading-group"
    (fts,) = db_rows(brain[0], "select * from sources_fts where rowid = ?", [source["id"]])
    assert fts["summary_text"].endswith("reading-group")
    assert len(db_rows(brain[0], NOTES)) == 1
    assert (
        len(
            db_rows(brain[0], "select * from item_source_links where source_id = ?", [source["id"]])
        )
        == 1
    )
    other = await promote(ds, pack, key, note="A second thought.")
    assert other["note_key"] != first["note_key"]
    assert len(db_rows(brain[0], NOTES)) == 2


async def test_the_promoted_rows_page_names_the_run_that_found_it(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    result = await promote(ds, pack, pack["external_evidence"][0]["source_key"])
    root = actor_cookies(ds, "root")
    page = await ds.client.get(result["row_url"], cookies=root)
    assert page.status_code == 200
    assert f'href="{pack["trace_url"]}"' in page.text and "saved from research" in page.text
    table = await ds.client.get("/brain/sources", cookies=root)
    assert table.text.count("saved from research") == 1  # only the promoted row says so


async def test_bad_tags_and_notes_are_400s(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    key = pack["external_evidence"][0]["source_key"]
    for extra, code in (
        ({"tags": [1, 2]}, "bad_tags"),
        ({"tags": [f"t{i}" for i in range(21)]}, "bad_tags"),
        ({"note": "x" * 4001}, "bad_note"),
        ({"note": ["a list"]}, "bad_note"),
    ):
        response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [key], **extra})
        assert (response.status_code, response.json()["code"]) == (400, code)


def test_tags_are_written_as_dbrains_vocabulary_writes_them():
    assert dbrain_tags(["  Heat Pumps ", "to read,TO-READ", "C++ / Rust", "", "---"]) == (
        "heat-pumps",
        "to-read",
        "c-rust",
    )
    assert merged_tags("physics, To-Read", ["to-read", "new"]) == "physics,To-Read,new"
    assert merged_tags("", ["a"]) == "a"


async def test_fetching_without_the_fetch_extra_is_refused_with_how_to_get_it(
    brain, fake, monkeypatch
):
    from datasette_dbrain_websearch import extraction, promote

    monkeypatch.setattr(promote, "extractor_missing", lambda: extraction.EXTRACTOR_MISSING)
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    key = pack["external_evidence"][0]["source_key"]
    response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [key], "fetch": True})
    body = response.json()
    assert (response.status_code, body["code"]) == (400, "fetch_unavailable")
    assert "[fetch]" in body["error"]
    assert (
        db_rows(
            brain[0],
            "select * from sources where normalized_url = ?",
            [pack["external_evidence"][0]["canonical_url"]],
        )
        == []
    )


class Listener:
    """A Datasette 1.0 plugin that hears events and sees who writes."""

    __name__ = "promotion_listener"

    def __init__(self) -> None:
        self.events: list = []
        self.writes: list = []

    @hookimpl
    def track_event(self, datasette, event):
        self.events.append(event)

    @hookimpl
    def write_wrapper(self, datasette, database, request, transaction):
        self.writes.append((database, request.path if request is not None else None))


@pytest.mark.skipif(not DATASETTE_1, reason="track_event and write_wrapper are Datasette 1.0")
async def test_datasette_hears_of_a_promotion_and_sees_who_wrote(brain, fake):
    listener = Listener()
    pm.register(listener, name=listener.__name__)
    try:
        ds = await promoting_ds(brain, fake)
        pack = await web_run(ds)
        result = await promote(ds, pack, pack["external_evidence"][0]["source_key"])
    finally:
        pm.unregister(name=listener.__name__)
    (event,) = [e for e in listener.events if e.name == "dbrain-promote"]
    assert (event.database, event.run_id, event.new_rows) == ("brain", pack["run_id"], 1)
    assert event.keys == [result["local_source_key"]] and event.actor == {"id": "root"}
    assert ("brain", "/-/research/promote") in listener.writes


async def test_no_source_is_written_without_its_provenance(brain, fake, monkeypatch):
    from datasette_dbrain_websearch import promotion_provenance

    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    row = pack["external_evidence"][0]

    def locked(conn, rows):
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(promotion_provenance, "write_provenance", locked)
    response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
    body = response.json()
    assert (response.status_code, body["code"]) == (503, "provenance_not_saved")
    assert response.headers["retry-after"] == "2"
    held = db_rows(
        brain[0], "select * from sources where normalized_url = ?", [row["canonical_url"]]
    )
    assert held == []  # the brain was never written


async def test_a_promotion_the_brain_refuses_leaves_no_provenance(brain, fake, monkeypatch):
    from datasette_dbrain_websearch import promote as promote_module

    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)

    def refused(conn, *args):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(promote_module, "write_sources", refused)
    response = await post_json(
        ds, {"run_id": pack["run_id"], "source_keys": [pack["external_evidence"][0]["source_key"]]}
    )
    assert response.status_code >= 500
    runs = brain[0].parent / "research_runs.db"
    assert db_rows(runs, "select * from dbrain_websearch_promotions") == []
