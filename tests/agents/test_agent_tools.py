"""The research tools in datasette-agent (Datasette 1.0a only: it cannot install on 0.65).

Driven through the agent's own plumbing: its chat endpoints, with llm-echo as the model (a
prompt that is JSON with ``tool_calls`` makes it call those tools, and its next reply shows the
tool output exactly as the model received it), its ``ask_user`` questions answered through the
question endpoint, and ``execute_agent_tool`` for calls that must fail before anyone is asked.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from datasette_dbrain_websearch.permissions import PROMOTE, RESEARCH

from ..helpers import DATASETTE_1, actor_cookies, db_rows, make_datasette, web_config

pytestmark = pytest.mark.skipif(not DATASETTE_1, reason="datasette-agent needs Datasette 1.0a")
agent_tools = pytest.importorskip("datasette_agent.tools")

QUESTION = "lattice qcd"
FIXTURE_SOURCES = 4


async def agent_ds(brain, fake, permissions: dict[str, Any] | None = None) -> Any:
    grants = {
        "datasette-agent": {"id": ["root", "alice"]},
        "dbrain-promote": {"id": ["root", "alice"]},
    }
    ds = make_datasette(
        [str(brain[0])],
        plugin_config=web_config(fake),
        permissions=permissions or grants,
        other_plugins={"datasette-llm": {"purposes": {"agent": {"model": "echo"}}}},
    )
    await ds.invoke_startup()
    return ds


def sse(text: str) -> list[tuple[str, Any]]:
    """The (event, data) pairs of an SSE body."""
    found = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            found.append((lines["event"], json.loads(lines["data"])))
    return found


class Chat:
    """One conversation with the agent, as ``actor_id``, in which echo calls our tools."""

    def __init__(self, ds: Any, actor_id: str) -> None:
        self.ds, self.cookies = ds, actor_cookies(ds, actor_id)
        self.id = ""

    async def start(self) -> Chat:
        response = await self.ds.client.post("/-/agent/api/conversations", cookies=self.cookies)
        self.id = response.json()["conversation_id"]
        return self

    async def call(self, tool: str, **arguments: Any) -> list[tuple[str, Any]]:
        message = json.dumps({"tool_calls": [{"name": tool, "arguments": arguments}]})
        response = await self.ds.client.post(
            f"/-/agent/{self.id}/stream", json={"message": message}, cookies=self.cookies
        )
        assert response.status_code == 200, response.text
        return sse(response.text)

    async def answer(self, question_id: str, answer: Any) -> list[tuple[str, Any]]:
        response = await self.ds.client.post(
            f"/-/agent/{self.id}/question/{question_id}",
            json={"answer": answer},
            cookies=self.cookies,
        )
        assert response.status_code == 200, response.text
        return sse(response.text)


def tool_output(events: list[tuple[str, Any]]) -> dict[str, Any]:
    (output,) = [data["output"] for event, data in events if event == "tool_result"]
    return json.loads(output)


def seen_by_model(events: list[tuple[str, Any]]) -> dict[str, Any]:
    """The tool output as the model received it (echo replies with its tool results)."""
    for event, data in events:
        if event == "text_chunk" and '"tool_results"' in data["content"]:
            (result,) = json.loads(data["content"])["tool_results"]
            return json.loads(result["output"])
    raise AssertionError("the model was never given a tool result")


def sources_at(brain, key: str) -> list[tuple[str, str]]:
    sql = "select source_key, title from sources where source_key = ?"
    return [(r["source_key"], r["title"]) for r in db_rows(brain[0], sql, [key])]


def source_count(brain) -> int:
    (row,) = db_rows(brain[0], "select count(*) as n from sources")
    return row["n"]


def surface_of(brain, run_id: str) -> tuple[str, str]:
    sql = "select surface, actor_id from dbrain_websearch_runs where run_id = ?"
    (row,) = db_rows(brain[0].parent / "research_runs.db", sql, [run_id])
    return (row["surface"], row["actor_id"])


async def web_run(ds: Any) -> tuple[Chat, dict[str, Any]]:
    chat = await Chat(ds, "root").start()
    output = tool_output(await chat.call("dbrain_research", question=QUESTION, external="always"))
    assert output["ok"] and output["web_rows"], output
    return chat, output


async def test_tools_carry_their_permissions(brain, fake):
    ds = await agent_ds(brain, fake)
    tools = {t.name: t for t in await agent_tools.get_agent_tools(ds)}
    assert tools["dbrain_research"].required_permission == RESEARCH
    assert tools["dbrain_get_source"].required_permission == RESEARCH
    assert tools["dbrain_promote"].required_permission == PROMOTE
    assert tools["dbrain_research"].input_schema["properties"]["external"]["default"] == "never"

    async def offered(actor: dict | None) -> set[str]:
        kept = await agent_tools.filter_tools_for_actor(ds, actor, list(tools.values()))
        return {t.name for t in kept}

    dbrain = {"dbrain_research", "dbrain_get_source", "dbrain_promote"}
    assert dbrain <= await offered({"id": "alice"})
    assert await offered({"id": "bob"}) & dbrain == {"dbrain_research", "dbrain_get_source"}
    assert await offered(None) & dbrain == {"dbrain_research", "dbrain_get_source"}
    closed = await agent_ds(brain, fake, {"dbrain-research": False})
    kept = await agent_tools.filter_tools_for_actor(closed, {"id": "alice"}, list(tools.values()))
    assert not {t.name for t in kept} & dbrain


async def test_research_rows_reach_the_model_with_their_origin(brain, fake):
    ds = await agent_ds(brain, fake)
    chat, output = await web_run(ds)
    assert fake.requests  # root may search the web
    for row in output["web_rows"]:
        assert (row["origin"], row["store"]) == ("outside_dbrain_corpus", "ephemeral")
        assert row["provenance"].startswith("Outside dbrain corpus / Brave / ephemeral")
    assert surface_of(brain, output["run_id"]) == ("agent", "root")
    # What the model is given: the same rows, each still saying where it comes from.
    events = await chat.call("dbrain_research", question="espresso", kind="source")
    model = seen_by_model(events)
    assert model["brain_rows"] and model["web_rows"] == []
    assert {r["origin"] for r in model["brain_rows"]} == {"dbrain_corpus"}
    assert {r["provenance"] for r in model["brain_rows"]} == {"Your dbrain brain"}


async def test_a_web_search_the_actor_may_not_make_is_refused(brain, fake):
    ds = await agent_ds(brain, fake)
    chat = await Chat(ds, "alice").start()
    output = tool_output(await chat.call("dbrain_research", question=QUESTION, external="always"))
    assert output["ok"] is False and output["code"] == "external_search_not_permitted"
    assert "dbrain-external-search" in output["error"]
    assert fake.requests == []


async def test_the_agent_chooses_the_provider_and_freshness(brain, fake):
    ds = await agent_ds(brain, fake)
    chat = await Chat(ds, "root").start()
    tools = {t.name: t for t in await agent_tools.get_agent_tools(ds)}
    schema = tools["dbrain_research"].input_schema["properties"]
    assert schema["providers"]["type"] == "array" and "freshness" in schema
    output = tool_output(
        await chat.call("dbrain_research", question=QUESTION, external="always", providers=["bing"])
    )
    assert (output["ok"], output["code"]) == (False, "unknown_provider")
    assert fake.requests == []
    output = tool_output(
        await chat.call(
            "dbrain_research",
            question=QUESTION,
            external="always",
            providers=["brave"],
            freshness="2026-01-01to2026-06-30",
        )
    )
    assert output["ok"] and output["web"]["providers"] == ["Brave"], output
    (request,) = fake.requests
    assert request.query["freshness"] == ["2026-01-01to2026-06-30"]


async def test_promotion_asks_first_and_writes_only_when_approved(brain, fake):
    ds = await agent_ds(brain, fake)
    chat, run = await web_run(ds)
    row = run["web_rows"][0]
    events = await chat.call("dbrain_promote", run_id=run["run_id"], keys=[row["key"]])
    (question,) = [data for event, data in events if event == "question"]
    assert question["tool_name"] == "dbrain_promote" and question["question_type"] == "boolean"
    assert question["prompt"] == "Add 1 web result to your brain 'brain' as dbrain sources?"
    assert row["url"] in question["html"] and "Brave" in question["html"]
    assert ("done", {"question_pending": True}) in events
    assert source_count(brain) == FIXTURE_SOURCES  # nothing before the answer
    output = tool_output(await chat.answer(question["id"], True))
    (result,) = output["results"]
    assert (result["key"], result["status"]) == (row["key"], "created")
    local_key = result["local_source_key"]
    assert sources_at(brain, local_key) == [(local_key, row["title"])]
    assert source_count(brain) == FIXTURE_SOURCES + 1
    assert result["row_url"].startswith("/brain/sources/")


async def test_the_agent_keeps_pages_with_tags_and_a_note(brain, fake):
    ds = await agent_ds(brain, fake)
    chat, run = await web_run(ds)
    row = run["web_rows"][0]
    events = await chat.call(
        "dbrain_promote",
        run_id=run["run_id"],
        keys=[row["key"]],
        tags=["Physics"],
        note="for the reading group",
    )
    (question,) = [data for event, data in events if event == "question"]
    assert question["prompt"] == (
        "Add 1 web result to your brain 'brain' as dbrain sources, tagged physics, with your "
        "note: “for the reading group”?"
    )
    output = tool_output(await chat.answer(question["id"], True))
    (result,) = output["results"]
    assert "Tags: physics." in result["message"] and "Your note is manual:" in result["message"]
    (tags,) = (
        sqlite3.connect(brain[0])
        .execute("select user_tags from sources where source_key = ?", [result["local_source_key"]])
        .fetchone()
    )
    assert tags == "physics"


async def test_declined_promotion_writes_nothing(brain, fake):
    ds = await agent_ds(brain, fake)
    chat, run = await web_run(ds)
    events = await chat.call(
        "dbrain_promote", run_id=run["run_id"], keys=[run["web_rows"][0]["key"]]
    )
    (question,) = [data for event, data in events if event == "question"]
    output = tool_output(await chat.answer(question["id"], False))
    assert output["ok"] is False and output["declined"] is True
    assert "nothing was written" in output["error"]
    assert source_count(brain) == FIXTURE_SOURCES


@pytest.mark.parametrize(
    ("actor_id", "keys", "code"),
    [
        ("alice", None, "no_such_run"),  # allowed to promote, but the run is root's
        ("bob", None, "forbidden"),  # the same run, without dbrain-promote
        ("root", ["ext:brave:000000000000"], "not_in_run"),
        ("root", ["src:000000000000"], "not_in_run"),
    ],
)
async def test_promotion_refusals_ask_nobody(brain, fake, actor_id, keys, code):
    ds = await agent_ds(brain, fake)
    _, run = await web_run(ds)
    tool = {t.name: t for t in await agent_tools.get_agent_tools(ds)}["dbrain_promote"]
    asked: list[dict] = []
    output = await agent_tools.execute_agent_tool(
        tool,
        ds,
        {"id": actor_id},
        arguments={"run_id": run["run_id"], "keys": keys or [run["web_rows"][0]["key"]]},
        ask_user_callback=asked.append,
    )
    assert json.loads(output)["code"] == code
    assert asked == []
