"""A provider's results as web hits: each URL normalized the dbrain way, and dropped where dbrain
would refuse it or where it points at a host that is not public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .providers.base import WebResult, clean_result
from .public_hosts import public_host
from .urls import NormalizedURL, is_web_url, try_normalize_url


@dataclass(frozen=True)
class WebHit:
    """One provider result whose URL passed dbrain's normalization."""

    provider: str
    rank: int
    result: WebResult
    url: NormalizedURL
    cached: bool


def normalize_hits(
    provider: str,
    results: list[WebResult],
    cached: bool,
    allow_networks: tuple[str, ...] = (),
) -> tuple[list[WebHit], int, list[dict[str, Any]]]:
    """Canonicalize every URL the dbrain way; URLs dbrain would refuse are dropped and counted,
    and so are pages on loopback, private or link-local hosts (``allow_networks`` excepted):
    a provider, or whoever poisoned its index, must not plant them as evidence or promotions."""
    hits: list[WebHit] = []
    rejected = 0
    not_public: list[dict[str, Any]] = []
    for result in map(clean_result, results):
        url = try_normalize_url(result.url) if is_web_url(result.url) else None
        if url is None:
            rejected += 1
            continue
        if not public_host(url.domain, allow_networks):
            not_public.append(
                {
                    "decision": "dropped_not_public",
                    "provider": provider,
                    "url": url.canonical_url,
                    "host": url.domain,
                }
            )
            continue
        hits.append(WebHit(provider, result.rank or len(hits) + 1, result, url, cached))
    return hits, rejected, not_public
