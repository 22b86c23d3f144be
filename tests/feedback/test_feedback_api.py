"""Feedback over HTTP: marks stored with the run, re-ranking, refinement and refine_from."""

from __future__ import annotations

import re
import sqlite3

from ..helpers import (
    actor_cookies,
    add_source,
    ask,
    csrf,
    empty_brain,
    make_datasette,
    web_config,
    web_ds,
)


async def mark(ds, run_id, feedback, actor="root"):
    cookies, headers, _ = await csrf(ds, actor_cookies(ds, actor) if actor else {})
    return await ds.client.post(
        f"/-/research/runs/{run_id}/feedback",
        json={"feedback": feedback},
        cookies=cookies,
        headers=headers,
    )


async def test_marks_rerank_store_and_refine(brain, fake):
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="sqlite fts5 bm25 ranking", external="always")
    order = [e["source_key"] for e in pack["ranking"]]
    last = order[-1]
    response = await mark(ds, pack["run_id"], [{"key": last, "value": "relevant"}])
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["feedback"] == [{"key": last, "value": "relevant"}]
    new_order = [e["source_key"] for e in body["ranking"]]
    assert sorted(new_order) == sorted(order) and new_order.index(last) < order.index(last)
    assert any(m["source_key"] == last for m in body["moves"])
    assert "refined_query" in body["refinement"]
    stored = (
        sqlite3.connect(brain[0].parent / "research_runs.db")
        .execute(
            "select key, value, actor_id from dbrain_websearch_feedback where run_id = ?",
            [pack["run_id"]],
        )
        .fetchall()
    )
    assert stored == [(last, "relevant", "root")]
    # A later mark for the same key replaces the earlier one.
    await mark(ds, pack["run_id"], [{"key": last, "value": "unsure"}])
    again = await mark(ds, pack["run_id"], [])  # no new marks: the run's current state
    assert again.json()["feedback"] == [{"key": last, "value": "unsure"}]
    assert [e["source_key"] for e in again.json()["ranking"]] == order


async def test_unsure_changes_nothing(brain, fake):
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="lattice qcd", external="always")
    key = pack["ranking"][2]["source_key"]
    body = (await mark(ds, pack["run_id"], [{"key": key, "value": "unsure"}])).json()
    assert [e["source_key"] for e in body["ranking"]] == [e["source_key"] for e in pack["ranking"]]


async def test_bad_feedback_is_refused(brain, fake):
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="lattice qcd", external="always")
    key = pack["ranking"][0]["source_key"]
    bad_value = await mark(ds, pack["run_id"], [{"key": key, "value": "love"}])
    assert bad_value.status_code == 400 and bad_value.json()["code"] == "bad_feedback"
    not_in_run = await mark(ds, pack["run_id"], [{"key": "src:000000000000", "value": "more"}])
    assert not_in_run.status_code == 400 and not_in_run.json()["code"] == "not_in_run"
    missing = await mark(
        ds, "20260101T000000.000000000Z-000000000000", [{"key": key, "value": "more"}]
    )
    assert missing.status_code == 404


async def test_feedback_follows_the_research_permission(brain):
    ds = make_datasette([str(brain[0])], databases={"brain": {"allow": {"id": "alice"}}})
    pack = (
        await ds.client.get("/-/research.json?q=espresso", cookies=actor_cookies(ds, "alice"))
    ).json()
    key = pack["evidence"][0]["source_key"]
    denied = await mark(ds, pack["run_id"], [{"key": key, "value": "more"}], actor="mallory")
    assert denied.status_code == 403
    allowed = await mark(ds, pack["run_id"], [{"key": key, "value": "more"}], actor="alice")
    assert allowed.status_code == 200


async def test_page_buttons_mark_and_show_the_refined_query(brain, fake):
    ds = await web_ds(brain, fake)
    root = actor_cookies(ds, "root")
    page = await ds.client.get(
        "/-/research", params={"q": "sqlite fts5 bm25 ranking", "external": "always"}, cookies=root
    )
    assert 'form="dbrain-feedback" name="mark"' in page.text
    next_url = re.search(r'name="next" value="([^"]+)"', page.text).group(1).replace("&amp;", "&")
    value = re.search(r'name="mark" value="([^"]+)\|relevant"', page.text).group(1)
    cookies, _, token = await csrf(ds, root)
    action = re.search(r'<form id="dbrain-feedback" method="post" action="([^"]+)"', page.text)
    response = await ds.client.post(
        action.group(1),
        data={"csrftoken": token, "mark": f"{value}|relevant", "next": next_url},
        cookies=cookies,
    )
    assert response.status_code == 302 and response.headers["location"] == next_url
    shown = (await ds.client.get(next_url, cookies=root)).text
    assert re.search(r'value="[^"]+\|relevant"[^>]*aria-pressed="true">👍</button>', shown)
    assert "Your marks would also search for:" in shown


async def test_refine_from_widens_the_ranking_query_and_links_the_parent(brain, fake):
    """Issue 19: Expand ORs the marked rows' words into the ranking query; the question, the
    judge's terms and the web's query stay the person's, and no row is lost."""
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="sqlite ranking", external="always")
    relevant = next(r for r in pack["external_evidence"] if "bm25" in r["title"].lower())
    await mark(ds, pack["run_id"], [{"key": relevant["source_key"], "value": "relevant"}])
    _, child = await ask(ds, refine_from=pack["run_id"])
    assert child["parent_run_id"] == pack["run_id"]
    added = child["refinement"]["added_terms"]
    assert 1 <= len(added) <= 4
    assert child["question"] == "sqlite ranking"
    plan = child["query_plan"]
    assert plan["query_terms"] == pack["query_plan"]["query_terms"]
    assert plan["expansion_terms"] == added
    assert all(f'"{w}"' in plan["match_query"] for w in added)
    (query,) = {q["query"] for q in plan["external_queries"]}
    assert query == "sqlite ranking"
    assert len(child["evidence"]) >= len(pack["evidence"])
    assert child["external_search"]["mode"] == "always"
    root = actor_cookies(ds, "root")
    trace = (await ds.client.get(child["trace_url"] + ".json", cookies=root)).json()
    assert trace["pack"]["parent_run_id"] == pack["run_id"]
    status, body = await ask(ds, refine_from="nonsense")
    assert status == 400 and body["code"] == "bad_refine_from"


async def test_expanded_words_are_chips_each_removable(brain, fake):
    ds = await web_ds(brain, fake)
    root = actor_cookies(ds, "root")
    page = (
        await ds.client.get(
            "/-/research", params={"q": "sqlite", "expand": "bm25,tokenizer"}, cookies=root
        )
    ).text
    chips = re.findall(r'class="dbrain-chip dbrain-chip-term" href="([^"]+)"[^>]*>(\w+) ', page)
    assert [word for _, word in chips] == ["bm25", "tokenizer"]
    without_bm25 = chips[0][0].replace("&amp;", "&")
    assert "expand=tokenizer" in without_bm25 and "bm25" not in without_bm25
    status, pack = await ask(
        ds, **dict(p.split("=") for p in without_bm25.split("?")[1].split("&"))
    )
    assert status == 200 and pack["query_plan"]["expansion_terms"] == ["tokenizer"]
    status, body = await ask(ds, q="sqlite", expand="two words")
    assert status == 400 and body["code"] == "bad_expand"


def order(pack_or_body):
    return [e["source_key"] for e in pack_or_body["ranking"]]


async def test_a_row_marked_irrelevant_stays_below_the_rest_after_expand(brain, fake):
    """Issue 33: after 👎 and Expand the row came back at 8 of 10, above unmarked rows. The
    run Expand makes keeps the mark: the row is below every row not so marked, marked 👎 on
    the page, and stays below when the new run is marked in turn."""
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="sqlite fts5 bm25 ranking", external="always")
    top, second = order(pack)[:2]
    feedback = [{"key": top, "value": "irrelevant"}, {"key": second, "value": "relevant"}]
    assert (await mark(ds, pack["run_id"], feedback)).status_code == 200
    _, child = await ask(ds, refine_from=pack["run_id"])
    assert top in order(child)
    assert order(child)[-1] == top
    assert [(m["key"], m["value"]) for m in child["feedback"]["marks"]] == [(top, "irrelevant")]
    later = order(child)[0]
    body = (await mark(ds, child["run_id"], [{"key": later, "value": "relevant"}])).json()
    assert order(body)[-1] == top
    assert {"key": top, "value": "irrelevant"} in body["feedback"]
    root = actor_cookies(ds, "root")
    page = await ds.client.get(
        "/-/research", params={"q": child["question"], "run": child["run_id"]}, cookies=root
    )
    assert f'value="{top}|irrelevant"' in page.text
    assert re.search(rf'value="{re.escape(top)}\|irrelevant"[^>]*aria-pressed="true"', page.text), (
        "the carried mark shows as pressed"
    )
    # And the grandchild: Expand of the child still knows the 👎.
    _, grandchild = await ask(ds, refine_from=child["run_id"])
    assert order(grandchild)[-1] == top


async def test_expand_breaks_ties_by_rarity_in_the_brain(tmp_path):
    """Of words with equal scores (one marked row's), Expand takes those fewest of the brain's
    rows hold, counted over the whole brain, not the run's rows."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    add_source(
        conn,
        "https://example.com/zebra",
        title="Zebra",
        extracted_text="narwhal ocelot pangolin tapir quokka",
        extract_status="ok",
    )
    for n in range(12):  # rows the run never shows: the question's word is not in them
        add_source(
            conn,
            f"https://example.com/other/{n}",
            title=f"Other {n}",
            extracted_text="narwhal ocelot pangolin tapir",
            extract_status="ok",
        )
    conn.commit()
    conn.close()
    ds = make_datasette([str(path)])
    await ds.invoke_startup()
    _, pack = await ask(ds, q="zebra")
    (key,) = order(pack)
    body = (await mark(ds, pack["run_id"], [{"key": key, "value": "relevant"}])).json()
    added = body["refinement"]["added_terms"]
    assert added[0] == "quokka", added


async def test_expand_keeps_the_filters_drawer_as_it_was(brain, fake):
    """Issue 33: after Expand the Filters drawer opened by itself (the new run takes its
    parent's limit). It opens for a filter the person set, as before Expand."""
    ds = await web_ds(brain, fake)
    root = actor_cookies(ds, "root")

    async def drawer(**params):
        page = (await ds.client.get("/-/research", params=params, cookies=root)).text
        return re.search(r'<details class="dbrain-filters"( open)?>', page).group(1) is not None

    for parent, opened in (({"q": "sqlite fts5"}, False), ({"q": "sqlite", "limit": "25"}, True)):
        _, pack = await ask(ds, **parent)
        assert await drawer(**parent) is opened
        await mark(ds, pack["run_id"], [{"key": order(pack)[0], "value": "relevant"}])
        assert await drawer(refine_from=pack["run_id"]) is opened


async def test_refined_runs_keep_the_parent_brain_and_filters(brain, tmp_path, fake):
    from ..helpers import build_fixture_brain

    first = tmp_path / "aaa.db"
    build_fixture_brain(first)
    ds = make_datasette([str(first), str(brain[0])], plugin_config=web_config(fake))
    root = actor_cookies(ds, "root")
    parent = (
        await ds.client.get(
            "/brain/-/research.json",
            params={"q": "espresso", "kind": "source", "tag": "espresso"},
            cookies=root,
        )
    ).json()
    child = (
        await ds.client.get(
            "/-/research.json", params={"refine_from": parent["run_id"]}, cookies=root
        )
    ).json()
    assert child["database"] == "brain"
    assert child["query_plan"]["filters"] == {"tag": ["espresso"], "kind": "source"}
    assert child["parent_run_id"] == parent["run_id"]
