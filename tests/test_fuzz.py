"""Property test: no question or parameter, however hostile, gets a 500 from the JSON API."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import build_fixture_brain, make_datasette

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
    ]
)
QUESTIONS = st.one_of(
    st.text(max_size=300),
    st.lists(st.one_of(FTS_NOISE, st.text(max_size=8)), max_size=25).map(" ".join),
)


@pytest.fixture(scope="module")
def fuzz_ds(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "brain.db"
    build_fixture_brain(path)
    return make_datasette([str(path)])


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    q=QUESTIONS,
    syntax=st.sampled_from(["simple", "raw", "", "bogus"]),
    extra=st.dictionaries(
        st.sampled_from(["limit", "tag", "kind", "source_type", "since", "until"]),
        st.text(max_size=12),
        max_size=3,
    ),
)
def test_json_api_never_500s(fuzz_ds, q, syntax, extra):
    params = {"q": q, "syntax": syntax, **extra}
    response = asyncio.run(fuzz_ds.client.get("/-/research.json", params=params))
    assert response.status_code in (200, 400), (params, response.text[:500])
    body = response.json()
    assert body["ok"] is (response.status_code == 200)
    if response.status_code == 400:
        assert body["status"] == 400 and body["error"]
