"""Property test: no question or parameter, however hostile, gets a 500 from the page or the API,
and no answer ever cites a key its run did not retrieve.

The web stage is live here (against the fake provider server), so parameter combinations that
reach it are fuzzed too.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from datasette_dbrain_websearch.demo.fakeweb import FakeWeb

from ..helpers import actor_cookies, build_fixture_brain, make_datasette

FTS_NOISE = st.sampled_from(
    [
        '"',
        "(",
        ")",
        "AND",
        "OR",
        "NOT",
        "NEAR",
        "NEAR(",
        "*",
        "^",
        ":",
        "title:",
        "-",
        "+",
        "\x00",
        "🙂",
        "東京",
        "src:",
        "http://",
        "'",
        ";",
        "\\",
        "{",
        "}",
        "espresso",
        "burr",
        "lattice",
        "latest",
    ]
)
QUESTIONS = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(FTS_NOISE, st.text(max_size=8)), max_size=25).map(" ".join),
)
VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "1",
            "5",
            "50",
            "0",
            "²",
            "9" * 40,
            "always",
            "on_weak",
            "never",
            "all",
            "brave",
            "exa",
            "searxng",
            "item",
            "source",
            "raw",
            "pd",
            "2026-01-01",
            "2026-01-01to2026-02-01",
        ]
    ),
)
PARAMS = st.sampled_from(
    [
        "limit",
        "tag",
        "kind",
        "source_type",
        "since",
        "until",
        "syntax",
        "external",
        "provider",
        "freshness",
        "external_count",
        "database",
        "answer",
    ]
)


@pytest.fixture(scope="module")
def fuzz_ds(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "brain.db"
    build_fixture_brain(path)
    with FakeWeb(brave_keys=("fuzz-brave",), exa_keys=("fuzz-exa",)) as fake:
        config = {
            "external_search": {
                "enabled": True,
                "providers": ["brave", "exa", "searxng"],
                "timeout": 5,
                "allow": True,
                "brave": {"api_key": {"$env": "FUZZ_BRAVE_KEY"}, "base_url": fake.brave_base_url},
                "exa": {"api_key": {"$env": "FUZZ_EXA_KEY"}, "base_url": fake.exa_base_url},
                "searxng": {"base_url": fake.searxng_base_url},
            },
            # Every run answers unless the fuzzed ``answer`` says otherwise: the synthesizer
            # and the verifier read hostile questions and hostile web text too.
            "answer": {"default": True},
        }
        patch = pytest.MonkeyPatch()
        patch.setenv("FUZZ_BRAVE_KEY", "fuzz-brave")
        patch.setenv("FUZZ_EXA_KEY", "fuzz-exa")
        ds = make_datasette([str(path)], plugin_config=config)
        asyncio.run(ds.invoke_startup())
        yield ds
        patch.undo()


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    q=QUESTIONS,
    extra=st.dictionaries(PARAMS, VALUES, max_size=4),
    path=st.sampled_from(["/-/research.json", "/brain/-/research.json", "/-/research"]),
)
def test_no_input_gets_a_500(fuzz_ds, q, extra, path):
    params = {"q": q, **extra}
    cookies = actor_cookies(fuzz_ds, "root")
    response = asyncio.run(fuzz_ds.client.get(path, params=params, cookies=cookies))
    assert response.status_code in (200, 400, 404), (params, response.text[:500])
    if path.endswith(".json"):
        body = response.json()
        assert body["ok"] is (response.status_code == 200)
        if response.status_code != 200:
            assert body["status"] == response.status_code and body["error"]
        else:
            keys = {r["source_key"] for r in [*body["evidence"], *body["external_evidence"]]}
            cited = {k for s in body["answer"]["sentences"] for k in s["citations"]}
            assert cited <= keys, (params, cited - keys)
    assert "fuzz-brave" not in response.text and "fuzz-exa" not in response.text
