"""The research tools over MCP: the SDK's Streamable HTTP client against a real
``datasette serve`` with datasette-mcp (its session manager starts in the ASGI lifespan, which
``datasette.client`` does not run), with web search pointed at the offline fake providers.

Actors come from the ``ds_actor`` cookie, as for any Datasette request: root may search the web
(``external_search.allow``), alice and bob may only research the brain.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from datasette.app import Datasette

from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.tools.schemas import PARAMETERS
from datasette_dbrain_websearch.tools.shapes import trimmed_texts
from datasette_dbrain_websearch.urls import normalize_url

from ..browser import SECRET, serve
from ..helpers import (
    BRAVE_KEY,
    SOURCE_URLS,
    build_fixture_brain,
    db_rows,
    make_datasette,
    web_config,
)

pytest.importorskip("datasette_mcp")
httpx2 = pytest.importorskip("httpx2")
Client = pytest.importorskip("mcp").Client
mcp_client = pytest.importorskip("mcp.client.streamable_http")

WEB_QUESTION = "lattice qcd"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp")
    brain = tmp / "brain.db"
    ids = build_fixture_brain(brain)
    with FakeWeb(brave_keys=(BRAVE_KEY,)) as fake:
        config = {
            "plugins": {"datasette-dbrain-websearch": web_config(fake)},
            # On 1.0 root holds only what it is granted; 0.65 grants root promotion itself.
            "permissions": {"dbrain-promote": {"id": "root"}},
        }
        with serve(brain, tmp, config, {"TEST_BRAVE_KEY": BRAVE_KEY}) as running:
            yield {**running, "fake": fake, "runs": tmp / "research_runs.db", "ids": ids}


def cookie(actor_id: str) -> str:
    return Datasette([], secret=SECRET).sign({"a": {"id": actor_id}}, "actor")


@asynccontextmanager
async def connected(server: dict[str, Any], actor_id: str | None = None) -> AsyncIterator[Any]:
    """An MCP session over Streamable HTTP, signed in as ``actor_id`` (anonymous: None)."""
    cookies = {"ds_actor": cookie(actor_id)} if actor_id else {}
    async with httpx2.AsyncClient(cookies=cookies, timeout=60) as http:
        transport = mcp_client.streamable_http_client(server["url"] + "/-/mcp", http_client=http)
        async with Client(transport) as client:
            yield client


async def call(server: dict[str, Any], actor_id: str | None, tool: str, **arguments: Any) -> Any:
    async with connected(server, actor_id) as client:
        return await client.call_tool(tool, arguments)


def error_text(result: Any) -> str:
    assert result.is_error, result
    return " ".join(c.text for c in result.content)


def saved_run(server: dict[str, Any], run_id: str) -> tuple[str, str] | None:
    sql = "select surface, actor_id from dbrain_websearch_runs where run_id = ?"
    return next((tuple(r.values()) for r in db_rows(server["runs"], sql, [run_id])), None)


def run_count(server: dict[str, Any]) -> int:
    (row,) = db_rows(server["runs"], "select count(*) as n from dbrain_websearch_runs")
    return row["n"]


def get_status(url: str, actor_id: str) -> int:
    request = urllib.request.Request(url, headers={"Cookie": f"ds_actor={cookie(actor_id)}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_lists_the_tools_with_their_annotations_and_schema(server):
    async with connected(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    research, source = tools["dbrain_research"], tools["dbrain_get_source"]
    assert "execute_sql" in tools  # datasette-mcp's own tools are still there
    assert research.annotations.read_only_hint is True
    # Web search is enabled in this config, so some calls of the tool may reach the web.
    assert research.annotations.open_world_hint is True
    assert source.annotations.read_only_hint is True
    assert source.annotations.open_world_hint is False
    schema = research.input_schema
    assert set(schema["properties"]) == set(PARAMETERS)
    assert schema["required"] == ["question"]
    assert schema["properties"]["external"]["enum"] == ["never", "on_weak", "always"]
    assert schema["properties"]["external"]["default"] == "never"
    assert schema["properties"]["providers"]["anyOf"][0]["type"] == "array"
    assert "pd, pw, pm" in schema["properties"]["freshness"]["description"]
    assert "never touches the web" in research.description
    assert "through Brave" in research.description
    assert source.input_schema["required"] == ["key"]


async def test_local_research_is_saved_as_an_mcp_run_of_its_actor(server):
    before = len(server["fake"].requests)
    result = await call(server, "alice", "dbrain_research", question="sqlite fts5", limit=5)
    assert not result.is_error, result
    pack = result.structured_content
    assert json.loads(result.content[0].text) == pack
    assert pack["ok"] and pack["web"] == {
        "mode": "never",
        "searched": False,
        "providers": [],
        "skipped_reason": "mode_never",
    }
    assert pack["brain_rows"] and pack["web_rows"] == [] and pack["counts"]["web"] == 0
    assert [r["n"] for r in pack["brain_rows"]] == list(range(1, len(pack["brain_rows"]) + 1))
    for row in pack["brain_rows"]:
        assert (row["origin"], row["provenance"]) == ("dbrain_corpus", "Your dbrain brain")
        assert row["row_url"].startswith(server["url"] + "/brain/")
        assert "store" not in row and "providers" not in row
    assert pack["verdict"]["verdict"] in ("enough_evidence", "weak_evidence")
    assert "answer" not in pack
    assert len(server["fake"].requests) == before  # the web was never asked
    assert saved_run(server, pack["run_id"]) == ("mcp", "alice")
    trace_url = pack["trace_url"]
    assert trace_url == f"{server['url']}/-/research/runs/{pack['run_id']}"
    assert get_status(trace_url + ".json", "alice") == 200
    assert get_status(trace_url + ".json", "bob") == 404  # one person's runs are theirs


async def test_web_research_badges_every_web_row(server):
    before = len(server["fake"].requests)
    result = await call(
        server, "root", "dbrain_research", question=WEB_QUESTION, external="always", answer=True
    )
    assert not result.is_error, result
    pack = result.structured_content
    assert len(server["fake"].requests) > before
    assert pack["web"]["searched"] and pack["web"]["providers"] == ["Brave"]
    web_rows = pack["web_rows"]
    assert web_rows and len(web_rows) == pack["counts"]["web"]
    for row in web_rows:
        assert row["origin"] == "outside_dbrain_corpus"
        assert row["key"].startswith("ext:brave:")
        assert (row["store"], row["providers"], row["kind"]) == ("ephemeral", ["Brave"], "external")
        assert row["provenance"].startswith("Outside dbrain corpus / Brave / ephemeral")
        assert "row_url" not in row  # not a row of the brain
    for row in pack["brain_rows"]:
        assert row["origin"] == "dbrain_corpus" and row["provenance"] == "Your dbrain brain"
        assert "store" not in row
    rows = pack["brain_rows"] + web_rows
    assert sorted(r["n"] for r in rows) == list(range(1, len(rows) + 1))  # one reading order
    # The answer's citations are verified keys of this run, split by origin.
    answer = pack["answer"]
    assert answer["status"] == "ok" and answer["sentences"]
    keys = {r["key"] for r in rows}
    cited = {k for s in answer["sentences"] for k in s["citations"]}
    assert cited and cited <= keys
    assert set(answer["citations"]["external"]) <= {r["key"] for r in web_rows}
    assert BRAVE_KEY not in result.content[0].text
    assert saved_run(server, pack["run_id"]) == ("mcp", "root")


async def test_a_run_comes_back_as_markdown_when_asked(server):
    result = await call(
        server,
        "root",
        "dbrain_research",
        question=WEB_QUESTION,
        external="always",
        answer=True,
        export="markdown",
    )
    assert not result.is_error, result
    pack = result.structured_content
    text = pack["markdown"]
    assert text.startswith(f"# {WEB_QUESTION}\n") and "## From the web" in text
    assert f"{server['url']}/-/research/runs/{pack['run_id']}" in text  # links work elsewhere
    assert "[W1] **" in text and "Outside dbrain corpus / Brave / ephemeral" in text
    plain = await call(server, "root", "dbrain_research", question=WEB_QUESTION)
    assert "markdown" not in plain.structured_content


async def test_kept_pages_are_written_with_their_tags_and_note(server):
    found = await call(server, "root", "dbrain_research", question=WEB_QUESTION, external="always")
    run = found.structured_content
    key = run["web_rows"][1]["key"]
    refused = await call(server, "alice", "dbrain_promote", run_id=run["run_id"], keys=[key])
    assert refused.is_error and "dbrain-promote" in refused.content[0].text
    result = await call(
        server,
        "root",
        "dbrain_promote",
        run_id=run["run_id"],
        keys=[key],
        tags=["Physics"],
        note="for the reading group",
    )
    assert not result.is_error, result
    (kept,) = result.structured_content["results"]
    assert kept["status"] == "created" and kept["tags"] == "physics"
    assert kept["note_key"].startswith("manual:")
    assert kept["row_url"].startswith(f"{server['url']}/brain/sources/")
    (tags,) = db_rows(
        server["brain"],
        "select user_tags from sources where source_key = ?",
        [kept["local_source_key"]],
    )
    assert tags == {"user_tags": "physics"}


async def test_sites_narrow_the_web_search(server):
    before = len(server["fake"].requests)
    result = await call(
        server,
        "root",
        "dbrain_research",
        question=WEB_QUESTION,
        external="always",
        sites=["arxiv.org"],
        not_sites=["wikipedia.org"],
    )
    assert not result.is_error, result
    (request,) = server["fake"].requests[before:]
    assert request.query["q"] == [f"{WEB_QUESTION} site:arxiv.org -site:wikipedia.org"]
    web_rows = result.structured_content["web_rows"]
    assert web_rows and all(r["url"].startswith("https://arxiv.org/") for r in web_rows)


async def test_the_caller_chooses_the_provider_and_freshness(server):
    before = len(server["fake"].requests)
    result = await call(
        server,
        "root",
        "dbrain_research",
        question=WEB_QUESTION,
        external="always",
        providers=["brave"],
        freshness="pw",
    )
    assert not result.is_error, result
    (request,) = server["fake"].requests[before:]
    assert (request.provider, request.query["freshness"]) == ("brave", ["pw"])
    assert result.structured_content["web"]["providers"] == ["Brave"]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({"providers": ["bing"]}, "Unknown provider bing; this Datasette offers brave"),
        ({"freshness": "yesterday"}, "freshness must be pd, pw, pm, py"),
    ],
)
async def test_a_provider_or_freshness_the_api_refuses_is_an_error(server, arguments, said):
    before, runs = len(server["fake"].requests), run_count(server)
    result = await call(
        server, "root", "dbrain_research", question=WEB_QUESTION, external="always", **arguments
    )
    assert said in error_text(result)
    assert len(server["fake"].requests) == before and run_count(server) == runs


async def test_choosing_a_provider_does_not_open_the_web(server):
    before = len(server["fake"].requests)
    result = await call(
        server,
        "alice",
        "dbrain_research",
        question=WEB_QUESTION,
        external="always",
        providers=["brave"],
        freshness="pd",
    )
    assert "external_search_not_permitted" in error_text(result)
    result = await call(
        server, "root", "dbrain_research", question=WEB_QUESTION, providers=["brave"]
    )
    assert not result.is_error and result.structured_content["web"]["searched"] is False
    assert len(server["fake"].requests) == before


@pytest.mark.parametrize(
    ("actor_id", "external", "said"),
    [
        ("alice", "always", "Your account (alice) is not allowed dbrain-external-search"),
        (None, "on_weak", "You are not signed in, and searching the web needs an account"),
    ],
)
async def test_a_web_search_the_actor_may_not_make_is_an_error(server, actor_id, external, said):
    before, runs = len(server["fake"].requests), run_count(server)
    result = await call(
        server, actor_id, "dbrain_research", question=WEB_QUESTION, external=external
    )
    text = error_text(result)
    assert said in text
    assert "dbrain-external-search" in text and "external_search_not_permitted" in text
    assert "external='never'" in text
    assert len(server["fake"].requests) == before and run_count(server) == runs


async def test_refusals_and_bad_arguments_are_errors(server):
    result = await call(server, "alice", "dbrain_research", question="x", database="elsewhere")
    assert "Unknown brain 'elsewhere'; choose one of: brain." in error_text(result)
    result = await call(server, "alice", "dbrain_research", question="x", since="2026-02-30")
    assert "bad_date" in error_text(result)
    result = await call(server, "alice", "dbrain_research", question="x", external="sometimes")
    assert result.is_error  # the schema's enum


async def test_get_source_returns_one_brain_row_with_its_text(server):
    research = await call(server, "alice", "dbrain_research", question="espresso guide")
    rows = research.structured_content["brain_rows"]
    key = next(r["key"] for r in rows if r["kind"] == "source")
    result = await call(server, "alice", "dbrain_get_source", key=key)
    assert not result.is_error, result
    row = result.structured_content
    assert (row["key"], row["kind"], row["origin"]) == (key, "source", "dbrain_corpus")
    assert key == server["ids"]["src_espresso_key"]
    assert row["url"] == normalize_url(SOURCE_URLS["src_espresso"]).canonical_url
    assert row["title"] == "A home espresso guide"
    assert row["row_url"].startswith(server["url"] + "/brain/sources/")
    (text,) = row["texts"]
    assert (text["field"], text["role"]) == ("extracted_text", "raw_extract_window")
    assert text["text"].startswith("Dial in espresso") and not row["truncated"]
    item = await call(server, None, "dbrain_get_source", key="apple-note:espresso-1")
    assert item.structured_content["kind"] == "item"
    assert item.structured_content["note_path"] == "notes/espresso-grinder-notes.md"


async def test_get_source_refuses_web_keys_and_unknown_keys(server):
    result = await call(server, "alice", "dbrain_get_source", key="ext:brave:0123456789ab")
    assert "not a row of the brain" in error_text(result)
    result = await call(server, "alice", "dbrain_get_source", key="src:ffffffffffff")
    assert "No row with the key 'src:ffffffffffff' in brain." in error_text(result)


async def test_web_search_turned_off_closes_the_world(brain, fake, with_mcp):
    """With web search off in the config no call can reach the web: the hint says so, and a
    call that asks for the web is refused with that reason (in-process server, same tools)."""
    import datasette_mcp

    ds = make_datasette([str(brain[0])], plugin_config=web_config(fake, enabled=False))
    await ds.invoke_startup()
    async with Client(datasette_mcp._get_state(ds).server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["dbrain_research"].annotations.open_world_hint is False
        assert "Web search is turned off" in tools["dbrain_research"].description
        result = await client.call_tool(
            "dbrain_research", {"question": WEB_QUESTION, "external": "always"}
        )
    assert "external_search_disabled" in error_text(result)
    assert fake.requests == []


def test_the_plugin_imports_without_mcp_or_the_agent():
    """Neither integration is a dependency: blocked imports of both leave the plugin whole."""
    code = (
        "import sys\n"
        "for name in ('mcp', 'datasette_mcp', 'datasette_agent'):\n"
        "    sys.modules[name] = None\n"
        "import datasette_dbrain_websearch, datasette_dbrain_websearch.tools.schemas as t\n"
        "import datasette_dbrain_websearch.tools.mcp, datasette_dbrain_websearch.tools.agent\n"
        "print(t.RESEARCH_SCHEMA['required'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['question']"


def test_source_texts_share_one_budget_and_end_at_a_word():
    """dbrain_get_source's trimming: summary first, repeats dropped, cut at a word boundary."""
    words = "lorem ipsum dolor " * 50
    texts = trimmed_texts(
        [
            ("summary_text", "derived_summary", "A summary."),
            ("extracted_text", "raw_extract_window", words),
            ("description", "excerpt", "A summary."),
            ("text", "raw_item_window", "never reached"),
        ],
        100,
    )
    assert [t["field"] for t in texts] == ["summary_text", "extracted_text", "text"]
    summary, extract, rest = texts
    assert (summary["text"], summary["truncated"]) == ("A summary.", False)
    assert extract["truncated"] and extract["chars"] == len(words.strip())
    assert len(extract["text"]) <= 90 and words.startswith(extract["text"] + " ")
    assert (rest["text"], rest["truncated"]) == ("", True)


def test_both_tools_build_the_query_from_their_arguments():
    """MCP's and the agent's research tools hand their arguments (``locals()``) to one
    constructor: lists left out are empty, names that are not the query's are ignored."""
    from datasette_dbrain_websearch.config import Settings
    from datasette_dbrain_websearch.tools.calls import ResearchQuery

    query = ResearchQuery.from_call(
        {"ctx": object(), "question": "tokio", "tags": None, "sites": ["a.example"], "limit": 3}
    )
    assert query == ResearchQuery("tokio", limit=3, sites=("a.example",))
    settings = Settings.from_config({"external_search": {"providers": ["exa"]}})
    request = query.request(settings)
    assert request.web.sites == ("a.example",) and request.filters.tags == ()
    assert request.web.providers == () and request.web.freshness == settings.web.freshness
    chosen = ResearchQuery.from_call({"question": "q", "providers": ["exa"], "freshness": "pm"})
    request = chosen.request(settings)
    assert (request.web.providers, request.web.freshness) == (("exa",), "pm")


def test_a_tool_call_is_the_request_the_page_would_make():
    """A tool builds its request from typed arguments, the page from a query string; both go
    through ``checked_request``, so the same choices make the same request, and the same
    mistake the same error."""
    from datasette_dbrain_websearch.config import Settings
    from datasette_dbrain_websearch.errors import ResearchError
    from datasette_dbrain_websearch.options import request_from_params
    from datasette_dbrain_websearch.tools.calls import ResearchQuery

    settings = Settings.from_config({"external_search": {"providers": ["exa"]}})
    query = ResearchQuery(
        " Tokio\x00 scheduler ",
        limit=4,
        kind="source",
        tags=("Rust,async",),
        since="2025-01-01",
        external="always",
        providers=("exa",),
        read=0,
        sites=("https://docs.rs/tokio",),
        answer=True,
        depth="deep",
    )
    params = {
        "q": [" Tokio\x00 scheduler "],
        "limit": ["4"],
        "kind": ["source"],
        "tag": ["Rust,async"],
        "since": ["2025-01-01"],
        "external": ["always"],
        "provider": ["exa"],
        "read": ["0"],
        "site": ["https://docs.rs/tokio"],
        "answer": ["1"],
        "depth": ["deep"],
    }
    assert query.request(settings) == request_from_params(params, settings)
    for bad_query, bad_params in (
        (ResearchQuery("q", limit=0), {"q": ["q"], "limit": ["0"]}),
        (ResearchQuery("q", since="2026-02-30"), {"q": ["q"], "since": ["2026-02-30"]}),
        (ResearchQuery("", depth="wide"), {"depth": ["wide"]}),
    ):
        with pytest.raises(ResearchError) as typed:
            bad_query.request(settings)
        with pytest.raises(ResearchError) as parsed:
            request_from_params(bad_params, settings)
        assert (typed.value.code, typed.value.message) == (
            parsed.value.code,
            parsed.value.message,
        )
