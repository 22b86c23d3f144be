"""Share-safe runs (issue 33): a run seen by someone other than its owner (an anonymous run's
link) holds the question, the answer and the rows it cites: not the other rows, the web's
uncited snippets, nor how it was searched. The owner (and root) still see everything. Every
check goes through HTTP: the page, its JSON and both exports."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import time
import urllib.parse

import pytest
from datasette import hookimpl
from datasette.plugins import pm

from datasette_dbrain_websearch import exports
from datasette_dbrain_websearch.errors import ResearchError
from datasette_dbrain_websearch.tools.calls import checked_promotion
from datasette_dbrain_websearch.views import own_runs

from ..helpers import (
    actor_cookies,
    make_datasette,
    post_json,
    web_config,
    web_datasette,
)

QUESTION = "sqlite fts5 bm25"


async def anonymous_web_run(brain, fake):
    """An answered run with brain and web rows, made by a visitor who is not signed in."""
    ds = await web_datasette(brain, fake, allow=True)
    response = await ds.client.get(
        "/-/research.json", params={"q": QUESTION, "external": "always", "answer": "1"}
    )
    pack = response.json()
    assert pack["answer"]["status"] == "ok" and pack["external_evidence"]
    return ds, pack


def split_rows(pack):
    """(cited rows, uncited rows) of the run."""
    cited = exports.cited_keys(pack)
    rows = [*pack["evidence"], *pack["external_evidence"]]
    return (
        [r for r in rows if exports.is_cited(r, cited)],
        [r for r in rows if not exports.is_cited(r, cited)],
    )


# The search behind an answer: words only a whole trace or the owner's page holds.
INTERNALS = ("query_plan", "match_query", "timings_ms", "Stages", "retrieval", "research_trace")


async def test_a_shared_run_holds_the_question_the_answer_and_the_cited_rows(brain, fake):
    ds, pack = await anonymous_web_run(brain, fake)
    cited, uncited = split_rows(pack)
    assert cited and any(r["origin"] == "outside_dbrain_corpus" for r in uncited)
    for cookies in ({}, actor_cookies(ds, "alice")):
        views = {
            suffix: (await ds.client.get(pack["trace_url"] + suffix, cookies=cookies))
            for suffix in ("", ".json", ".md", ".csv")
        }
        for suffix, response in views.items():
            assert response.status_code == 200, (suffix, response.text)
            text = response.text
            assert QUESTION in text or suffix == ".csv"
            for row in cited:
                assert row["url"] in text, (suffix, row["url"])
            for row in uncited:
                for said in (row["url"], row["excerpt"][:60]):
                    assert said not in text, (suffix, said)
            if suffix != ".csv":
                first = pack["answer"]["sentences"][0]["text"]
                assert first.split(" ")[0] in text
            for word in INTERNALS:
                assert word not in text, (suffix, word)
        shared = views[".json"].json()
        assert shared["shared"] is True and shared["run_id"] == pack["run_id"]
        assert shared["answer"]["text"] == pack["answer"]["text"]
        assert "draft" not in shared["answer"] and "text" not in str(
            [set(r) for r in shared["external_evidence"]]
        )
        # Each cited row keeps the number the owner's page gives it.
        places = [e["place"] for e in shared["ranking"]]
        full = [e["source_key"] for e in pack["ranking"]]
        assert places == [full.index(e["source_key"]) + 1 for e in shared["ranking"]]
        assert "Shared view" in views[""].text
        lines = list(csv.DictReader(io.StringIO(views[".csv"].text)))
        assert {line["key"] for line in lines} == {r["source_key"] for r in cited}


async def test_root_sees_all_of_an_anonymous_run(brain, fake):
    ds, pack = await anonymous_web_run(brain, fake)
    _, uncited = split_rows(pack)
    root = actor_cookies(ds, "root")
    trace = (await ds.client.get(pack["trace_url"] + ".json", cookies=root)).json()
    assert trace["schema_version"] == "research_trace.v1" and "query_plan" in trace["pack"]
    page = (await ds.client.get(pack["trace_url"], cookies=root)).text
    markdown = (await ds.client.get(pack["trace_url"] + ".md", cookies=root)).text
    assert "Stages" in page and "Shared view" not in page
    for row in uncited:
        assert row["url"] in page and row["url"] in markdown


async def test_the_owner_sees_all_of_their_run(brain, fake):
    ds = await web_datasette(brain, fake, allow=True)
    alice = actor_cookies(ds, "alice")
    pack = (
        await ds.client.get(
            "/-/research.json",
            params={"q": QUESTION, "external": "always", "answer": "1"},
            cookies=alice,
        )
    ).json()
    _, uncited = split_rows(pack)
    assert uncited
    trace = (await ds.client.get(pack["trace_url"] + ".json", cookies=alice)).json()
    assert trace["schema_version"] == "research_trace.v1"
    markdown = (await ds.client.get(pack["trace_url"] + ".md", cookies=alice)).text
    assert all(row["url"] in markdown for row in uncited)
    assert (
        await ds.client.get(pack["trace_url"], cookies=actor_cookies(ds, "bob"))
    ).status_code == 404


# The research page's ?run= and compare follow the same rule (issue 33).


def run_of(html: str) -> str:
    """The run a research page shows (its trace link)."""
    return re.search(r'<a href="/-/research/runs/([^"]+)">trace</a>', html).group(1)


async def test_someone_elses_run_on_the_research_page_is_its_shared_view(brain, fake):
    ds, pack = await anonymous_web_run(brain, fake)
    cited, uncited = split_rows(pack)
    address = {"q": QUESTION, "run": pack["run_id"]}
    for cookies in ({}, actor_cookies(ds, "alice")):
        response = await ds.client.get("/-/research", params=address, cookies=cookies)
        assert response.status_code == 302
        assert response.headers["location"] == pack["trace_url"]
        assert all(row["url"] not in response.text for row in uncited)
        shared = (await ds.client.get(response.headers["location"], cookies=cookies)).text
        assert "Shared view" in shared and all(row["url"] in shared for row in cited)
        assert all(row["url"] not in shared for row in uncited)
    whole = await ds.client.get("/-/research", params=address, cookies=actor_cookies(ds, "root"))
    assert whole.status_code == 200 and run_of(whole.text) == pack["run_id"]
    assert all(row["url"] in whole.text for row in uncited)


async def test_a_visitors_own_run_stays_whole_for_them_and_only_them(brain, fake):
    ds = await web_datasette(brain, fake, allow=True)
    params = {"q": QUESTION, "external": "always", "answer": "1"}
    asked = await ds.client.get("/-/research", params=params)
    mine = {own_runs.COOKIE: asked.cookies[own_runs.COOKIE]}  # the visitor's browser keeps it
    run_id = run_of(asked.text)
    pack = (await ds.client.get(f"/-/research/runs/{run_id}.json", cookies=mine)).json()["pack"]
    _, uncited = split_rows(pack)
    assert uncited
    address = {"q": QUESTION, "run": run_id}
    again = await ds.client.get("/-/research", params=address, cookies=mine)
    assert again.status_code == 200 and run_of(again.text) == run_id
    assert all(row["url"] in again.text for row in uncited)
    page = (await ds.client.get(pack["trace_url"], cookies=mine)).text
    assert "Stages" in page and "Shared view" not in page
    # The same link in another browser, or with a forged cookie: the shared view.
    forged = {own_runs.COOKIE: ds.sign([run_id], "another-namespace")}
    for cookies in ({}, forged):
        passed_on = await ds.client.get("/-/research", params=address, cookies=cookies)
        assert passed_on.status_code == 302
        page = (await ds.client.get(pack["trace_url"], cookies=cookies)).text
        assert "Shared view" in page and all(row["url"] not in page for row in uncited)


async def test_the_streams_claim_makes_the_run_the_visitors_and_leaves_the_address(brain, fake):
    ds = await web_datasette(brain, fake, allow=True)
    params = {"q": QUESTION, "external": "always"}
    streamed = await ds.client.get("/-/research/stream", params=params)
    done = json.loads(streamed.text.strip().splitlines()[-1])
    assert done["stage"] == "done" and "&claim=" in done["url"]
    browser = {own_runs.CLAIMANT: streamed.cookies[own_runs.CLAIMANT]}
    # The claim copied into another browser (or one whose claimant cookie differs) claims nothing.
    for elsewhere in ({}, {own_runs.CLAIMANT: "x" * 22}):
        copied = await ds.client.get(done["url"], cookies=elsewhere)
        assert copied.status_code == 302 and own_runs.COOKIE not in copied.cookies
    # Nor does one past its age, in the right browser.
    stale = own_runs.claim_token(
        ds,
        done["run_id"],
        browser[own_runs.CLAIMANT],
        now=time.time() - own_runs.CLAIM_MAX_AGE - 60,
    )
    old = done["url"].split("&claim=")[0] + "&" + urllib.parse.urlencode({"claim": stale})
    assert own_runs.COOKIE not in (await ds.client.get(old, cookies=browser)).cookies
    landed = await ds.client.get(done["url"], cookies=browser)
    assert landed.status_code == 302
    assert landed.headers["location"] == done["url"].split("&claim=")[0]  # never in a copied link
    mine = {own_runs.COOKIE: landed.cookies[own_runs.COOKIE]}
    page = await ds.client.get(landed.headers["location"], cookies=mine)
    assert page.status_code == 200 and run_of(page.text) == done["run_id"]
    # Without the claim's cookie the link is someone else's run; a forged claim sets none.
    assert (await ds.client.get(landed.headers["location"])).status_code == 302
    forged = await ds.client.get(landed.headers["location"] + "&claim=forged")
    assert forged.status_code == 302 and own_runs.COOKIE not in forged.cookies
    # A signed-in person's stream needs no claim: the run is theirs by name.
    alice = actor_cookies(ds, "alice")
    theirs = await ds.client.get("/-/research/stream", params=params, cookies=alice)
    assert "claim=" not in theirs.text


async def test_compare_shows_someone_elses_runs_as_shared(brain, fake):
    ds, a = await anonymous_web_run(brain, fake)
    b = (await ds.client.get("/-/research.json", params={"q": QUESTION, "answer": "1"})).json()
    _, uncited = split_rows(a)
    address = {"a": a["run_id"], "b": b["run_id"]}
    for cookies in ({}, actor_cookies(ds, "alice")):
        page = await ds.client.get("/-/research/compare", params=address, cookies=cookies)
        assert page.status_code == 200 and "Not your run" in page.text
        data = (await ds.client.get("/-/research/compare.json", params=address)).json()
        assert data["a"]["shared"] and data["b"]["shared"] and "verdict" not in data["a"]
        for text in (page.text, json.dumps(data)):
            assert all(row["url"] not in text for row in uncited)
            assert "provider_calls" not in text and "total_ms" not in text
    root = actor_cookies(ds, "root")
    whole = await ds.client.get("/-/research/compare.json", params=address, cookies=root)
    assert not whole.json()["a"]["shared"] and "verdict" in whole.json()["a"]
    assert any(row["url"] in whole.text for row in uncited)


async def test_only_the_owner_may_mark_a_run(brain, fake):
    """A mark re-ranks the run and replies with its whole order: the owner's, not a link's."""
    ds = await web_datasette(brain, fake, allow=True)
    asked = await ds.client.get("/-/research", params={"q": QUESTION, "external": "always"})
    mine = {own_runs.COOKIE: asked.cookies[own_runs.COOKIE]}
    run_id = run_of(asked.text)
    key = re.search(r'name="mark" value="([^"|]+)\|relevant"', asked.text).group(1)
    token = asked.cookies.get("ds_csrftoken")  # 0.65's double submit, as the page's script sends
    csrf_cookie, headers = ({"ds_csrftoken": token}, {"x-csrftoken": token}) if token else ({}, {})
    for cookies, status in (({}, 404), (actor_cookies(ds, "alice"), 404), (mine, 200)):
        marked = await ds.client.post(
            f"/-/research/runs/{run_id}/feedback",
            json={"feedback": [{"key": key, "value": "relevant"}]},
            cookies={**cookies, **csrf_cookie},
            headers=headers,
        )
        assert marked.status_code == status, marked.text
        assert ("ranking" in marked.json()) is (status == 200)
    # A JSON client that keeps cookies owns its runs the same way.
    made = await ds.client.get("/-/research.json", params={"q": QUESTION})
    jar = {own_runs.COOKIE: made.cookies[own_runs.COOKIE]}
    trace = await ds.client.get(made.json()["trace_url"] + ".json", cookies=jar)
    assert trace.json()["schema_version"] == "research_trace.v1"


async def test_only_the_owner_may_expand_or_promote_from_a_run(brain, fake):
    """Expand carries a run's marks, and promotion can keep its uncited web rows: both are the
    owner's, so anyone else holding an anonymous run's link is told it does not exist."""
    ds = await web_datasette(brain, fake, allow=True)
    made = await ds.client.get("/-/research.json", params={"q": QUESTION, "external": "always"})
    pack = made.json()
    mine = {own_runs.COOKIE: made.cookies[own_runs.COOKIE]}
    _, uncited = split_rows(pack)
    web = [r for r in uncited if r["origin"] == "outside_dbrain_corpus"]
    assert web
    expand = {"refine_from": pack["run_id"]}
    for cookies, status in (({}, 404), (actor_cookies(ds, "alice"), 404), (mine, 200)):
        refined = await ds.client.get("/-/research.json", params=expand, cookies=cookies)
        assert refined.status_code == status, refined.text
        if status == 404:
            assert refined.json()["code"] == "no_such_run"
    # A promoter who is not the run's owner (alice, allowed to promote) gets the same answer.
    pm.register(AlicePromotes, name="alice-promotes")
    try:
        promoter = make_datasette(
            [str(brain[0])],
            plugin_config=web_config(fake, allow=True),
            permissions={"dbrain-promote": {"id": ["root", "alice"]}},
        )
        await promoter.invoke_startup()
        made = await promoter.client.get(
            "/-/research.json", params={"q": QUESTION, "external": "always"}
        )
        key = made.json()["external_evidence"][0]["source_key"]
        body = {"run_id": made.json()["run_id"], "source_keys": [key]}
        refused = await post_json(promoter, body, actor="alice")
        assert refused.status_code == 404 and refused.json()["code"] == "no_such_run"
        assert (await post_json(promoter, body, actor="root")).status_code == 200
    finally:
        pm.unregister(name="alice-promotes")


async def test_a_tool_promotes_only_from_its_callers_runs(brain, fake):
    """MCP's and the agent's ``dbrain_promote`` (``checked_promotion``) hold the page's rule: a
    tool call has no browser, so an anonymous run's link owns nothing. A promoter who guesses
    a web row's key (``ext:<provider>:`` and a hash of its URL) hears the same "no such run"
    whether the guess is right or wrong: the tool tells nothing of what the owner saw."""
    pm.register(AlicePromotes, name="alice-promotes")
    try:
        ds = make_datasette(
            [str(brain[0])],
            plugin_config=web_config(fake, allow=True),
            permissions={"dbrain-promote": {"id": ["root", "alice"]}},
        )
        await ds.invoke_startup()
        pack = (
            await ds.client.get("/-/research.json", params={"q": QUESTION, "external": "always"})
        ).json()
        row = pack["external_evidence"][0]
        guessed = "ext:brave:" + hashlib.sha256(row["url"].encode()).hexdigest()[:12]
        for keys in ([row["source_key"]], [guessed], ["ext:brave:000000000000"]):
            with pytest.raises(ResearchError) as refused:
                await checked_promotion(ds, {"id": "alice"}, pack["run_id"], keys, None, None)
            assert (refused.value.status, refused.value.code) == (404, "no_such_run")
        *_, rows = await checked_promotion(
            ds, {"id": "root"}, pack["run_id"], [row["source_key"]], None, None
        )
        assert [r["source_key"] for r in rows] == [row["source_key"]]
    finally:
        pm.unregister(name="alice-promotes")


async def test_compare_from_a_link_reruns_the_question_not_the_owners_filters(brain, fake):
    """The brain-only run compare makes for someone holding an anonymous run's link starts
    from what the link shares (the question), never the owner's filters; the owner's keeps
    them."""
    ds = await web_datasette(brain, fake, allow=True)
    made = await ds.client.get(
        "/-/research.json", params={"q": QUESTION, "external": "always", "kind": "source"}
    )
    pack = made.json()
    assert pack["query_plan"]["filters"].get("kind")
    mine = {own_runs.COOKIE: made.cookies[own_runs.COOKIE]}
    path = f"/-/research/compare?a={pack['run_id']}&b=brain"
    for cookies, keeps in ((actor_cookies(ds, "alice"), False), (mine, True)):
        offer = await ds.client.get(path, cookies=cookies)  # the page with the button
        field = re.search(r'name="csrftoken" value="([^"]*)"', offer.text)
        token = offer.cookies.get("ds_csrftoken")
        jar = {**cookies, **({"ds_csrftoken": token} if token else {})}
        data = {"csrftoken": field.group(1)} if field else {}
        compared = await ds.client.post(path, data=data, cookies=jar)
        assert compared.status_code == 303, compared.text
        b = re.search(r"&b=([^&]+)", compared.headers["location"]).group(1)
        root = actor_cookies(ds, "root")
        rerun = (await ds.client.get(f"/-/research/runs/{b}.json", cookies=root)).json()
        filters = rerun["pack"]["query_plan"]["filters"]
        assert bool(filters.get("kind")) is keeps, filters
        assert rerun["pack"]["question"] == QUESTION


class AlicePromotes:
    """0.65's grant of dbrain-promote to alice (1.0a reads the permissions block)."""

    @staticmethod
    @hookimpl
    def permission_allowed(actor, action):
        if action == "dbrain-promote" and (actor or {}).get("id") == "alice":
            return True
        return None
