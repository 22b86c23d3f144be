"""Deep research (issue 32): a two-part question whose second part is only on the fake web,
followed through the name the brain's row gives, on every surface; budgets, time, cross-site
requests; and the loop's decisions as pure functions."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch import deep_rounds
from datasette_dbrain_websearch.answer.answerability import Answerability, Finding, read_question
from datasette_dbrain_websearch.answer.names import bridge_entities, names_in, question_names
from datasette_dbrain_websearch.config import DeepSettings, Settings
from datasette_dbrain_websearch.deep import confidence
from datasette_dbrain_websearch.deep_follow_ups import (
    FollowUp,
    facets,
    follow_ups,
    says_facet,
    uncovered,
)
from datasette_dbrain_websearch.deep_rounds import (
    ANSWERED,
    BUDGET,
    NO_PROGRESS,
    TIME,
    bounded,
    round_reads,
    stop_reason,
)
from datasette_dbrain_websearch.deep_state import Spent
from datasette_dbrain_websearch.tools.agent import agent_research
from datasette_dbrain_websearch.web import BUDGET_EXHAUSTED
from datasette_dbrain_websearch.web_gate import CROSS_SITE_WARNING

from ...helpers import SOURCE_URLS, actor_cookies, make_datasette
from ...helpers import web_config as base_web_config
from .film import (
    CROSS_SITE,
    ODUYA_URL,
    QUESTION,
    film_ds,
    reads,
    searches,
    web_config,
    web_row,
)


async def research(ds, headers: dict[str, str] | None = None, **params: str) -> dict[str, Any]:
    response = await ds.client.get(
        "/-/research.json",
        params={"q": QUESTION, "external": "always", "answer": "1", **params},
        cookies=actor_cookies(ds, "root"),
        headers=headers or {},
    )
    assert response.status_code == 200, response.text
    return response.json()


# ---------------------------------------------------------------------------------------------
# Through the surfaces


async def test_quick_research_never_finds_the_second_part(film_brain, web):
    ds = await film_ds(film_brain, web)
    pack = await research(ds)
    assert "research" not in pack
    assert web_row(pack, ODUYA_URL) is None
    assert len(searches(web)) == 1


async def test_a_deep_run_follows_the_name_its_row_gives_to_the_web(film_brain, web):
    ds = await film_ds(film_brain, web)
    pack = await research(ds, depth="deep")
    research_ = pack["research"]
    assert research_["depth"] == "deep"
    first, second = research_["rounds"]
    assert first["queries"][0]["query"] == QUESTION
    bridge = second["queries"][0]
    assert (bridge["query"], bridge["reason"], bridge["searched_web"]) == (
        "Marguerite Oduya",
        "bridge",
        True,
    )
    assert "the question depends on" in bridge["why"]
    # The page was read before it was cited, and its row says which round found it.
    row = web_row(pack, ODUYA_URL)
    assert row is not None and row["depth"] == "page"
    assert row["source_key"] in second["added"]
    assert any(
        s["name"] == "deep_round" and "round 2" in s["detail"] for s in row["retrieval"]["signals"]
    )
    assert f"/reader/{ODUYA_URL}" in [r.path for r in reads(web)]
    cited = pack["answer"]["citations"]
    assert row["source_key"] in cited["external"] and cited["local"]
    assert "Mombasa" in pack["answer"]["text"]
    # Every term and name covered: it stopped because it was answered, and says how sure.
    assert (research_["stop_reason"], second["gaps"]) == (ANSWERED, [])
    assert research_["confidence"]["level"] == "high"
    assert 0.8 <= research_["confidence"]["score"] <= 1
    assert research_["spent"] == {
        "rounds": 2,
        "web_searches": len(searches(web)),
        "reads": len(reads(web)),
    }
    # Each follow-up's provider calls are in the plan, with their round.
    rounds = [q.get("round", 1) for q in pack["query_plan"]["external_queries"]]
    assert rounds[0] == 1 and 2 in rounds


async def test_deep_cites_only_pages_it_read(film_brain, web):
    """Read before citing: the unread web rows are neither read by the answer nor citable;
    the rows it cites are pages read (or say they rest on the provider's snippet)."""
    ds = await film_ds(film_brain, web, deep_budgets={"reads": 1})
    pack = await research(ds, depth="deep")
    read = {r["url"] for r in pack["external_search"]["read"]}
    assert len(read) == 1
    cited = set(pack["answer"]["citations"]["external"])
    for row in pack["external_evidence"]:
        if row["source_key"] in cited:
            assert row["url"] in read
    unread = [r for r in pack["external_evidence"] if r["url"] not in read]
    assert unread and not cited & {r["source_key"] for r in unread}


async def test_the_saved_trace_has_an_event_per_query_and_the_stop(film_brain, web):
    ds = await film_ds(film_brain, web)
    pack = await research(ds, depth="deep")
    trace = (
        await ds.client.get(
            f"/-/research/runs/{pack['run_id']}.json", cookies=actor_cookies(ds, "root")
        )
    ).json()
    events = [e for e in trace["events"] if e["name"].startswith("deep_")]
    queries = [e["data"]["query"] for e in events if e["name"] == "deep_query"]
    assert queries[:2] == [QUESTION, "Marguerite Oduya"]
    assert [e["name"] for e in events].count("deep_round") == 2
    assert events[-1]["name"] == "deep_stopped"
    assert events[-1]["data"]["stop_reason"] == ANSWERED


async def test_the_page_streams_each_round_and_shows_the_stop(film_brain, web):
    ds = await film_ds(film_brain, web)
    cookies = actor_cookies(ds, "root")
    params = {"q": QUESTION, "external": "always", "answer": "1", "depth": "deep"}
    stream = await ds.client.get("/-/research/stream", params=params, cookies=cookies)
    events = [json.loads(line) for line in stream.text.splitlines() if line]
    rounds = [e for e in events if e["stage"] == "deep" and e["status"] == "round"]
    assert [e["round"] for e in rounds] == [1, 2]
    assert "Marguerite Oduya" in rounds[1]["message"] and "depends on" in rounds[1]["message"]
    done = next(e for e in events if e["stage"] == "deep" and e["status"] == "done")
    assert done["stop_reason"] == ANSWERED
    page = await ds.client.get("/-/research", params=params, cookies=cookies)
    assert 'data-stop="answered"' in page.text
    assert "Deep research: 2 rounds; stopped: answered" in page.text
    assert 'name="depth" value="deep" checked' in page.text


def test_the_cli_prints_the_rounds_and_why_it_stopped(film_brain, web, tmp_path):
    meta = tmp_path / "metadata.json"
    config = web_config(web)
    meta.write_text(json.dumps({"plugins": {"datasette-dbrain-websearch": config}}))
    args = ["dbrain-research", str(film_brain), QUESTION, "--external", "always", "--answer"]
    result = CliRunner().invoke(cli, [*args, "--deep", "-m", str(meta)])
    assert result.exit_code == 0, result.output
    assert "Round 2: Marguerite Oduya (the best rows name" in result.output
    assert "Stopped: answered" in result.output and "confidence high" in result.output
    as_json = CliRunner().invoke(cli, [*args, "--deep", "--json", "-m", str(meta)])
    assert json.loads(as_json.output)["research"]["stop_reason"] == ANSWERED


async def test_mcp_and_the_agent_tool_take_depth(film_brain, web, with_mcp):
    pytest.importorskip("datasette_mcp")
    import datasette_mcp
    from mcp import Client

    ds = await film_ds(film_brain, web, allow=True)
    arguments = {"question": QUESTION, "external": "always", "depth": "deep", "answer": True}
    async with Client(datasette_mcp._get_state(ds).server) as client:
        result = await client.call_tool("dbrain_research", arguments)
    assert not result.is_error, result
    compact = result.structured_content
    assert compact["research"]["stop_reason"] == ANSWERED
    assert ODUYA_URL in [r["url"] for r in compact["web_rows"]]
    agent = json.loads(await agent_research(ds, {"id": "root"}, **arguments))
    assert agent["research"]["stop_reason"] == ANSWERED
    assert agent["research"]["confidence"]["level"] == "high"


@pytest.mark.parametrize(
    "question, searched",
    [("https://quarkmatter.blog/what-is-lattice-qcd", 0), (SOURCE_URLS["src_fts5"], 1)],
)
async def test_a_question_that_names_a_page_is_that_page(brain, fake, question, searched):
    """A URL the brain lacks is read directly (no search), a URL it holds is looked up (and
    the web searched once, as always asks): either way the question is that page, and no
    follow-up searches for its words."""
    ds = make_datasette(
        [str(brain[0])],
        plugin_config=base_web_config(fake, read_via=f"{fake.url}/reader/", read_unresolved=True),
    )
    await ds.invoke_startup()
    response = await ds.client.get(
        "/-/research.json",
        params={"q": question, "external": "always", "depth": "deep"},
        cookies=actor_cookies(ds, "root"),
    )
    research_ = response.json()["research"]
    assert (research_["stop_reason"], len(research_["rounds"])) == (ANSWERED, 1)
    assert len(searches(fake)) == searched


async def test_a_bad_depth_is_refused(film_brain, web):
    ds = await film_ds(film_brain, web)
    response = await ds.client.get("/-/research.json", params={"q": QUESTION, "depth": "deeper"})
    assert response.status_code == 400
    assert response.json()["code"] == "bad_depth"


# ---------------------------------------------------------------------------------------------
# Budgets, time and other sites


async def test_a_cross_site_request_spends_nothing_in_any_round(film_brain, web):
    ds = await film_ds(film_brain, web)
    pack = await research(ds, headers=CROSS_SITE, depth="deep")
    assert web.requests == []  # no search and no page read, in any round
    assert pack["research"]["spent"]["web_searches"] == 0
    assert pack["research"]["spent"]["reads"] == 0
    assert all(not q["searched_web"] for r in pack["research"]["rounds"] for q in r["queries"])
    assert CROSS_SITE_WARNING in [w["code"] for w in pack["warnings"]]
    assert pack["external_evidence"] == []


async def test_no_round_goes_past_the_web_and_read_budgets(film_brain, web):
    ds = await film_ds(film_brain, web, deep_budgets={"web_searches": 2, "reads": 2})
    pack = await research(ds, depth="deep")
    spent = pack["research"]["spent"]
    assert len(searches(web)) == spent["web_searches"] <= 2
    assert len(reads(web)) == spent["reads"] <= 2
    later = [q for r in pack["research"]["rounds"][1:] for q in r["queries"]]
    # One provider search is left after round 1: one follow-up searches the web, the next
    # only the brain.
    assert [q["searched_web"] for q in later][:2] == [True, False]


async def test_out_of_rounds_is_a_budget_stop(film_brain, web):
    ds = await film_ds(film_brain, web, deep_budgets={"rounds": 1})
    pack = await research(ds, depth="deep")
    assert (pack["research"]["stop_reason"], len(pack["research"]["rounds"])) == (BUDGET, 1)
    assert len(searches(web)) == 1


async def test_budgets_hold_for_runs_at_once(film_brain, web):
    """Two deep runs together: each within its own budgets, and the provider's daily cap in
    the ledger holds across both (reserved before each call)."""
    ds = await film_ds(
        film_brain,
        web,
        deep_budgets={"web_searches": 3, "reads": 2},
        budgets={"brave": {"daily_calls": 4}},
    )
    packs = await asyncio.gather(research(ds, depth="deep"), research(ds, depth="deep", limit="5"))
    for pack in packs:
        assert pack["research"]["spent"]["web_searches"] <= 3
        assert pack["research"]["spent"]["reads"] <= 2
    assert len(searches(web)) == sum(p["research"]["spent"]["web_searches"] for p in packs) == 4
    # The cap refused what the runs asked past it, and the runs recorded the refusal.
    errors = [q.get("error") for p in packs for q in p["query_plan"]["external_queries"]]
    assert BUDGET_EXHAUSTED in errors


async def test_a_stalled_round_ends_the_loop_on_time(film_brain, web, monkeypatch):
    """Round 1's provider stalls for most of the loop's time (the loop's clock, injected):
    no follow-up round starts, and the run says it stopped on time with what it has."""

    def clock() -> float:
        # Once round 1 has asked the provider, 19.5 of the loop's 20 s are gone.
        return 1000.0 + (19.5 if searches(web) else 0.0)

    monkeypatch.setattr(deep_rounds, "clock", clock)
    ds = await film_ds(film_brain, web)
    pack = await research(ds, depth="deep")
    assert (pack["research"]["stop_reason"], len(pack["research"]["rounds"])) == (TIME, 1)
    assert len(searches(web)) == 1
    # Round 1's rows name the director, not where she was born: no answer, and it says so.
    assert pack["answer"]["status"] == "not_answered"
    assert pack["answer"]["message"].startswith("No answer in your brain or the web results.")
    assert (pack["research"]["confidence"]["level"], pack["judge"]["combined"]["verdict"]) == (
        "low",
        "weak_evidence",
    )


# ---------------------------------------------------------------------------------------------
# The loop's decisions (pure)


def test_names_are_capitalised_runs_without_sentence_openers():
    text = "He met the Duke of York in New York City. The film was shot in Mombasa."
    assert names_in(text) == ["Duke of York", "New York City", "Mombasa"]
    assert question_names("Aside from the Apple Remote, what else?") == ["Apple Remote"]
    # A note's title line above its text is no part of the name the text opens with.
    assert names_in("Reading list: The Slow Loaf\n\nThe Slow Loaf is a book.") == [
        "Reading",
        "Slow Loaf",
    ]


def test_the_bridge_is_the_name_beside_the_questions_words():
    question = 'The director of the romantic comedy "Big Stone Gap" is based in what city?'
    rows = [
        (
            "Big Stone Gap (film)",
            "Big Stone Gap is a 2014 American romantic comedy film directed by Adriana "
            "Trigiani. It was filmed in Virginia, where Ashley Judd grew up. The MPAA rated "
            "the comedy PG. Its city scenes were shot with a Dutch crew.",
        )
    ]
    terms = ["director", "romantic", "comedy", "big", "stone", "gap", "based", "city"]
    # "American" and "Dutch" name peoples, "Big Stone Gap" the question already, "MPAA" is an
    # abbreviation; Ashley Judd's sentence shares none of the question's words.
    assert bridge_entities(question, rows, terms) == ["Adriana Trigiani"]


def test_a_facet_is_covered_by_a_term_in_text_or_a_name_in_a_title():
    wanted = facets(["director", "born"], ["Marguerite Oduya"])
    texts = [("Lighthouse Keepers (film)", "A film by its director, Marguerite Oduya.")]
    assert uncovered(wanted, texts) == ["born", "Marguerite Oduya"]
    texts.append(("Marguerite Oduya", "She was born in Mombasa."))
    assert uncovered(wanted, texts) == []


def test_follow_ups_put_bridges_first_and_never_ask_twice():
    wanted = facets(["director", "born"], ["Lighthouse Keepers", "Marguerite Oduya"])
    gaps = ["born", "Lighthouse Keepers", "Marguerite Oduya"]
    found = follow_ups(gaps, wanted, ["Marguerite Oduya"], ["the question"])
    assert [(f.query, f.reason) for f in found] == [
        ("Marguerite Oduya", "bridge"),
        ("Lighthouse Keepers", "named"),
        ("Lighthouse Keepers born", "uncovered"),
    ]
    again = follow_ups(gaps, wanted, ["Marguerite Oduya"], [f.query for f in found])
    assert again == []
    assert len(follow_ups(gaps, wanted, ["Marguerite Oduya"], [], most=1)) == 1


def test_a_follow_up_keeps_only_rows_that_say_what_it_looked_for():
    name = FollowUp("Marguerite Oduya", "", "bridge", "Marguerite Oduya")
    assert says_facet(name, ["Marguerite Oduya\nShe was born in Mombasa."])
    assert not says_facet(name, ["Keepers of the light\nLighthouse keepers kept logs."])
    terms = FollowUp("Lighthouse Keepers born", "", "uncovered", "born")
    assert says_facet(terms, ["Many keepers were born on islands."])
    assert not says_facet(terms, ["Lighthouse Keepers is a film."])


@pytest.mark.parametrize(
    "answered, queries, spent, left, reason",
    [
        (True, ["q"], Spent(rounds=1), 10.0, ANSWERED),
        (True, [], Spent(rounds=3), 0.5, ANSWERED),  # answered wins over any budget
        (False, ["q"], Spent(rounds=3), 10.0, BUDGET),
        (False, ["q"], Spent(rounds=1, over_money=True), 10.0, BUDGET),
        (False, ["q"], Spent(rounds=1), 0.5, TIME),
        (False, [], Spent(rounds=1), 10.0, NO_PROGRESS),
        (False, ["q"], Spent(rounds=1), 10.0, None),
    ],
)
def test_the_stop_decision(answered, queries, spent, left, reason):
    follow = [FollowUp(q, "", "bridge", q) for q in queries]
    assert stop_reason(answered, follow, spent, DeepSettings(), left) == reason


WHERE = read_question("Where did the keeper live?")
SAYS = Finding("k", "The keeper lived in Mombasa.", True, 0.9, "Mombasa")
SAYS_LITTLE = Finding("k", "The keeper lived by the sea.", False, 0.6, problem="no_span")


def test_confidence_is_high_only_when_a_sentence_answers():
    agreed = {"status": "assessed", "items": []}
    answered = Answerability(WHERE, SAYS, None)
    assert confidence(answered, [], agreed) == {
        "score": 0.98,
        "level": "high",
        "answered": True,
        "coverage": 0.9,
        "read_depth": 1.0,
        "agreement": 1.0,
    }
    disputed = confidence(answered, [], {"status": "assessed", "items": [{}, {}, {}, {}]})
    assert (disputed["score"], disputed["level"]) == (0.89, "high")
    # A sentence gives a place, but none of the answer's sentences says what is asked of it
    # ("keeper", "live"): not every part is answered, so not high.
    partly = Finding("k", "The house stands in Mombasa.", True, 0.6, "Mombasa", ("keeper", "live"))
    part = confidence(Answerability(WHERE, partly, None), [], agreed)
    assert (part["score"], part["level"], part["answered"]) == (0.69, "medium", False)
    # Rows that hold the question's words but no sentence that answers it: never high.
    unanswered = confidence(Answerability(WHERE, None, SAYS_LITTLE), [], agreed)
    assert (unanswered["score"], unanswered["level"], unanswered["answered"]) == (
        0.18,
        "low",
        False,
    )


def test_a_round_ends_within_the_time_the_loop_has_left():
    settings = Settings.from_config({"external_search": {"timeout": 20}, "time_limit_ms": 3000})
    assert bounded(settings, 4.0).web.timeout == 4.0
    assert bounded(settings, 4.0).time_limit_ms == 3000
    assert bounded(settings, 1.2).time_limit_ms == 1200
    assert bounded(settings, 60.0).web.timeout == 20.0


def test_reads_are_shared_out_and_never_past_the_budget():
    budget = DeepSettings(reads=6)
    assert round_reads(budget, Spent(reads=2), rounds_left=2, queries=2) == 1
    assert round_reads(budget, Spent(reads=6), rounds_left=2, queries=1) == 0
    assert round_reads(budget, Spent(reads=5), rounds_left=1, queries=1) == 1


async def test_no_web_budget_keeps_the_mode_asked_and_says_why(film_brain, web):
    ds = await film_ds(film_brain, web, deep_budgets={"web_searches": 0})
    pack = await research(ds, depth="deep")
    assert web.requests == []
    search = pack["external_search"]
    assert (search["mode"], search["ran"], search["skipped_reason"]) == (
        "always",
        False,
        "deep_budget",
    )
    assert not any(q["searched_web"] for r in pack["research"]["rounds"] for q in r["queries"])
