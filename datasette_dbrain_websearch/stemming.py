"""Words as SQLite's ``porter unicode61`` tokenizer sees them (pure functions).

dbrain's FTS tables use ``tokenize='porter unicode61'``: text is cut into runs of letters and
digits, lowercased, Latin diacritics removed (``remove_diacritics=1``), and each token of 3 to 64
bytes stemmed with Martin Porter's algorithm. Everything that decides whether a word *matched*
(highlights, excerpts, matched terms and the judge, the extractive answer, the verifier,
feedback) reads words through this module, so what the page marks is what FTS5 found.

The stemmer is ``porter.porter_stem``, a port of the reference implementation FTS5 follows
(Snowball's ``porter`` parts from it on about one English word in 500). FTS5 stems UTF-8 bytes, so
a token with a letter outside ASCII is stemmed by SQLite itself.
``tests/research/test_stemming.py`` holds both against FTS5's own tokens (``fts5vocab``) for a
word list.
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


class _FoldTable(dict[int, str]):
    """``str.translate``'s table for ``fold``: each character's folded form, worked out the
    first time it is met (a page's text is folded in C, not a character at a time)."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLD = _FoldTable()


_NON_ASCII_RUN = re.compile(r"([^\x00-\x7f]+)")


def fold(text: str) -> str:
    """Lowercase and strip Latin diacritics, character for character (same length).

    ``str.translate`` looks up every character it is given: in a text that is mostly ASCII
    (English with a few accented names) only the non-ASCII runs go through the table, the rest
    lowercased as it stands, twice as fast; a text written mostly outside ASCII goes through the
    table whole, which is faster there (what UTF-8 adds to its opening's length says which)."""
    if text.isascii():
        return text.lower()
    opening = text[:512]
    if len(opening.encode()) - len(opening) > len(opening) // 32:
        return text.translate(_FOLD)
    parts = _NON_ASCII_RUN.split(text)
    parts[::2] = [part.lower() for part in parts[::2]]
    parts[1::2] = [part.translate(_FOLD) for part in parts[1::2]]
    return "".join(parts)


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


SEPARATOR = "\x00" * 4  # between joined texts: no phrase or alternative spans it
_TOKEN_REST = re.compile(r"[^\W_]*")
_GAP = re.compile(r"[\W_]{0,4}")
_NEXT_TOKEN = re.compile(r"(?:[^\w\x00]|_)*([^\W_]+)")
# A token's term when its first alternative is the token alone, else its alternatives.
_TokenMatch = tuple[str | None, tuple[tuple[str, tuple[Form, ...]], ...]]


def _following(folded: str, end: int, count: int) -> list[tuple[int, int]]:
    """The spans of the ``count`` tokens after ``end`` (fewer at the end of a text)."""
    spans: list[tuple[int, int]] = []
    while len(spans) < count:
        m = _NEXT_TOKEN.match(folded, end)
        if m is None:
            break
        spans.append(m.span(1))
        end = m.end()
    return spans


def _tokens_starting(folded: str, head: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each token of ``folded`` that starts with ``head``, in order: a
    ``str.find`` loop, which runs at memory speed."""
    find, rest = folded.find, _TOKEN_REST.match
    at = find(head)
    while at != -1:
        if at and folded[at - 1].isalnum():
            at = find(head, at + 1)
            continue
        end = rest(folded, at).end()  # type: ignore[union-attr]
        yield at, end
        at = find(head, end)


def _head(stem_: str) -> str:
    """What every token with this stem (or, for a prefix form, a longer one) starts with: all
    but the stem's last letter, since porter rewrites one ending letter at most (happy -> happi,
    hopping -> hop; true of all 128,112 words of pyspellchecker's English list). A stem with a
    letter outside ASCII is SQLite's: only its first three letters are trusted."""
    keep = len(stem_) - 1 if stem_.isascii() else min(3, len(stem_) - 1)
    return stem_[: max(1, keep)]


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
        for name, alternatives in terms:
            for forms in alternatives:
                forms = tuple(forms)
                if forms:
                    self._alternatives.append((name, forms))
        self._names = tuple(dict.fromkeys(name for name, _ in self._alternatives))
        self._starting: dict[str, tuple[tuple[str, tuple[Form, ...]], ...]] = {}
        self._by_token: dict[str, _TokenMatch] = {}
        self._heads: list[str] = []
        for head in sorted({_head(forms[0].stem) for _, forms in self._alternatives}):
            # A head that starts with another finds nothing more ("flo" finds every "flow").
            if not self._heads or not head.startswith(self._heads[-1]):
                self._heads.append(head)
        # Each head with the terms whose tokens start with it.
        self._head_names = [
            (head, frozenset(n for n, f in self._alternatives if _head(f[0].stem).startswith(head)))
            for head in self._heads
        ]
        # Each term's heads, in order (where ``side_by_side`` looks for it).
        self._heads_of: dict[str, list[str]] = {}
        for head, names in self._head_names:
            for name in names:
                self._heads_of.setdefault(name, []).append(head)

    @property
    def names(self) -> list[str]:
        """The terms' names, once each, in order."""
        return list(self._names)

    @classmethod
    def for_words(cls, words: Iterable[str]) -> TermMatcher:
        """A matcher for plain words, each its own term matched whole."""
        return cls((w, [forms_of(w)]) for w in words)

    def finditer(self, text: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, term) of every match in ``text``, in order, without overlaps.

        An alternative of several forms matches the tokens that follow, whatever separates
        them but ``SEPARATOR`` (``join``'s mark between texts)."""
        if not self._heads or not text:
            return
        folded = fold(text)
        match_at = self._match_at
        last_end = -1
        for start, end in self._token_starts(folded):
            if start < last_end:
                continue
            found = match_at(folded, start, end)
            if found is not None:
                last_end, name = found
                yield start, last_end, name

    def held_in(self, folded: str) -> set[str]:
        """The names of the terms a folded text holds: each head is searched only until its
        terms are found (a page repeats its words)."""
        held: set[str] = set()
        for head, names in self._head_names:
            if names <= held:
                continue
            for _, _, name in self._occurrences(folded, head):
                held.add(name)
                if names <= held:
                    break
        return held

    def side_by_side(self, folded: str, first: str, second: str) -> bool:
        """Whether a match of term ``first`` is followed by one of ``second`` with at most
        three separating characters between them (a phrase)."""
        gap_at, rest, match_at = _GAP.match, _TOKEN_REST.match, self._match_at
        for head in self._heads_of.get(first, ()):
            for _, stop, name in self._occurrences(folded, head):
                if name != first:
                    continue
                gap = gap_at(folded, stop).end()  # type: ignore[union-attr]
                if gap - stop > 3 or gap == len(folded):
                    continue
                end = rest(folded, gap).end()  # type: ignore[union-attr]
                found = match_at(folded, gap, end)
                if found is not None and found[1] == second:
                    return True
        return False

    def _occurrences(self, folded: str, head: str) -> Iterator[tuple[int, int, str]]:
        """(start, end, term) of each match at a token starting with ``head``, in order."""
        match_at = self._match_at
        for start, end in _tokens_starting(folded, head):
            found = match_at(folded, start, end)
            if found is not None:
                yield start, found[0], found[1]

    def _match_at(self, folded: str, start: int, end: int) -> tuple[int, str] | None:
        """(end of the match, term) for the first alternative matching the token at
        ``start:end`` (and, for several forms, the tokens after it), or None."""
        token = folded[start:end]
        plan = self._by_token.get(token)
        if plan is None:
            plan = self._by_token[token] = self._plan_for(token)
        whole, alternatives = plan
        if whole is not None:
            return end, whole
        for name, forms in alternatives:
            stop = end
            if len(forms) > 1:
                following = _following(folded, end, len(forms) - 1)
                if len(following) < len(forms) - 1 or not all(
                    f.matches(stem(folded[a:b]))
                    for f, (a, b) in zip(forms[1:], following, strict=True)
                ):
                    continue
                stop = following[-1][1]
            tail = forms[-1].tail
            if tail and not folded.startswith(tail, stop):
                continue
            return stop + len(tail), name
        return None

    def _plan_for(self, token: str) -> _TokenMatch:
        """``_match_at``'s work for one token, done once a token (a long text repeats its
        words): the term when the first alternative is a single form without a tail (it
        matches the token alone), else the alternatives to try."""
        alternatives = self._starting_with(stem(token))
        if alternatives:
            name, forms = alternatives[0]
            if len(forms) == 1 and not forms[0].tail:
                return name, ()
        return None, alternatives

    def _token_starts(self, folded: str) -> list[tuple[int, int]]:
        """(start, end) of each token starting with one of the heads, in order (a ``str.find``
        loop per head, where a pattern that opens with a look-behind or an alternation tries
        every position: 25 times slower on a page). Heads are prefixes of none of the others,
        so no two find the same token."""
        spans: list[tuple[int, int]] = []
        for head in self._heads:
            spans.extend(_tokens_starting(folded, head))
        spans.sort()
        return spans

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
        names = set(self._names)
        seen: set[str] = set()
        for text in texts:
            if not text:
                continue
            for _, _, name in self.finditer(text):
                seen.add(name)
                if seen == names:
                    return seen
        return seen
