"""dbrain-research follows view-database; every route checks it."""

from __future__ import annotations

import pytest

from ..helpers import DATASETTE_1, actor_cookies, make_datasette

ROUTES = ["/-/research", "/-/research.json", "/brain/-/research", "/brain/-/research.json"]


@pytest.fixture
def private_ds(brain):
    return make_datasette([str(brain[0])], databases={"brain": {"allow": {"id": "alice"}}})


@pytest.mark.parametrize("route", ROUTES)
async def test_denied_actor_gets_403_everywhere(private_ds, route):
    for cookies in ({}, actor_cookies(private_ds, "mallory")):
        response = await private_ds.client.get(route + "?q=espresso", cookies=cookies)
        assert response.status_code == 403, (route, cookies)
        assert "espresso" not in response.text.lower().replace("q=espresso", "")


@pytest.mark.parametrize("route", ROUTES)
async def test_allowed_actor_gets_results(private_ds, route):
    response = await private_ds.client.get(
        route + "?q=espresso", cookies=actor_cookies(private_ds, "alice")
    )
    assert response.status_code == 200
    assert "A home espresso guide" in response.text


async def test_public_brain_is_open_to_anonymous(ds):
    response = await ds.client.get("/-/research.json?q=espresso")
    assert response.status_code == 200


async def test_menu_link_and_database_action_follow_the_permission(private_ds):
    alice = actor_cookies(private_ds, "alice")
    page = (await private_ds.client.get("/brain", cookies=alice)).text
    assert 'href="/-/research"' in page
    assert 'href="/brain/-/research"' in page and "Research this brain" in page
    anonymous = (await private_ds.client.get("/")).text
    assert 'href="/-/research"' not in anonymous


@pytest.mark.skipif(not DATASETTE_1, reason="config permission blocks exist on 1.0a only")
async def test_config_can_deny_research_where_viewing_is_allowed(brain):
    ds = make_datasette([str(brain[0])], permissions={"dbrain-research": False})
    assert (await ds.client.get("/brain")).status_code == 200
    assert (await ds.client.get("/-/research.json?q=espresso")).status_code == 403
    assert (await ds.client.get("/brain/-/research?q=espresso")).status_code == 403
