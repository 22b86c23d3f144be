"""Did you mean: question words no row of the brain holds, and the nearest words it does.

A typo ("sourdugh startr") finds nothing and would send a person to the web for what they
saved. A word is offered a correction only when it looks like a typo:

- no FTS table holds it, even as a prefix, and it is not an English word (a correctly spelled
  word the brain lacks, "calibration", is a question about what the brain does not hold, never a
  typo): ``english_words`` is the word list ``pyspellchecker`` ships in its wheel, read once per
  process; without it nothing is suggested;
- a word the brain spells (its rows' own tokens, not the porter stems the index holds: "calibr"
  is two edits from "calico", "calibration" is six) is within ``allowed_edits`` of the word as
  typed: one edit up to ``SHORT_WORD`` letters, two beyond;
- and that word is common enough in the brain: held by ``MIN_ROWS`` rows, or by one row when it
  is itself an English word (a token only one row holds and no dictionary knows is more likely
  that row's own typo, a code or a rare name than the word meant).

``bench/bench_spelling.py`` measures the rule on the public collections.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache

from .query_plan import quote_term, quote_word
from .stemming import PORTER_MIN_BYTES, TOKEN, fold, stem, tokens

log = logging.getLogger("datasette_dbrain_websearch")

MAX_EDITS = 2
MIN_CHARS = 3  # shorter words are too often someone's abbreviation
SHORT_WORD = 6  # words up to this long allow one edit, longer ones two (bench_spelling.py)
MIN_ROWS = 2  # rows that must hold a suggestion no English word list knows
MAX_WORDS = 6  # a question with more unknown words is not a typo
SAMPLE_PLACES = 40  # occurrences read to find how the brain spells a stem
MAX_CANDIDATES = 12  # nearest stems whose spellings are read
MAX_TOGETHER = 100
SUFFIX = 3  # letters of an ending porter usually cuts ("ing", "ed", "s"; "ation" becomes "ate")


@dataclass(frozen=True)
class Correction:
    """One question word the brain does not hold, and the word it probably meant."""

    word: str
    suggestion: str
    edits: int
    rows: int  # rows of the brain holding the suggestion

    def as_dict(self) -> dict:
        return asdict(self)


@lru_cache(maxsize=1)
def english_words() -> Mapping[str, int] | None:
    """The English words of ``pyspellchecker``'s dictionary, each with how often it occurs in
    its corpus (folded as FTS5 folds them, so "fiancée" is "fiancee"; about 160,000 words, read
    once per process in a quarter of a second), or None when it cannot be read. Did you mean
    asks whether a word is English; the answer check, how specific a word is."""
    try:
        from spellchecker import SpellChecker

        table: dict[str, int] = {}
        for word, count in SpellChecker(language="en").word_frequency.dictionary.items():
            folded = fold(word)
            table[folded] = table.get(folded, 0) + count
    except Exception as exc:  # not installed, or its data unreadable: suggest nothing
        log.warning("did you mean is off: no English word list (%s)", exc)
        return None
    return table or None


def is_english(word: str, words: Mapping[str, int]) -> bool:
    return fold(word) in words


def _last_row(a: str, b: str, limit: int) -> list[int] | None:
    """The last row of the edit table of ``a`` against ``b`` (insert, delete, substitute, or
    swap two neighbours), or None as soon as every cell of a row is past ``limit``."""
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
            return None
        before, previous = previous, current
    return previous


def edit_distance(a: str, b: str, limit: int = MAX_EDITS) -> int:
    """Edits (insert, delete, substitute, or swap two neighbours: "pmup" is one from "pump")
    between two words, or ``limit + 1`` as soon as it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    row = _last_row(a, b, limit)
    return limit + 1 if row is None else min(row[-1], limit + 1)


def prefix_distance(head: str, word: str, limit: int = MAX_EDITS, shortest: int = 0) -> int:
    """Edits between ``head`` and the nearest beginning of ``word`` at least ``shortest``
    letters long (``limit + 1`` past the limit): a word within ``limit`` edits of a token
    starts within ``limit`` of the token's beginning, and porter rewrites endings only, so
    every token of a stem starts with all but the stem's last letter."""
    row = _last_row(head, word, limit)
    return limit + 1 if row is None else min(min(row[max(0, shortest) :]), limit + 1)


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
    """The words no table holds, as typed or as a prefix (one indexed probe each). A term
    written as several tokens (``node.js``, ``g-2``: ``question_terms.is_compound``) is a name,
    not a word to spell: it is never offered a correction."""
    unknown = []
    for word in words:
        if len(word) < MIN_CHARS or word.isdigit() or len(tokens(word)) != 1:
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


def vocab_table(conn: sqlite3.Connection, table: str, kind: str) -> str:
    """A temporary ``fts5vocab`` table over an FTS table (``row``: rows holding each stem;
    ``instance``: where each stem occurs)."""
    vocab = f"dbrain_vocab_{kind}_{table}"
    conn.execute(
        f"create virtual table if not exists temp.[{vocab}] "
        f"using fts5vocab(main, '{table}', '{kind}')"
    )
    return vocab


def _vocabulary(conn: sqlite3.Connection, table: str, start: str) -> list[tuple[str, int]]:
    """(stem, rows holding it) of a table's vocabulary beginning with ``start``."""
    vocab = vocab_table(conn, table, "row")
    upper = start[:-1] + chr(ord(start[-1]) + 1)
    return conn.execute(
        f"select term, doc from temp.[{vocab}] where term >= ? and term < ?", [start, upper]
    ).fetchall()


def _spellings(conn: sqlite3.Connection, tables: Sequence[str], term: str) -> Counter[str]:
    """How the brain's rows spell a stem: the tokens (folded) at its first ``SAMPLE_PLACES``
    occurrences in each table, which the index itself locates (a stem cannot be searched for:
    FTS5 would stem it again, "synthes" to "synth"), with how often each was seen."""
    seen: Counter[str] = Counter()
    for table in tables:
        vocab = vocab_table(conn, table, "instance")
        places: dict[tuple[int, str], list[int]] = {}
        for doc, column, offset in conn.execute(
            f"select doc, col, offset from temp.[{vocab}] where term = ? limit {SAMPLE_PLACES}",
            [term],
        ):
            places.setdefault((doc, column), []).append(offset)
        for (doc, column), offsets in places.items():
            row = conn.execute(f"select [{column}] from [{table}] where rowid = ?", [doc])
            text = (row.fetchone() or [""])[0] or ""
            wanted, last = set(offsets), max(offsets)
            for n, match in enumerate(TOKEN.finditer(fold(str(text)))):
                if n in wanted and stem(match.group()) == term:
                    seen[match.group()] += 1
                if n >= last:
                    break
    return seen


def _candidates(
    conn: sqlite3.Connection, tables: Sequence[str], word: str, english: Mapping[str, int]
) -> list[tuple[int, int, str, str]]:
    """(edits, rows, stem, spelling) of the brain's words within ``allowed_edits`` of a word as
    typed and common enough, nearest and commonest first.

    The vocabulary's stems beginning with the word's first or second letter (a letter inserted
    or swapped at the front; a wrong first letter is not looked for) whose beginning is near
    the word are the candidates; those nearest the word less a usual ending ("air" explains
    little of "airciaft") have their spellings read and measured."""
    limit = allowed_edits(word)
    rows: Counter[str] = Counter()
    for table in tables:
        for start in dict.fromkeys(word[:2]):
            for term, doc in _vocabulary(conn, table, start):
                rows[term] += doc
    near = []
    for term, n in rows.items():
        if len(term.encode()) < PORTER_MIN_BYTES:  # indexed as spelled
            edits = edit_distance(word, term, limit)
            if edits <= limit:
                near.append((edits, edits, -n, term))
            continue
        edits = prefix_distance(term[:-1], word, limit)
        if edits <= limit:
            # the stem (with the "y" porter turned into "i") against the word less an ending
            # porter may have cut
            whole = min(
                prefix_distance(t, word, len(word), len(word) - SUFFIX)
                for t in {term, term[:-1] + "y" if term.endswith("i") else term}
            )
            near.append((whole, edits, -n, term))
    found = []
    for _, _, minus_rows, term in sorted(near)[:MAX_CANDIDATES]:
        spelled = [
            (edit_distance(word, form, limit), -count, form)
            for form, count in _spellings(conn, tables, term).items()
        ]
        if not spelled:
            continue
        edits, _, form = min(spelled)
        held = -minus_rows
        if edits <= limit and (held >= MIN_ROWS or is_english(form, english)):
            found.append((edits, held, term, form))
    return sorted(found, key=lambda c: (c[0], -c[1], c[2]))


def _together(
    conn: sqlite3.Connection, tables: Sequence[str], word: str, context: list[str]
) -> int:
    """Rows holding ``word`` and any of the context words (capped at ``MAX_TOGETHER``); words
    as spelled, which FTS5 stems as it stemmed the rows."""
    if not context:
        return 0
    match = f"{quote_word(word)} AND ({' OR '.join(quote_word(w) for w in context)})"
    return sum(
        conn.execute(
            f"select count(*) from (select 1 from [{t}] where [{t}] match ? limit {MAX_TOGETHER})",
            [match],
        ).fetchone()[0]
        for t in tables
    )


def suggest(
    conn: sqlite3.Connection,
    tables: Sequence[str],
    words: Sequence[str],
    english: Mapping[str, int] | None = None,
) -> list[Correction]:
    """Corrections for the question's words that look like typos: no table holds them and no
    English word list knows them (``english``, default ``english_words()``). None when more
    than ``MAX_WORDS`` look so, or when any of them has nothing near it in the brain (a question
    about what the brain does not hold, not a typo: "lattice qcd"), or without a word list.

    Of the brain's words within ``allowed_edits`` of a typo, the one found with the question's
    other words wins (the words the brain holds, and the other typos' nearest fixes): "startr"
    beside "sourdough" is "starter", not the commoner "start"; then the nearest; then the one
    most rows hold."""
    if english is None:
        english = english_words()
        if english is None:
            return []
    # An English word is never a typo: only the others are looked up in the brain (a prefix
    # probe of a common word reads every posting of every word it starts).
    typos = unknown_words(conn, tables, [w for w in words if not is_english(w, english)])
    if not typos or len(typos) > MAX_WORDS:
        return []
    unknown = typos + unknown_words(conn, tables, [w for w in words if is_english(w, english)])
    try:
        options = {word: _candidates(conn, tables, word, english) for word in typos}
    except sqlite3.Error:  # no fts5vocab in this SQLite, or a brain we may not touch
        return []
    if not all(options.values()):
        return []
    known = [w for w in words if w not in unknown]
    found = []
    for word, near in options.items():
        others = [o[0][3] for w, o in options.items() if w != word and o]
        context = [*known, *others]
        edits, rows, _, spelling = min(
            near, key=lambda c: (-_together(conn, tables, c[3], context), c[0], -c[1], c[2])
        )
        found.append(Correction(word, spelling, edits, rows))
    return found
