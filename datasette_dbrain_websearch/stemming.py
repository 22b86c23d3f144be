"""Words as SQLite's ``porter unicode61`` tokenizer sees them (pure functions).

dbrain's FTS tables use ``tokenize='porter unicode61'``: text is cut into runs of letters and
digits, lowercased, Latin diacritics removed (``remove_diacritics=1``), and each token of 3 to 64
bytes stemmed with Martin Porter's algorithm. Everything that decides whether a word *matched*
(highlights, excerpts, matched terms and the judge, the extractive answer, the verifier,
feedback) reads words through this module, so what the page marks is what FTS5 found.

The stemmer is ``porter.porter_stem``, a port of the reference implementation FTS5 follows
(Snowball's ``porter`` parts from it on about one English word in 500). FTS5 stems UTF-8 bytes, so
a token with a letter outside ASCII is stemmed by SQLite itself. ``tests/test_stemming.py`` holds
both against FTS5's own tokens (``fts5vocab``) for a word list.
"""

from __future__ import annotations

import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .porter import porter_stem

# unicode61's token characters: letters, digits (and private-use); "_" separates like "-".
TOKEN = re.compile(r"[^\W_]+")
PORTER_MIN_BYTES = 3  # fts5_porter.c passes shorter and longer tokens through unstemmed
PORTER_MAX_BYTES = 64
# "c++", "c#": characters unicode61 drops, so FTS5 searches the bare "c"; a match must have
# them right after the token (``Form.tail``), or "C is a language" would hold "c++".
LITERAL_TAIL = re.compile(r"(?<=[^\W_])(\+\+|#)$")


@lru_cache(maxsize=4096)
def _fold_char(ch: str) -> str:
    """One character lowercased and, for Latin letters, without its diacritic (``é`` -> ``e``);
    always one character, so folded text keeps the original's positions."""
    low = ch.lower()
    if len(low) != 1:  # "İ" lowercases to two code points; SQLite gives "i"
        low = unicodedata.normalize("NFD", low)[0]
    if low.isascii():
        return low
    base = unicodedata.normalize("NFD", low)
    if len(base) == 2 and base[0].isascii() and unicodedata.category(base[1]) == "Mn":
        return base[0]
    return low


def fold(text: str) -> str:
    """Lowercase and strip Latin diacritics, character for character (same length)."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(ch) for ch in text)


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """The porter stem FTS5 stores for one folded token (short and long tokens unchanged)."""
    size = len(token.encode())
    if size < PORTER_MIN_BYTES or size > PORTER_MAX_BYTES:
        return token
    if not token.isascii():
        return _sqlite_stem(token)
    return porter_stem(token)


def _sqlite_stem(token: str) -> str:
    """SQLite's own porter stem of one token (a throwaway in-memory FTS5 table): FTS5 stems the
    UTF-8 bytes, which no Unicode-aware stemmer reproduces."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("create virtual table t using fts5(b, tokenize='porter unicode61')")
        conn.execute("insert into t values (?)", [token])
        conn.execute("create virtual table temp.v using fts5vocab(main, t, instance)")
        found = [term for (term,) in conn.execute("select term from temp.v order by offset")]
    finally:
        conn.close()
    return found[0] if len(found) == 1 else token


def tokens(text: str) -> list[str]:
    """The folded tokens of a text, in order."""
    return TOKEN.findall(fold(text))


def stems(text: str) -> list[str]:
    """The stems of a text's tokens, in order (what FTS5 indexes)."""
    return [stem(t) for t in tokens(text)]


@dataclass(frozen=True)
class Form:
    """One way a term is searched: a stem, matched whole or (``prefix``) as a stem prefix,
    exactly as FTS5 matches ``"word"`` and ``"word"*`` against a porter index; ``tail``, the
    characters that must follow the token in the text (``++`` of ``c++``), which FTS5 cannot
    see."""

    stem: str
    prefix: bool = False
    tail: str = ""

    def matches(self, token_stem: str) -> bool:
        return token_stem == self.stem or (self.prefix and token_stem.startswith(self.stem))


def forms_of(word: str, prefix: bool = False) -> tuple[Form, ...]:
    """The forms FTS5 searches for a query word: one per token (a word like ``x-ray`` is two
    tokens, searched as a phrase; each must match, and only the last is a prefix, as in
    ``"x-ray"*``). A word ending in ``++`` or ``#`` (``c++``, ``c#``) must be written so."""
    found = [Form(stem(t)) for t in tokens(word)]
    if found:
        tail = LITERAL_TAIL.search(word)
        found[-1] = Form(found[-1].stem, prefix, tail.group() if tail else "")
    return tuple(found)


class TermMatcher:
    """Finds query terms in text the way FTS5 matched them.

    A term is a name (``"comparison"``) with one or more alternatives (``compared``), each a
    sequence of forms; an alternative of several tokens (``x-ray``) must match them in a row.
    """

    def __init__(self, terms: Iterable[tuple[str, Sequence[Sequence[Form]]]]):
        self._alternatives: list[tuple[str, tuple[Form, ...]]] = []
        heads: set[str] = set()
        for name, alternatives in terms:
            for forms in alternatives:
                forms = tuple(forms)
                if not forms:
                    continue
                self._alternatives.append((name, forms))
                head = forms[0].stem
                # A token whose stem is ``head`` starts with all but the stem's last letter
                # (porter rewrites endings only: happy -> happi, hopping -> hop).
                heads.add(re.escape(head[: max(1, min(3, len(head) - 1))]))
        self._starting: dict[str, tuple[tuple[str, tuple[Form, ...]], ...]] = {}
        self._candidates = (
            re.compile(r"(?<![^\W_])(?:" + "|".join(sorted(heads)) + r")[^\W_]*") if heads else None
        )

    @property
    def names(self) -> list[str]:
        """The terms' names, once each, in order."""
        return list(dict.fromkeys(name for name, _ in self._alternatives))

    @classmethod
    def for_words(cls, words: Iterable[str]) -> TermMatcher:
        """A matcher for plain words, each its own term matched whole."""
        return cls((w, [forms_of(w)]) for w in words)

    def finditer(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, term) of every match in ``text``, in order, without overlaps."""
        if self._candidates is None or not text:
            return
        folded = fold(text)
        found = [(m.start(), m.end(), stem(m.group())) for m in self._candidates.finditer(folded)]
        if not found:
            return
        multi = any(len(forms) > 1 for _, forms in self._alternatives)
        every: list[tuple[int, int, str]] | None = None
        if multi:
            every = [(m.start(), m.end(), stem(m.group())) for m in TOKEN.finditer(folded)]
        index = {start: i for i, (start, _, _) in enumerate(every)} if every else {}
        last_end = -1
        for start, end, token_stem in found:
            if start < last_end:
                continue
            for name, forms in self._starting_with(token_stem):
                stop = end
                if len(forms) > 1:
                    i = index.get(start)
                    if i is None or every is None or i + len(forms) > len(every):
                        continue
                    run = every[i : i + len(forms)]
                    if not all(f.matches(t[2]) for f, t in zip(forms, run, strict=True)):
                        continue
                    stop = run[-1][1]
                tail = forms[-1].tail
                if tail and not folded.startswith(tail, stop):
                    continue
                yield start, stop + len(tail), name
                last_end = stop + len(tail)
                break

    def _starting_with(self, token_stem: str) -> tuple[tuple[str, tuple[Form, ...]], ...]:
        """The alternatives whose first form matches a token's stem, worked out once a stem
        (a long text repeats its words)."""
        hit = self._starting.get(token_stem)
        if hit is None:
            hit = tuple(a for a in self._alternatives if a[1][0].matches(token_stem))
            self._starting[token_stem] = hit
        return hit

    def found(self, texts: Iterable[str]) -> set[str]:
        """The names of the terms that occur in any of the texts."""
        names = {name for name, _ in self._alternatives}
        seen: set[str] = set()
        for text in texts:
            if not text:
                continue
            for _, _, name in self.finditer(text):
                seen.add(name)
                if seen == names:
                    return seen
        return seen
