"""What a promotion writes, and how web text for pages the brain already holds is shown.

Through the public surfaces: the JSON API, the page, and the rows in the brain file.
"""

from __future__ import annotations

import hashlib
import html
import socket
import sqlite3
from contextlib import asynccontextmanager
from typing import Any

import pytest

from datasette_dbrain_websearch import fetch as fetch_module
from datasette_dbrain_websearch import public_hosts
from datasette_dbrain_websearch.fts_rows import SOURCES_FTS_COLUMNS, source_fts_row, sync_source_fts
from datasette_dbrain_websearch.providers import Provider, WebResult
from datasette_dbrain_websearch.schema import SOURCE_COLUMNS
from datasette_dbrain_websearch.urls import normalize_url

from ..helpers import (
    SOURCE_URLS,
    actor_cookies,
    add_source,
    db_rows,
    empty_brain,
    post_json,
    promoting_ds,
    registered,
    serve_article,
    web_run,
)

PROVIDER_TEXT = "Quasicrystals tile the plane without repeating; their diffraction is sharp."
RAW_URL = "http://www.Example.net/labs/../notes/?utm_source=feed&b=2&a=1#top"
CANONICAL = "https://example.net/notes?a=1&b=2"
PENDING_RAW = "http://www.example.org/pending-article/?utm_source=newsletter"
PENDING_TEXT = "Pending espresso: a long read on pressure profiling and the crema question."
INTEGER_COLUMNS = {"id", "extract_failure_count"}


class ScriptedProvider(Provider):
    """A provider that answers every query with the results it was given."""

    name = "scripted"
    label = "Scripted Web"

    def __init__(self, results: list[WebResult]) -> None:
        self.results = results

    async def search(self, request: Any, ctx: Any) -> list[WebResult]:
        return list(self.results)


def result(url: str, title: str, text: str = "", snippet: str = "", rank: int = 1) -> WebResult:
    return WebResult(url=url, title=title, snippet=snippet, text=text, rank=rank)


QUASI = result(RAW_URL, "Notes on aperiodic order", PROVIDER_TEXT, "Aperiodic tilings.")


@pytest.fixture
def scripted(brain, fake):
    """``async with scripted(results) as ds``: a Datasette whose only web provider is scripted."""

    @asynccontextmanager
    async def make(results, **external):
        with registered(ScriptedProvider(results)):
            yield await promoting_ds(brain, fake, providers=["scripted"], **external)

    return make


@pytest.fixture
def article_page():
    with serve_article() as url:
        yield url


def source_row(path, source_key: str) -> dict[str, Any]:
    (row,) = db_rows(path, "select * from sources where source_key = ?", [source_key])
    return row


def fts_row(path, row_id: int) -> tuple[Any, ...]:
    (fts,) = db_rows(path, "select rowid, * from sources_fts where rowid = ?", [row_id])
    return tuple(fts[c] for c in SOURCES_FTS_COLUMNS)


def column_types(path, row_id: int) -> dict[str, str]:
    typed = ", ".join(f"typeof({c}) as {c}" for c in SOURCE_COLUMNS)
    (types,) = db_rows(path, f"select {typed} from sources where id = ?", [row_id])
    return types


async def test_without_fetch_the_provider_text_is_a_description_not_an_extraction(brain, scripted):
    async with scripted([QUASI]) as ds:
        before = await web_run(ds, q="quasicrystal", external="never")
        assert before["evidence"] == []
        pack = await web_run(ds, q="quasicrystal")
        (row,) = pack["external_evidence"]
        response = await post_json(
            ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]}
        )
        (done,) = response.json()["results"]
        assert (done["status"], done["fetch"]) == ("created", "not_fetched")
        assert done["message"] == f"Added “{row['title']}” as {done['local_source_key']}."
        source = source_row(brain[0], done["local_source_key"])
        expected = normalize_url(CANONICAL)
        # Exactly link add's row (dbrain-schema.md §10.2) plus title and description: every
        # other column keeps its default, so extract_status '' means "pending extraction".
        assert source == {
            **{c: 0 if c in INTEGER_COLUMNS else "" for c in SOURCE_COLUMNS},
            "id": source["id"],
            "source_key": expected.source_key,
            "canonical_url": CANONICAL,
            "normalized_url": CANONICAL,
            "source_type": "web",
            "domain": "example.net",
            "note_path": expected.note_path,
            "title": "Notes on aperiodic order",
            "description": PROVIDER_TEXT,
            "created_at": source["created_at"],
            "updated_at": source["created_at"],
        }
        types = column_types(brain[0], source["id"])
        assert types == {c: "integer" if c in INTEGER_COLUMNS else "text" for c in SOURCE_COLUMNS}
        # Indexed as dbrain indexes a source, so the very next search finds it in the brain.
        assert fts_row(brain[0], source["id"]) == source_fts_row(source)
        after = await web_run(ds, q="quasicrystal", external="never")
        (local,) = after["evidence"]
        assert local["source_key"] == expected.source_key
        assert (local["origin"], local["extract_status"]) == ("dbrain_corpus", "")
        assert "provider_excerpt" not in local  # the web was not searched this time


async def test_a_failed_fetch_records_dbrains_error_and_keeps_the_provider_text(
    brain, scripted, monkeypatch
):
    async def no_such_host(host: str, port: int, **kwargs: Any) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(public_hosts, "_getaddrinfo", no_such_host)
    async with scripted([QUASI]) as ds:
        pack = await web_run(ds, q="quasicrystal")
        (row,) = pack["external_evidence"]
        body = {"run_id": pack["run_id"], "source_keys": [row["source_key"]], "fetch": True}
        (done,) = (await post_json(ds, body)).json()["results"]
        assert (done["status"], done["fetch"]) == ("created", "failed")
        assert done["message"].endswith(
            "The page could not be fetched: kept the provider's text; dbrain will retry."
        )
        source = source_row(brain[0], done["local_source_key"])
        assert source["description"] == PROVIDER_TEXT and source["extracted_text"] == ""
        assert (source["extract_status"], source["extract_failure_kind"]) == (
            "error",
            "dns_nxdomain",
        )
        assert source["extract_error"] and source["extract_failure_count"] == 1
        assert source["extract_first_failed_at"] == source["extract_last_failed_at"]
        assert source["extract_last_failed_at"] == source["created_at"]
        for column in ("extracted_at", "extract_tool", "extract_tool_version", "content_hash"):
            assert source[column] == "", column
        assert fts_row(brain[0], source["id"]) == source_fts_row(source)


async def test_a_fetched_page_is_the_extraction_and_the_description_its_own(
    brain, scripted, article_page
):
    page = result(article_page, "Lattice article", "Provider text about lattice qcd.")
    async with scripted([page], fetch_allow_networks=["127.0.0.1/32"]) as ds:
        pack = await web_run(ds, q="lattice qcd")
        (row,) = pack["external_evidence"]
        body = {"run_id": pack["run_id"], "source_keys": [row["source_key"]], "fetch": True}
        (done,) = (await post_json(ds, body)).json()["results"]
        assert done["fetch"] == "fetched" and "could not be fetched" not in done["message"]
        source = source_row(brain[0], done["local_source_key"])
        assert source["extract_status"] == "ok" and source["extract_tool"]
        assert "four-dimensional grid" in source["extracted_text"]
        assert "Provider text" not in source["extracted_text"]
        assert source["description"] == "A gentle introduction."
        assert (
            source["content_hash"] == hashlib.sha256(source["extracted_text"].encode()).hexdigest()
        )
        assert fts_row(brain[0], source["id"]) == source_fts_row(source)


async def test_a_page_already_held_is_neither_fetched_nor_rewritten(
    brain, scripted, article_page, monkeypatch
):
    fetched: list[str] = []
    real = fetch_module.fetch_page

    async def counting(url: str, **kwargs: Any):
        fetched.append(url)
        return await real(url, **kwargs)

    monkeypatch.setattr("datasette_dbrain_websearch.promote.fetch_page", counting)
    page = result(article_page, "Lattice article", "Provider text about lattice qcd.")
    async with scripted([page], fetch_allow_networks=["127.0.0.1/32"]) as ds:
        pack = await web_run(ds, q="lattice qcd")
        body = {
            "run_id": pack["run_id"],
            "source_keys": [pack["external_evidence"][0]["source_key"]],
            "fetch": True,
        }
        (first,) = (await post_json(ds, body)).json()["results"]
        stored = source_row(brain[0], first["local_source_key"])
        (again,) = (await post_json(ds, body)).json()["results"]
    assert len(fetched) == 1
    assert (again["status"], again["fetch"]) == ("exists", "skipped")
    assert again["message"] == (
        f"“{again['title']}” was already in your brain as {first['local_source_key']}."
    )
    assert source_row(brain[0], first["local_source_key"]) == stored


async def test_web_rows_carry_the_canonical_url_and_the_providers(brain, scripted):
    async with scripted([QUASI]) as ds:
        pack = await web_run(ds, q="quasicrystal")
        (row,) = pack["external_evidence"]
        assert row["url"] == row["canonical_url"] == CANONICAL
        assert row["provider_url"] == RAW_URL
        assert row["origin"] == "outside_dbrain_corpus"
        trace = (
            await ds.client.get(pack["trace_url"] + ".json", cookies=actor_cookies(ds, "root"))
        ).json()
        (selected,) = [e for e in trace["events"] if e["name"] == "external_evidence_selected"]
        assert selected["data"]["rows"][0]["url"] == CANONICAL
        assert trace["pack"]["external_evidence"][0]["provider_url"] == RAW_URL
        page = await ds.client.get(
            "/-/research",
            params={"q": "quasicrystal", "external": "always"},
            cookies=actor_cookies(ds, "root"),
        )
        # The link goes where the provider pointed; the text shows what a promotion stores.
        assert f'href="{html.escape(RAW_URL)}"' in page.text
        assert f"</span> {html.escape(CANONICAL)}</p>" in page.text
        (done,) = (
            await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
        ).json()["results"]
        assert source_row(brain[0], done["local_source_key"])["canonical_url"] == row["url"]


HELD = [
    result(PENDING_RAW, "Pending espresso, the web's copy", PENDING_TEXT, rank=1),
    result(
        "https://www.sqlite.org/fts5.html?utm_medium=x",
        "FTS5",
        "Scripted provider words about fts5 that are not the brain's.",
        rank=2,
    ),
]


async def test_a_held_page_dbrain_never_extracted_shows_the_providers_text_apart(brain, scripted):
    pending_key = brain[1]["src_pending_key"]
    async with scripted(HELD) as ds:
        pack = await web_run(ds, q="pending espresso crema")
        assert pack["external_evidence"] == []  # both pages collapse onto the brain's rows
        rows = {r["source_key"]: r for r in pack["evidence"]}
        pending = rows[pending_key]
        assert pending["origin"] == "dbrain_corpus" and pending["also_found_by"] == ["scripted"]
        assert pending["extract_status"] == ""
        assert PENDING_TEXT not in pending["excerpt"]
        assert pending["provider_excerpt"] == {
            "excerpt_from": "scripted",
            "origin": "outside_dbrain_corpus",
            "provider_url": PENDING_RAW,
            "text": PENDING_TEXT,
            "html": pending["provider_excerpt"]["html"],
            "evidence_role": "external_text",
        }
        assert "<mark>crema</mark>" in pending["provider_excerpt"]["html"]
        extracted = rows[brain[1]["src_fts5_key"]]
        assert extracted["also_found_by"] == ["scripted"]
        assert extracted["extract_status"] == "ok" and "provider_excerpt" not in extracted
        (warning,) = [w for w in pack["warnings"] if w["code"] == "local_source_needs_extraction"]
        assert warning["source_keys"] == [pending_key]
        assert "“Pending espresso”" in warning["message"]
        assert SOURCE_URLS["src_pending"] in warning["message"]
        assert "sqlite.org" not in warning["message"]
        saved = (
            await ds.client.get(pack["trace_url"] + ".json", cookies=actor_cookies(ds, "root"))
        ).json()
        assert warning in saved["pack"]["warnings"]
        page = await ds.client.get(
            "/-/research",
            params={"q": "pending espresso crema", "external": "always"},
            cookies=actor_cookies(ds, "root"),
        )
    text = page.text
    assert 'data-code="local_source_needs_extraction"' in text
    block = text.split('class="dbrain-excerpt dbrain-excerpt-provider" data-origin="external">')
    assert len(block) == 2, "exactly one provider excerpt, on the pending row"
    assert (
        block[1]
        .split("</p>")[0]
        .startswith(
            '<span class="dbrain-badge dbrain-badge-external" title="Text from the web search '
            "result, not from your brain\">Scripted Web's text, not your brain's</span>"
        )
    )
    assert "pressure profiling" in block[1].split("</p>")[0]
    assert text.count("pressure profiling") == 1  # nowhere else on the page
    assert "dbrain has not extracted this page yet (extract status: pending)" in text


async def test_a_promoted_page_waits_for_dbrains_extractor(brain, scripted):
    async with scripted([QUASI]) as ds:
        pack = await web_run(ds, q="quasicrystal")
        key = pack["external_evidence"][0]["source_key"]
        (done,) = (await post_json(ds, {"run_id": pack["run_id"], "source_keys": [key]})).json()[
            "results"
        ]
        again = await web_run(ds, q="quasicrystal")
    assert again["external_evidence"] == []
    (local,) = again["evidence"]
    assert local["source_key"] == done["local_source_key"]
    assert local["provider_excerpt"]["excerpt_from"] == "scripted"
    codes = [w["code"] for w in again["warnings"]]
    assert "local_source_needs_extraction" in codes


async def test_a_clash_rolls_back_the_whole_request(brain, scripted):
    other = result("https://clash.example/page", "Clashing page", "Words.", rank=2)
    async with scripted([QUASI, other]) as ds:
        pack = await web_run(ds, q="quasicrystal")
        keys = [r["source_key"] for r in pack["external_evidence"]]
        assert len(keys) == 2
        clash = normalize_url("https://clash.example/page")
        conn = sqlite3.connect(brain[0])
        with conn:
            # Another writer holds the key under a different normalized URL.
            add_source(conn, "https://elsewhere.example/", fts=False, title="Elsewhere")
            conn.execute(
                "update sources set source_key = ? where title = 'Elsewhere'", [clash.source_key]
            )
        conn.close()
        count = db_rows(brain[0], "select count(*) as n from sources")[0]["n"]
        fts = db_rows(brain[0], "select count(*) as n from sources_fts")[0]["n"]
        response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": keys})
    assert response.status_code == 409 and response.json()["code"] == "conflict"
    assert db_rows(brain[0], "select count(*) as n from sources")[0]["n"] == count
    assert db_rows(brain[0], "select count(*) as n from sources_fts")[0]["n"] == fts


async def test_promotion_leaves_the_write_connection_as_it_found_it(brain, scripted):
    async with scripted([QUASI]) as ds:
        pack = await web_run(ds, q="quasicrystal")
        key = pack["external_evidence"][0]["source_key"]
        await post_json(ds, {"run_id": pack["run_id"], "source_keys": [key]})
        recursive = await ds.get_database("brain").execute_write_fn(
            lambda conn: conn.execute("pragma recursive_triggers").fetchone()[0]
        )
    assert recursive == 0  # sqlite-utils' default would have switched it on


def test_sync_source_fts_commits_and_rolls_back_with_its_row(tmp_path):
    empty_brain(tmp_path / "brain.db")
    conn = sqlite3.connect(tmp_path / "brain.db")
    try:
        with pytest.raises(RuntimeError), conn:
            source_id = add_source(conn, "https://example.com/a", title="A", description="B")
            raise RuntimeError("the caller's transaction fails")
        assert conn.execute("select count(*) from sources_fts").fetchone()[0] == 0
        with conn:
            source_id = add_source(conn, "https://example.com/a", title="A", description="B")
        conn.row_factory = sqlite3.Row
        source = dict(conn.execute("select * from sources").fetchone())
        stored = conn.execute("select rowid, * from sources_fts").fetchall()
        assert [tuple(r) for r in stored] == [source_fts_row(source)]
        with pytest.raises(LookupError):
            sync_source_fts(conn, source_id + 1)
    finally:
        conn.close()


def test_an_ipv6_page_is_written_with_a_link_that_opens_and_dbrains_dedupe_key():
    from datasette_dbrain_websearch.promotion_rows import candidate

    row = {
        "canonical_url": "http://[2606:4700::1111]/a?utm_source=x",
        "source_key": "ext:brave:0123456789ab",
        "title": "T",
        "excerpt": "E",
        "retrieval": {"lanes": [{"provider": "brave", "rank": 1}]},
    }
    columns = candidate(row, None, "2026-12-07T00:00:00Z").columns
    assert columns["canonical_url"] == "http://[2606:4700::1111]/a"
    assert columns["normalized_url"] == "http://2606:4700::1111/a"  # dbrain's Go, brackets lost
    digest = hashlib.sha256(b"http://2606:4700::1111/a").hexdigest()[:12]
    assert columns["source_key"] == "src:" + digest
