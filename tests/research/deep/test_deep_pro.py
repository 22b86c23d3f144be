"""``strategy=pro`` (issue 32 part 4): a fake model proposes each deep round; the runtime
checks every proposal, records it, refuses what the budgets or the known results do not
allow, falls back to the deterministic loop on anything that is not a step, and the model's
claims are kept only where they cite keys the run retrieved. No real model is ever asked."""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Any

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch.answer.claims import parse_claims
from datasette_dbrain_websearch.answer.verify import RunKeys
from datasette_dbrain_websearch.deep_pro import (
    ALREADY_READ,
    BRAIN_WORDS,
    DOMAIN_POLICY,
    NOT_PUBLIC,
    OVER_BUDGET,
    REPEATED,
    SEARCH,
    UNKNOWN_URL,
    InvalidStep,
    Known,
    Step,
    brain_only,
    parse_step,
    refusal,
)
from datasette_dbrain_websearch.deep_pro_rounds import FALLBACK
from datasette_dbrain_websearch.deep_rounds import ANSWERED, NO_PROGRESS
from datasette_dbrain_websearch.merge import DomainPolicy
from datasette_dbrain_websearch.tools.agent import agent_research

from ...fake_models import INVENTED, FakeAsync, fake_models, step
from ...helpers import actor_cookies, add_source, make_datasette
from .film import CROSS_SITE, ODUYA_URL, QUESTION, reads, web_config, web_row

ODUYA = "Marguerite Oduya"
NOT_READ = re.compile(r"^- (\S+) \(not read\)", re.M)


@pytest.fixture
def models():
    with fake_models():
        yield


def pro_config(
    fake, model: str = "dbrain-fake-pro", model_allow: Any = None, **config: Any
) -> dict[str, Any]:
    """The film's web and the fake model as the answer's, allowed to root (or ``model_allow``);
    answers are extractive unless a pro run's model writes them."""
    allowed = model_allow if model_allow is not None else {"id": "root"}
    answer = {"synthesizer": "extractive", "model": model, "allow": allowed}
    return {**web_config(fake, **config), "answer": answer}


async def pro_ds(brain, fake, **config: Any):
    ds = make_datasette([str(brain)], plugin_config=pro_config(fake, **config))
    await ds.invoke_startup()
    return ds


async def research(ds, actor: str | None = "root", headers=None, **params: str) -> dict:
    response = await ds.client.get(
        "/-/research.json",
        params={"q": QUESTION, "external": "always", "answer": "1", "strategy": "pro", **params},
        cookies=actor_cookies(ds, actor) if actor else {},
        headers=headers or {},
    )
    assert response.status_code == 200, response.text
    return response.json()


def warnings(pack: dict[str, Any]) -> list[str]:
    return [w["code"] for w in pack["warnings"]]


def model_queries(pack: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        q for r in pack["research"]["rounds"] for q in r["queries"] if q["proposed_by"] == "model"
    ]


# ---------------------------------------------------------------------------------------------
# Through the JSON API


async def test_a_valid_plan_is_run_recorded_and_answered_in_claims(film_brain, web, models):
    FakeAsync.steps = [
        step("search", query=ODUYA, why="the film's director"),
        step("stop", why="both parts are covered"),
    ]
    ds = await pro_ds(film_brain, web)
    pack = await research(ds)
    research_ = pack["research"]
    assert (research_["depth"], research_["strategy"]) == ("deep", "pro")
    assert [(p["action"], p["status"]) for p in research_["proposals"]] == [
        ("search", "accepted"),
        ("stop", "stop"),
    ]
    (asked,) = model_queries(pack)
    assert (asked["query"], asked["why"], asked["reason"]) == (
        ODUYA,
        "the film's director",
        "search",
    )
    assert asked["searched_web"] and asked["added"] >= 1
    assert research_["stop_reason"] == ANSWERED
    assert FALLBACK not in warnings(pack)
    # The page the model's search found was read, and the model's claims cite it.
    row = web_row(pack, ODUYA_URL)
    assert row is not None and row["depth"] == "page"
    answer = pack["answer"]
    assert answer["synthesizer"] == "llm:dbrain-fake-pro"
    assert row["source_key"] in answer["citations"]["external"] and answer["citations"]["local"]
    # The first claims had an invented key and a keyless claim: one repair turn fixed them.
    assert answer["evidence"]["claims"] == {"turns": 2, "problems": []}
    assert FakeAsync.calls == ["step", "step", "claims", "claims"]
    trace = (
        await ds.client.get(
            f"/-/research/runs/{pack['run_id']}.json", cookies=actor_cookies(ds, "root")
        )
    ).json()
    proposals = [e["data"] for e in trace["events"] if e["name"] == "deep_proposal"]
    assert [p["status"] for p in proposals] == ["accepted", "stop"]
    assert all(p["proposed_by"] == "model" for p in proposals)


async def test_a_read_of_a_known_result_reads_that_page(film_brain, web, models):
    def read_first_unread(prompt: str) -> str:
        return step("read", url=NOT_READ.findall(prompt)[0], why="its snippet looks relevant")

    FakeAsync.steps = [read_first_unread]
    ds = await pro_ds(film_brain, web, deep_budgets={"reads": 2})
    pack = await research(ds)
    (asked,) = model_queries(pack)
    assert asked["reason"] == "read" and asked["added"] == 1
    row = web_row(pack, asked["query"])
    assert row is not None and row["depth"] == "page"
    assert f"/reader/{asked['query']}" in [r.path for r in reads(web)]
    assert any("model's proposal" in s["detail"] for s in row["retrieval"]["signals"])
    assert pack["research"]["spent"]["reads"] == len(reads(web)) <= 2


async def test_claims_that_keep_their_mistakes_are_dropped_after_one_repair(
    film_brain, web, models
):
    FakeAsync.steps = [step("stop", why="enough")]
    ds = await pro_ds(film_brain, web, model="dbrain-fake-pro-stubborn")
    pack = await research(ds)
    answer = pack["answer"]
    assert answer["evidence"]["claims"]["turns"] == 2  # never a third
    assert FakeAsync.calls.count("claims") == 2
    assert INVENTED in [r["key"] for r in answer["rejected_citations"]]
    assert INVENTED not in answer["text"] and "green cheese" not in answer["text"]
    removed = [s["text"] for s in answer["removed_sentences"]]
    assert any("green cheese" in t for t in removed)
    # What is left names the director, not where she was born: no answer (issue 41), its
    # sentences kept as removed, and nothing cited.
    assert answer["status"] == "not_answered" and answer["sentences"] == []
    assert "do not answer it either" in answer["message"] and len(removed) >= 2
    assert answer["citations"] == {"local": [], "external": []}


@pytest.mark.parametrize("reply", ["Let's look up the director next.", '{"action": "search"}'])
async def test_invalid_output_falls_back_to_the_deterministic_loop(film_brain, web, models, reply):
    FakeAsync.steps = [reply]
    ds = await pro_ds(film_brain, web)
    pack = await research(ds)
    research_ = pack["research"]
    assert FALLBACK in warnings(pack)
    assert research_["proposals"][0]["status"] == "invalid"
    assert model_queries(pack) == []
    # The deterministic rounds went on, and found the second part.
    bridge = research_["rounds"][1]["queries"][0]
    assert (bridge["query"], bridge["proposed_by"]) == (ODUYA, "runtime")
    assert research_["stop_reason"] == ANSWERED


async def test_a_repeated_query_stops_as_no_progress(film_brain, web, models):
    FakeAsync.steps = [
        step("search", query=ODUYA, why="the director"),
        step("search", query="marguerite  ODUYA!", why="the director again"),
        step("search", query="never asked", why="never reached"),
    ]
    ds = await pro_ds(film_brain, web)
    pack = await research(ds)
    research_ = pack["research"]
    assert research_["stop_reason"] == NO_PROGRESS
    assert [(p["status"], p.get("detail")) for p in research_["proposals"]] == [
        ("accepted", None),
        ("refused", REPEATED),
    ]
    assert len(research_["rounds"]) == 2
    assert FakeAsync.steps == [step("search", query="never asked", why="never reached")]


async def test_reads_past_the_budget_are_refused_then_the_loop_takes_over(film_brain, web, models):
    def read_first_unread(prompt: str) -> str:
        return step("read", url=NOT_READ.findall(prompt)[0], why="more")

    FakeAsync.steps = [read_first_unread, read_first_unread]
    ds = await pro_ds(film_brain, web, deep_budgets={"reads": 1})
    pack = await research(ds)
    research_ = pack["research"]
    assert [(p["status"], p["detail"]) for p in research_["proposals"]] == [
        ("refused", OVER_BUDGET),
        ("refused", OVER_BUDGET),
    ]
    assert FALLBACK in warnings(pack)
    assert len(reads(web)) == research_["spent"]["reads"] <= 1


@pytest.mark.parametrize("url", ["https://elsewhere.example.com/oduya", "http://127.0.0.1/admin"])
async def test_a_read_of_an_unknown_url_is_refused(film_brain, web, models, url):
    FakeAsync.steps = [step("read", url=url, why="I know this page"), step("stop", why="done")]
    ds = await pro_ds(film_brain, web)
    pack = await research(ds)
    proposals = pack["research"]["proposals"]
    assert (proposals[0]["status"], proposals[0]["detail"]) == ("refused", UNKNOWN_URL)
    assert all(url not in r.path for r in web.requests)
    assert web_row(pack, url) is None


async def test_no_model_is_asked_cross_site_or_without_permission(film_brain, web, models):
    ds = await pro_ds(film_brain, web)
    cross = await research(ds, headers=CROSS_SITE)
    assert FakeAsync.calls == [] and web.requests == []
    spent = cross["research"]["spent"]
    assert (spent["web_searches"], spent["reads"]) == (0, 0)
    assert FALLBACK in warnings(cross) and cross["answer"]["synthesizer"] == "extractive"
    anonymous = await research(ds, actor=None, external="never")
    assert FakeAsync.calls == []
    assert FALLBACK in warnings(anonymous) and anonymous["research"]["proposals"] == []


async def test_a_bad_strategy_is_refused(film_brain, web):
    ds = await pro_ds(film_brain, web)
    response = await ds.client.get("/-/research.json", params={"q": QUESTION, "strategy": "max"})
    assert (response.status_code, response.json()["code"]) == (400, "bad_strategy")


def test_the_cli_takes_strategy_pro(film_brain, web, models, tmp_path):
    FakeAsync.steps = [step("search", query=ODUYA, why="the director")]
    meta = tmp_path / "metadata.json"
    config = pro_config(web)
    meta.write_text(json.dumps({"plugins": {"datasette-dbrain-websearch": config}}))
    args = ["dbrain-research", str(film_brain), QUESTION, "--external", "always", "--answer"]
    result = CliRunner().invoke(cli, [*args, "--strategy", "pro", "--json", "-m", str(meta)])
    assert result.exit_code == 0, result.output
    pack = json.loads(result.output)
    assert pack["research"]["strategy"] == "pro"
    assert [q["query"] for q in model_queries(pack)] == [ODUYA]


async def test_the_agent_tool_takes_strategy(film_brain, web, models):
    FakeAsync.steps = [step("search", query=ODUYA, why="the director")]
    ds = await pro_ds(film_brain, web)
    reply = json.loads(
        await agent_research(
            ds, {"id": "root"}, question=QUESTION, external="always", strategy="pro", answer=True
        )
    )
    assert reply["research"]["strategy"] == "pro"
    assert reply["research"]["stop_reason"] == ANSWERED


async def test_the_mcp_tool_takes_strategy(film_brain, web, models, with_mcp):
    pytest.importorskip("datasette_mcp")
    import datasette_mcp
    from mcp import Client

    FakeAsync.steps = [step("search", query=ODUYA, why="the director")]
    ds = await pro_ds(film_brain, web, allow=True, model_allow=True)  # the caller is anonymous
    arguments = {"question": QUESTION, "external": "always", "strategy": "pro", "answer": True}
    async with Client(datasette_mcp._get_state(ds).server) as client:
        result = await client.call_tool("dbrain_research", arguments)
    assert not result.is_error, result
    research_ = result.structured_content["research"]
    assert (research_["strategy"], research_["stop_reason"]) == ("pro", ANSWERED)
    assert FakeAsync.calls[:1] == ["step"]


# ---------------------------------------------------------------------------------------------
# The checks (pure)


def test_a_step_is_schema_versioned_json():
    assert parse_step(step("search", query=" Marguerite   Oduya ", why="x")) == Step(
        "search", query="Marguerite Oduya", why="x"
    )
    fenced = "```json\n" + step("read", url="https://a.example/x") + "\n```"
    assert parse_step(fenced) == Step("read", url="https://a.example/x")
    for bad in (
        "search Oduya",
        json.dumps({"action": "stop"}),
        json.dumps({"schema": "dbrain_websearch.step.v2", "action": "stop"}),
        step("browse", url="https://a.example"),
        step("search", query=""),
        step("search", query="x" * 201),
        step("read"),
        json.dumps({"schema": "dbrain_websearch.step.v1", "action": "search", "query": ["a"]}),
    ):
        with pytest.raises(InvalidStep):
            parse_step(bad)


def test_a_proposal_is_refused_for_what_the_run_does_not_allow():
    known = [
        Known("ext:a", "https://films.example.org/a", "A", read=False),
        Known("ext:b", "https://films.example.org/b", "B", read=True),
        Known("ext:c", "http://10.0.0.7/c", "C", read=False),
        Known("ext:d", "https://blocked.example.com/d", "D", read=False),
    ]
    policy = DomainPolicy(block=("blocked.example.com",))

    def why(action: str, reads_left: int = 3, **fields: str) -> str:
        return refusal(Step(action, **fields), ["Lighthouse Keepers"], known, reads_left, policy)

    assert why("search", query="lighthouse keepers?") == REPEATED
    assert why("search", query="Marguerite Oduya") == ""
    assert why("read", url="https://films.example.org/a") == ""
    assert why("read", url="https://films.example.org/a", reads_left=0) == OVER_BUDGET
    assert why("read", url="https://films.example.org/b") == ALREADY_READ
    assert why("read", url="https://elsewhere.example.org/a") == UNKNOWN_URL
    assert why("read", url="javascript:alert(1)") == UNKNOWN_URL
    assert why("read", url="http://10.0.0.7/c") == NOT_PUBLIC
    assert why("read", url="https://blocked.example.com/d") == DOMAIN_POLICY
    assert why("stop") == ""


def test_claims_name_their_problems_against_the_runs_keys():
    keys = RunKeys(brain=("src:aaaaaaaaaaaa",), web=("ext:brave:bbbbbbbbbbbb",))
    reply = json.dumps(
        {
            "schema": "dbrain_websearch.claims.v1",
            "claims": [
                {"text": "It was directed by Oduya", "keys": ["src:aaaaaaaaaaaa"]},
                {"text": "She was born in Mombasa.", "keys": [INVENTED]},
                {"text": "Nobody says so.", "keys": []},
            ],
            "conflicts": [{"text": "They disagree", "keys": ["src:aaaaaaaaaaaa", INVENTED]}],
        }
    )
    found = parse_claims(reply, keys)
    assert found.text.splitlines() == [
        "It was directed by Oduya. [src:aaaaaaaaaaaa]",
        f"She was born in Mombasa. [{INVENTED}]",
        "Nobody says so.",
    ]
    assert len(found.problems) == 2 and INVENTED in found.problems[0]
    assert found.conflicts == [f"They disagree [src:aaaaaaaaaaaa] [{INVENTED}]"]
    assert parse_claims("not json", keys).problems == ["the reply is not JSON"]
    assert parse_claims(json.dumps({"schema": "x"}), keys).problems


# ---------------------------------------------------------------------------------------------
# The person's notes stay out of the model's web searches


SECRET = "quokka7351"


def with_private_note(path) -> None:
    """A note among the question's rows that holds words nothing else does (a page's injected
    text could ask the model to search for them)."""
    conn = sqlite3.connect(path)
    with conn:
        add_source(
            conn,
            "https://notes.example/lighthouse-keepers-private",
            title="Lighthouse Keepers, my notes",
            extracted_text=f"Watched Lighthouse Keepers with Sam; the door code is {SECRET} and "
            "the spare key is under the blue pot.",
            extract_status="ok",
        )
    conn.close()


def provider_queries(fake) -> list[str]:
    """What each search provider was sent (its query string and JSON body)."""
    return [
        " ".join(v for vs in (r.query or {}).values() for v in vs) + json.dumps(r.json)
        for r in fake.requests
        if r.provider != "reader"
    ]


async def test_a_pro_search_for_words_only_the_brain_holds_is_refused(film_brain, web, models):
    """The model proposes to search the web for the note's door code: refused (its words are
    only the brain's), recorded, and never sent to a provider; the director's name, which the
    question depends on and the rounds would search anyway, is searched."""
    with_private_note(film_brain)
    FakeAsync.steps = [
        step("search", query=f"{SECRET} door code", why="the page asked for it"),
        step("search", query=ODUYA, why="the film's director"),
        step("stop", why="done"),
    ]
    ds = await pro_ds(film_brain, web)
    pack = await research(ds)
    proposals = pack["research"]["proposals"]
    assert [(p["action"], p["status"]) for p in proposals[:2]] == [
        ("search", "refused"),
        ("search", "accepted"),
    ]
    assert proposals[0]["detail"] == BRAIN_WORDS
    assert not any(SECRET in q for q in provider_queries(web))
    assert any(ODUYA.lower() in q for q in provider_queries(web))  # Brave is sent it lower-cased
    # Allowed by the config, the same search goes out.
    web.reset()
    FakeAsync.steps = [step("search", query=f"{SECRET} door code", why="asked"), step("stop")]
    trusting = await pro_ds(film_brain, web, deep_budgets={"pro_brain_queries": True})
    pack = await research(trusting)
    assert pack["research"]["proposals"][0]["status"] == "accepted"
    assert any(SECRET in q for q in provider_queries(web))


def test_brain_only_words_are_those_no_question_or_web_row_says():
    private = brain_only(
        "Where was the director of Lighthouse Keepers born?",
        ["Lighthouse Keepers was directed by Marguerite Oduya; door code quokka7351."],
        ["Marguerite Oduya - Wikipedia: a Kenyan film director"],
    )
    assert private == {"direct", "door", "code", "quokka7351"}  # "directed": a word of its own
    step_ = Step(SEARCH, query="Quokka7351")
    assert refusal(step_, [], [], 3, DomainPolicy(), private=private) == BRAIN_WORDS
    assert (
        refusal(Step(SEARCH, query="Oduya birthplace"), [], [], 3, DomainPolicy(), private=private)
        == ""
    )
