"""Promotion: web results written into the brain exactly as dbrain writes sources."""

from __future__ import annotations

import asyncio
import hashlib
import re
import socket
import sqlite3
from typing import Any

import pytest

from datasette_dbrain_websearch import public_hosts
from datasette_dbrain_websearch.fts_rows import source_fts_row
from datasette_dbrain_websearch.providers import Provider, WebResult
from datasette_dbrain_websearch.triggers import create_retrieval_triggers
from datasette_dbrain_websearch.urls import normalize_url

from ..helpers import (
    DATASETTE_1,
    GRANT_PROMOTE,
    actor_cookies,
    csrf,
    db_rows,
    make_datasette,
    post_json,
    promoting_ds,
    registered,
    serve_article,
    web_config,
    web_run,
)

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


async def test_promotion_writes_a_dbrain_source_column_by_column(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    row = pack["external_evidence"][0]
    response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    expected = normalize_url(row["canonical_url"])
    assert (result["status"], result["fetch"]) == ("created", "not_fetched")
    assert result["local_source_key"] == expected.source_key
    assert (
        expected.source_key
        == "src:" + hashlib.sha256(expected.canonical_url.encode()).hexdigest()[:12]
    )
    (source,) = db_rows(
        brain[0], "select * from sources where source_key = ?", [expected.source_key]
    )
    assert result["row_url"] == f"/brain/sources/{source['id']}"
    assert source["canonical_url"] == source["normalized_url"] == expected.canonical_url
    assert row["url"] == expected.canonical_url
    assert (source["source_type"], source["domain"], source["note_path"]) == (
        expected.source_type,
        expected.domain,
        expected.note_path,
    )
    assert source["note_path"].startswith(f"sources/{expected.source_type}/")
    for column in ("created_at", "updated_at"):
        assert RFC3339.match(source[column]), column
    # Not fetched, so nothing was extracted: the provider's text is only a description, and
    # extract_status '' leaves the page to dbrain's own extractor.
    assert (source["title"], source["description"]) == (row["title"], row["text"])
    for column in (
        "extracted_text",
        "extract_status",
        "extracted_at",
        "extract_tool",
        "extract_tool_version",
        "extract_json",
        "extract_error",
        "content_hash",
        "summary_text",
        "user_tags",
    ):
        assert source[column] == "", column
    assert source["extract_failure_count"] == 0
    assert None not in source.values()
    (fts,) = db_rows(brain[0], "select rowid, * from sources_fts where rowid = ?", [source["id"]])
    fts_columns = (
        "rowid",
        "source_key",
        "title",
        "description",
        "site_name",
        "extracted_text",
        "summary_text",
        "domain",
    )
    assert tuple(fts[c] for c in fts_columns) == source_fts_row(source)
    (provenance,) = db_rows(
        brain[0].parent / "research_runs.db", "select * from dbrain_websearch_promotions"
    )
    assert provenance["run_id"] == pack["run_id"] and provenance["actor_id"] == "root"
    assert provenance["provider"] == "brave" and provenance["provider_query"] == "lattice qcd"
    assert provenance["local_source_key"] == expected.source_key
    assert provenance["external_source_key"] == row["source_key"]


async def test_the_next_search_finds_the_promoted_source_locally(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    row = pack["external_evidence"][0]
    await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
    again = await web_run(ds)
    local_keys = [r["source_key"] for r in again["evidence"]]
    assert normalize_url(row["canonical_url"]).source_key in local_keys
    assert row["canonical_url"] not in [r["canonical_url"] for r in again["external_evidence"]]
    promoted = next(r for r in again["evidence"] if r.get("also_found_by"))
    assert promoted["kind"] == "source" and promoted["origin"] == "dbrain_corpus"


async def test_promotion_is_idempotent_and_one_row_under_concurrency(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    key = pack["external_evidence"][1]["source_key"]
    body = {"run_id": pack["run_id"], "source_keys": [key]}
    responses = await asyncio.gather(*(post_json(ds, body) for _ in range(6)))
    statuses = sorted(r.json()["results"][0]["status"] for r in responses)
    assert statuses == ["created"] + ["exists"] * 5
    local = {r.json()["results"][0]["local_source_key"] for r in responses}
    assert len(local) == 1
    url = normalize_url(pack["external_evidence"][1]["canonical_url"]).normalized_url
    assert len(db_rows(brain[0], "select id from sources where normalized_url = ?", [url])) == 1


async def test_only_keys_from_that_run_can_be_promoted(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    before = db_rows(brain[0], "select count(*) as n from sources")[0]["n"]
    for keys in (
        ["ext:brave:000000000000"],
        ["https://evil.example/inject"],
        [pack["external_evidence"][0]["source_key"], "ext:exa:ffffffffffff"],
    ):
        response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": keys})
        assert response.status_code == 400 and response.json()["code"] == "not_in_run"
    response = await post_json(
        ds,
        {
            "run_id": "20260101T000000.000000000Z-000000000000",
            "source_keys": ["ext:brave:000000000000"],
        },
    )
    assert response.status_code == 404
    for bad in (
        {},
        {"run_id": pack["run_id"]},
        {"run_id": pack["run_id"], "source_keys": []},
        {"run_id": pack["run_id"], "source_keys": [1]},
        [],
        "x",
    ):
        response = await post_json(ds, bad)
        assert response.status_code == 400, bad
    assert db_rows(brain[0], "select count(*) as n from sources")[0]["n"] == before


async def test_promotion_needs_the_permission(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    body = {"run_id": pack["run_id"], "source_keys": [pack["external_evidence"][0]["source_key"]]}
    before = db_rows(brain[0], "select count(*) as n from sources")[0]["n"]
    for actor in ("alice", None):
        response = await post_json(ds, body, actor=actor)
        assert response.status_code == 403
    assert db_rows(brain[0], "select count(*) as n from sources")[0]["n"] == before
    page = await ds.client.get(
        "/-/research",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "alice"),
    )
    assert 'name="promote_one"' not in page.text
    # Where alice may search the web, each web row says it cannot be saved, and why, once.
    open_ds = await promoting_ds(brain, fake, allow=True)
    page = await open_ds.client.get(
        "/-/research",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(open_ds, "alice"),
    )
    rows = len(re.findall(r'data-origin="external"', page.text)) - 1  # less the divider
    assert rows and page.text.count('class="dbrain-promote-off" disabled') == rows
    assert page.text.count("not allowed for you") == rows
    assert "needs the dbrain-promote permission" in page.text


async def test_signed_out_web_rows_say_how_to_sign_in_to_save_them(brain, fake):
    ds = await promoting_ds(brain, fake, allow=True)
    page = await ds.client.get("/-/research", params={"q": "lattice qcd", "external": "always"})
    assert 'data-origin="external"' in page.text and 'name="promote_one"' not in page.text
    assert "sign in to save" in page.text
    (why,) = re.findall(r'<span id="dbrain-promote-why">([^<]+)</span>', page.text)
    assert "/-/auth-token" in why and "--root" in why
    assert f'data-promote-refused="{why}"' in page.text  # what the p key says


async def test_each_row_keeps_its_own_tags_and_note_in_a_batch(brain, fake):
    """Tags and note beside a row's button go with that row; rows without their own take the
    batch's."""
    ds = await promoting_ds(brain, fake)
    root = actor_cookies(ds, "root")
    page = await ds.client.get(
        "/-/research", params={"q": "lattice qcd", "external": "always"}, cookies=root
    )
    run_id = re.search(r'name="run_id" value="([^"]+)"', page.text).group(1)
    first, second, third = re.findall(r'name="promote_one" value="([^"]+)"', page.text)[:3]
    assert f'name="tags:{first}"' in page.text and f'name="note:{first}"' in page.text
    cookies, _, token = await csrf(ds, root)
    form = {
        "csrftoken": token,
        "run_id": run_id,
        "source_keys": [first, second, third],
        f"tags:{first}": "physics",
        f"note:{first}": "the muon one",
        f"tags:{second}": "",
        "tags": "to-read",
        "note": "batch note",
    }
    response = await ds.client.post(
        "/-/research/promote", data=form, cookies=cookies, headers={"accept": "application/json"}
    )
    assert response.status_code == 200, response.text
    results = {r["source_key"]: r for r in response.json()["results"]}
    assert [results[k]["tags"] for k in (first, second, third)] == ["physics", "to-read", "to-read"]
    notes = db_rows(
        brain[0], "select text from items where text like '%Saved from research%' order by id"
    )
    assert sorted(n["text"].split("\n")[0] for n in notes) == [
        "batch note",
        "batch note",
        "the muon one",
    ]


async def test_cross_site_form_posts_are_refused(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    form = {"run_id": pack["run_id"], "source_keys": pack["external_evidence"][0]["source_key"]}
    headers = {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}
    before = db_rows(brain[0], "select count(*) as n from sources")[0]["n"]
    response = await ds.client.post(
        "/-/research/promote", data=form, cookies=actor_cookies(ds, "root"), headers=headers
    )
    assert response.status_code == 403
    assert db_rows(brain[0], "select count(*) as n from sources")[0]["n"] == before


async def test_form_promotion_redirects_back_with_a_message(brain, fake):
    ds = await promoting_ds(brain, fake)
    root = actor_cookies(ds, "root")
    page = await ds.client.get(
        "/-/research", params={"q": "lattice qcd", "external": "always"}, cookies=root
    )
    assert "Save to brain" in page.text and 'name="run_id"' in page.text
    run_id = re.search(r'name="run_id" value="([^"]+)"', page.text).group(1)
    key = re.search(r'name="promote_one" value="([^"]+)"', page.text).group(1)
    cookies, _, token = await csrf(ds, root)
    form = {
        "csrftoken": token,
        "run_id": run_id,
        "promote_one": key,
        "next": "/-/research?q=lattice+qcd&external=always",
    }
    response = await ds.client.post("/-/research/promote", data=form, cookies=cookies)
    assert response.status_code == 302
    assert response.headers["location"] == "/-/research?q=lattice+qcd&external=always"
    message = ds.unsign(response.cookies["ds_messages"], "messages")
    assert re.search(r"Promoted into brain: Added “.+” as src:[0-9a-f]{12}\.", message[0][0])
    evil = {**form, "next": "//evil.example/"}
    response = await ds.client.post("/-/research/promote", data=evil, cookies=cookies)
    assert response.headers["location"] == "/-/research"


async def test_immutable_brain_answers_409(brain, fake):
    ds = make_datasette(
        [], immutables=[str(brain[0])], plugin_config=web_config(fake), permissions=GRANT_PROMOTE
    )
    await ds.invoke_startup()
    pack = await web_run(ds)
    body = {"run_id": pack["run_id"], "source_keys": [pack["external_evidence"][0]["source_key"]]}
    response = await post_json(ds, body)
    assert response.status_code == 409 and response.json()["code"] == "brain_read_only"
    assert "-i" in response.json()["error"]


async def test_read_only_brain_file_answers_409(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    before = db_rows(brain[0], "select count(*) as n from sources")[0]["n"]
    brain[0].chmod(0o444)
    try:
        body = {
            "run_id": pack["run_id"],
            "source_keys": [pack["external_evidence"][0]["source_key"]],
        }
        response = await post_json(ds, body)
    finally:
        brain[0].chmod(0o644)
    if response.status_code == 200:
        pytest.skip("this machine lets root write to a read-only file")
    assert response.status_code == 409 and response.json()["code"] == "brain_read_only"
    assert db_rows(brain[0], "select count(*) as n from sources")[0]["n"] == before


async def test_dbrain_retrieval_triggers_keep_working(brain, fake):
    conn = sqlite3.connect(brain[0])
    create_retrieval_triggers(conn)
    conn.commit()
    conn.close()
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    row = pack["external_evidence"][0]
    response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
    assert response.json()["results"][0]["status"] == "created"
    key = normalize_url(row["canonical_url"]).source_key
    pending = db_rows(
        brain[0], "select * from retrieval_parent_projections where parent_source_key = ?", [key]
    )
    assert pending and pending[0]["status"] == "pending"


@pytest.fixture
def article_server():
    with serve_article() as url:
        yield url


class LocalPageProvider(Provider):
    """A provider whose result lives on a loopback page (so fetch can be tested offline)."""

    name = "localpage"
    label = "Local page"
    url = ""

    async def search(self, request, ctx):
        return [
            WebResult(
                url=self.url,
                title="Lattice article",
                snippet="lattice qcd grid",
                text="Provider text about lattice qcd.",
                rank=1,
            )
        ]


@pytest.mark.parametrize("allowed", [True, False])
async def test_fetch_extracts_text_and_refuses_private_addresses(
    brain,
    fake,
    article_server,
    allowed,
    monkeypatch,
):
    provider = LocalPageProvider()
    provider.url = article_server
    if not allowed:
        # A public-looking name that resolves to loopback: listed as web evidence (names are
        # only checked when fetched), refused by the fetch.
        provider.url = article_server.replace("127.0.0.1", "private-page.test")

        async def loopback(host: str, port: int, **kwargs: Any) -> list[Any]:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

        monkeypatch.setattr(public_hosts, "_getaddrinfo", loopback)
    with registered(provider):
        networks = ["127.0.0.1/32"] if allowed else []
        ds = await promoting_ds(brain, fake, providers=["localpage"], fetch_allow_networks=networks)
        pack = await web_run(ds)
        (row,) = pack["external_evidence"]
        response = await post_json(
            ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]], "fetch": True}
        )
        result = response.json()["results"][0]
        assert result["status"] == "created"
        assert result["fetch"] == ("fetched" if allowed else "failed")
        assert result["message"].startswith(f"Added “{result['title']}” as ")
        retry = "The page could not be fetched: kept the provider's text; dbrain will retry."
        assert (retry in result["message"]) is not allowed
        (source,) = db_rows(
            brain[0],
            "select * from sources where source_key = ?",
            [response.json()["results"][0]["local_source_key"]],
        )
        if allowed:
            assert "four-dimensional grid" in source["extracted_text"]
            assert "Copyright" not in source["extracted_text"]
            assert source["title"] == "Lattice gauge theory, explained"
            assert source["extract_error"] == ""
        else:
            # Refused before connecting: recorded as dbrain records a failed extraction (so
            # dbrain retries it), with the provider's text kept searchable as the description.
            assert source["extracted_text"] == ""
            assert source["description"] == "Provider text about lattice qcd."
            assert source["extract_error"] and source["extract_failure_kind"] == "fetch_failed"
            assert source["extract_status"] == "error" and source["extract_failure_count"] == 1
            assert source["extracted_at"] == "" and source["extract_last_failed_at"]


@pytest.mark.skipif(not DATASETTE_1, reason="root needs --root or a grant on 1.0 only")
async def test_root_needs_a_grant_on_1_0(brain, fake):
    ds = make_datasette([str(brain[0])], plugin_config=web_config(fake))
    await ds.invoke_startup()
    pack = await web_run(ds)
    body = {"run_id": pack["run_id"], "source_keys": [pack["external_evidence"][0]["source_key"]]}
    assert (await post_json(ds, body)).status_code == 403


async def test_the_page_shows_what_a_run_promoted(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    row = pack["external_evidence"][0]
    result = (
        await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
    ).json()["results"][0]
    page = await ds.client.get(
        "/-/research",
        params={"q": "lattice qcd", "external": "always", "run": pack["run_id"]},
        cookies=actor_cookies(ds, "root"),
    )
    assert "In your brain now:" in page.text
    assert f'href="{result["row_url"]}"><code>{result["local_source_key"]}</code>' in page.text
    # The promoted row is a brain row now: no ephemeral badge; the others keep theirs.
    promoted = page.text.split(f'data-source-key="{row["source_key"]}"')[1].split("</li>")[0]
    assert "Saved to your brain" in promoted and "ephemeral" not in promoted
    assert page.text.count("/ ephemeral</span>") == len(pack["external_evidence"]) - 1
    assert page.text.count('name="promote_one"') == len(pack["external_evidence"]) - 1


class ReadOnlyBrain:
    """A brain whose file the operating system will not let SQLite write."""

    is_mutable = True

    async def execute_write_fn(self, fn):
        raise sqlite3.OperationalError("attempt to write a readonly database")


async def test_a_brain_sqlite_cannot_write_answers_409():
    from datasette_dbrain_websearch.errors import ResearchError
    from datasette_dbrain_websearch.promote import promote
    from datasette_dbrain_websearch.promotion_request import PromotionRequest

    row = {
        "source_key": "ext:brave:1",
        "canonical_url": "https://example.com/a",
        "title": "A",
        "text": "x",
        "excerpt": "x",
        "retrieval": {"lanes": [{"provider": "brave", "rank": 1}]},
    }
    trace = {
        "run_id": "r",
        "question": "q",
        "database": "brain",
        "started_at": "",
        "pack": {"external_evidence": [row], "query_plan": {"external_queries": []}},
    }
    with pytest.raises(ResearchError) as info:
        await promote(
            ReadOnlyBrain(), None, trace, PromotionRequest("r", ("ext:brave:1",), False), "root"
        )
    assert info.value.status == 409 and info.value.code == "brain_read_only"


async def test_promoting_into_a_brain_without_sources_is_409(tmp_path, fake):
    from ..helpers import build_fixture_brain

    path = tmp_path / "items_only.db"
    build_fixture_brain(path)
    conn = sqlite3.connect(path)
    conn.execute("drop table sources_fts")
    conn.execute("drop table item_source_links")
    conn.execute("drop table sources")
    conn.commit()
    conn.close()
    ds = make_datasette(
        [str(path)], plugin_config=web_config(fake), permissions={"dbrain-promote": {"id": "root"}}
    )
    await ds.invoke_startup()
    pack = await web_run(ds)
    page = await ds.client.get(
        "/-/research",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    assert 'name="promote_one"' not in page.text
    body = {"run_id": pack["run_id"], "source_keys": [pack["external_evidence"][0]["source_key"]]}
    response = await post_json(ds, body)
    assert response.status_code == 409 and response.json()["code"] == "no_sources_table"
