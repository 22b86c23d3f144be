"""Fusing ranked lanes into one list (pure functions).

Reciprocal rank fusion (k=60, as dbrain's hybrid retrieval uses) needs only ranks, so bm25 scores
from two FTS tables with different vocabularies never have to be compared directly.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

RRF_K = 60


def rrf_contribution(rank: int, k: int = RRF_K) -> float:
    """What one lane rank (1-based) adds to a fused score."""
    return 1.0 / (k + rank)


def rrf(lanes: Iterable[list[Hashable]], k: int = RRF_K) -> dict[Hashable, float]:
    """Fuse ranked lists of keys: each key scores the sum of 1/(k + rank) over its lanes."""
    scores: dict[Hashable, float] = {}
    for ranked in lanes:
        for rank, key in enumerate(ranked, start=1):
            scores[key] = scores.get(key, 0.0) + rrf_contribution(rank, k)
    return scores
