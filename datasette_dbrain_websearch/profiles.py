"""Research profiles: ranking nudges for what kind of source a question wants (pure functions).

``profile=coding`` favours official documentation, source repositories, changelogs and issue
trackers; ``academic`` favours papers, publishers and preprint servers; ``news`` favours recent
pages; ``general`` changes nothing. Each boost is a named signal on the row, so the page can say
why a row moved. Boosts are small next to the exact-match floor (1.0), so an exact hit always
stays first; among other rows they are worth a few ranks. Deployments add domains per profile
in config (``profiles: {coding: {docs: [internal.example.com]}}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .pack_json import Signal
from .pack_rows import BrainRow, WebRow
from .urls import try_normalize_url

STRONG = 0.004
MILD = 0.002


@dataclass(frozen=True)
class Rule:
    """Domains (and subdomains) or URL path fragments that earn a named boost."""

    signal: str
    detail: str
    weight: float
    domains: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()

    def matches(self, domain: str, path: str) -> bool:
        by_domain = any(domain == d or domain.endswith("." + d) for d in self.domains)
        by_path = any(fragment in path for fragment in self.paths)
        return by_domain or by_path


@dataclass(frozen=True)
class Profile:
    name: str
    rules: tuple[Rule, ...] = ()
    recency_days: int = 0  # news: rows published within this many days are boosted
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


PROFILE_NAMES = ("general", "coding", "academic", "news")

BUILTIN: dict[str, dict[str, tuple[str, ...]]] = {
    "coding": {
        "docs": (
            "docs.python.org",
            "readthedocs.io",
            "docs.rs",
            "developer.mozilla.org",
            "docs.datasette.io",
            "sqlite.org",
            "kubernetes.io",
            "go.dev",
            "rust-lang.org",
            "docs.github.com",
            "learn.microsoft.com",
            "nodejs.org",
        ),
        "repos": (
            "github.com",
            "gitlab.com",
            "codeberg.org",
            "bitbucket.org",
            "sr.ht",
            "pypi.org",
            "crates.io",
            "npmjs.com",
        ),
        "changelog_paths": ("changelog", "/releases", "release-notes", "/news/"),
        "issue_paths": ("/issues", "/pull/", "/merge_requests", "/discussions"),
    },
    "academic": {
        "preprints": (
            "arxiv.org",
            "biorxiv.org",
            "medrxiv.org",
            "ssrn.com",
            "openreview.net",
            "chemrxiv.org",
            "osf.io",
        ),
        "publishers": (
            "doi.org",
            "acm.org",
            "ieee.org",
            "springer.com",
            "nature.com",
            "sciencedirect.com",
            "wiley.com",
            "jstor.org",
            "aclanthology.org",
            "semanticscholar.org",
            "science.org",
            "aps.org",
            "iop.org",
        ),
        "paper_paths": (".pdf", "/abs/", "/doi/"),
    },
}


def profile_for(name: str, config: Mapping[str, Mapping[str, Any]] | None = None) -> Profile:
    """The named profile with any domains the config adds to its lists."""
    lists = {key: tuple(values) for key, values in BUILTIN.get(name, {}).items()}
    for key, values in ((config or {}).get(name) or {}).items():
        lists[key] = lists.get(key, ()) + tuple(values)
    if name == "coding":
        return Profile(
            name,
            (
                Rule("profile_official_docs", "official documentation", STRONG, lists["docs"]),
                Rule(
                    "profile_source_repository",
                    "source repository or package index",
                    STRONG,
                    lists["repos"],
                ),
                Rule(
                    "profile_changelog",
                    "changelog or release notes",
                    MILD,
                    paths=lists["changelog_paths"],
                ),
                Rule("profile_issue_tracker", "issue tracker", MILD, paths=lists["issue_paths"]),
            ),
        )
    if name == "academic":
        return Profile(
            name,
            (
                Rule("profile_preprint_server", "preprint server", STRONG, lists["preprints"]),
                Rule("profile_publisher", "scholarly publisher", STRONG, lists["publishers"]),
                Rule(
                    "profile_paper",
                    "paper (PDF or abstract page)",
                    MILD,
                    paths=lists["paper_paths"],
                ),
            ),
        )
    if name == "news":
        return Profile(name, recency_days=30)
    return Profile("general")


def _published(published_at: str) -> datetime | None:
    value = published_at[:10]
    try:
        return datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None


def boosts(
    page_url: str, published_at: str, profile: Profile, now: datetime, domain: str = ""
) -> list[Signal]:
    """The profile's signals for one evidence row (local or web): its URL (else its
    ``domain``) and publication date decide them."""
    url = try_normalize_url(page_url)
    domain = url.domain if url else domain
    path = (url.canonical_url.split(domain, 1)[-1] if url else "").lower()
    signals: list[Signal] = [
        {
            "name": rule.signal,
            "detail": f"{profile.name} profile: {rule.detail}",
            "weight": rule.weight,
        }
        for rule in profile.rules
        if rule.matches(domain, path)
    ]
    published = _published(published_at)
    if profile.recency_days and published is not None:
        age = (now - published).days
        if 0 <= age <= profile.recency_days:
            weight = STRONG if age <= 7 else MILD
            signals.append(
                {
                    "name": "profile_recency",
                    "detail": f"news profile: published {age} day(s) ago",
                    "weight": weight,
                }
            )
    return signals


def apply_profile(
    brain: list[BrainRow],
    web: list[WebRow],
    profile: Profile,
    now: datetime | None = None,
) -> None:
    """Add each row's profile signals to its score, then re-sort each list by score.

    Local exact hits keep the floor (their score includes the exact weight of 1.0); rows of
    equal score keep their previous order.
    """
    if not profile.rules and not profile.recency_days:
        return
    now = now or datetime.now(UTC)
    rows: list[BrainRow] | list[WebRow]
    for rows in (brain, web):
        for row in rows:
            signals = boosts(row.url, row.published_at, profile, now, row.domain)
            if signals:
                row.retrieval.signals.extend(signals)
                row.retrieval.score = round(
                    row.retrieval.score + sum(s["weight"] for s in signals), 6
                )
        rows.sort(key=lambda r: -r.retrieval.score)
