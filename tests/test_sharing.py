"""Share-safe runs (issue 33): a run seen by someone other than its owner (an anonymous run's
link) holds the question, the answer and the rows it cites: not the other rows, the web's
uncited snippets, nor how it was searched. The owner (and root) still see everything. Every
check goes through HTTP: the page, its JSON and both exports."""

from __future__ import annotations

import csv
import io

from datasette_dbrain_websearch import exports

from .helpers import actor_cookies, web_datasette

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
