"""Signing in with Datasette's one-time link returns to the research page that asked for it."""

from __future__ import annotations

import pytest

from datasette_dbrain_websearch.views.sign_in import RETURN_COOKIE, return_path


def return_cookie(response) -> str | None:
    for header in response.headers.get_list("set-cookie"):
        if header.startswith(f"{RETURN_COOKIE}="):
            return header.split(";", 1)[0].split("=", 1)[1]
    return None


async def sign_in(ds, cookies: dict[str, str]):
    ds._root_token = "one-time"
    return await ds.client.get("/-/auth-token?token=one-time", cookies=cookies)


async def test_signing_in_returns_to_the_research_page_it_started_from(ds):
    page = await ds.client.get("/-/research?q=espresso+grinder&external=always")
    assert page.status_code == 200
    remembered = return_cookie(page)
    assert remembered
    response = await sign_in(ds, {RETURN_COOKIE: remembered})
    assert response.status_code == 302
    assert response.headers["location"] == "/-/research?q=espresso+grinder&external=always"
    assert "ds_actor=" in response.headers.get("set-cookie", "")
    # The page is remembered once: the cookie is cleared with the sign-in.
    assert return_cookie(response) == ""
    signed_in = {"ds_actor": response.cookies["ds_actor"]}
    again = await ds.client.get(response.headers["location"], cookies=signed_in)
    assert again.status_code == 200 and return_cookie(again) is None


async def test_the_signed_out_runs_page_is_remembered_too(ds):
    page = await ds.client.get("/-/research/runs")
    response = await sign_in(ds, {RETURN_COOKIE: return_cookie(page)})
    assert response.headers["location"] == "/-/research/runs"


async def test_without_a_research_page_sign_in_goes_home_as_datasette_does(ds):
    json_api = await ds.client.get("/-/research.json?q=espresso")
    assert return_cookie(json_api) is None
    response = await sign_in(ds, {})
    assert response.headers["location"] == "/"


async def test_a_failed_sign_in_is_left_alone(ds):
    ds._root_token = "one-time"
    response = await ds.client.get(
        "/-/auth-token?token=wrong", cookies={RETURN_COOKIE: "/-/research"}
    )
    assert response.status_code == 403


@pytest.mark.parametrize(
    "planted",
    [
        "//evil.example/-/research",
        "/%2Fevil.example/-/research",
        "https://evil.example/-/research",
        "/\\evil.example/-/research",
        "/-/metadata",
        "/-/research%0d%0aSet-Cookie:%20x=1",
        "/-/metadata?next=/-/research",
    ],
)
async def test_a_planted_cookie_never_sends_anyone_off_the_site(ds, planted):
    response = await sign_in(ds, {RETURN_COOKIE: planted})
    assert response.status_code == 302
    assert response.headers["location"] == "/"
    assert return_path(planted) is None


async def test_a_page_address_too_long_for_a_cookie_is_not_remembered(ds):
    page = await ds.client.get("/-/research", params={"q": "espresso " * 300})
    assert page.status_code == 200 and return_cookie(page) is None
