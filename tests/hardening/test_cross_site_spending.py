"""Issue 31, item 5: another site spends nothing on a signed-in person's account, and every
surface that makes runs goes through the per-person limits, through HTTP on both lines.

Cross-site is a request signed in by the ``ds_actor`` cookie with ``Sec-Fetch-Site:
cross-site`` (``requesters.cross_site_with_cookie``): it gets no web search, no model answer
(the offline answer instead, with the same ``external_search_cross_site`` warning) and no new
compare run. Compare makes its brain-only run only on a POST; compare and MCP count a heavy
question against its requester as the JSON API does (the gate is held by hand: no waits).
"""

from __future__ import annotations

from typing import Any

import pytest

from datasette_dbrain_websearch import cost
from datasette_dbrain_websearch.admission import gate_for
from datasette_dbrain_websearch.answer import stage
from datasette_dbrain_websearch.runs_db import RUNS_TABLE
from datasette_dbrain_websearch.web_gate import CROSS_SITE_WARNING

from ..fake_models import fake_models
from ..helpers import (
    actor_cookies,
    csrf,
    db_rows,
    make_datasette,
    provider_requests,
    web_config,
    web_pack,
)

QUESTION = "espresso grinder"
CROSS_SITE = {"sec-fetch-site": "cross-site"}
SAME_SITE = {"sec-fetch-site": "same-origin"}


@pytest.fixture
def asked(monkeypatch) -> list[str]:
    """The fake models, and the model ids the answer stage resolved (each one is asked)."""
    seen: list[str] = []
    real = stage.resolve_model

    async def spy(model_id: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(model_id)
        return await real(model_id, *args, **kwargs)

    monkeypatch.setattr(stage, "resolve_model", spy)
    with fake_models():
        yield seen


async def model_ds(brain, fake, **extra: Any):
    config = web_config(fake)
    config["answer"] = {"synthesizer": "llm", "model": "dbrain-fake", "allow": {"id": "root"}}
    ds = make_datasette([str(brain[0])], plugin_config=config, **extra)
    await ds.invoke_startup()
    return ds


def runs(brain) -> int:
    path = brain[0].parent / "research_runs.db"
    return db_rows(path, f"select count(*) as n from {RUNS_TABLE}")[0]["n"]


def cross_site_warnings(pack: dict) -> list[dict]:
    return [w for w in pack["warnings"] if w["code"] == CROSS_SITE_WARNING]


# ---------------------------------------------------------------------------------------------
# Model answers


async def test_a_cross_site_get_gets_no_model_answer(brain, fake, asked):
    ds = await model_ds(brain, fake)
    root = actor_cookies(ds, "root")
    params = {"q": QUESTION, "answer": "1"}
    response = await ds.client.get(
        "/-/research.json", params=params, cookies=root, headers=CROSS_SITE
    )
    assert response.status_code == 200
    pack = response.json()
    assert asked == []  # no model was even looked up, let alone sent the brain's text
    assert pack["answer"]["synthesizer"] == "extractive" and pack["answer"]["status"] == "ok"
    (warning,) = cross_site_warnings(pack)
    assert "no language model was asked on your account" in warning["message"]
    page = await ds.client.get("/-/research", params=params, cookies=root, headers=CROSS_SITE)
    assert page.status_code == 200 and asked == []
    assert "no language model was asked on your account" in page.text
    stream = await ds.client.get(
        "/-/research/stream", params=params, cookies=root, headers=CROSS_SITE
    )
    assert stream.status_code == 200 and asked == [] and "Asking dbrain-fake" not in stream.text
    # The same request from this site is answered by the model.
    same = await ds.client.get("/-/research.json", params=params, cookies=root, headers=SAME_SITE)
    assert same.json()["answer"]["synthesizer"] == "llm:dbrain-fake"
    assert asked == ["dbrain-fake"] and not cross_site_warnings(same.json())


async def test_a_cross_site_get_skipping_web_and_model_says_so_once(brain, fake, asked):
    ds = await model_ds(brain, fake)
    response = await ds.client.get(
        "/-/research.json",
        params={"q": "lattice qcd", "external": "always", "answer": "1"},
        cookies=actor_cookies(ds, "root"),
        headers=CROSS_SITE,
    )
    pack = response.json()
    assert asked == [] and not provider_requests(fake)
    assert pack["external_search"]["skipped_reason"] == "cross_site"
    assert pack["answer"]["synthesizer"] == "extractive"
    (warning,) = cross_site_warnings(pack)
    assert "neither the web nor a language model" in warning["message"]


async def test_a_sibling_site_spends_only_when_the_config_trusts_it(brain, fake, asked):
    """``Sec-Fetch-Site: same-site`` is another subdomain (anyone hosting there): it spends
    nothing unless ``same_site_spends`` says the sibling sites are trusted."""
    params = {"q": "lattice qcd", "external": "always", "answer": "1"}
    sibling = {"sec-fetch-site": "same-site"}
    ds = await model_ds(brain, fake)
    root = actor_cookies(ds, "root")
    pack = await ds.client.get("/-/research.json", params=params, cookies=root, headers=sibling)
    assert asked == [] and not provider_requests(fake)
    assert pack.json()["external_search"]["skipped_reason"] == "cross_site"
    config = web_config(fake)
    config["answer"] = {"synthesizer": "llm", "model": "dbrain-fake", "allow": {"id": "root"}}
    trusting = make_datasette([str(brain[0])], plugin_config={**config, "same_site_spends": True})
    await trusting.invoke_startup()
    root = actor_cookies(trusting, "root")
    pack = await trusting.client.get(
        "/-/research.json", params=params, cookies=root, headers=sibling
    )
    assert pack.json()["external_search"]["ran"] is True and provider_requests(fake)
    assert asked == ["dbrain-fake"]


# ---------------------------------------------------------------------------------------------
# Compare: a run only on a POST from this site


async def compare_setup(brain, fake):
    ds = make_datasette([str(brain[0])], plugin_config=web_config(fake))
    await ds.invoke_startup()
    pack = await web_pack(ds, "espresso extraction")
    return ds, pack, actor_cookies(ds, "root")


async def test_compare_makes_a_brain_only_run_only_on_a_post(brain, fake):
    ds, pack, root = await compare_setup(brain, fake)
    path = f"/-/research/compare?a={pack['run_id']}&b=brain"
    before = runs(brain)
    page = await ds.client.get(path, cookies=root)
    assert page.status_code == 200 and runs(brain) == before
    assert '<form class="dbrain-compare-offer" method="post"' in page.text
    assert f'action="/-/research/compare?a={pack["run_id"]}&amp;b=brain"' in page.text
    assert 'name="csrftoken"' in page.text and "espresso extraction" in page.text
    assert (await ds.client.head(path, cookies=root)).status_code == 200
    json_get = await ds.client.get(path.replace("compare?", "compare.json?"), cookies=root)
    assert (json_get.status_code, json_get.json()["code"]) == (405, "method_not_allowed")
    assert json_get.headers["allow"] == "POST"
    for method in ("OPTIONS", "PUT", "DELETE"):
        for url in (path, path.replace("compare?", "compare.json?")):
            response = await ds.client.request(method, url, cookies=root)
            # 0.65's CSRF check refuses a cookie-bearing PUT or DELETE before the view
            assert response.status_code in (403, 405), (method, url, response.status_code)
            assert runs(brain) == before, method
    assert runs(brain) == before
    cookies, headers, token = await csrf(ds, root)
    posted = await ds.client.post(path, data={"csrftoken": token}, cookies=cookies)
    assert posted.status_code == 303, posted.text
    assert posted.headers["location"].startswith(f"/-/research/compare?a={pack['run_id']}&b=")
    assert runs(brain) == before + 1
    as_json = await ds.client.post(
        path.replace("compare?", "compare.json?"), json={}, cookies=cookies, headers=headers
    )
    assert as_json.status_code == 200 and as_json.json()["b"]["web_searched"] is False
    assert runs(brain) == before + 2


async def test_a_cross_site_compare_post_spends_nothing(brain, fake):
    ds, pack, root = await compare_setup(brain, fake)
    cookies, headers, token = await csrf(ds, root)
    before = runs(brain)
    for suffix, kwargs in (("", {"data": {"csrftoken": token}}), (".json", {"json": {}})):
        response = await ds.client.post(
            f"/-/research/compare{suffix}?a={pack['run_id']}&b=brain",
            cookies=cookies,
            headers={**headers, **CROSS_SITE},
            **kwargs,
        )
        # 1.0a41's CSRF check refuses it first; on 0.65 (the token matches) the view does.
        assert response.status_code == 403, (suffix, response.text)
    assert runs(brain) == before


# ---------------------------------------------------------------------------------------------
# The per-person heavy-question limit: compare and MCP as the JSON API


async def test_compare_counts_against_the_requesters_heavy_limit(brain, fake, monkeypatch):
    ds, pack, root = await compare_setup(brain, fake)
    cookies, headers, token = await csrf(ds, root)
    monkeypatch.setattr(cost, "HEAVY_POSTINGS", -1)
    gate = gate_for(ds)
    gate.in_flight["actor:root"] = 1  # root's heavy question is running
    before = runs(brain)
    try:
        research = await ds.client.get("/-/research.json", params={"q": QUESTION}, cookies=root)
        assert research.status_code == 429
        assert research.json()["code"] == "too_many_costly_searches"
        compared = await ds.client.post(
            f"/-/research/compare.json?a={pack['run_id']}&b=brain",
            json={},
            cookies=cookies,
            headers=headers,
        )
        assert compared.status_code == 429 and compared.headers["retry-after"] == "2"
        assert compared.json()["code"] == "too_many_costly_searches"
        page = await ds.client.post(
            f"/-/research/compare?a={pack['run_id']}&b=brain",
            data={"csrftoken": token},
            cookies=cookies,
        )
        assert page.status_code == 429 and "costly search running" in page.text
        assert runs(brain) == before
    finally:
        del gate.in_flight["actor:root"]


class Tools:
    """datasette-mcp's registry, as ``register_mcp`` sees it: keeps each tool's function."""

    def __init__(self) -> None:
        self.tools: dict[str, Any] = {}

    def tool(self, name: str, **kwargs: Any) -> Any:
        def keep(fn: Any) -> Any:
            self.tools[name] = fn
            return fn

        return keep


class Context:
    """An MCP call's context: the HTTP request Datasette handled (its scope, with the actor)."""

    def __init__(self, scope: dict) -> None:
        request = type("Request", (), {"scope": scope})()
        self.request_context = type("RequestContext", (), {"request": request})()


def mcp_scope(ds, actor: dict | None, headers: dict[str, str] | None = None) -> dict:
    raw = [(b"host", b"localhost")]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    if actor:
        raw.append((b"cookie", f"ds_actor={actor_cookies(ds, actor['id'])['ds_actor']}".encode()))
    return {
        "type": "http",
        "method": "POST",
        "path": "/-/mcp",
        "scheme": "http",
        "headers": raw,
        "query_string": b"",
        "client": ("203.0.113.9", 4444),
        "actor": actor,
    }


async def test_mcp_counts_against_the_requesters_heavy_limit(brain, fake, monkeypatch):
    pytest.importorskip("mcp.server.mcpserver")
    from mcp.server.mcpserver.exceptions import ToolError

    from datasette_dbrain_websearch.tools.mcp import register_mcp

    ds = make_datasette([str(brain[0])], plugin_config=web_config(fake))
    await ds.invoke_startup()
    registry = Tools()
    register_mcp(ds, registry)
    research = registry.tools["dbrain_research"]
    alice = {"id": "alice"}
    light = await research(Context(mcp_scope(ds, alice)), question=QUESTION)
    assert light["ok"]
    monkeypatch.setattr(cost, "HEAVY_POSTINGS", -1)
    gate = gate_for(ds)
    gate.in_flight["actor:alice"] = 1
    gate.in_flight["address:203.0.113.9"] = 1
    try:
        json_api = await ds.client.get(
            "/-/research.json", params={"q": QUESTION}, cookies=actor_cookies(ds, "alice")
        )
        assert json_api.json()["code"] == "too_many_costly_searches"
        for actor in (alice, None):  # by actor, and an anonymous caller by address
            with pytest.raises(ToolError) as refused:
                await research(Context(mcp_scope(ds, actor)), question=QUESTION)
            assert "(too_many_costly_searches)" in str(refused.value)
            assert json_api.json()["error"] in str(refused.value)
    finally:
        gate.in_flight.clear()


async def test_a_cross_site_mcp_call_spends_nothing(brain, fake, asked):
    pytest.importorskip("mcp.server.mcpserver")
    from datasette_dbrain_websearch.tools.mcp import register_mcp

    ds = await model_ds(brain, fake)
    registry = Tools()
    register_mcp(ds, registry)
    research = registry.tools["dbrain_research"]
    root = {"id": "root"}
    reply = await research(
        Context(mcp_scope(ds, root, CROSS_SITE)),
        question="lattice qcd",
        external="always",
        answer=True,
    )
    assert asked == [] and not provider_requests(fake)
    assert reply["web"]["skipped_reason"] == "cross_site"
    assert CROSS_SITE_WARNING in [w["code"] for w in reply["warnings"]]
