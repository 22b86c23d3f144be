"""Relevance feedback's vector space (pure): a research pack's rows as TF-IDF vectors, shared
by re-ranking (``feedback``) and Expand's words (``expansion``).

The vector space is TF-IDF over the pack's own rows (local and web; title plus excerpt), so
feedback needs no index and every number can be recomputed from the pack:

- tokens: lowercased runs of letters and digits (``_`` splits, as in FTS5's unicode61),
  without stop words, FTS operators, single characters or bare numbers, each reduced with
  ``stemming.stem`` (FTS5's porter) so "tokenizer" and "tokenizers" are one dimension;
- ``w(t, d) = tf(t, d) * idf(t)``, ``idf(t) = ln((1 + N) / (1 + df(t))) + 1`` (smoothed, so a
  term in every row still counts and a query term in none has a weight), each row L2-normalized;
- the query vector is built the same way from ``query_plan.query_terms``.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .answer.text import is_boilerplate, split_sentences
from .pack_json import PackJSON
from .stemming import fold, stem
from .word_lists import NEGATIONS, RAW_OPERATORS, STOP_WORDS

LISTS = ("evidence", "external_evidence")

TOKEN = re.compile(r"[^\W_]+")
SKIP = STOP_WORDS | NEGATIONS | RAW_OPERATORS

Vector = dict[str, float]
Address = tuple[str, int]


def _surface_tokens(text: str) -> list[str]:
    return [
        t for t in TOKEN.findall(fold(text)) if len(t) > 1 and not t.isdigit() and t not in SKIP
    ]


def _weigh(counts: Counter[str], idf: dict[str, float]) -> Vector:
    """TF-IDF weights of one bag of stems, L2-normalized (an empty bag is the zero vector)."""
    raw = {t: tf * idf[t] for t, tf in counts.items() if t in idf}
    norm = math.sqrt(sum(w * w for w in raw.values()))
    return {t: w / norm for t, w in raw.items()} if norm else {}


def dot(a: Vector, b: Vector) -> float:
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return sum(w * large.get(t, 0.0) for t, w in small.items())


def cosine(unit: Vector, query: Vector) -> float:
    norm = math.sqrt(dot(query, query))
    return dot(unit, query) / norm if norm else 0.0


@dataclass
class Space:
    """The pack's rows as unit TF-IDF vectors, with the surface forms behind each stem."""

    rows: dict[Address, Mapping[str, Any]]
    vectors: dict[Address, Vector]
    surfaces: dict[Address, Counter[str]]
    idf: dict[str, float]

    def query_vector(self, terms: list[str]) -> Vector:
        stems = Counter(stem(t) for term in terms for t in _surface_tokens(term))
        unseen = {t: _idf(len(self.rows), 0) for t in stems if t not in self.idf}
        return _weigh(stems, {**self.idf, **unseen})


def _idf(rows: int, df: int) -> float:
    return math.log((1 + rows) / (1 + df)) + 1


def _row_text(row: Mapping[str, Any]) -> str:
    """What a row says: its title and excerpt, without capture metadata ("Safari tab captured
    from iCloud Tabs", "Device: ..."), whose words say nothing of what the row is about."""
    said = [s for s in split_sentences(str(row.get("excerpt") or "")) if not is_boilerplate(s)]
    return " ".join([str(row.get("title") or ""), *said])


def vector_space(pack: PackJSON) -> Space:
    listed: dict[str, Sequence[Mapping[str, Any]]] = {
        "evidence": pack["evidence"],
        "external_evidence": pack["external_evidence"],
    }
    rows = {(name, i): row for name in LISTS for i, row in enumerate(listed[name])}
    surfaces = {a: Counter(_surface_tokens(_row_text(row))) for a, row in rows.items()}
    stems: dict[Address, Counter[str]] = {}
    for a, counts in surfaces.items():
        stems[a] = Counter()
        for token, tf in counts.items():
            stems[a][stem(token)] += tf
    df = Counter(t for counts in stems.values() for t in counts)
    idf = {t: _idf(len(rows), n) for t, n in df.items()}
    return Space(rows, {a: _weigh(c, idf) for a, c in stems.items()}, surfaces, idf)
