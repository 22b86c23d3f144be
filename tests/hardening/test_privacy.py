"""Runs are private: each actor sees their own, root sees all, a run id reveals nothing.

Anonymous runs are read by whoever has their link (the id carries 96 random bits) and are
listed for root only. Every check goes through HTTP.
"""

from __future__ import annotations

import re
import sqlite3

from datasette import hookimpl
from datasette.plugins import pm

from datasette_dbrain_websearch import runs_db, traces
from datasette_dbrain_websearch.pack import new_run_id
from datasette_dbrain_websearch.views import own_runs

from ..helpers import actor_cookies, attr, csrf, make_datasette, promoting_ds, web_config

INSERT_RUN = (
    f"insert into {runs_db.RUNS_TABLE} values (?, ?, ?, 'json', 'brain', ?, ?, 'never', 0, 0, "
    "'', 'no_evidence', 0, 0, '', 1, '{}')"
)


async def web_run(ds, actor):
    response = await ds.client.get(
        "/-/research.json",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, actor),
    )
    return response.json()


async def run_as(ds, actor, q="espresso"):
    cookies = actor_cookies(ds, actor) if actor else {}
    response = await ds.client.get("/-/research.json", params={"q": q}, cookies=cookies)
    assert response.status_code == 200
    return response.json()


async def listed(ds, actor):
    """The run ids the runs page shows this actor."""
    cookies = actor_cookies(ds, actor) if actor else {}
    page = await ds.client.get("/-/research/runs", cookies=cookies)
    assert page.status_code == 200
    return re.findall(r'href="/-/research/runs/([^"]+)"', page.text)


async def test_each_actor_lists_only_their_own_runs_and_root_lists_all(ds):
    alice, bob, anonymous = (
        await run_as(ds, "alice", "espresso"),
        await run_as(ds, "bob", "tokio"),
        await run_as(ds, None, "sourdough"),
    )
    assert await listed(ds, "alice") == [alice["run_id"]]
    assert await listed(ds, "bob") == [bob["run_id"]]
    assert set(await listed(ds, "root")) == {r["run_id"] for r in (alice, bob, anonymous)}
    page = (await ds.client.get("/-/research/runs")).text
    assert await listed(ds, None) == [] and "Sign in to see yours" in page
    assert "/-/auth-token link" in page  # and how
    assert "sourdough" not in page and "espresso" not in page


async def test_runs_json_lists_the_same_and_tells_anonymous_visitors_to_sign_in(ds):
    alice = await run_as(ds, "alice")
    await run_as(ds, None, "tokio")
    mine = await ds.client.get("/-/research/runs.json", cookies=actor_cookies(ds, "alice"))
    assert [r["run_id"] for r in mine.json()["runs"]] == [alice["run_id"]]
    body = (await ds.client.get("/-/research/runs.json")).json()
    assert body["ok"] is True and body["runs"] == []
    assert "Sign in to see yours" in body["message"]


MISSING_RUN = "20260101T000000.000000000Z-000000000000"


async def test_someone_elses_run_is_a_404_like_a_missing_one(ds):
    pack = await run_as(ds, "alice")
    key = pack["evidence"][0]["source_key"]
    for cookies in (actor_cookies(ds, "bob"), {}):
        for run_id in (pack["run_id"], MISSING_RUN):
            page = await ds.client.get(f"/-/research/runs/{run_id}", cookies=cookies)
            assert page.status_code == 404
            body = (await ds.client.get(f"/-/research/runs/{run_id}.json", cookies=cookies)).json()
            assert body == {
                "ok": False,
                "error": f"No saved run {run_id}.",
                "errors": [f"No saved run {run_id}."],
                "status": 404,
                "code": "no_such_run",
            }
            refined = await ds.client.get(
                "/-/research.json", params={"refine_from": run_id}, cookies=cookies
            )
            assert refined.json() == body
            form_cookies, headers, _ = await csrf(ds, cookies)
            marked = await ds.client.post(
                f"/-/research/runs/{run_id}/feedback",
                json={"feedback": [{"key": key, "value": "relevant"}]},
                cookies=form_cookies,
                headers=headers,
            )
            assert marked.json() == body
            saved = await ds.client.get(
                "/-/research", params={"q": "espresso", "run": run_id}, cookies=cookies
            )
            assert f"{run_id}/feedback" not in saved.text  # a fresh run, not alice's
    alice = actor_cookies(ds, "alice")
    assert (await ds.client.get(pack["trace_url"], cookies=alice)).status_code == 200
    root = actor_cookies(ds, "root")
    assert (await ds.client.get(pack["trace_url"], cookies=root)).status_code == 200


class CarolPromotes:
    """0.65: lets carol promote (1.0a grants it through ``permissions:`` in config)."""

    __name__ = "carol_promotes"

    @hookimpl
    def permission_allowed(self, actor, action):
        if action == "dbrain-promote" and (actor or {}).get("id") == "carol":
            return True
        return None


async def test_promotion_needs_the_runs_own_actor_or_root(brain, fake):
    ds = make_datasette(
        [str(brain[0])],
        plugin_config=web_config(fake, allow={"id": ["root", "alice", "carol"]}),
        permissions={"dbrain-promote": {"id": ["root", "carol"]}},
    )
    await ds.invoke_startup()
    alice_run = await web_run(ds, actor="alice")
    carol_run = await web_run(ds, actor="carol")

    async def promote_as(actor, run):
        cookies, headers, _ = await csrf(ds, actor_cookies(ds, actor))
        body = {"run_id": run["run_id"], "source_keys": [run["external_evidence"][0]["source_key"]]}
        return await ds.client.post(
            "/-/research/promote", json=body, cookies=cookies, headers=headers
        )

    pm.register(CarolPromotes(), name=CarolPromotes.__name__)
    try:
        refused = await promote_as("carol", alice_run)
        assert refused.status_code == 404 and refused.json()["code"] == "no_such_run"
        assert (await promote_as("carol", carol_run)).status_code == 200
        assert (await promote_as("root", alice_run)).status_code == 200
    finally:
        pm.unregister(name=CarolPromotes.__name__)


async def test_anonymous_runs_are_read_by_link_and_listed_for_root_only(ds):
    pack = await run_as(ds, None)
    for cookies in ({}, actor_cookies(ds, "alice"), actor_cookies(ds, "root")):
        assert (await ds.client.get(pack["trace_url"], cookies=cookies)).status_code == 200
        trace = await ds.client.get(pack["trace_url"] + ".json", cookies=cookies)
        assert trace.json()["run_id"] == pack["run_id"]
    assert pack["run_id"] not in await listed(ds, "alice")
    assert pack["run_id"] in await listed(ds, "root")


async def test_own_runs_never_hide_behind_a_hundred_newer_runs_of_others(ds, brain):
    mine = await run_as(ds, "alice")
    conn = sqlite3.connect(brain[0].parent / runs_db.DEFAULT_FILENAME)
    with conn:
        for n in range(150):
            started = f"2999-01-01T00:00:{n // 60:02d}.{n % 60:03d}Z"
            run_id = f"29990101T000000.{n:09d}Z-{n:024x}"
            conn.execute(INSERT_RUN, [run_id, started, started, f"bob's question {n}", "bob"])
    conn.close()
    assert await listed(ds, "alice") == [mine["run_id"]]
    everyone = await listed(ds, "root")
    assert len(everyone) == 100 and mine["run_id"] not in everyone


def test_run_ids_carry_at_least_96_random_bits():
    ids = {new_run_id(now_ns=1_800_000_000_000_000_000) for _ in range(50)}
    assert len(ids) == 50
    for run_id in ids:
        assert traces.RUN_ID.fullmatch(run_id)
        token = run_id.rsplit("-", 1)[1]
        assert re.fullmatch(r"[0-9a-f]{24,}", token)


async def test_the_pages_own_links_work_signed_in_and_anonymous(ds):
    for actor in (None, "alice"):
        cookies = actor_cookies(ds, actor) if actor else {}
        asked = await ds.client.get("/-/research", params={"q": "espresso"}, cookies=cookies)
        # As a browser keeps them: the form's CSRF token, and a visitor's runs as theirs.
        cookies |= dict(asked.cookies)
        assert (own_runs.COOKIE in cookies) is (actor is None)
        page = asked.text
        trace_url = attr(page, r'<a href="([^"]+)">trace</a>')
        assert (await ds.client.get(trace_url, cookies=cookies)).status_code == 200
        action = attr(page, r'<form id="dbrain-feedback" method="post" action="([^"]+)"')
        back = attr(page, r'name="next" value="([^"]+)"')
        key = attr(page, r'name="mark" value="([^"|]+)\|relevant"')
        token = attr(page, r'name="csrftoken" value="([^"]*)"')
        marked = await ds.client.post(
            action,
            data={"csrftoken": token, "mark": f"{key}|relevant", "next": back},
            cookies=cookies,
        )
        assert marked.status_code == 302 and marked.headers["location"] == back
        saved = await ds.client.get(back, cookies=cookies)
        assert saved.status_code == 200 and 'aria-pressed="true">👍</button>' in saved.text
        assert (await ds.client.get(trace_url + ".json", cookies=cookies)).status_code == 200


async def test_promotion_from_the_page_lands_back_on_the_saved_run(brain, fake):
    ds = await promoting_ds(brain, fake)
    root = actor_cookies(ds, "root")
    page = (
        await ds.client.get(
            "/-/research", params={"q": "lattice qcd", "external": "always"}, cookies=root
        )
    ).text
    back = attr(page, r'name="next" value="([^"]+)"')
    run_id = re.search(r"run=([^&]+)", back).group(1)
    key = attr(page, r'name="promote_one" value="([^"]+)"')
    form_cookies, _, token = await csrf(ds, root)
    response = await ds.client.post(
        "/-/research/promote",
        data={"csrftoken": token, "run_id": run_id, "promote_one": key, "next": back},
        cookies=form_cookies,
    )
    assert response.status_code == 302 and response.headers["location"] == back
    assert (await ds.client.get(back, cookies=root)).status_code == 200


async def test_the_plugin_database_is_root_only_even_for_web_searchers(brain, fake):
    """Browsing ``research_runs`` as tables would show everyone's questions."""
    ds = make_datasette(
        [str(brain[0])], plugin_config=web_config(fake, allow={"id": ["root", "alice"]})
    )
    await ds.invoke_startup()
    await run_as(ds, "bob", "a private question")
    alice = actor_cookies(ds, "alice")
    for path in (
        "/research_runs",
        f"/research_runs/{runs_db.RUNS_TABLE}.json",
        "/research_runs.json?sql=select+question+from+" + runs_db.RUNS_TABLE,
    ):
        response = await ds.client.get(path, cookies=alice)
        assert response.status_code == 403, path
        assert "a private question" not in response.text
    root = await ds.client.get(
        f"/research_runs/{runs_db.RUNS_TABLE}.json", cookies=actor_cookies(ds, "root")
    )
    assert root.status_code == 200 and "a private question" in root.text


async def test_runs_are_private_to_their_actor(ds):
    alice, bob = actor_cookies(ds, "alice"), actor_cookies(ds, "bob")
    pack = (await ds.client.get("/-/research.json?q=espresso", cookies=alice)).json()
    assert (await ds.client.get(pack["trace_url"] + ".json", cookies=alice)).status_code == 200
    assert (await ds.client.get(pack["trace_url"] + ".json", cookies=bob)).status_code == 404
    assert (await ds.client.get(pack["trace_url"])).status_code == 404
    assert pack["run_id"] not in (await ds.client.get("/-/research/runs", cookies=bob)).text
    assert pack["run_id"] in (await ds.client.get("/-/research/runs", cookies=alice)).text
    root = actor_cookies(ds, "root")
    assert pack["run_id"] in (await ds.client.get("/-/research/runs", cookies=root)).text
