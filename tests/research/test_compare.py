"""Compare: the same question with and without the web, or any two saved runs, side by side
(page and JSON), through the saved-run privacy check."""

from __future__ import annotations

from markupsafe import escape

from ..helpers import actor_cookies, csrf, web_datasette, web_pack

QUESTION = "espresso extraction"


async def web_run(brain, fake):
    ds = await web_datasette(brain, fake)
    pack = await web_pack(ds, QUESTION, answer="1")
    assert pack["evidence"] and pack["external_evidence"]
    return ds, pack


async def test_a_web_run_compared_with_the_brain_alone_shows_what_the_web_added(brain, fake):
    ds, pack = await web_run(brain, fake)
    root = actor_cookies(ds, "root")
    page = await ds.client.get(pack["trace_url"], cookies=root)
    assert f"/-/research/compare?a={pack['run_id']}&amp;b=brain" in page.text
    offer = await ds.client.get(f"/-/research/compare?a={pack['run_id']}&b=brain", cookies=root)
    assert offer.status_code == 200 and 'method="post"' in offer.text  # a link makes no run
    cookies, _, token = await csrf(ds, root)
    response = await ds.client.post(
        f"/-/research/compare?a={pack['run_id']}&b=brain",
        data={"csrftoken": token},
        cookies=cookies,
    )
    assert response.status_code == 303  # the brain-only run is saved; its comparison has an address
    location = response.headers["location"]
    assert location.startswith(f"/-/research/compare?a={pack['run_id']}&b=")
    calls_before = len(fake.requests)
    html = await ds.client.get(location, cookies=root)
    assert html.status_code == 200 and len(fake.requests) == calls_before  # never re-researched
    assert "A: with the web" in html.text and "B: your brain only" in html.text
    comparison = (
        await ds.client.get(location.replace("/compare?", "/compare.json?"), cookies=root)
    ).json()
    a, b = comparison["a"], comparison["b"]
    assert comparison["same_question"] and a["run_id"] == pack["run_id"]
    assert (a["web_searched"], b["web_searched"]) == (True, False)
    assert a["counts"] == {"brain": len(pack["evidence"]), "web": len(pack["external_evidence"])}
    assert b["counts"]["web"] == 0 and b["counts"]["brain"] == len(pack["evidence"])
    assert a["provider_calls"] == 1 and a["cost_usd"] > 0 and b["provider_calls"] == 0
    # The web's rows are the rows only the web run holds; the brain's are in both.
    assert {r["origin"] for r in comparison["only_in_a"]} == {"outside_dbrain_corpus"}
    assert len(comparison["only_in_a"]) == len(pack["external_evidence"])
    assert comparison["only_in_b"] == []
    assert len(comparison["in_both"]) == len(pack["evidence"])
    said = sum(1 for s in a["answer"] if s["cites"] in ("web", "both"))
    assert comparison["summary"].startswith(
        f"The web added {len(pack['external_evidence'])} pages, {said} answer sentences citing it"
    )
    assert "1 provider call ($0.005)" in comparison["summary"]
    assert str(escape(comparison["summary"])) in html.text
    # Each answer sentence says which side it cites.
    assert {s["cites"] for s in b["answer"]} <= {"brain", "none"}
    assert "web" in {s["cites"] for s in a["answer"]}
    web_sentences = [s["text"] for s in a["answer"] if s["cites"] == "web"]
    assert web_sentences and all(str(escape(text)) in html.text for text in web_sentences)


async def test_json_compares_at_once_and_any_two_runs_compare(brain, fake):
    ds, pack = await web_run(brain, fake)
    root = actor_cookies(ds, "root")
    cookies, headers, _ = await csrf(ds, root)
    direct = await ds.client.post(
        "/-/research/compare.json",
        params={"a": pack["run_id"], "b": "brain"},
        json={},
        cookies=cookies,
        headers=headers,
    )
    assert direct.status_code == 200
    brain_only = direct.json()["b"]["run_id"]
    swapped = await ds.client.get(
        "/-/research/compare.json", params={"a": brain_only, "b": pack["run_id"]}, cookies=root
    )
    assert len(swapped.json()["only_in_b"]) == len(pack["external_evidence"])


async def test_someone_elses_run_cannot_be_compared(brain, fake):
    ds, pack = await web_run(brain, fake)
    for actor in ("alice", None):
        cookies = actor_cookies(ds, actor) if actor else {}
        response = await ds.client.get(
            "/-/research/compare.json", params={"a": pack["run_id"], "b": "brain"}, cookies=cookies
        )
        assert (response.status_code, response.json()["code"]) == (404, "no_such_run")
        assert QUESTION not in response.text
    bad = await ds.client.get(
        "/-/research/compare.json",
        params={"a": "nope", "b": "brain"},
        cookies=actor_cookies(ds, "root"),
    )
    assert (bad.status_code, bad.json()["code"]) == (400, "bad_run_id")
