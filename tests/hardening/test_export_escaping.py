"""Exports escape what they quote: a run whose answer, excerpts, web snippets and a promoted note
hold an XSS payload set, made through the public surfaces (a web run on the fake providers, a
promotion with a note, the answer), downloads as Markdown with every payload shown as written,
never applied (no raw HTML, no ``javascript:`` link), and as CSV with the text kept as data.
The token command refuses an empty actor."""

from __future__ import annotations

import csv
import io
import re
import sqlite3

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch import exports
from datasette_dbrain_websearch.demo.corpus import PAGES, Page
from datasette_dbrain_websearch.demo.fakeweb import FakeWeb

from ..helpers import (
    BRAVE_KEY,
    EXA_KEY,
    actor_cookies,
    add_item,
    post_json,
    promoting_ds,
)

PAYLOADS = (
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '<a href="javascript:alert(1)">x</a>',
    "[docs](javascript:alert(1))",
    "![x](javascript:alert(1))",
    "<svg onload=alert(1)>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "<javascript:alert(1)>",
    "[ref]: javascript:alert(1)",
)
ALL = " ".join(PAYLOADS)
# Two sentences, each short enough for the answer to quote whole.
FIRST, SECOND = " ".join(PAYLOADS[:4]), " ".join(PAYLOADS[4:])
TEXT = (
    f"Zanzibar quokka husbandry needs shade {FIRST} daily. "
    f"Quokka husbandry in Zanzibar: {SECOND} too."
)
QUESTION = "quokka zanzibar husbandry"

# A provider's title is HTML to the clients (tags stripped, entities decoded), so the pages'
# titles carry the payload set entity-encoded: what reaches the pack is the payload itself (the
# entity trick). Their text carries it raw, as Exa's text comes back.
ENCODED = ALL.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
HOSTILE_PAGES = tuple(
    Page(
        url=f"https://quokka-{n}.example/husbandry",
        title=f"Quokka husbandry in Zanzibar, part {n} {ENCODED}",
        kind="blog",
        published="2026-06-01T00:00:00Z",
        text=TEXT,
    )
    for n in (1, 2)
)
NOTE = f"Quokka husbandry note for Zanzibar: {ALL}"


@pytest.fixture(scope="module")
def hostile_web():
    with FakeWeb(
        brave_keys=(BRAVE_KEY,), exa_keys=(EXA_KEY,), pages=(*PAGES, *HOSTILE_PAGES)
    ) as server:
        yield server


@pytest.fixture
def hostile(hostile_web, monkeypatch):
    monkeypatch.setenv("TEST_BRAVE_KEY", BRAVE_KEY)
    monkeypatch.setenv("TEST_EXA_KEY", EXA_KEY)
    hostile_web.reset()
    yield hostile_web
    hostile_web.reset()


def hostile_brain(brain) -> None:
    """A brain item whose title (a spreadsheet formula too), text and URL are the payload set:
    anyone's words, imported."""
    conn = sqlite3.connect(brain[0])
    with conn:
        add_item(
            conn,
            "manual:quokka-payload",
            "manual",
            title=f"@SUM(1+1) Quokka husbandry {PAYLOADS[0]} {PAYLOADS[3]}",
            text=TEXT,
            canonical_url="javascript:alert(1)",
        )
    conn.close()


async def hostile_run(brain, fake) -> tuple[object, dict]:
    """A web run with an answer, after promoting a web row with the payload note, so the note
    comes back as a brain row."""
    hostile_brain(brain)
    ds = await promoting_ds(brain, fake, providers=["brave", "exa"])
    root = actor_cookies(ds, "root")
    params = {"q": QUESTION, "external": "always", "provider": "all", "answer": "1"}
    first = (await ds.client.get("/-/research.json", params=params, cookies=root)).json()
    key = first["external_evidence"][0]["source_key"]
    body = {"run_id": first["run_id"], "source_keys": [key], "note": NOTE}
    promoted = await post_json(ds, body)
    assert promoted.status_code == 200, promoted.text
    pack = (await ds.client.get("/-/research.json", params=params, cookies=root)).json()
    return ds, pack


def unescaped(text: str) -> str:
    """The Markdown with its backslash escapes removed: what a renderer could apply."""
    return re.sub(r"\\[!-/:-@\[-`{-~]", "", text)


LINK_TARGETS = re.compile(r"\]\(([^)\s]*)|<([a-zA-Z][a-zA-Z0-9+.-]*:[^<>\s]*)>")


async def test_the_markdown_export_shows_every_payload_as_written(brain, hostile):
    ds, pack = await hostile_run(brain, hostile)
    # The payloads really reached the run: in the answer, web rows, the brain row and the note.
    assert pack["answer"]["status"] == "ok"
    assert any("<img src=x" in s["text"] for s in pack["answer"]["sentences"])
    assert any("<img src=x" in r["excerpt"] for r in pack["external_evidence"])
    assert any("onerror=" in r["title"] for r in pack["external_evidence"])
    excerpts = " ".join(r.get("excerpt", "") for r in pack["evidence"])
    assert "<script>alert(1)</script>" in excerpts and "Quokka husbandry note" in excerpts
    response = await ds.client.get(pack["trace_url"] + ".md", cookies=actor_cookies(ds, "root"))
    assert response.status_code == 200
    text = response.text
    bare = unescaped(text)
    # Nothing a Markdown renderer would turn into HTML: no tag, no entity, no link but ours.
    for markup in ("<img", "<script", "<svg", "<a ", "</", "&lt;", "!["):
        assert markup not in bare, markup
    assert not re.search(r"<(?!https?://)", bare), re.findall(r"<.{0,20}", bare)
    assert not re.search(r"^\s*(?:>\s*)*\[[^\]]*\]:", bare, re.MULTILINE)  # no link definition
    targets = [a or b for a, b in LINK_TARGETS.findall(bare)]
    assert targets and all(t.startswith(("http://", "https://")) for t in targets), targets
    assert "javascript:alert(1)" in text  # ... shown as text
    # Still readable: read as a renderer shows it, every payload is there as written.
    shown = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)
    for payload in PAYLOADS:
        assert payload in shown, payload


async def test_the_csv_export_keeps_payloads_as_data_and_formulas_as_text(brain, hostile):
    ds, pack = await hostile_run(brain, hostile)
    response = await ds.client.get(pack["trace_url"] + ".csv", cookies=actor_cookies(ds, "root"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(response.text)))
    # CSV is data, read by spreadsheets, not rendered: the text round-trips exactly.
    web = [r for r in rows if r["origin"] == "outside_dbrain_corpus"]
    assert [r["title"] for r in web] == [e["title"] for e in pack["external_evidence"]]
    assert any("<img src=x onerror=alert(1)>" in r["excerpt"] for r in web)
    (saved,) = [r for r in rows if r["key"] == "manual:quokka-payload"]
    assert saved["title"] == f"'@SUM(1+1) Quokka husbandry {PAYLOADS[0]} {PAYLOADS[3]}"
    for row in rows:
        for value in row.values():
            assert value[:1] not in ("=", "+", "-", "@"), value


async def test_the_other_forms_of_a_run_never_serve_the_payloads_as_markup(brain, hostile):
    ds, pack = await hostile_run(brain, hostile)
    root = actor_cookies(ds, "root")
    trace = await ds.client.get(pack["trace_url"] + ".json", cookies=root)
    assert trace.headers["content-type"].startswith("application/json")
    page = await ds.client.get(pack["trace_url"], cookies=root)
    assert page.status_code == 200
    for payload in ("<img src=x", "<script>alert", "<svg onload", 'href="javascript:'):
        assert payload not in page.text, payload


def test_only_web_addresses_become_links_in_markdown():
    urls = [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "https://example.com/a>[x](javascript:alert(1))",
        "https://example.com/fine?q=1",
    ]
    rows = [
        {"source_key": f"k{n}", "origin": "dbrain_corpus", "title": "t", "url": url}
        for n, url in enumerate(urls)
    ]
    pack = {
        "question": "q",
        "database": "brain",
        "judge": {
            "verdict": "no_evidence",
            "message": f"Nothing mentions {PAYLOADS[0]}.",
            "combined": {},
        },
        "evidence": rows,
        "external_evidence": [],
        "answer": {
            "status": "error",
            "message": f"No answer: {PAYLOADS[3]}",
            "sentences": [],
            "conflicts": {"status": "not_assessed", "items": []},
        },
    }
    text = exports.markdown(pack, "2026-12-02T10:00:00", {}, str)
    bare = unescaped(text)
    assert not re.search(r"<(?!https?://)", bare) and "](" not in bare
    assert [a or b for a, b in LINK_TARGETS.findall(bare)] == ["https://example.com/fine?q=1"]
    shown = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)
    for written in (*urls, PAYLOADS[0], PAYLOADS[3]):
        assert written in shown, written


@pytest.mark.parametrize("actor", ["", "   ", "\t"])
def test_the_token_command_refuses_an_empty_actor(actor):
    result = CliRunner().invoke(
        cli, ["dbrain-websearch", "token", actor], env={"DATASETTE_SECRET": "s3cret"}
    )
    assert result.exit_code != 0
    assert "dbrainws_" not in result.output
    assert "ACTOR_ID" in result.output and "empty" in result.output


def test_a_token_never_names_a_blank_actor():
    from datasette.app import Datasette

    from datasette_dbrain_websearch.tokens import NAMESPACE, PREFIX, actor_for_token, create_token

    ds = Datasette([], secret="s3cret")
    for actor in ("", "  "):
        with pytest.raises(ValueError, match="empty"):
            create_token(ds, actor)
        # A blank actor signed before the refusal acts as no one.
        signed = PREFIX + ds.sign({"a": actor, "t": 0}, NAMESPACE)
        assert actor_for_token(ds, f"Bearer {signed}", "/-/research/promote") is None
    assert actor_for_token(ds, f"Bearer {create_token(ds, 'root')}", "/-/research") == {
        "id": "root",
        "token": "dbrain-websearch",
    }
