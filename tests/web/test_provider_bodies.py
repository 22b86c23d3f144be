"""The providers' own response bodies (``tests/data/provider_bodies``): the clients read them,
and the offline fake answers in their shape.

The fake is what every other test runs against; these bodies come from the providers'
documentation and live captures instead, so a client that only understands the fake, or a fake
that drifted from the providers, fails here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.providers.brave import (
    error_object,
    parse_llm_context,
    parse_web_search,
)
from datasette_dbrain_websearch.providers.exa import identified_results
from datasette_dbrain_websearch.providers.exa import parse_results as exa_results
from datasette_dbrain_websearch.providers.searxng import parse_results as searxng_results
from datasette_dbrain_websearch.web_hits import normalize_hits

from ..helpers import DATA

BODIES = DATA / "provider_bodies"


def body(name: str) -> Any:
    return json.loads((BODIES / f"{name}.json").read_text(encoding="utf-8"))


def test_brave_web_search_body_is_read():
    first, second = parse_web_search(body("brave_web_search"))
    assert first.url == "https://bread.example.com/guides/starter-ratios"
    assert first.title == "Feeding Your Starter: Ratios Explained"
    assert first.snippet.startswith("A 1:1:1 ratio of starter")  # <strong> stripped
    assert first.highlights == (
        "Stiffer starters (50% hydration) ferment more slowly.",
        "Discard before feeding to keep the jar manageable.",
    )
    assert first.text.startswith(first.snippet) and first.highlights[1] in first.text
    assert (first.published_at, first.domain, first.rank) == (
        "2025-03-02T09:15:00",
        "bread.example.com",
        1,
    )
    assert (second.rank, second.highlights, second.domain) == (2, (), "kitchen.example.org")


def test_brave_llm_context_body_is_read():
    first, second = parse_llm_context(body("brave_llm_context"))
    assert first.url == "https://cookware.example.com/care/cast-iron-lifespan"
    assert first.snippet.startswith("With regular seasoning")
    assert len(first.highlights) == 3 and '"table"' in first.highlights[2]
    assert (first.published_at, first.domain) == ("2025-06-02", "cookware.example.com")
    assert (second.published_at, second.title) == ("", "Can a cracked skillet be saved?")


def test_exa_bodies_are_read_by_id():
    (key, first), (_, second) = identified_results(body("exa_search"))
    assert key == first.url == "https://lichens.example.org/papers/urban-key-2024"
    assert (
        first.snippet == "The key starts from thallus growth form: crustose, foliose or fruticose."
    )
    assert (first.author, first.score) == ("R. Moss", 0.8123)
    assert first.published_at == "2024-05-14T00:00:00.000Z"
    assert (second.author, second.score) == ("", None)  # null author, no score
    ((key, page),) = identified_results(body("exa_contents"))
    assert key == page.url and page.text.startswith("Abstract.")


def test_brave_error_body_is_read():
    error = error_object(body("brave_error"))
    assert (error["code"], error["status"]) == ("SUBSCRIPTION_TOKEN_INVALID", 422)


# --- the fake, in the providers' shape ---------------------------------------------------------


def key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path in a JSON value (``web.results[].title``); list items share one path, and
    so do the values of a map keyed by URL (LLM Context's ``sources``)."""
    if isinstance(value, dict):
        paths = {prefix} if prefix else set()
        for key, item in value.items():
            key = "<url>" if key.startswith(("http://", "https://")) else key
            paths |= key_paths(item, f"{prefix}.{key}" if prefix else key)
        return paths
    if isinstance(value, list):
        return {prefix, *(p for item in value for p in key_paths(item, prefix + "[]"))}
    return {prefix}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeWeb]:
    with FakeWeb(brave_keys=("k-brave",), exa_keys=("k-exa",)) as server:
        yield server


def answer(fake: FakeWeb, name: str) -> dict[str, Any]:
    """The fake's answer to the request each body answers."""
    with httpx.Client(timeout=10) as http:
        brave = {"X-Subscription-Token": "k-brave"}
        if name == "brave_web_search":
            params = {"q": "sqlite fts5", "extra_snippets": "true"}
            reply = http.get(f"{fake.brave_base_url}/web/search", params=params, headers=brave)
        elif name == "brave_llm_context":
            reply = http.get(
                f"{fake.brave_base_url}/llm/context", params={"q": "sqlite fts5"}, headers=brave
            )
        elif name == "brave_error":
            reply = http.get(
                f"{fake.brave_base_url}/web/search",
                params={"q": "x"},
                headers={"X-Subscription-Token": "wrong"},
            )
        elif name == "exa_error":
            reply = http.post(
                f"{fake.exa_base_url}/search", json={"query": "x"}, headers={"x-api-key": "wrong"}
            )
        else:
            exa = {"x-api-key": "k-exa"}
            contents = {"text": True, "highlights": True, "summary": True}
            search = http.post(
                f"{fake.exa_base_url}/search",
                json={"query": "sqlite fts5", "contents": contents},
                headers=exa,
            )
            if name == "exa_search":
                return search.json()
            ids = [r["id"] for r in search.json()["results"][:1]] + ["https://gone.example.net/x"]
            reply = http.post(
                f"{fake.exa_base_url}/contents", json={"ids": ids, **contents}, headers=exa
            )
    return reply.json()


@pytest.mark.parametrize(
    "name",
    [
        "brave_web_search",
        "brave_llm_context",
        "brave_error",
        "exa_search",
        "exa_contents",
        "exa_error",
    ],
)
def test_the_fake_answers_in_the_providers_shape(fake, name):
    """Every field the fake sends is one the provider's body has, and the fields the clients
    read are there."""
    documented, faked = key_paths(body(name)), key_paths(answer(fake, name))
    if name.startswith("exa_"):  # one result object and cost model for /search and /contents
        documented |= key_paths(body("exa_search")) | key_paths(body("exa_contents"))
    assert faked <= documented, sorted(faked - documented)
    parse = {
        "brave_web_search": parse_web_search,
        "brave_llm_context": parse_llm_context,
        "exa_search": lambda b: [r for _, r in identified_results(b)],
        "exa_contents": lambda b: [r for _, r in identified_results(b)],
    }.get(name)
    if parse is not None:
        assert parse(answer(fake, name)), "the client reads nothing from the fake's answer"


GOOD = "https://good.example/page"
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
# Each provider's results, the fields its items hold, and where the item list sits.
SHAPES = {
    "brave web": (
        parse_web_search,
        ("url", "title", "description", "extra_snippets", "page_age", "meta_url"),
        lambda items: {"web": {"results": items}},
    ),
    "brave llm context": (
        parse_llm_context,
        ("url", "title", "snippets"),
        lambda items: {"grounding": {"generic": items}, "sources": {GOOD: {"age": 5}}},
    ),
    "exa": (
        exa_results,
        ("url", "id", "title", "highlights", "text", "author", "publishedDate", "score"),
        lambda items: {"results": items},
    ),
    "searxng": (
        searxng_results,
        ("url", "title", "content", "publishedDate", "pubdate", "score"),
        lambda items: {"results": items},
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
@settings(max_examples=60, deadline=None)
@given(field_index=st.integers(min_value=0, max_value=7), value=JSON, junk=JSON)
def test_a_malformed_item_is_dropped_alone(shape, field_index, value, junk):
    """One item with any JSON value in any field (``"url": 5``, ``"highlights": 5``), and
    anything at all beside the items: the provider's other results are still read."""
    parse, fields, wrap = SHAPES[shape]
    field = fields[field_index % len(fields)]
    bad = {"url": "https://other.example/x", "title": "Other", field: value}
    results = parse(wrap([junk, bad, {"url": GOOD, "title": "Good page"}]))
    assert GOOD in [r.url for r in results]
    good = next(r for r in results if r.url == GOOD)
    assert good.title == "Good page"
    for result in results:
        assert all(isinstance(v, str) for v in (result.url, result.title, result.snippet))
        assert all(isinstance(h, str) for h in result.highlights)


@pytest.mark.parametrize("shape", SHAPES)
def test_an_item_whose_url_is_not_a_string_is_refused_and_counted(shape):
    parse, _, wrap = SHAPES[shape]
    results = parse(wrap([{"url": 5, "title": "Five"}, {"url": GOOD, "title": "Good page"}]))
    hits, rejected, _ = normalize_hits("brave", results, False)
    assert [h.url.canonical_url for h in hits] == [GOOD] and rejected == 1
