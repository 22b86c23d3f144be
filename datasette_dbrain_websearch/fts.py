"""Turning a question into FTS5 queries, the way dbrain does (pure functions).

dbrain (``internal/store/search_helpers.go`` ``buildFTSQueryWithOperator``) splits on white space,
trims non-letter/digit characters from both ends of each token, and emits ``"token"*`` prefix
matches joined with AND (strict) or OR (relaxed). We add its query-term rules on top: lowercase,
stop words and conversational fillers dropped, ``not``/``without``/``exclude``/``wrong`` drop
the word after them, and current-state words ("latest", "today") are not required locally. Quoting
every token makes FTS5 operators, column filters and stray quotes plain text, so a simple-syntax
question can never be an FTS5 syntax error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .errors import ResearchError

MAX_TERMS = 32

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves
    tell show find give get know anything something everything please vs versus
    dbrain brain info information stuff remember recall
    """.split()
)

# Words that ask how things are *now*. They mark a question as current-state (so the web may
# be worth asking) but are not required of local rows: "latest sqlite" finds what "sqlite"
# finds. Web providers still receive them.
CURRENT_STATE_WORDS = frozenset(
    "latest current currently today recent recently now new newest".split()
)

NEGATIONS = frozenset({"not", "without", "exclude", "wrong"})
RAW_OPERATORS = frozenset({"and", "or", "not", "near"})


@dataclass(frozen=True)
class QueryPlan:
    """The queries one question turns into, recorded in the pack's ``query_plan``."""

    text_query: str
    fts_query: str
    relaxed_query: str
    query_terms: tuple[str, ...]
    syntax: str
    excluded_terms: tuple[str, ...] = ()
    truncated_terms: int = 0
    web_terms: tuple[str, ...] = ()  # query_terms plus the current-state words, in order
    common_words: tuple[str, ...] = ()  # a question of common words only: what it held

    @property
    def searchable(self) -> bool:
        """False when the question held only common words: nothing local to search for."""
        return bool(self.query_terms) or self.syntax == "raw"


def trim_token(token: str) -> str:
    """Trim characters that are not letters or digits from both ends (dbrain's token rule)."""
    start, end = 0, len(token)
    while start < end and not token[start].isalnum():
        start += 1
    while end > start and not token[end - 1].isalnum():
        end -= 1
    return token[start:end]


def _possessive(token: str) -> str:
    """``sqlite's`` -> ``sqlite``: the tokenizer splits at the apostrophe anyway."""
    for suffix in ("'s", "\u2019s"):
        if token.endswith(suffix) and len(token) > len(suffix):
            return token[: -len(suffix)]
    return token


def extract_terms(question: str) -> tuple[list[str], list[str]]:
    """Question -> (search terms, excluded terms): lowercased, trimmed, deduplicated, no stop
    words and no current-state words ("latest"); either list may be empty."""
    terms, excluded, _ = _read(question)
    return terms, excluded


def _read(question: str) -> tuple[list[str], list[str], list[str]]:
    """(search terms, excluded terms, every content word including current-state ones)."""
    tokens = [_possessive(trim_token(t).lower()) for t in question.split()]
    tokens = [t for t in tokens if t]
    terms: list[str] = []
    excluded: list[str] = []
    content: list[str] = []
    skip_next = False
    for token in tokens:
        if skip_next:
            skip_next = False
            if token not in STOP_WORDS:
                excluded.append(token)
            continue
        if token in NEGATIONS:
            skip_next = True
            continue
        if token in STOP_WORDS or token in content:
            continue
        content.append(token)
        if token not in CURRENT_STATE_WORDS:
            terms.append(token)
    return terms, excluded, content


def quote_term(term: str) -> str:
    """One FTS5 prefix term: ``"tok""en"*`` (double quotes doubled, as dbrain escapes them)."""
    return '"' + term.replace('"', '""') + '"*'


def build_match(terms: list[str] | tuple[str, ...], operator: str = "AND") -> str:
    """Join quoted prefix terms with AND or OR; no terms gives ``""`` like dbrain."""
    if not terms:
        return '""'
    return f" {operator} ".join(quote_term(t) for t in terms)


def raw_terms(raw_query: str) -> list[str]:
    """Words of a raw FTS5 query worth highlighting: no operators, column names or NEAR counts."""
    words: list[str] = []
    for match in re.finditer(r"(\w+)(\s*:)?", raw_query):
        word = match.group(1).lower()
        if match.group(2) or word in RAW_OPERATORS or word.isdigit() or word in words:
            continue
        words.append(word)
    return words[:MAX_TERMS]


def plan_query(question: str, syntax: str = "simple") -> QueryPlan:
    """Build the strict, relaxed (or raw) MATCH strings for a question.

    Raises ResearchError(400) when a simple question has no letters or digits at all (only
    punctuation or emoji) or a raw query is empty. A question of common words only ("the and
    of", "what is new") is a plan with no terms: nothing to search, and the judge says so.
    """
    if syntax == "raw":
        if not question.strip():
            raise ResearchError("The raw FTS5 query is empty.", code="empty_query")
        terms = raw_terms(question)
        return QueryPlan(
            text_query=question.strip(),
            fts_query=question.strip(),
            relaxed_query="",
            query_terms=tuple(terms),
            syntax="raw",
            web_terms=tuple(terms),
        )
    terms, excluded, content = _read(question)
    if not terms and not any(ch.isalnum() for ch in question):
        raise ResearchError(
            "Nothing searchable in the question: it has no letters or digits once punctuation "
            "is removed.",
            code="nothing_searchable",
        )
    truncated = max(0, len(terms) - MAX_TERMS)
    terms = terms[:MAX_TERMS]
    common = () if terms else tuple(dict.fromkeys(trim_token(t).lower() for t in question.split()))
    return QueryPlan(
        text_query=" ".join(terms),
        fts_query=build_match(terms, "AND"),
        relaxed_query=build_match(terms, "OR") if len(terms) > 1 else "",
        query_terms=tuple(terms),
        syntax="simple",
        excluded_terms=tuple(excluded),
        truncated_terms=truncated,
        web_terms=tuple(content[:MAX_TERMS]),
        common_words=tuple(w for w in common if w),
    )


def min_relaxed_coverage(terms: tuple[str, ...] | list[str]) -> int:
    """dbrain's ``matchesRelaxedTerms``: 2 of the terms of 3+ characters, or 1 if only one."""
    long_terms = [t for t in terms if len(t) >= 3]
    return 1 if len(long_terms) <= 1 else 2


_SUFFIXES = ("ingly", "edly", "ings", "ing", "ers", "ies", "ied", "est", "ed", "er", "es", "s")


def stem(word: str) -> str:
    """A light suffix stripper, so "running" highlights "runs" the way porter matched it."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=1024)
def term_pattern(term: str) -> re.Pattern[str]:
    """Regex finding a term in text as FTS5 would: word-start prefix of its (stemmed) tokens."""
    parts = re.findall(r"\w+", term.lower())
    if not parts:
        return re.compile(r"(?!x)x")
    parts[-1] = stem(parts[-1])
    body = r"\W+".join(re.escape(p) for p in parts)
    return re.compile(r"(?<!\w)" + body + r"\w*", re.IGNORECASE)


def matched_terms(terms: tuple[str, ...] | list[str], texts: list[str]) -> list[str]:
    """The terms that occur (as prefix matches) in any of the texts."""
    return [t for t in terms if any(term_pattern(t).search(text) for text in texts if text)]
