"""A question's terms, read the way dbrain reads them (pure functions): the words a row must
hold, and the wider set of words ranking searches for.

Words: dbrain's ``internal/queryterms`` (``Terms``, darron/dbrain ``queryterms.go`` @0b78933,
``normalize.go`` @9cdb6e3, ``stopwords.go`` and ``chat.go`` @c9fd9bc), rule for rule: chat
scaffolding ("Current question:", "Prior evidence ...:") reduced to the questions; corpus
frames ("in my research") removed; hyphens, underscores and every other non-letter/digit split
words; lowercase; variants folded (kids -> children, killed -> kill, models -> model);
``not``/``wrong``/``exclude``/``without`` drop the next word and ``instead``/``correct(ion)``
are dropped; dbrain's stop list (conversational fillers such as "dbrain", "information",
"look", "stories" included) and source-key fragments (long digit or hex runs) dropped; first
occurrence kept. Extras dbrain lacks, none of which its term table contradicts: a possessive
``'s`` goes with its word (dbrain would keep a lone ``s``); current-state words ("latest",
"today") are not required locally but go to the web; the excluded words are recorded; and a
question with no content words searches nothing (dbrain would search its raw words instead).

Terms as people write them (the one place the plan's terms part from dbrain's): a token that
joins letters and digits with ``-``, ``:``, ``.``, ``+``, ``/`` or ``_`` is one term, named as
typed and searched as the phrase of its parts (``"g-2"`` is FTS5's phrase ``g 2``), when the
join is a dot (``node.js``, ``asp.net``, ``3.11``) or a part is one character or holds a digit
(``g-2``, ``1:2``, ``e5-large``, ``x-ray``, ``a/b``, ``utf-8``); so is a letter run ending in
``++`` or a single letter with ``#`` (``c++``, ``notepad++``, ``c#``). Other joined words stay
dbrain's separate words (``sqlite-utils``, ``heat-pump``, ``full_text``, ``tcp/ip``), matched
apart or in any order. A compound is a term when any of its parts is one of dbrain's (``x-ray``:
"x" is on the stop list, "ray" is not), and a negation drops the whole compound. unicode61 cannot
see ``+`` or ``#``: ``c++`` is searched as ``"c++"`` (the token c), and is held only where a row
writes ``c++`` (``stemming.Form.tail``), so matched terms, coverage and highlights never take a
bare "c" for it. ``ranking: dbrain`` keeps dbrain's own term list (``QueryPlan.dbrain_terms``)
for its AND and OR queries, and its relaxed test splits a compound back into dbrain's words.

Those terms say which words a row holds (matched and missing terms, the judge). Ranking reads
the question more widely (``search_terms``): dbrain's stop list strips chat filler, and some of
its words are content ("use", "data", "related", "brain", "src" as in Src kinase), so the
ranking query drops only English function words and chat scaffolding ("tell me about", "from
dbrain", "in my research"); a canonical form is searched beside the question's word ("compared"
OR "comparison"), never instead of it; a negated word is still searched (a question about "rust
not tokio" is about tokio too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from .word_lists import (
    CANONICAL_TERMS,
    CHAT_HEADINGS,
    CORPUS_FRAMES,
    CORRECTIONS,
    CURRENT_STATE_WORDS,
    KEYWORD_LIST_STOPS,
    NEGATIONS,
    QUESTION_STOP_WORDS,
    RAW_OPERATORS,
    SCAFFOLD_PHRASES,
    SEARCH_STOP_WORDS,
)

MAX_TERMS = 32
KEYWORDS = 3  # a question of this many terms or fewer, and no other word, is a keyword list
_CURRENT = "current question:"
_RECENT = "recent user questions:"

_POSSESSIVE = re.compile(r"(?<=[^\W_])['\u2019]s\b", re.IGNORECASE)
_NOT_WORD = re.compile(r"[\W_]+")
_WORD = re.compile(r"[^\W_]+")
# A run of letters and digits joined by single marks, maybe ending in "++" or "#" (c++, c#).
_JOINED = re.compile(r"[^\W_]+(?:[-:./+_][^\W_]+)*(?:\+\+|#(?![^\W_]))?")


@dataclass(frozen=True)
class SearchTerm:
    """One thing the ranking query looks for: its name (dbrain's term where it is one) and the
    words searched for it (the question's word and, beside it, dbrain's canonical form)."""

    name: str
    words: tuple[str, ...]
    required: bool = True  # one of dbrain's terms: matched or missing, counted by the judge
    expansion: bool = False  # added by Expand: searched (OR), never a word the row must hold


def trim_token(token: str) -> str:
    """Trim characters that are not letters or digits from both ends (dbrain's token rule)."""
    start, end = 0, len(token)
    while start < end and not token[start].isalnum():
        start += 1
    while end > start and not token[end - 1].isalnum():
        end -= 1
    return token[start:end]


@lru_cache(maxsize=256)
def search_text(question: str) -> str:
    """dbrain's ``SearchText``: a pasted chat prompt is reduced to its current and recent
    questions, so headings and prior-evidence titles never become search terms. (Kept for the
    last questions: planning one reads it several times.)"""
    question = question.strip()
    if not question:
        return ""
    question = question.replace("\\n", "\n").replace("\\r", "\n").replace("\\t", " ")
    question = _break_before_headings(question)
    lines = question.split("\n")
    if not any(_is_retrieval_heading(line.strip().lower()) for line in lines):
        return question.strip()
    parts: list[str] = []
    section = ""
    for line in lines:
        trimmed = line.strip()
        lower = trimmed.lower()
        if not trimmed:
            continue
        if lower.startswith(_CURRENT):
            section = "search"
            if value := trimmed[len(_CURRENT) :].strip():
                parts.append(value)
        elif lower.startswith(_RECENT):
            section = "search"
            if value := trimmed[len(_RECENT) :].strip():
                parts.append(value.removeprefix("-").strip())
        elif _is_prior_evidence(lower) or (
            lower.endswith(":") and ("evidence" in lower or "question" in lower)
        ):
            section = "ignore"
        elif section == "search":
            parts.append(trimmed.removeprefix("-").strip())
    return " ".join(parts).strip() if parts else question.strip()


_CHAT_HEADING = re.compile(
    "|".join(re.escape(heading) for heading in CHAT_HEADINGS), re.IGNORECASE | re.ASCII
)


def _break_before_headings(text: str) -> str:
    """A line break before every (ASCII case-insensitive) occurrence of a chat heading. No
    heading holds another, so one pass over them all breaks as one pass per heading would."""
    return _CHAT_HEADING.sub(
        lambda m: m[0] if m.start() == 0 or text[m.start() - 1] == "\n" else "\n" + m[0], text
    )


def _is_prior_evidence(lower: str) -> bool:
    return lower.startswith(("prior evidence ", "relevant prior evidence ", "pinned evidence "))


def _is_retrieval_heading(lower: str) -> bool:
    return lower.startswith((_CURRENT, _RECENT)) or _is_prior_evidence(lower)


def normalize_question(text: str) -> str:
    """dbrain's ``normalizeQuestionText``: lowercase, corpus frames out, and every run of
    characters other than letters and digits (hyphens and underscores too) one space.

    (Its ``\\n``/``\\t`` replacement is left out: ``search_text`` has already done it.)"""
    text = text.lower()
    for phrase in CORPUS_FRAMES:
        text = text.replace(phrase, " ")
    return _NOT_WORD.sub(" ", text.strip())


def looks_like_source_key_fragment(word: str) -> bool:
    """dbrain's test for pasted ids: 8+ digits, or 10+ hex digits (lengths in UTF-8 bytes)."""
    size = len(word.encode())
    if size < 8:
        return False
    if all(ch.isdecimal() for ch in word):
        return True
    return size >= 10 and all(ch.isdecimal() or "a" <= ch <= "f" for ch in word)


def question_words(question: str) -> list[str]:
    """The question's words as dbrain reads them, canonicalized, before any is dropped."""
    text = _POSSESSIVE.sub("", search_text(question))
    return [CANONICAL_TERMS.get(w, w) for w in normalize_question(text).split()]


def is_keyword_list(question: str, terms: Sequence[str]) -> bool:
    """Was the question typed as a short list of keywords ("analog synthesizer calibration"),
    not asked in words ("When did the church reform begin?")? Each keyword of such a list is
    wanted: the verdict asks one row to hold them all."""
    words = question_words(question)
    return 0 < len(terms) <= KEYWORDS and not any(w in KEYWORD_LIST_STOPS for w in words)


def is_compound(token: str) -> bool:
    """Is a joined token (``_JOINED``) one term, searched as the phrase of its parts? Yes for
    ``c++`` and ``c#``, a dotted name or number (``node.js``, ``3.11``), and a join with a part
    of one character or holding a digit (``g-2``, ``1:2``, ``e5-large``, ``x-ray``); no for
    joined words (``sqlite-utils``, ``heat-pump``), which stay dbrain's separate words."""
    parts = _WORD.findall(token)
    if token.endswith("++") or (token.endswith("#") and len(token) == 2):
        return True
    if len(parts) < 2:
        return False
    return "." in token or any(len(p) == 1 or any(c.isdigit() for c in p) for p in parts)


class Unit(NamedTuple):
    """One word of the question (its canonical form, and the word as typed), or one compound
    (``g-2``, its own form) with its parts (``g``, ``2``)."""

    name: str
    parts: tuple[str, ...]
    typed: str


# A pasted address: its scheme, query and fragment say nothing a page is about.
_URL = re.compile(r"https?://([^\s/?#]+)([^\s?#]*)[^\s]*")
# Address pieces that name no subject: www, the commonest top-level domains, file types.
URL_NOISE = frozenset("www com org net io dev blog co uk html htm php asp aspx index amp".split())


def url_words(match: re.Match[str]) -> str:
    """The words of a pasted address a page is about: its host's names and its path's words
    (``https://quarkmatter.blog/what-is-lattice-qcd`` is "quarkmatter what is lattice qcd"),
    not its scheme, its query or the phrase of its whole (which no text writes)."""
    words = _WORD.findall(f"{match.group(1)} {match.group(2)}")
    return " " + " ".join(w for w in words if w not in URL_NOISE) + " "


def question_units(text: str) -> list[Unit]:
    """A normalized question's words as ``normalize_question`` cuts them, but each compound
    (``is_compound``) kept whole, and an address read as its words (``url_words``):
    lowercased, corpus frames out, words canonicalized."""
    text = _URL.sub(url_words, text.lower())
    for phrase in CORPUS_FRAMES:
        text = text.replace(phrase, " ")
    units: list[Unit] = []
    for match in _JOINED.finditer(text):
        token = match.group()
        if is_compound(token):
            units.append(Unit(token, tuple(_WORD.findall(token)), token))
            continue
        for word in _WORD.findall(token):
            canonical = CANONICAL_TERMS.get(word, word)
            units.append(Unit(canonical, (canonical,), word))
    return units


def dbrain_parts(term: str) -> list[str]:
    """dbrain's own terms within one of the plan's terms: a compound's parts that dbrain keeps
    (``x-ray`` is ``ray``); a word is itself."""
    parts = _WORD.findall(term)
    if parts == [term]:
        return [term]
    canonical = (CANONICAL_TERMS.get(p, p) for p in parts)
    return list(dict.fromkeys(p for p in canonical if _dbrain_keeps(p)))


def _dbrain_keeps(word: str) -> bool:
    return _kept(word, QUESTION_STOP_WORDS)


class QuestionTerms(NamedTuple):
    terms: list[str]  # dbrain's ``Terms`` without the current-state words ("latest")
    excluded: list[str]  # the words a negation dropped
    content: list[str]  # every content word, the current-state ones included


def read_terms(question: str, compounds: bool = False) -> QuestionTerms:
    """A question's terms as dbrain reads them; any list may be empty.

    dbrain's loop (queryterms.go), in its order: a negation's next word is dropped whatever it
    is, then negations, corrections, stop words and source-key fragments go, first one wins.
    With ``compounds``, the plan's reading: a compound (``g-2``) is one word, a term when any
    of its parts is one of dbrain's, and a negation before it drops it whole.
    """
    terms: list[str] = []
    excluded: list[str] = []
    content: list[str] = []
    seen: set[str] = set()  # content's words: a long question is not read in square time
    skip_next = False
    if compounds:
        text = _POSSESSIVE.sub("", search_text(question))
        units = question_units(text)
    else:
        units = [Unit(w, (w,), w) for w in question_words(question)]
    for word, parts, _ in units:
        if skip_next:
            skip_next = False
            if any(p not in QUESTION_STOP_WORDS for p in parts):
                excluded.append(word)
            continue
        if parts != (word,):  # a compound
            if word not in seen and dbrain_parts(word):
                content.append(word)
                seen.add(word)
                terms.append(word)
            continue
        if word in NEGATIONS:
            skip_next = True
            continue
        if word in CORRECTIONS or word in seen:
            continue
        if word in CURRENT_STATE_WORDS:
            content.append(word)
            seen.add(word)
            continue
        if word in QUESTION_STOP_WORDS or looks_like_source_key_fragment(word):
            continue
        content.append(word)
        seen.add(word)
        terms.append(word)
    return QuestionTerms(terms, excluded, content)


def raw_terms(raw_query: str) -> list[str]:
    """Words of a raw FTS5 query worth highlighting: no operators, column names or NEAR counts."""
    words: list[str] = []
    for match in re.finditer(r"(\w+)(\s*:)?", raw_query):
        word = match.group(1).lower()
        if match.group(2) or word in RAW_OPERATORS or word.isdigit() or word in words:
            continue
        words.append(word)
    return words[:MAX_TERMS]


# "a NOT b": what the query excludes, a word (maybe of a column), a "phrase" or a (group).
_EXCLUDED = re.compile(r'\bNOT\s+(?:\([^)]*\)|"[^"]*"|[\w:*^]+)')


def wanted_raw_terms(raw_query: str) -> list[str]:
    """``raw_terms`` of what a raw FTS5 query asks for: not the words it excludes (``NOT``)."""
    return raw_terms(_EXCLUDED.sub(" ", raw_query))


def strip_scaffolding(text: str) -> str:
    """The question without the phrases that frame it as a question to the brain."""
    text = f" {text.lower()} "
    for phrase in (*CORPUS_FRAMES, *SCAFFOLD_PHRASES):
        text = text.replace(f" {phrase} ", " ")
    return text.strip()


def search_terms(question: str, terms: list[str]) -> tuple[SearchTerm, ...]:
    """What the ranking query searches: dbrain's terms, each with the question's own word beside
    its canonical form, plus the question's other content words (those dbrain's chat stop list
    drops, and negated words), without English function words or scaffolding. A compound
    (``g-2``) is one word, searched as the phrase of its parts, when any part would be."""
    text = _POSSESSIVE.sub("", search_text(question))
    units = question_units(strip_scaffolding(text))
    originals: dict[str, list[str]] = {}
    extra: list[str] = []
    for canonical, parts, word in units:
        if canonical in terms:
            originals.setdefault(canonical, [])
            if word not in originals[canonical]:
                originals[canonical].append(word)
        elif any(_searched(p) for p in (parts if parts != (canonical,) else [word])) and (
            word not in extra
        ):
            extra.append(word)
    found = [
        SearchTerm(t, tuple(dict.fromkeys([*originals.get(t, []), t])), required=True)
        for t in terms
    ]
    found += [SearchTerm(w, (w,), required=False) for w in extra if w not in terms]
    return tuple(found[:MAX_TERMS])


def _searched(word: str) -> bool:
    """Is a word the ranking query searches even where it is not one of dbrain's terms?"""
    return _kept(word, SEARCH_STOP_WORDS)


def _kept(word: str, stop_words: frozenset[str]) -> bool:
    """A word neither reading of the question drops: not a stop word of that reading, a
    negation or correction, a current-state word or a pasted key's fragment."""
    return (
        word not in stop_words
        and word not in NEGATIONS
        and word not in CORRECTIONS
        and word not in CURRENT_STATE_WORDS
        and not looks_like_source_key_fragment(word)
    )
