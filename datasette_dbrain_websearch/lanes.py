"""What local retrieval's lanes find, per table, before fusion (``Lanes``), and what a table
rejecting a lane's query becomes (``fts_errors``): shared by the BM25 lanes (``bm25_lanes``)
and dbrain's order (``dbrain_order``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .brain import FTS_TABLE
from .errors import ResearchError


@dataclass
class Lanes:
    """What the lanes found, per table, before fusion."""

    ranked: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    matches: dict[str, int] = field(default_factory=dict)
    prefixed: set[str] = field(default_factory=set)
    errors: list[tuple[str, str]] = field(default_factory=list)
    idf: dict[str, dict[str, float]] = field(default_factory=dict)  # per table, per term
    # Per table, for a keyword question, the best rows holding every keyword (id, bm25).
    holding_all: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    dense_added: int = 0


def fts_errors(errors: list[tuple[str, str]], kinds: list[str], warnings: list) -> None:
    """Every table rejecting the query is a 400; some rejecting it, a warning each."""
    if errors and len(errors) == len(kinds):
        raise ResearchError(f"FTS5 query error: {errors[0][1]}", code="fts_query_error")
    for kind, message in errors:
        warnings.append(
            {
                "code": "fts_query_error",
                "message": f"{FTS_TABLE[kind]} rejected the query: {message}",
            }
        )
