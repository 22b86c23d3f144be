"""The lexical lane: BM25 over one FTS5 table, and the bounded signals that re-score its top.

One query per table ORs the question's search words (``QueryPlan.match_query``) and orders by
FTS5's ``bm25()`` with column weights (a title word says more about a row than a body word).
BM25 weighs each word by its rarity, so a rare word outranks any number of common ones; a row
need not hold every word (relevant rows often lack one: "increase", "compared").

Three signals then re-score the top rows, each bounded so it reorders near ties and never
outranks rarity: the share of the question's terms a row holds (coverage), adjacent question
words found as a phrase, and the semantic lane's cosine where an index exists. Measured on a
public test collection (``bench/bench_ir.py``), not assumed.

A word is searched as a prefix (``"word"*``) only where it helps: 4+ letters and, as typed, in
no row of that table ("postgres" finds "PostgreSQL"); otherwise a prefix only adds noise
("fan"* matching "fantasy").
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any

from .query_plan import QueryPlan, quote_term, quote_word
from .stemming import SEPARATOR, fold

MIN_PREFIX_CHARS = 4
# bm25() column weights, by FTS column name; columns not named weigh 1.0. Titles (and the
# article title an item carries) weigh most; dbrain's own search uses bm25's defaults.
COLUMN_WEIGHTS = {
    "source_key": 0.0,  # UNINDEXED in dbrain's tables
    "title": 2.0,
    "article_title": 1.5,
    "description": 1.0,
}
# How much each bounded signal adds to a row's normalized BM25 score (whose range is 0..1).
COVERAGE_BOOST = 0.1
KEYWORD_BOOST = 4.0  # a keyword held is worth more than BM25's whole range (0..1): every one first
KEYWORD_TERMS = 3  # a question of this many search terms or fewer is a list of keywords
PHRASE_BOOST = 0.05


@dataclass(frozen=True)
class Signals:
    """The bounded re-scoring weights (``COVERAGE_BOOST``, ``PHRASE_BOOST``)."""

    coverage: float = COVERAGE_BOOST
    keywords: float = KEYWORD_BOOST
    phrase: float = PHRASE_BOOST
    pool: int = 20  # rows of each table re-scored (at least 1.5 times the rows asked for)


def bm25_call(name: str, columns: Sequence[str]) -> str:
    """``bm25(name, w1, w2, ...)`` with ``COLUMN_WEIGHTS`` for the FTS table's columns, in
    order (bm25's weights are positional)."""
    weights = ", ".join(repr(float(COLUMN_WEIGHTS.get(c, 1.0))) for c in columns)
    return f"bm25({name}, {weights})"


def prefix_words(
    conn: sqlite3.Connection, fts: str, words: Sequence[str], version: tuple[Any, ...] | None
) -> set[str]:
    """The words to search as prefixes in this table: 4+ characters and, as typed, in no row
    (one indexed probe each, remembered per brain version like ``document_frequencies``)."""
    prefixed: set[str] = set()
    probe = f"select 1 from [{fts}] where [{fts}] match ? limit 1"
    for word in words:
        if len(word) < MIN_PREFIX_CHARS:
            continue
        held = _remembered(
            (version, fts, "held", word),
            partial(_exists, conn, probe, [quote_word(word)]),
        )
        if not held:
            prefixed.add(word)
    return prefixed


class Remembered:
    """Values worked out once per key for as long as the process keeps the newest ``most`` of
    them; a key holding a file's version (``file_version``) is a new key when the file
    changes. Thread-safe: query threads share it."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._values: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        key: tuple[Any, ...],
        compute: Callable[[], Any],
        keep: Callable[[Any], bool] = lambda value: True,
    ) -> Any:
        """The value under ``key``, else ``compute()``'s, remembered when ``keep`` says so."""
        with self._lock:
            found = self._values.get(key)
        if found is None:
            found = compute()
            if keep(found):
                with self._lock:
                    self._values[key] = found
                    if len(self._values) > self.most:
                        self._values.popitem(last=False)
        return found


# Document frequencies already counted, by (brain file version, table, MATCH), and whether a
# word is held as typed: a person's questions reuse their words, and counting a common word
# reads its whole posting list.
_FREQUENCIES = Remembered(most=20_000)


def brain_version(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
    """What changes whenever the brain's rows do: its file's and its WAL's size and mtime
    (None for a database without a file: nothing is cached)."""
    return file_version(conn.execute("pragma database_list").fetchone()[2])


def file_version(path: str | None) -> tuple[Any, ...] | None:
    """``brain_version`` of the SQLite file at ``path`` (None without one)."""
    if not path:
        return None
    version: list[Any] = [path]
    for name in (path, path + "-wal"):
        try:
            found = os.stat(name)
        except OSError:
            version.append(None)
            continue
        version.append((found.st_ino, found.st_size, found.st_mtime_ns))
    return tuple(version)


def _exists(conn: sqlite3.Connection, sql: str, params: list[str]) -> int:
    """1 when the query returns a row, else 0."""
    return int(conn.execute(sql, params).fetchone() is not None)


def _count(conn: sqlite3.Connection, sql: str, params: list[str]) -> int:
    """The query's one value (a ``count(*)``)."""
    found: int = conn.execute(sql, params).fetchone()[0]
    return found


def _remembered(key: tuple[Any, ...], count: Callable[[], int]) -> int:
    """``count()``, remembered under ``key`` while the brain's version (``key[0]``) is known."""
    if key[0] is None:
        return count()
    return _FREQUENCIES.get(key, count)


def document_frequencies(
    conn: sqlite3.Connection,
    fts: str,
    plan: QueryPlan,
    prefixed: set[str],
    version: tuple[Any, ...] | None,
) -> dict[str, int]:
    """How many rows of the table hold each search term (any of its words): the rarity behind
    BM25's weights. Counted once per brain version (``brain_version``) and word."""
    found: dict[str, int] = {}
    sql = f"select count(*) from [{fts}] where [{fts}] match ?"
    for term in plan.search_terms:
        match = " OR ".join(quote_term(w) if w in prefixed else quote_word(w) for w in term.words)
        found[term.name] = _remembered((version, fts, match), partial(_count, conn, sql, [match]))
    return found


@dataclass(frozen=True)
class TableSurvey:
    """One table, measured before its ranking query runs (cheap, cached counts): its size, the
    words searched there as prefixes and each search term's document frequency."""

    rows: int
    prefixed: frozenset[str]
    frequencies: dict[str, int]


def survey_table(conn: sqlite3.Connection, fts: str, table: str, plan: QueryPlan) -> TableSurvey:
    """``TableSurvey`` of one table for the plan's search words."""
    version = brain_version(conn)  # the key both caches are kept under
    prefixed = prefix_words(conn, fts, plan.search_words, version)
    rows = conn.execute(f"select max(rowid) from [{table}]").fetchone()[0] or 0
    found = document_frequencies(conn, fts, plan, prefixed, version)
    return TableSurvey(rows, frozenset(prefixed), found)


def idf(rows: int, df: int) -> float:
    """FTS5's bm25 idf, ``log((N - n + 0.5) / (n + 0.5))``, at least 1e-6 (a word in more
    than half the rows still counts a little)."""
    return max(1e-6, math.log((rows - df + 0.5) / (df + 0.5)))


def coverage(held: set[str], terms: Sequence[str], idf: dict[str, float]) -> float:
    """How much of the question a row holds, 0..1.

    A question of ``KEYWORD_TERMS`` terms or fewer is a list of keywords, each typed because it
    is wanted: the share of them the row holds. A longer question is prose, where holding a
    common word says little: the share of its rarity (the idf of the terms held over the idf of
    all), so lacking a common word costs little and lacking the rare one costs most.
    """
    if not terms:
        return 0.0
    if len(terms) <= KEYWORD_TERMS:
        return sum(1 for t in terms if t in held) / len(terms)
    total = sum(idf.get(t, 0.0) for t in terms)
    return sum(idf.get(t, 0.0) for t in terms if t in held) / total if total else 0.0


def rows_signals(plan: QueryPlan, rows: Iterable[Sequence[str]]) -> list[tuple[set[str], bool]]:
    """For each row (its texts): (the search terms it holds, whether two of the question's
    adjacent terms stand side by side in it, as a phrase).

    Each term is searched in a row only until it is found, and a phrase only where the row
    holds both its terms: a pool of long pages is not read word by word."""
    matcher = plan.matcher
    names = [t.name for t in plan.question_terms]
    pairs = list(pairwise(names))
    found: list[tuple[set[str], bool]] = []
    for texts in rows:
        folded = fold(SEPARATOR.join(t for t in texts if t))
        held = matcher.held_in(folded)
        phrase = any(
            a in held and b in held and matcher.side_by_side(folded, a, b) for a, b in pairs
        )
        found.append((held, phrase))
    return found


def normalized(scores: Sequence[float]) -> list[float]:
    """BM25 scores (FTS5's are negative: lower is better) as 0..1, the best 1 (min-max)."""
    if not scores:
        return []
    best, worst = min(scores), max(scores)
    if best == worst:
        return [1.0] * len(scores)
    return [(worst - s) / (worst - best) for s in scores]


def rescore(
    bm25: Sequence[float],
    coverage: Sequence[float],
    phrase: Sequence[bool],
    signals: Signals,
    terms: int,
    cosine: Sequence[float] | None = None,
    semantic_weight: float = 0.0,
) -> list[float]:
    """One table's top rows re-scored (pure).

    BM25, min-max normalized (1 is the lane's best), is interpolated with the semantic cosine
    (``semantic_weight``) where there is one; then the bounded signals add to it: the row's
    ``coverage`` times ``signals.coverage`` (``signals.keywords`` for a question of
    ``KEYWORD_TERMS`` terms or fewer: rows holding every keyword come first), and
    ``signals.phrase`` for a phrase.
    """
    scores = normalized(bm25)
    if cosine is not None and semantic_weight > 0:
        dense = normalized([-c for c in cosine])
        scores = [
            (1 - semantic_weight) * lex + semantic_weight * den
            for lex, den in zip(scores, dense, strict=True)
        ]
    boost = signals.keywords if terms <= KEYWORD_TERMS else signals.coverage
    return [
        score + boost * coverage[i] + (signals.phrase if phrase[i] else 0.0)
        for i, score in enumerate(scores)
    ]


def lane_sql(fts: str, table: str, columns: Sequence[str], where: str) -> str:
    """The lane's query: ids and bm25 of the best matches passing the filters (``where``:
    ``and ...`` clauses on ``t``, the table); the newest row first among equals."""
    bm25 = bm25_call(f"[{fts}]", columns)
    if not where:
        return (
            f"select rowid, {bm25} as score from [{fts}] where [{fts}] match ? "
            "order by score, rowid desc limit ?"
        )
    return (
        f"select t.id, {bm25} as score from [{fts}] join [{table}] t on t.id = [{fts}].rowid "
        f"where [{fts}] match ?{where} order by score, t.id desc limit ?"
    )


def run_lane(
    conn: sqlite3.Connection,
    sql: str,
    match: str,
    params: list[Any],
    depth: int,
) -> list[tuple[int, float]]:
    """(id, bm25) of the ``depth`` best rows for ``match``."""
    rows = conn.execute(sql, [match, *params, depth]).fetchall()
    return [(r[0], r[1]) for r in rows]
