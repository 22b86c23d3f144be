"""Datasette 1.0's convention for API keys: datasette-secrets holds a provider's key when the
config and the environment give none; the key is used and never shown."""

from __future__ import annotations

import pytest

from ..helpers import BRAVE_KEY, actor_cookies, make_datasette, web_config

secrets_plugin = pytest.importorskip("datasette_secrets")
ENCRYPTION_KEY = "0Lc5Uv3_1yN9E0dD1zQp7mJcWk2rJmX3uFhQn6h5o7k="


async def test_a_key_held_by_datasette_secrets_searches_the_web(brain, fake, monkeypatch):
    monkeypatch.setenv("DATASETTE_SECRETS_BRAVE_SEARCH_API_KEY", BRAVE_KEY)
    config = web_config(fake)
    del config["external_search"]["brave"]["api_key"]
    ds = make_datasette(
        [str(brain[0])],
        plugin_config=config,
        other_plugins={"datasette-secrets": {"encryption-key": ENCRYPTION_KEY}},
        permissions={"manage-secrets": {"id": "root"}},
    )
    await ds.invoke_startup()
    names = {s.name for s in await secrets_plugin.get_secrets(ds)}
    assert {"BRAVE_SEARCH_API_KEY", "EXA_API_KEY"} <= names
    root = actor_cookies(ds, "root")
    response = await ds.client.get(
        "/-/research.json", params={"q": "lattice qcd", "external": "always"}, cookies=root
    )
    pack = response.json()
    assert pack["external_search"]["ran"] and pack["external_evidence"]
    assert [r.provider for r in fake.requests] == ["brave"]
    assert BRAVE_KEY not in response.text
    page = await ds.client.get("/-/secrets", cookies=root)
    assert page.status_code == 200 and "BRAVE_SEARCH_API_KEY" in page.text
