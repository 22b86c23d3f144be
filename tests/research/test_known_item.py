"""Known-item recall over HTTP: an item and the page it links to (``item_source_links``) that
both match are one evidence row (the item, with the page inside it), so ten rows are ten things.

Keys stay what they were: the row is the item's key, the page keeps its own key inside
``linked_source``, answers may cite either, marks may name either, and a web hit for the page
lands on that row ("also found by").
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import llm
import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch import display
from datasette_dbrain_websearch.merge import rrf_contribution
from datasette_dbrain_websearch.providers import Provider, WebResult
from datasette_dbrain_websearch.tools import calls as tools
from datasette_dbrain_websearch.urls import normalize_url

from ..helpers import (
    NOW,
    actor_cookies,
    add_item,
    add_source,
    csrf,
    empty_brain,
    make_datasette,
    registered,
)
from ..helpers import web_config as base_web_config

PAGE_URL = "https://tokio.rs/blog/2019-10-scheduler"
PAGE_KEY = normalize_url(PAGE_URL).source_key
BOOKMARK_KEY = "x:1800000000000000000"
PAIRS = 12  # more bookmark + page pairs than one page of ten rows


def link(conn: sqlite3.Connection, item_id: int, source_id: int, url: str) -> None:
    conn.execute(
        "insert into item_source_links (item_id, source_id, original_url, created_at) "
        "values (?, ?, ?, ?)",
        [item_id, source_id, url, NOW],
    )


@pytest.fixture
def linked_brain(tmp_path: Path) -> Path:
    """Bookmarks of pages about the tokio scheduler, each linked to its page (both match), plus
    a note and a page that match alone."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        bookmark = add_item(
            conn,
            BOOKMARK_KEY,
            "x",
            title="Making the Tokio scheduler ten times faster",
            text="Great write-up on the tokio scheduler: work stealing, the LIFO slot and fewer "
            f"atomics. {PAGE_URL}",
            canonical_url="https://x.com/carllerche/status/1800000000000000000",
        )
        page = add_source(
            conn,
            PAGE_URL,
            title="Making the Tokio scheduler 10x faster",
            extracted_text="We have been hard at work on the next major revision of the tokio "
            "scheduler. Work stealing, a LIFO slot and fewer atomics make it faster.",
            extract_status="ok",
        )
        link(conn, bookmark, page, PAGE_URL)
        for n in range(1, PAIRS):
            url = f"https://blog{n}.example.com/tokio-scheduler-{n}"
            item = add_item(
                conn,
                f"x:18000000000000000{n:02d}",
                "x",
                title=f"Tokio scheduler thread {n}",
                text=f"Notes on the tokio scheduler, part {n}. {url}",
            )
            source = add_source(
                conn,
                url,
                title=f"Tokio scheduler internals, part {n}",
                extracted_text=f"Part {n} of a series on the tokio scheduler and its run queues.",
                extract_status="ok",
            )
            link(conn, item, source, url)
        add_item(
            conn,
            "apple-note:tokio",
            "apple_note",
            title="Tokio scheduler questions",
            text="Does the tokio scheduler steal from the global queue first?",
        )
        add_source(
            conn,
            "https://example.org/async-runtimes",
            title="Async runtimes compared",
            extracted_text="The tokio scheduler against async-std and smol.",
            extract_status="ok",
        )
    conn.close()
    return path


@pytest.fixture
async def ds(linked_brain: Path) -> Any:
    datasette = make_datasette([str(linked_brain)])
    await datasette.invoke_startup()
    return datasette


async def research(ds: Any, **params: Any) -> dict[str, Any]:
    response = await ds.client.get("/-/research.json", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def row_for(pack: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in pack["evidence"] if r["source_key"] == key)


async def test_an_item_and_its_linked_page_are_one_row(ds):
    pack = await research(ds, q="tokio scheduler lifo")
    assert pack["evidence"][0]["source_key"] == BOOKMARK_KEY
    assert PAGE_KEY not in [r["source_key"] for r in pack["evidence"]]
    row = pack["evidence"][0]
    page = row["linked_source"]
    assert page["source_key"] == PAGE_KEY and page["kind"] == "source"
    assert page["title"] == "Making the Tokio scheduler 10x faster" and page["url"] == PAGE_URL
    assert "<mark>LIFO</mark>" in page["excerpt_html"] and page["row_url"].startswith("/brain/")
    lanes = row["retrieval"]["lanes"]
    assert [(lane["table"], lane["rank"]) for lane in lanes] == [
        ("items_fts", 1),
        ("sources_fts", 1),
    ]
    assert "linked_source_key" not in lanes[0] and lanes[1]["linked_source_key"] == PAGE_KEY
    signals = [
        s for s in row["retrieval"]["signals"] if s["name"] in ("bm25_rank", "linked_source_match")
    ]
    assert [s["name"] for s in signals] == ["bm25_rank", "bm25_rank", "linked_source_match"]
    assert signals[1]["detail"].startswith(f"its linked page {PAGE_KEY}: rank 1 of ")
    # One thing, scored by its stronger lane (both rank 1 here; each table's lane weighed by
    # how selective the question is there).
    assert max(s["weight"] for s in signals[:2]) == round(rrf_contribution(1), 6)
    assert row["retrieval"]["fused_score"] == round(rrf_contribution(1), 6)
    assert row["retrieval"]["matched_terms"] == ["tokio", "scheduler", "lifo"]
    # The counts say how many rows of each table hold every word.
    assert (pack["coverage"]["item_text_matches"], pack["coverage"]["source_text_matches"]) == (
        1,
        1,
    )


async def test_ten_rows_are_ten_things(ds):
    pack = await research(ds, q="tokio scheduler", limit="10")
    rows = pack["evidence"]
    assert len(rows) == 10
    keys = [k for r in rows for k in (r["source_key"], r["linked_source"]["source_key"])]
    assert len(keys) == len(set(keys)) == 20  # ten bookmarks, each with its page
    assert all(r["kind"] == "item" and r["linked_source"] for r in rows)
    # Twelve bookmarks with their pages, a note and a page found alone: fourteen rows.
    everything = await research(ds, q="tokio scheduler", limit="50")
    assert len(everything["evidence"]) == PAIRS + 2
    alone = [r["source_key"] for r in everything["evidence"] if "linked_source" not in r]
    assert sorted(alone) == sorted(
        ["apple-note:tokio", normalize_url("https://example.org/async-runtimes").source_key]
    )


async def test_exact_lookup_keeps_the_page_its_own_row(ds):
    pack = await research(ds, q=PAGE_URL)
    first = pack["evidence"][0]
    assert first["source_key"] == PAGE_KEY and "linked_source" not in first
    assert first["retrieval"]["lanes"][0]["name"] == "exact_lookup"


async def test_sources_only_keeps_pages_as_rows(ds):
    pack = await research(ds, q="tokio scheduler lifo", kind="source")
    assert pack["evidence"][0]["source_key"] == PAGE_KEY
    assert not any("linked_source" in row for row in pack["evidence"])


async def test_rows_matching_some_of_the_words_are_merged_too(ds):
    pack = await research(ds, q="lifo atomics unrelatedword")
    row = pack["evidence"][0]
    assert row["source_key"] == BOOKMARK_KEY
    assert row["linked_source"]["source_key"] == PAGE_KEY
    assert PAGE_KEY not in [r["source_key"] for r in pack["evidence"]]
    # The row holds what its item or its page holds.
    assert row["retrieval"]["matched_terms"] == ["lifo", "atomics"]


async def test_dbrains_order_lists_an_item_and_its_page_as_two_rows(ds):
    pack = await research(ds, q="lifo atomics unrelatedword", ranking="dbrain")
    assert pack["query_plan"]["query_mode"] == "relaxed"
    # dbrain's relaxed fallback: sources, then items; nothing merged.
    assert [r["source_key"] for r in pack["evidence"]] == [PAGE_KEY, BOOKMARK_KEY]
    assert not any("linked_source" in r for r in pack["evidence"])


async def test_the_page_shows_the_linked_page_inside_the_item_row(ds):
    response = await ds.client.get("/-/research", params={"q": "tokio scheduler lifo"})
    html = response.text
    assert response.status_code == 200
    row = html.split(f'data-source-key="{BOOKMARK_KEY}"')[1].split("\n</li>")[0]
    assert f'data-linked-source-key="{PAGE_KEY}"' in row
    assert "linked page" in row and "Making the Tokio scheduler 10x faster" in row
    assert f"<code>{PAGE_KEY}</code>" in row
    assert f'data-source-key="{PAGE_KEY}"' not in html


PROVIDER_WORDS = "As the web tells it, the tokio scheduler keeps a LIFO slot for the last task."


class ScriptedProvider(Provider):
    """Answers every query with the page the bookmark links to."""

    name = "scripted"
    label = "Scripted Web"

    async def search(self, request: Any, ctx: Any) -> list[WebResult]:
        return [
            WebResult(
                url=PAGE_URL + "?utm_source=x",
                title="Tokio scheduler",
                snippet=PROVIDER_WORDS,
                rank=2,
            ),
            WebResult(url="https://elsewhere.example.net/tokio", title="Tokio news", rank=1),
        ]


@contextmanager
def web_ds_for(linked_brain: Path, fake: Any) -> Iterator[Any]:
    with registered(ScriptedProvider()):
        config = base_web_config(fake, providers=["scripted"])
        yield make_datasette([str(linked_brain)], plugin_config=config)


async def test_a_web_hit_for_the_linked_page_credits_the_item_row(linked_brain, fake):
    with web_ds_for(linked_brain, fake) as ds:
        await ds.invoke_startup()
        response = await ds.client.get(
            "/-/research.json",
            params={"q": "tokio scheduler lifo", "external": "always"},
            cookies=actor_cookies(ds, "root"),
        )
    pack = response.json()
    assert pack["evidence"][0]["source_key"] == BOOKMARK_KEY
    assert PAGE_KEY not in [r["source_key"] for r in pack["evidence"]]
    row = pack["evidence"][0]
    assert row["also_found_by"] == ["scripted"]
    lane = row["retrieval"]["lanes"][-1]
    assert (lane["name"], lane["store"], lane["linked_source_key"]) == (
        "external_search",
        "local",
        PAGE_KEY,
    )
    assert row["retrieval"]["signals"][-1]["detail"] == (
        f"also found by Scripted Web (rank 2): its linked page {PAGE_KEY}"
    )
    assert [r["url"] for r in pack["external_evidence"]] == ["https://elsewhere.example.net/tokio"]
    assert "collapsed_onto_local_source" in [d["decision"] for d in pack["merge_decisions"]]


async def test_a_linked_page_dbrain_never_extracted_shows_the_providers_text_inside_it(
    linked_brain, fake
):
    """The web found the bookmark's page, which dbrain has not extracted: the page inside the
    item's row says so and carries the provider's text, badged as the provider's, on the page,
    on the agent tool's row, and in the warning; the item's own text stays the brain's."""
    conn = sqlite3.connect(linked_brain)
    with conn:
        conn.execute("update sources set extract_status = '' where source_key = ?", [PAGE_KEY])
    conn.close()
    params = {"q": "tokio scheduler lifo", "external": "always"}
    with web_ds_for(linked_brain, fake) as ds:
        await ds.invoke_startup()
        cookies = actor_cookies(ds, "root")
        pack = (await ds.client.get("/-/research.json", params=params, cookies=cookies)).json()
        html = (await ds.client.get("/-/research", params=params, cookies=cookies)).text
        compact = await tools.tool_research(
            ds,
            {"id": "root"},
            tools.ResearchQuery("tokio scheduler lifo", external="always"),
            "mcp",
        )
    row = row_for(pack, BOOKMARK_KEY)
    page = row["linked_source"]
    assert "provider_excerpt" not in row and PROVIDER_WORDS not in row["excerpt"]
    assert page["also_found_by"] == ["scripted"] and page["extract_status"] == ""
    assert page["provider_excerpt"]["excerpt_from"] == "scripted"
    assert page["provider_excerpt"]["origin"] == "outside_dbrain_corpus"
    assert page["provider_excerpt"]["text"] == PROVIDER_WORDS
    (warning,) = [w for w in pack["warnings"] if w["code"] == "local_source_needs_extraction"]
    assert warning["source_keys"] == [PAGE_KEY]
    assert "“Making the Tokio scheduler 10x faster”" in warning["message"]

    shown = html.split(f'data-linked-source-key="{PAGE_KEY}"')[1].split("</div>")[0]
    assert "dbrain has not extracted this page yet (extract status: pending)" in shown
    assert "Scripted Web's text, not your brain's</span>" in shown
    assert "<mark>LIFO</mark> slot for the last task" in shown
    assert html.count("slot for the last task") == 1
    row_html = html.split(f'data-source-key="{BOOKMARK_KEY}"')[1]
    details = row_html.split('<details class="dbrain-why">')[1].split("</details>")[0]
    assert "<li>its linked page: 1st best match among your sources</li>" in details
    assert "<li>Scripted Web found its linked page in your brain at rank 2</li>" in details

    agent_row = compact["brain_rows"][0]
    assert agent_row["linked_page"]["key"] == PAGE_KEY
    assert agent_row["linked_page"]["provider_excerpt"]["text"] == PROVIDER_WORDS
    assert agent_row["linked_page"]["provenance"] == display.BRAIN_BADGE


def test_the_command_line_shows_the_linked_page_inside_the_item(linked_brain):
    args = ["dbrain-research", str(linked_brain), "tokio scheduler lifo"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    first = result.output.split("  [1] [item/")[1].split("  [2] ")[0]
    item, page = first.split("linked page in your brain: ")
    assert (
        item.startswith("x] Making the Tokio scheduler ten times faster") and BOOKMARK_KEY in item
    )
    assert page.splitlines()[0] == "Making the Tokio scheduler 10x faster"
    assert page.splitlines()[1].split() == [PAGE_KEY, PAGE_URL]
    assert f"] {PAGE_KEY}" not in result.output  # the page is not a row of its own


class CitesThePageAsync(llm.AsyncModel):
    """Answers with a sentence of the linked page, citing the page's own key."""

    model_id = "dbrain-cites-page"
    can_stream = True

    async def execute(self, prompt, stream, response, conversation=None):
        yield f"Work stealing, a LIFO slot and fewer atomics make it faster [{PAGE_KEY}]."


class CitesThePage(llm.Model):
    model_id = "dbrain-cites-page"

    def execute(self, prompt, stream, response, conversation=None):
        yield "sync models are not used by the plugin"


class PageModels:
    __name__ = "dbrain-cites-page-models"

    @llm.hookimpl
    def register_models(self, register):
        register(CitesThePage(), CitesThePageAsync())


async def test_an_answer_may_cite_the_linked_page(linked_brain):
    plugin = PageModels()
    llm.plugins.pm.register(plugin, name=plugin.__name__)
    try:
        answer = {"synthesizer": "llm", "model": "dbrain-cites-page", "allow": {"id": "root"}}
        ds = make_datasette([str(linked_brain)], plugin_config={"answer": answer})
        await ds.invoke_startup()
        response = await ds.client.get(
            "/-/research.json",
            params={"q": "tokio scheduler lifo", "answer": "1"},
            cookies=actor_cookies(ds, "root"),
        )
    finally:
        llm.plugins.pm.unregister(name=plugin.__name__)
    answer = response.json()["answer"]
    assert answer["status"] == "ok", answer
    assert answer["rejected_citations"] == []
    assert answer["citations"]["local"] == [PAGE_KEY]
    assert answer["sentences"][0]["supported"] is True


async def test_extractive_answer_cites_the_text_that_holds_the_sentence(ds):
    """The bookmark's row shows its linked page: a sentence from the page's text cites the
    page's key (which points at the same row), not the bookmark's."""
    pack = await research(ds, q="tokio scheduler lifo", answer="1")
    answer = pack["answer"]
    row = pack["evidence"][0]
    assert row["source_key"] == BOOKMARK_KEY and row["linked_source"]["source_key"] == PAGE_KEY
    assert answer["citations"]["local"][0] == PAGE_KEY and answer["rejected_citations"] == []
    first = answer["sentences"][0]
    assert "lifo" in first["text"].lower() and first["supported"]


async def test_a_mark_may_name_the_linked_page(ds):
    pack = await research(ds, q="tokio scheduler", limit="10")
    row = pack["evidence"][3]
    cookies, headers, _ = await csrf(ds, actor_cookies(ds, "root"))  # root sees every run whole
    response = await ds.client.post(
        f"/-/research/runs/{pack['run_id']}/feedback",
        json={"feedback": [{"key": row["linked_source"]["source_key"], "value": "relevant"}]},
        cookies=cookies,
        headers=headers,
    )
    assert response.status_code == 200, response.text
    marked = [m for m in response.json()["moves"] if m["mark"]]
    assert [(m["source_key"], m["mark"]) for m in marked] == [(row["source_key"], "relevant")]


async def test_pages_matching_broadly_do_not_push_saved_items_out(tmp_path):
    """Twelve of 100 items and 40 of 50 pages hold the word: the question is far more selective
    among items, so the first ten rows are the items, as in dbrain's own search (plain fusion
    would give the pages every other row and push items 6 to 10 out)."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        for n in range(100):
            words = "zeta lattice" if n < 12 else "ordinary note"
            add_item(conn, f"manual:n{n}", "manual", title=f"Note {n}", text=f"{words} {n}")
        for n in range(50):
            words = "zeta " + "filler " * n if n < 40 else "unrelated page"
            add_source(
                conn,
                f"https://pages.example.com/{n}",
                title=f"Page {n}",
                extracted_text=words,
                extract_status="ok",
            )
    conn.close()
    datasette = make_datasette([str(path)])
    pack = await research(datasette, q="zeta", limit="10")
    assert [r["kind"] for r in pack["evidence"]] == ["item"] * 10
    weights = pack["query_plan"]["retrieval_lanes"][1]["weights"]
    assert weights["items_fts"] == 1.0 and weights["sources_fts"] < 0.5


async def test_rows_holding_every_keyword_come_before_rows_bm25_prefers(tmp_path):
    """A short question is a list of keywords: the note holding all three comes before the one
    holding two, though bm25 prefers the short one that repeats its two. dbrain's own order
    (``ranking: dbrain``) is bm25 alone after its relaxed fallback."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, "manual:two", "manual", title="alpha beta", text="alpha beta " * 5)
        filler = " ".join(f"word{n}" for n in range(300))
        add_item(conn, "manual:three", "manual", title="Notes", text=f"alpha beta gamma {filler}")
        for n in range(20):  # a brain of other notes, so the words are rare
            add_item(conn, f"manual:other{n}", "manual", title=f"Other {n}", text="unrelated")
    conn.close()
    datasette = make_datasette([str(path)])
    pack = await research(datasette, q="alpha beta gamma")
    assert pack["query_plan"]["query_mode"] == "bm25"
    assert [r["source_key"] for r in pack["evidence"]] == ["manual:three", "manual:two"]
    coverage = [
        next(s for s in r["retrieval"]["signals"] if s["name"] == "term_coverage")
        for r in pack["evidence"]
    ]
    assert [c["weight"] for c in coverage] == [1.0, round(2 / 3, 4)]
    assert coverage[0]["detail"].startswith("holds 3 of the question's 3 search terms")
    dbrain = await research(datasette, q="alpha beta gamma delta", ranking="dbrain")
    assert dbrain["query_plan"]["query_mode"] == "relaxed"
    assert [r["source_key"] for r in dbrain["evidence"]] == ["manual:two", "manual:three"]
