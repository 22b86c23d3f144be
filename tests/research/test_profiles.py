"""Research profiles: named boosts that move rows by the kind of source a question wants."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from datasette_dbrain_websearch import citations
from datasette_dbrain_websearch.config import Settings
from datasette_dbrain_websearch.config_keys import ConfigError
from datasette_dbrain_websearch.profiles import apply_profile, boosts, profile_for

from ..helpers import (
    add_source,
    ask,
    empty_brain,
    make_datasette,
    typed_brain_row,
    typed_web_row,
    web_ds,
)

NOW = datetime(2026, 11, 30, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    "profile, url, signal",
    [
        ("coding", "https://docs.python.org/3/library/sqlite3.html", "profile_official_docs"),
        ("coding", "https://github.com/simonw/datasette", "profile_source_repository"),
        ("coding", "https://example.com/project/CHANGELOG.md", "profile_changelog"),
        ("coding", "https://example.com/project/issues/12", "profile_issue_tracker"),
        ("academic", "https://arxiv.org/abs/2611.01234", "profile_preprint_server"),
        ("academic", "https://www.nature.com/articles/x", "profile_publisher"),
        ("academic", "https://example.edu/papers/qcd.pdf", "profile_paper"),
    ],
)
def test_profile_signals(profile, url, signal):
    names = [s["name"] for s in boosts(url, "", profile_for(profile), NOW)]
    assert signal in names
    assert boosts(url, "", profile_for("general"), NOW) == []


def test_news_favours_recent_pages():
    news = profile_for("news")
    fresh = boosts("https://a.example/x", "2026-11-28", news, NOW)
    month = boosts("https://a.example/y", "2026-11-05", news, NOW)
    old = boosts("https://a.example/z", "2025-01-01", news, NOW)
    assert fresh[0]["name"] == "profile_recency" and fresh[0]["weight"] > month[0]["weight"]
    assert old == []


def test_apply_profile_reorders_but_keeps_exact_hits_first():
    def brain_row(url, score):
        return typed_brain_row(url, url=url, score=score)

    exact = brain_row("https://blog.example/exact", 1.016)
    local = [
        exact,
        brain_row("https://blog.example/a", 0.016),
        brain_row("https://github.com/o/r", 0.0155),
    ]
    web = [
        typed_web_row("w", url="https://blog.example/w", score=0.016),
        typed_web_row("t", url="https://docs.rs/tokio", score=0.0150),
    ]
    apply_profile(local, web, profile_for("coding"), NOW)
    assert [r.url for r in local] == [
        "https://blog.example/exact",
        "https://github.com/o/r",
        "https://blog.example/a",
    ]
    assert [r.url for r in web] == ["https://docs.rs/tokio", "https://blog.example/w"]
    assert local[1].retrieval.signals[0]["name"] == "profile_source_repository"


def test_config_extends_profile_lists():
    settings = Settings.from_config({"profiles": {"coding": {"docs": ["wiki.internal.example"]}}})
    coding = profile_for("coding", settings.profiles)
    names = [s["name"] for s in boosts("https://wiki.internal.example/x", "", coding, NOW)]
    assert names == ["profile_official_docs"]
    with pytest.raises(ConfigError) as info:
        Settings.from_config({"profiles": {"coding": {"doc": []}}})
    assert "unknown config key(s) doc in 'profiles.coding'" in str(info.value)


async def test_academic_profile_moves_papers_up(brain, fake):
    ds = await web_ds(brain, fake)
    _, general = await ask(ds, q="lattice qcd", external="always")
    _, academic = await ask(ds, q="lattice qcd", external="always", profile="academic")
    assert academic["query_plan"]["profile"] == "academic"
    top = academic["external_evidence"][0]
    assert top["domain"] == "arxiv.org"
    assert any(s["name"].startswith("profile_") for s in top["retrieval"]["signals"])
    assert [r["source_key"] for r in general["external_evidence"]] != [
        r["source_key"] for r in academic["external_evidence"]
    ]
    assert all(r["origin"] == "outside_dbrain_corpus" for r in academic["external_evidence"])


async def test_bad_profile_is_400(brain, fake):
    ds = await web_ds(brain, fake)
    status, body = await ask(ds, q="lattice", profile="gossip")
    assert status == 400 and body["code"] == "bad_profile"


async def test_the_verdict_names_rows_by_the_labels_a_profile_leaves_them(tmp_path):
    # The coding profile moves the repository above the post that answers: the verdict's
    # "[n] says …" must name the answering row by the label it ends with, not its first place.
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        add_source(
            conn,
            "https://blog.example/quartzline-history",
            title="Quartzline history",
            extracted_text="The Quartzline library was founded in 2011 by a small team in "
            "Oslo. The Quartzline library parses quartz line formats.",
            extract_status="ok",
        )
        add_source(
            conn,
            "https://github.com/quartz/quartzline",
            title="quartzline",
            extracted_text="Quartzline library: source code, issues and releases.",
            extract_status="ok",
        )
        for n in range(40):  # rows about something else: the question's words are rare
            add_source(
                conn,
                f"https://notes.example/{n}",
                title=f"Note {n}",
                extracted_text=f"Sourdough note {n}: hydration and flour for loaf {n}.",
                extract_status="ok",
            )
    conn.close()
    ds = make_datasette([str(path)], plugin_config={})
    status, pack = await ask(ds, q="When was the Quartzline library founded?", profile="coding")
    assert status == 200
    assert pack["evidence"][0]["url"] == "https://github.com/quartz/quartzline"
    check = pack["judge"]["inputs"]["answer_check"]
    assert pack["judge"]["reason"] == "answered" and check["span"] == "in 2011"
    label = citations.labels(pack)[check["source_key"]]
    assert label == "2"
    assert pack["judge"]["message"] == "Your brain answers it: [2] says “in 2011”."
    assert pack["judge"]["inputs"]["best_row"]["label"] == "2"
