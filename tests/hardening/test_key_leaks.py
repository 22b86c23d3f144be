"""A provider's key never shows: not in the stream's progress when a provider's error echoes
it, nor in any letter case or encoding a careless API echoes it back in; and a provider's
broken Unicode is cleaned."""

from __future__ import annotations

from urllib.parse import quote, quote_plus

import pytest

from datasette_dbrain_websearch.providers import Provider, ProviderError, WebResult

from ..helpers import BRAVE_KEY, actor_cookies, ask, registered, web_ds


class LeakyProvider(Provider):
    """Fails with a message that echoes its own key, and returns a broken title otherwise."""

    name = "leaky"
    label = "Leaky"
    requires_api_key = True
    fail = True

    async def search(self, request, ctx):
        if self.fail:
            raise ProviderError("provider_failed", f"upstream said: bad token {ctx.api_key}")
        return [
            WebResult(
                url="https://leaky.example/a",
                title="Lattice \ud800 QCD",
                snippet="lattice \x00 qcd",
                rank=1,
            )
        ]


@pytest.fixture
def leaky(monkeypatch):
    monkeypatch.setenv("TEST_LEAKY_KEY", BRAVE_KEY)
    with registered(LeakyProvider()) as provider:
        yield provider


async def test_stream_progress_never_carries_a_key(brain, fake, leaky):
    ds = await web_ds(
        brain, fake, providers=["leaky"], leaky={"api_key": {"$env": "TEST_LEAKY_KEY"}}
    )
    response = await ds.client.get(
        "/-/research/stream",
        params={"q": "lattice qcd", "external": "always"},
        cookies=actor_cookies(ds, "root"),
    )
    assert "upstream said: bad token ***" in response.text
    assert BRAVE_KEY not in response.text


async def test_broken_unicode_from_a_provider_is_cleaned(brain, fake, leaky):
    leaky.fail = False
    ds = await web_ds(
        brain, fake, providers=["leaky"], leaky={"api_key": {"$env": "TEST_LEAKY_KEY"}}
    )
    root = actor_cookies(ds, "root")
    _, pack = await ask(ds, q="lattice qcd", external="always")
    (row,) = pack["external_evidence"]
    assert row["title"] == "Lattice ? QCD" and "\x00" not in row["excerpt"]
    assert "trace_url" in pack
    page = await ds.client.get(
        "/-/research", params={"q": "lattice qcd", "external": "always"}, cookies=root
    )
    assert page.status_code == 200 and "Lattice ? QCD" in page.text


ODD_KEY = "Odd-Key/with+plus&amp?"


class EchoProvider(Provider):
    """Echoes its key back in other letter cases and URL-encoded, as a careless API might."""

    name = "echo"
    label = "Echo"
    requires_api_key = True

    async def search(self, request, ctx):
        key = ctx.api_key
        return [
            WebResult(
                url=f"https://echo.example/lattice?token={quote(key.upper(), safe='')}",
                title=f"Lattice QCD for {key.upper()}",
                snippet=f"lattice qcd token={quote_plus(key)} and {key.lower()}",
                rank=1,
            )
        ]


def leaked(text: str) -> list[str]:
    forms = (ODD_KEY, quote(ODD_KEY, safe=""), quote_plus(ODD_KEY, safe=""))
    return [form for form in forms if form.lower() in text.lower()]


async def test_a_key_echoed_in_any_case_or_encoding_never_shows(brain, fake, monkeypatch):
    monkeypatch.setenv("TEST_ECHO_KEY", ODD_KEY)
    with registered(EchoProvider()):
        ds = await web_ds(
            brain, fake, providers=["echo"], echo={"api_key": {"$env": "TEST_ECHO_KEY"}}
        )
        root = actor_cookies(ds, "root")
        response = await ds.client.get(
            "/-/research.json", params={"q": "lattice qcd", "external": "always"}, cookies=root
        )
        pack = response.json()
        assert pack["external_evidence"] and not leaked(response.text)
        page = await ds.client.get(
            "/-/research", params={"q": "lattice qcd", "external": "always"}, cookies=root
        )
        trace = await ds.client.get(pack["trace_url"] + ".json", cookies=root)
    assert "***" in response.text
    assert not leaked(page.text) and not leaked(trace.text)
