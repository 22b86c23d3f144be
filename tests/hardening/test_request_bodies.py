"""Hostile request bodies, through HTTP on both Datasette lines: bodies larger than the cap
(chunked), multipart forms with cookies, JSON nested too deep or with broken Unicode, and
redirect targets with control characters. None may produce a 500."""

from __future__ import annotations

import json

import pytest

from datasette_dbrain_websearch.views.common import MAX_BODY

from ..helpers import actor_cookies, csrf, promoting_ds, web_run

CHUNK = 64 * 1024


class Flood:
    """A chunked request body of ``total`` bytes that counts how much the server pulled."""

    def __init__(self, total: int = 200 * 1024 * 1024) -> None:
        self.total = total
        self.sent = 0

    async def __aiter__(self):
        while self.sent < self.total:
            self.sent += CHUNK
            yield b"x" * CHUNK


async def test_a_chunked_body_over_the_cap_is_refused_as_soon_as_it_passes(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    anonymous = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    root_cookies, root_headers, _ = await csrf(ds, actor_cookies(ds, "root"))
    for path, cookies, headers in (
        ("/-/research/promote", root_cookies, root_headers),
        (f"/-/research/runs/{pack['run_id']}/feedback", root_cookies, root_headers),
        (f"/-/research/runs/{anonymous['run_id']}/feedback", root_cookies, root_headers),
    ):
        flood = Flood()
        response = await ds.client.post(
            path,
            content=flood,
            cookies=cookies,
            headers={**headers, "content-type": "application/json"},
        )
        assert response.status_code == 413, (path, response.text)
        assert response.json()["code"] == "too_large"
        assert "content-length" not in response.request.headers  # chunked
        assert flood.sent <= MAX_BODY + 2 * CHUNK, (path, flood.sent)


async def test_a_form_over_the_cap_is_a_413_page(ds):
    pack = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    flood = Flood(4 * MAX_BODY)
    response = await ds.client.post(
        pack["trace_url"] + "/feedback",
        content=flood,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    # Marks are the run's owner's: a visitor without its cookie is refused before any is read.
    assert response.status_code == 404 and flood.sent <= 2 * CHUNK


async def test_a_form_over_the_cap_with_cookies_is_refused_before_anyone_reads_it(ds):
    """On 0.65 asgi-csrf reads a cookie-bearing form body whole before any view runs: the cap
    must hold before it, on both lines."""
    pack = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    # No token header: asgi-csrf looks for the form's csrftoken field in the body itself.
    cookies, _, _ = await csrf(ds, actor_cookies(ds, "root"))
    flood = Flood()
    response = await ds.client.post(
        pack["trace_url"] + "/feedback",
        content=flood,
        cookies=cookies,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 413 and "too large" in response.text
    assert flood.sent <= MAX_BODY + 2 * CHUNK


MULTIPART = {"files": {"upload": ("notes.txt", b"hello")}, "data": {"mark": "x|relevant"}}


@pytest.mark.parametrize(
    "cookie", ["actor", "csrftoken"], ids=["ds_actor cookie", "ds_csrftoken cookie"]
)
async def test_multipart_posts_with_cookies_are_never_a_500(brain, fake, cookie):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    cookies = (
        actor_cookies(ds, "root")
        if cookie == "actor"
        else (await csrf(ds, actor_cookies(ds, "root")))[0]
    )
    for path in (
        "/-/research/promote",
        f"/-/research/runs/{pack['run_id']}/feedback",
        "/brain",  # a plain Datasette page
        "/-/research",
    ):
        response = await ds.client.post(path, cookies=cookies, **MULTIPART)
        assert response.status_code < 500, (path, response.status_code)
        bare = await ds.client.post(
            path,
            content=b"--x\r\n\r\n",
            cookies=cookies,
            headers={"content-type": "multipart/form-data"},  # no boundary
        )
        assert bare.status_code < 500, (path, bare.status_code)
        latin = await ds.client.post(
            path,
            content="q=caf\xe9".encode("latin-1"),
            cookies=cookies,
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert latin.status_code < 500, (path, latin.status_code)


@pytest.mark.parametrize(
    "body",
    [b"[" * 100_000 + b"]" * 100_000, json.dumps({"run_id": "\ud800", "source_keys": ["x"]})],
)
async def test_hostile_post_bodies_are_400(brain, fake, body):
    ds = await promoting_ds(brain, fake)
    cookies, headers, _ = await csrf(ds, actor_cookies(ds, "root"))
    headers = {**headers, "content-type": "application/json"}
    for path in (
        "/-/research/promote",
        "/-/research/runs/20260101T000000.000000000Z-000000000000/feedback",
    ):
        response = await ds.client.post(path, content=body, cookies=cookies, headers=headers)
        assert response.status_code in (400, 404), (path, response.status_code)


async def test_redirect_targets_with_control_characters_are_refused(brain, fake):
    ds = await promoting_ds(brain, fake)
    pack = await web_run(ds)
    cookies, _, token = await csrf(ds, actor_cookies(ds, "root"))
    form = {
        "csrftoken": token,
        "run_id": pack["run_id"],
        "promote_one": pack["external_evidence"][0]["source_key"],
        "next": "/\t/evil.example/x",
    }
    response = await ds.client.post("/-/research/promote", data=form, cookies=cookies)
    assert response.headers["location"] == "/-/research"
