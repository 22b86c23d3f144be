"""Did you mean: question words no row of the brain holds, and the nearest words it does.

A typo ("sourdugh startr") finds nothing and would send a person to the web for what they
saved. Each word no FTS table holds, even as a prefix, is compared with the table's own
vocabulary (``fts5vocab``: the porter stems the index holds) within ``MAX_EDITS`` edits; the
nearest, then the one most rows hold, wins, and is shown as the rows spell it.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from .fts import quote_term, quote_word
from .stemming import fold, stem, tokens

MAX_EDITS = 2
MIN_CHARS = 3  # shorter words are too often someone's abbreviation
SHORT_WORD = 4
MAX_WORDS = 6  # a question with more unknown words is not a typo
SAMPLE_ROWS = 5  # rows read to find how the brain spells a stem
MAX_CANDIDATES = 8  # nearest stems weighed against the question's other words
MAX_TOGETHER = 100


@dataclass(frozen=True)
class Correction:
    """One question word the brain does not hold, and the word it probably meant."""

    word: str
    suggestion: str
    edits: int
    rows: int  # rows of the brain holding the suggestion

    def as_dict(self) -> dict:
        return asdict(self)


def edit_distance(a: str, b: str, limit: int = MAX_EDITS) -> int:
    """Edits (insert, delete, substitute, or swap two neighbours: "pmup" is one from "pump")
    between two words, or ``limit + 1`` as soon as it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return min(previous[-1], limit + 1)


def allowed_edits(word: str) -> int:
    """Short words allow one edit: two would turn "qcd" into half the vocabulary."""
    return 1 if len(word) <= SHORT_WORD else MAX_EDITS


def corrected(question: str, corrections: Sequence[Correction]) -> str:
    """The question with each unknown word replaced by its suggestion (other words as typed)."""
    fixes = {c.word: c.suggestion for c in corrections}
    out: list[str] = []
    for token in question.split():
        core = token.strip(".,;:!?\"'()[]")
        fixed = fixes.get(fold(core).lower())
        out.append(token.replace(core, fixed, 1) if fixed and core else token)
    return " ".join(out)


def unknown_words(
    conn: sqlite3.Connection, tables: Sequence[str], words: Sequence[str]
) -> list[str]:
    """The words no table holds, as typed or as a prefix (one indexed probe each)."""
    unknown = []
    for word in words:
        if len(word) < MIN_CHARS or word.isdigit():
            continue
        held = any(
            conn.execute(
                f"select 1 from [{t}] where [{t}] match ? limit 1", [quote_term(word)]
            ).fetchone()
            for t in tables
        )
        if not held:
            unknown.append(word)
    return unknown


def _vocabulary(conn: sqlite3.Connection, table: str, start: str) -> list[tuple[str, int]]:
    """(stem, rows holding it) of a table's vocabulary beginning with ``start``."""
    vocab = f"dbrain_vocab_{table}"
    conn.execute(
        f"create virtual table if not exists temp.[{vocab}] using fts5vocab(main, '{table}', 'row')"
    )
    upper = start[:-1] + chr(ord(start[-1]) + 1)
    return conn.execute(
        f"select term, doc from temp.[{vocab}] where term >= ? and term < ?", [start, upper]
    ).fetchall()


def _spelling(conn: sqlite3.Connection, tables: Sequence[str], term: str) -> str:
    """How the brain's rows spell a stem: the commonest token of a few rows that holds it."""
    seen: Counter[str] = Counter()
    for table in tables:
        rows = conn.execute(
            f"select * from [{table}] where [{table}] match ? limit {SAMPLE_ROWS}",
            [quote_word(term)],
        ).fetchall()
        for row in rows:
            for value in row:
                seen.update(t for t in tokens(str(value or "")) if stem(t) == term)
    return min(seen.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0] if seen else term


def _candidates(
    conn: sqlite3.Connection, tables: Sequence[str], word: str
) -> list[tuple[int, int, str]]:
    """(edits, rows, stem) of the vocabulary within ``MAX_EDITS`` of a word, nearest and
    commonest first."""
    target = stem(word)
    rows: Counter[str] = Counter()
    for table in tables:
        for term, doc in _vocabulary(conn, table, target[0]):
            rows[term] += doc
    limit = allowed_edits(word)
    near = [(edit_distance(target, term, limit), n, term) for term, n in rows.items()]
    near = [c for c in near if c[0] <= limit]
    return sorted(near, key=lambda c: (c[0], -c[1], c[2]))[:MAX_CANDIDATES]


def _together(
    conn: sqlite3.Connection, tables: Sequence[str], term: str, context: list[str]
) -> int:
    """Rows holding ``term`` and any of the context words (capped at ``MAX_TOGETHER``)."""
    if not context:
        return 0
    match = f"{quote_word(term)} AND ({' OR '.join(quote_word(w) for w in context)})"
    return sum(
        conn.execute(
            f"select count(*) from (select 1 from [{t}] where [{t}] match ? limit {MAX_TOGETHER})",
            [match],
        ).fetchone()[0]
        for t in tables
    )


def suggest(
    conn: sqlite3.Connection, tables: Sequence[str], words: Sequence[str]
) -> list[Correction]:
    """Corrections for the question's words no table holds: none when more than
    ``MAX_WORDS`` are unknown, or when any of them has nothing near it in the brain (a
    question about what the brain does not hold, not a typo: "lattice qcd").

    Of the stems within ``MAX_EDITS``, the one found with the question's other words wins (the
    words the brain holds, and the other typos' nearest fixes): "startr" beside "sourdough" is
    "starter", not the commoner "start"; then the nearest; then the one most rows hold."""
    unknown = unknown_words(conn, tables, words)
    if not unknown or len(unknown) > MAX_WORDS:
        return []
    try:
        options = {word: _candidates(conn, tables, word) for word in unknown}
    except sqlite3.Error:  # no fts5vocab in this SQLite, or a brain we may not touch
        return []
    if not all(options.values()):
        return []
    known = [w for w in words if w not in unknown]
    found = []
    for word, near in options.items():
        others = [o[0][2] for w, o in options.items() if w != word and o]
        context = [*known, *others]
        edits, rows, term = min(
            near, key=lambda c: (-_together(conn, tables, c[2], context), c[0], -c[1], c[2])
        )
        found.append(Correction(word, _spelling(conn, tables, term), edits, rows))
    return found
