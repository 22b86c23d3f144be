"""The ``research_pack.v1`` JSON, pinned byte for byte.

Each case runs a question through ``/-/research.json`` over the demo brain (with the offline
fake Brave and Exa, page reading and the extractive answer where the case asks for the web)
and compares the serialized pack with a file in ``tests/data/packs``: a change to the typed
pack that moves, renames, adds or drops a field fails here. Only what differs from run to run
is set aside first: the run id and the measured milliseconds.

After a deliberate change to the JSON, rewrite the files with
``DBRAIN_UPDATE_PACKS=1 pytest tests/research/test_pack_json.py`` and read the diff.

The same files check ``pack_json.PackJSON``, the type every reader of a run takes: each pinned
pack must have its keys and value types.
"""

from __future__ import annotations

import json
import os
import types
import typing
from typing import Any

import pytest

from datasette_dbrain_websearch.demo import build_demo_brain
from datasette_dbrain_websearch.feedback import apply_feedback
from datasette_dbrain_websearch.pack_json import PackJSON
from datasette_dbrain_websearch.providers import Provider, WebResult

from ..helpers import (
    DATA,
    SOURCE_URLS,
    actor_cookies,
    make_datasette,
    registered,
    web_config,
)

PACKS = DATA / "packs"
CASES = {
    # Local rows, an exact hit, no web: the most common pack.
    "local": {"q": "sqlite fts5 bm25", "answer": "1"},
    # A misspelt question: "did you mean" and a weak verdict.
    "did_you_mean": {"q": "espreso grindr"},
    # The web with two providers, collapsed duplicates, read pages and an answer citing both.
    "web": {"q": "lattice qcd", "external": "always", "answer": "1"},
    # Web rows that land on pages the brain holds ("also found by").
    "also_found": {"q": "datasette plugin hooks", "external": "always", "answer": "1"},
    # Filters and raw syntax.
    "filtered": {"q": "tokio OR scheduler", "syntax": "raw", "kind": "item", "limit": "3"},
    # dbrain's order, falling back to its relaxed OR query.
    "dbrain_order": {"q": "espresso grinder zeppelin", "ranking": "dbrain"},
    # A profile's boosts, on a question about the current state of things.
    "profile": {"q": "latest datasette plugin release", "profile": "coding", "external": "always"},
    # A URL the brain lacks: its page read directly, "the page you named", beside the answer.
    "direct_url": {
        "q": "https://quarkmatter.blog/what-is-lattice-qcd",
        "external": "on_weak",
        "answer": "1",
    },
}


class Scripted(Provider):
    """A web provider that answers every question with the results it was given."""

    def __init__(self, name: str, results: list[WebResult]) -> None:
        self.name, self.label, self.results = name, name.title(), results

    async def search(self, request: Any, ctx: Any) -> list[WebResult]:
        return list(self.results)


def hit(url: str, title: str, text: str, rank: int) -> WebResult:
    return WebResult(url=url, title=title, snippet=f"{title}.", text=text, rank=rank)


NEW_PAGE = "https://crema.example/guide?utm_source=x"
SCRIPTED = {
    "scripted": [
        # A page the brain holds but never extracted: its row shows the provider's text apart.
        hit(SOURCE_URLS["src_pending"], "Pending espresso", "Crema forms on fresh espresso.", 1),
        # A page the brain holds, extracted: "also found by".
        hit(SOURCE_URLS["src_espresso"] + "#top", "Espresso guide", "Dial in espresso.", 2),
        hit(NEW_PAGE, "A crema guide", "Crema and espresso: what the foam says.", 3),
    ],
    # Found by both: one row with both providers.
    "echo": [hit(NEW_PAGE.split("?")[0], "Crema guide", "Espresso crema explained.", 1)],
}


def stable(value: Any, key: str = "") -> Any:
    """The pack with what differs between two runs of one question set to zero."""
    if key == "timings_ms" and isinstance(value, dict):
        return {k: 0 for k in value}
    if key in ("elapsed_ms", "ms") and isinstance(value, int | float):
        return 0
    if isinstance(value, dict):
        return {k: stable(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [stable(v, key) for v in value]
    return value


def serialized(pack: dict[str, Any]) -> str:
    text = json.dumps(stable(pack), ensure_ascii=False, indent=1)
    return text.replace(pack["run_id"], "RUN_ID") + "\n"


@pytest.fixture(scope="module")
def demo(tmp_path_factory, fakeweb):
    path = tmp_path_factory.mktemp("packs") / "brain.db"
    build_demo_brain(path)
    external = {
        "enabled": True,
        "default_mode": "never",
        "providers": ["brave", "exa"],
        "count": 5,
        "timeout": 20,
        "cache_ttl": 0,
        "allow": True,
        "read": 2,
        "read_via": fakeweb.url + "/reader/",
        "read_unresolved": True,
        "fetch_allow_networks": ["127.0.0.1/32"],
        "brave": {
            "api_key": {"$env": "TEST_BRAVE_KEY"},
            "base_url": fakeweb.brave_base_url,
            "endpoint": "llm_context",
        },
        "exa": {"api_key": {"$env": "TEST_EXA_KEY"}, "base_url": fakeweb.exa_base_url},
    }
    return make_datasette(
        [str(path)],
        plugin_config={
            "external_search": external,
            "semantic": {"model": ""},
            "judge": {"min_evidence": 2, "min_term_coverage": 0.75},
        },
    )


def assert_pinned(name: str, pack: dict[str, Any]) -> None:
    text = serialized(pack)
    pinned = PACKS / f"{name}.json"
    if os.environ.get("DBRAIN_UPDATE_PACKS"):
        pinned.parent.mkdir(parents=True, exist_ok=True)
        pinned.write_text(text, encoding="utf-8")
    assert text == pinned.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", CASES)
async def test_pack_json_is_unchanged(demo, fake, name):
    response = await demo.client.get("/-/research.json", params=CASES[name])
    assert response.status_code == 200, response.text
    assert_pinned(name, response.json())


async def test_merged_pack_json_is_unchanged(brain, fake):
    """Two providers over the test brain: held pages credited (one never extracted), a page
    both found, a local row the web brought back."""
    with (
        registered(Scripted("scripted", SCRIPTED["scripted"])),
        registered(Scripted("echo", SCRIPTED["echo"])),
    ):
        ds = make_datasette(
            [str(brain[0])], plugin_config=web_config(fake, providers=["scripted", "echo"])
        )
        response = await ds.client.get(
            "/-/research.json",
            params={
                "q": "pending espresso crema",
                "external": "always",
                "provider": "all",
                "answer": "1",
            },
            cookies=actor_cookies(ds, "root"),
        )
    assert response.status_code == 200, response.text
    assert_pinned("merged", response.json())


def mismatches(value: Any, kind: Any, path: str = "pack") -> list[str]:
    """Where ``value`` is not of ``kind`` (a TypedDict, ``list[...]``, ``dict[...]``, a union
    or a plain type): missing or undeclared keys, and values of another type."""
    if kind is Any:
        return []
    if typing.is_typeddict(kind):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not an object"]
        hints = typing.get_type_hints(kind)
        found = [f"{path}.{key}: missing" for key in kind.__required_keys__ - value.keys()]
        for key, item in value.items():
            if key in hints:
                found += mismatches(item, hints[key], f"{path}.{key}")
            else:
                found.append(f"{path}.{key}: not declared")
        return sorted(found)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):
        tries = [mismatches(value, arg, path) for arg in args]
        return [] if any(not tried for tried in tries) else tries[0]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__}, not a list"]
        return [
            m for i, item in enumerate(value) for m in mismatches(item, args[0], f"{path}[{i}]")
        ]
    if origin is dict:
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__}, not an object"]
        return [m for k, item in value.items() for m in mismatches(item, args[1], f"{path}.{k}")]
    plain = (int, float) if kind is float else kind
    if kind is type(None):
        return [] if value is None else [f"{path}: not null"]
    if isinstance(value, plain) and (kind is bool or not isinstance(value, bool)):
        return []
    return [f"{path}: {type(value).__name__}, not {kind.__name__}"]


@pytest.mark.parametrize("name", sorted(p.stem for p in PACKS.glob("*.json")))
def test_the_readers_types_match_every_pinned_pack(name):
    """``pack_json.PackJSON``, the shape every reader of a run relies on, is the JSON's shape:
    every declared key that is always there is there, no key is undeclared, every value has
    its declared type (so the types cannot drift from what ``Pack.to_json`` writes)."""
    pack = json.loads((PACKS / f"{name}.json").read_text())
    assert mismatches(pack, PackJSON) == []


def test_the_type_check_finds_a_drift():
    """The check itself fails on a missing key, an undeclared key and a value of another type."""
    pack = json.loads((PACKS / "also_found.json").read_text())
    del pack["judge"]["verdict"]
    pack["evidence"][0]["surprise"] = 1
    pack["external_evidence"][0]["providers"] = "brave"
    assert mismatches(pack, PackJSON) == [
        "pack.evidence[0].surprise: not declared",
        "pack.external_evidence[0].providers: str, not a list",
        "pack.judge.verdict: missing",
    ]


def test_a_reranked_pack_keeps_the_readers_types():
    """A saved run re-ranked by marks (``feedback.apply_feedback``) is still ``PackJSON``, its
    ``feedback`` record included."""
    pack = json.loads((PACKS / "also_found.json").read_text())
    marks = [
        {"key": pack["evidence"][-1]["source_key"], "value": "more"},
        {"key": pack["external_evidence"][0]["source_key"], "value": "less"},
    ]
    reranked = apply_feedback(pack, marks)
    assert reranked["feedback"]["moves"]
    assert mismatches(reranked, PackJSON) == []
