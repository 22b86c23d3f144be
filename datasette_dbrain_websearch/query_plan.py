"""A question's plan (``QueryPlan``): the FTS5 queries it turns into, the way dbrain writes
them, and the terms each row is matched against (pure functions).

The terms are ``question_terms``' (dbrain's reading, and the wider one ranking searches);
``ranking: dbrain`` keeps dbrain's own term list (``QueryPlan.dbrain_terms``) for its AND and
OR queries.

MATCH strings: the ranking query ORs every search word (``"word"``, or ``"word"*`` where the
word as typed is in no row: ``brain.prefix_words``), so BM25 weighs rare words above common
ones. dbrain's ``buildFTSQueryWithOperator`` (``internal/store/search_helpers.go``) strings,
``"term"*`` prefix matches joined with AND (strict) or OR (relaxed), serve ``ranking: dbrain``.
Quoting every word makes FTS5 operators, column filters and stray quotes plain text, so a
simple-syntax question can never be an FTS5 syntax error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from .errors import ResearchError
from .question_terms import MAX_TERMS, SearchTerm, raw_terms, read_terms, search_terms, trim_token
from .stemming import TermMatcher, forms_of


@dataclass(frozen=True)
class QueryPlan:
    """The queries one question turns into, recorded in the pack's ``query_plan``."""

    text_query: str
    fts_query: str
    relaxed_query: str
    query_terms: tuple[str, ...]  # the terms: dbrain's, but a compound (``g-2``) is one
    syntax: str
    excluded_terms: tuple[str, ...] = ()
    truncated_terms: int = 0
    web_terms: tuple[str, ...] = ()  # query_terms plus the current-state words, in order
    common_words: tuple[str, ...] = ()  # a question of common words only: what it held
    search_terms: tuple[SearchTerm, ...] = ()
    prefixed: frozenset[str] = field(default_factory=frozenset)  # words searched as "word"*
    dropped: tuple[str, ...] = ()  # terms left out of the ranking query (``cost``: narrowed)
    dbrain_terms: tuple[str, ...] = ()  # dbrain's own terms (``g``, ``2``): ``fts_query``'s

    @property
    def searchable(self) -> bool:
        """False when the question held only common words: nothing local to search for."""
        return bool(self.search_terms) or self.syntax == "raw"

    @property
    def question_terms(self) -> tuple[SearchTerm, ...]:
        """The search terms the question asked for (not those Expand added): coverage and
        phrases are about these."""
        return tuple(t for t in self.search_terms if not t.expansion)

    @property
    def expansion_terms(self) -> list[str]:
        return [t.name for t in self.search_terms if t.expansion]

    def expanded(self, words: Sequence[str]) -> QueryPlan:
        """This plan with more words OR-ed into the ranking query only: the question's terms,
        the judge's and the web's stay the question's (relevance feedback that widens)."""
        if self.syntax == "raw" or not words:
            return self
        have = set(self.search_words)
        added = tuple(
            SearchTerm(w, (w,), required=False, expansion=True)
            for w in dict.fromkeys(words)
            if w not in have
        )
        return replace(self, search_terms=self.search_terms + added) if added else self

    @property
    def search_words(self) -> list[str]:
        """Every word the ranking query searches, once each, in order."""
        return list(dict.fromkeys(w for t in self.search_terms for w in t.words))

    @property
    def ranked_words(self) -> list[str]:
        """The words the ranking query ORs: the search words but the dropped terms'."""
        kept = [t for t in self.search_terms if t.name not in self.dropped]
        return list(dict.fromkeys(w for t in kept for w in t.words))

    def match_query(self, prefixed: frozenset[str] | set[str] = frozenset()) -> str:
        """The ranking query: every search word OR-ed (but the dropped terms'), ``"word"*``
        for the prefixed ones."""
        if self.syntax == "raw":
            return self.fts_query
        words = self.ranked_words
        return " OR ".join(quote_term(w) if w in prefixed else quote_word(w) for w in words)

    def all_terms_query(self, prefixed: frozenset[str] | set[str] = frozenset()) -> str:
        """Every search term required (each term's words OR-ed): the rows that hold them all,
        candidates for the coverage signal that BM25's top rows may not include; empty for a
        question of one term."""
        kept = [t for t in self.question_terms if t.name not in self.dropped]
        if self.syntax == "raw" or len(kept) < 2:
            return ""
        groups = [
            " OR ".join(quote_term(w) if w in prefixed else quote_word(w) for w in t.words)
            for t in kept
        ]
        return " AND ".join(f"({g})" for g in groups)

    def searched(self, prefixed: set[str] | frozenset[str]) -> QueryPlan:
        """This plan, recording the words retrieval searched as prefixes."""
        return replace(self, prefixed=frozenset(prefixed))

    def narrowed(self, dropped: Sequence[str]) -> QueryPlan:
        """This plan with the named terms left out of the ranking query (``cost``)."""
        return replace(self, dropped=tuple(dropped))

    @cached_property
    def matcher(self) -> TermMatcher:
        """Finds every searched term in text (dbrain's terms with their searched alternatives,
        and the other search words), each as FTS5 matched it: whole stem, or stem prefix."""
        terms = [(t.name, t.words) for t in self.search_terms]
        named = {name for name, _ in terms}
        terms += [(name, (name,)) for name in self.query_terms if name not in named]
        return TermMatcher(
            (name, [forms_of(w, w in self.prefixed) for w in words]) for name, words in terms
        )

    def found_in(self, texts: list[str]) -> set[str]:
        """The names of the searched terms that occur in any of the texts."""
        return self.matcher.found(texts)

    def matched_in(self, texts: list[str]) -> list[str]:
        """dbrain's terms that occur in any of the texts, in the plan's order."""
        found = self.found_in(texts)
        return [t for t in self.query_terms if t in found]


def quote_word(word: str) -> str:
    """One FTS5 string: ``"tok""en"`` (double quotes doubled, as dbrain escapes them)."""
    return '"' + word.replace('"', '""') + '"'


def quote_term(term: str) -> str:
    """One FTS5 prefix term: ``"tok""en"*``, as dbrain writes its terms."""
    return quote_word(term) + "*"


def build_match(terms: list[str] | tuple[str, ...], operator: str = "AND") -> str:
    """Join quoted prefix terms with AND or OR; no terms gives ``""`` like dbrain."""
    if not terms:
        return '""'
    return f" {operator} ".join(quote_term(t) for t in terms)


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
    dbrain_terms = read_terms(question).terms[:MAX_TERMS]
    terms, excluded, content = read_terms(question, compounds=True)
    if not terms and not any(ch.isalnum() for ch in question):
        raise ResearchError(
            "Nothing searchable in the question: it has no letters or digits once punctuation "
            "is removed.",
            code="nothing_searchable",
        )
    truncated = max(0, len(terms) - MAX_TERMS)
    terms = terms[:MAX_TERMS]
    ranked = search_terms(question, terms)
    if not terms and ranked:  # only words dbrain's chat list drops ("src data"): those count
        ranked = tuple(replace(t, required=True) for t in ranked)
        terms = [t.name for t in ranked]
    dbrain_terms = dbrain_terms or terms
    common = () if terms else tuple(dict.fromkeys(trim_token(t).lower() for t in question.split()))
    return QueryPlan(
        text_query=" ".join(terms),
        fts_query=build_match(dbrain_terms, "AND"),
        relaxed_query=build_match(dbrain_terms, "OR") if len(dbrain_terms) > 1 else "",
        query_terms=tuple(terms),
        dbrain_terms=tuple(dbrain_terms),
        syntax="simple",
        excluded_terms=tuple(excluded),
        truncated_terms=truncated,
        web_terms=tuple(content[:MAX_TERMS]),
        common_words=tuple(w for w in common if w),
        search_terms=ranked,
    )


def matched_terms(terms: Sequence[str], texts: Sequence[str]) -> list[str]:
    """The words that occur in any of the texts as FTS5 matches ``"word"`` (same stem)."""
    found = TermMatcher.for_words(terms).found(texts)
    return [t for t in terms if t in found]
