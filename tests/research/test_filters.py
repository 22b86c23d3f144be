"""Every filter holds on every row, whichever lane found it (issue 30).

Over the demo brain with its semantic index built as the README builds it, each filter (tag,
source type, kind, since, until) is asked with each lane: exact lookup, BM25 with the semantic
lane, the semantic lane alone (``semantic.min_cosine: 0`` lets meaning bring any row, so only
the filter can keep one out), dbrain's order, dbrain's relaxed fallback and raw FTS5. Every row
shown, and the page an item carries inside it, must pass the filter.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from datasette_dbrain_websearch.config_keys import DEFAULT_EMBEDDING_MODEL
from datasette_dbrain_websearch.demo import build_demo_brain
from datasette_dbrain_websearch.semantic_index import index_brain

from ..helpers import make_datasette

FILTERS = {
    "tag espresso": {"tag": "espresso"},
    "tag hvac": {"tag": "hvac"},
    "source_type github": {"source_type": "github"},
    "source_type github_star": {"source_type": "github_star"},
    "kind item": {"kind": "item"},
    "kind source": {"kind": "source"},
    "since 2026-06-01": {"since": "2026-06-01"},
    "until 2025-12-31": {"until": "2025-12-31"},
}
# (lane, config, request parameters, questions)
LANES = {
    "bm25+semantic": ({}, {}, ["heat pump", "tokio scheduler", "espresso grinder", "sqlite"]),
    "semantic alone": (
        {"semantic": {"min_cosine": 0}},
        {},
        ["heat pump", "tokio scheduler", "coffee mill", "rust async runtime"],
    ),
    "dbrain": ({}, {"ranking": "dbrain"}, ["heat pump", "tokio scheduler", "sqlite"]),
    "dbrain relaxed": ({}, {"ranking": "dbrain"}, ["heat pump zebra", "tokio scheduler zebra"]),
    "raw": ({}, {"syntax": "raw"}, ["heat OR pump", "tokio OR sqlite OR espresso"]),
}


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The demo brain with its semantic index, as ``make demo`` builds them."""
    folder = tmp_path_factory.mktemp("filters")
    path = folder / "brain.db"
    build_demo_brain(path)
    index_brain(path, folder / "research_runs.db", DEFAULT_EMBEDDING_MODEL)
    return path


def passes(row: dict, filters: dict) -> bool:
    """Does a pack row (or a linked page) pass the filter, by its own fields?"""
    date = (row.get("published_at") or row.get("saved_at") or "")[:10]
    if "tag" in filters and filters["tag"] not in row["user_tags"]:
        return False
    if "source_type" in filters and row["source_type"] != filters["source_type"]:
        return False
    if "kind" in filters and row.get("kind", "source") != filters["kind"]:
        return False
    if "since" in filters and not date >= filters["since"]:
        return False
    return not ("until" in filters and not date <= filters["until"])


async def ask(ds, params: dict) -> dict:
    response = await ds.client.get("/-/research.json", params=params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("lane", list(LANES))
async def test_every_filter_holds_on_every_row_of_every_lane(demo, lane):
    config, extra, questions = LANES[lane]
    ds = make_datasette([str(demo)], plugin_config=config)
    shown = 0
    for name, filters in FILTERS.items():
        for question in questions:
            pack = await ask(ds, {"q": question, **extra, **filters})
            for row in pack["evidence"]:
                shown += 1
                assert passes(row, filters), (lane, name, question, row["source_key"])
                if row.get("linked_source"):
                    page = {"kind": "source", **row["linked_source"]}
                    # An item carries its page only when both pass: the row is the item.
                    assert passes(page, filters), (lane, name, question, page["source_key"])
    assert shown, f"{lane}: no filtered question found any row, so nothing was checked"


async def test_the_semantic_lane_brings_rows_a_filter_then_keeps_out(demo):
    """The same questions without a filter show rows found by meaning alone: the filters above
    were what kept the wrong ones out."""
    ds = make_datasette([str(demo)], plugin_config={"semantic": {"min_cosine": 0}})
    pack = await ask(ds, {"q": "sourdough starter", "limit": 30})
    lanes = [lane for row in pack["evidence"] for lane in row["retrieval"]["lanes"]]
    assert any(lane.get("dense_only") for lane in lanes)
    assert any("espresso" not in row["user_tags"] for row in pack["evidence"])
    tagged = await ask(ds, {"q": "sourdough starter", "tag": "espresso", "limit": 30})
    assert tagged["evidence"]
    assert all("espresso" in row["user_tags"] for row in tagged["evidence"])


async def test_an_exact_lookup_of_a_row_the_filter_excludes_finds_nothing(demo):
    ds = make_datasette([str(demo)])
    pack = await ask(ds, {"q": "https://github.com/heatloss/room-by-room"})
    assert pack["evidence"] and pack["judge"]["reason"] == "exact_match"
    key = pack["evidence"][0]["source_key"]
    excluded = await ask(ds, {"q": "https://github.com/heatloss/room-by-room", "tag": "espresso"})
    assert excluded["judge"]["reason"] != "exact_match"
    assert key not in [row["source_key"] for row in excluded["evidence"]]
    assert all("espresso" in row["user_tags"] for row in excluded["evidence"])


@pytest.mark.parametrize(
    ("question", "filters"),
    [
        ("heat pump", {"tag": "espresso"}),
        ("tokio scheduler", {"tag": "hvac"}),
    ],
)
async def test_a_filter_nothing_matches_is_no_evidence_and_no_rows(demo, question, filters):
    ds = make_datasette([str(demo)])
    pack = await ask(ds, {"q": question, **filters})
    assert pack["evidence"] == []
    assert pack["judge"]["verdict"] == "no_evidence"


async def test_an_item_whose_linked_page_alone_passes_shows_the_page(tmp_path, demo):
    """source_type=web: a bookmark item (x_bookmark) linking to a web page matches by its page
    only, so the page is the row, never the item."""
    path = tmp_path / "brain.db"
    shutil.copyfile(demo, path)
    ds = make_datasette([str(path)])
    pack = await ask(ds, {"q": "heat pump", "source_type": "web", "limit": 20})
    assert pack["evidence"]
    assert {row["kind"] for row in pack["evidence"]} == {"source"}
    assert {row["source_type"] for row in pack["evidence"]} == {"web"}


@pytest.mark.parametrize(("name", "code"), [("tag", "bad_tag"), ("source_type", "bad_source_type")])
async def test_many_filter_values_are_a_clear_400_not_sqlites_refusal(demo, name, code):
    """Two thousand tags made SQLite refuse the brain query ("Expression tree is too large"):
    a question filters on at most twenty values of each, told so in words."""
    ds = make_datasette([str(demo)])
    many = [f"t{i}" for i in range(2000)]
    for given in (many, [",".join(many)]):
        response = await ds.client.get(
            "/-/research.json", params=[("q", "espresso"), *((name, v) for v in given)]
        )
        assert (response.status_code, response.json()["code"]) == (400, code)
        assert "up to 20 values" in response.json()["error"]
    twenty = [("q", "espresso"), *((name, f"t{i}") for i in range(20))]
    assert (await ds.client.get("/-/research.json", params=twenty)).status_code == 200
