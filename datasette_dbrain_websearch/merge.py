"""Fusing ranked lanes and merging web results with local evidence (pure functions).

Reciprocal rank fusion (k=60, as dbrain's hybrid retrieval uses) needs only ranks, so bm25 scores
from two FTS tables, or ranks from two web providers, never have to be compared directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .excerpts import best_excerpt
from .pack_json import WEB_ORIGIN

if TYPE_CHECKING:
    from .web_hits import WebHit

RRF_K = 60


def rrf_contribution(rank: int, k: int = RRF_K) -> float:
    """What one lane rank (1-based) adds to a fused score."""
    return 1.0 / (k + rank)


@dataclass
class MergedResult:
    """One web page as found by one or more providers (before budget and collapse)."""

    canonical_url: str
    domain: str
    hits: list[WebHit]

    @property
    def providers(self) -> list[str]:
        return list(dict.fromkeys(h.provider for h in self.hits))

    @property
    def first(self) -> WebHit:
        return self.hits[0]


@dataclass
class MergeOutcome:
    """External rows to show, local sources to credit, and every decision taken."""

    rows: list[MergedResult] = field(default_factory=list)
    collapsed: dict[str, list[WebHit]] = field(default_factory=dict)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    dropped_by_domain: int = 0


def domain_matches(domain: str, patterns: tuple[str, ...]) -> bool:
    """``example.com`` matches itself and its subdomains."""
    return any(domain == p or domain.endswith("." + p) for p in patterns)


@dataclass(frozen=True)
class DomainPolicy:
    """Where web rows may come from: the config's ``allow_domains`` / ``block_domains``, narrowed
    by the question's ``site`` / ``not_site``. Providers are asked in their own form
    (``include`` / ``exclude``) and every result is checked again here (``rule_for``), since
    a provider may not honour a filter."""

    allow: tuple[str, ...] = ()
    block: tuple[str, ...] = ()
    sites: tuple[str, ...] = ()
    not_sites: tuple[str, ...] = ()

    @property
    def refused_sites(self) -> tuple[str, ...]:
        """The question's sites that the config's allow-list does not admit."""
        return tuple(s for s in self.sites if self.allow and not domain_matches(s, self.allow))

    @property
    def include(self) -> tuple[str, ...]:
        if self.sites:
            return tuple(s for s in self.sites if s not in self.refused_sites)
        return self.allow

    @property
    def exclude(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.block + self.not_sites))

    @property
    def nothing_allowed(self) -> bool:
        """The question named sites and the config admits none of them."""
        return bool(self.sites) and not self.include

    def rule_for(self, domain: str) -> str:
        """The rule that drops a result from ``domain``, or ``""`` when it may stay."""
        if domain_matches(domain, self.not_sites):
            return "not_site"
        if domain_matches(domain, self.block):
            return "block_domains"
        if self.sites and not domain_matches(domain, self.include):
            return "site"
        if self.allow and not domain_matches(domain, self.allow):
            return "allow_domains"
        return ""


def group_by_url(hits: list[WebHit]) -> list[MergedResult]:
    """Merge hits for the same canonical URL across providers, keeping first-seen order."""
    merged: dict[str, MergedResult] = {}
    for hit in hits:
        key = hit.url.canonical_url
        if key not in merged:
            merged[key] = MergedResult(key, hit.url.domain, [])
        merged[key].hits.append(hit)
    return list(merged.values())


def web_score(result: MergedResult) -> float:
    """RRF over the providers' ranks: a page two providers agree on outranks either alone."""
    return sum(rrf_contribution(hit.rank) for hit in result.hits)


def merge_web(
    hits: list[WebHit],
    brain_urls: set[str],
    policy: DomainPolicy,
    budget: int,
    order: Callable[[list[MergedResult]], list[MergedResult]] | None = None,
) -> MergeOutcome:
    """Cross-provider merge, domain policy, collapse onto local sources, ranking, budget.

    ``brain_urls`` holds the brain's ``normalized_url`` values among the hits' URLs: a page the
    brain already has never becomes an external row; its local source is credited instead.
    The rows are in the providers' fused order (``web_score``), then in ``order``'s (the
    question's ranking, ``web_ranking``) when given, before they are cut to ``budget``.
    """
    outcome = MergeOutcome()
    for result in group_by_url(hits):
        if len(result.providers) > 1:
            outcome.decisions.append(
                {
                    "decision": "merged_across_providers",
                    "url": result.canonical_url,
                    "providers": result.providers,
                }
            )
        rule = policy.rule_for(result.domain)
        if rule:
            outcome.dropped_by_domain += 1
            outcome.decisions.append(
                {
                    "decision": "dropped_by_domain_policy",
                    "url": result.canonical_url,
                    "domain": result.domain,
                    "rule": rule,
                }
            )
            continue
        if result.first.url.normalized_url in brain_urls:
            outcome.collapsed[result.first.url.normalized_url] = result.hits
            outcome.decisions.append(
                {
                    "decision": "collapsed_onto_local_source",
                    "url": result.canonical_url,
                    "providers": result.providers,
                }
            )
            continue
        outcome.rows.append(result)
    outcome.rows.sort(key=lambda r: (-web_score(r), r.first.rank, r.canonical_url))
    if order is not None:
        outcome.rows = order(outcome.rows)
    for result in outcome.rows[budget:]:
        outcome.decisions.append({"decision": "dropped_by_budget", "url": result.canonical_url})
    outcome.rows = outcome.rows[:budget]
    return outcome


def provider_excerpt(
    hits: list[WebHit], terms: list[str], excerpt_chars: int
) -> dict[str, Any] | None:
    """The provider's text for a page the brain holds but has not extracted, kept apart.

    It goes on the local row under its own key, labelled with its provider and origin, so no
    surface can mistake it for the brain's ``excerpt``; None when no provider sent any text.
    """
    for hit in hits:
        excerpt = best_excerpt(
            [
                ("snippet", "external_snippet", hit.result.snippet),
                ("text", "external_text", hit.result.text),
            ],
            terms,
            excerpt_chars,
        )
        if excerpt.text:
            return {
                "excerpt_from": hit.provider,
                "origin": WEB_ORIGIN,
                "provider_url": hit.result.url,
                "text": excerpt.text,
                "html": excerpt.html,
                "evidence_role": excerpt.role,
            }
    return None
