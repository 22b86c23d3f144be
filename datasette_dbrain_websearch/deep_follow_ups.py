"""Deep research's follow-up queries, derived from what the evidence so far lacks (pure).

A name the best rows give that the question depends on but does not say (the bridge in "the
position held by the woman who played X", ``bridge_entities``), a name the question says that
no row is about yet, and question terms no brain row or read page states (``uncovered``):
``follow_ups`` turns those gaps into the next round's queries, each with why it is asked, and
``says_facet`` keeps only the rows a follow-up found that say what it looked for. Pure
functions, so every decision ``deep`` takes about what to ask next can be tested alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .query_plan import matched_terms

MAX_QUERIES = 3  # follow-ups in one round

# A name: capitalised words, joined by the small words names contain ("Duke of York").
NAME = re.compile(
    r"\b[A-Z][\w'\u2019.\-]*[\w](?:[ \t]+(?:(?:of|de|del|da|di|van|von|der|den|la|le|du|y|the)"
    r"[ \t]+)?[A-Z][\w'\u2019.\-]*[\w])*"
)  # on one line: a title above the text is no part of a name the text opens with
# A lone capitalised word that names a people or language ("American", "Danish", "Bengali"),
# and those the endings miss ("a Dutch oven" is no lead to follow).
DEMONYM = re.compile(r"(?:an|ish|ese|i|ic)$")
DEMONYMS = frozenset("basque czech dutch french greek inuit maori slovak swiss thai welsh".split())
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])|\n+")  # a title's line is one too
# Capitalised words that start sentences or name times, not things a follow-up can look up.
NOT_NAMES = frozenset(
    """a an and as at but by for from he her his how i if in is it its not of on or she so
    that the their then there these they this those to was we were what when where which who
    whom whose why with you january february march april may june july august september
    october november december monday tuesday wednesday thursday friday saturday sunday""".split()
)


@dataclass(frozen=True)
class FollowUp:
    """One follow-up query, and why it is asked (``reason``: ``bridge``, ``named``,
    ``uncovered``; a model's proposal: ``search``, or ``read`` with the URL as the query)."""

    query: str
    why: str
    reason: str
    facet: str  # what it looks for: a name, or the uncovered terms
    proposed_by: str = "runtime"  # or "model" (``strategy=pro``)


@dataclass(frozen=True)
class Facets:
    """What the question needs covered: its terms and the names it depends on."""

    terms: tuple[str, ...]
    names: tuple[str, ...]  # named in the question, or bridges the best rows gave

    def all(self) -> list[str]:
        return [*self.terms, *self.names]


def names_in(text: str) -> list[str]:
    """The names a text gives (capitalised runs of words), each once, in order; a run that
    starts a sentence loses its first word when that word is a common one ("The", "He")."""
    found: list[str] = []
    for match in NAME.finditer(text):
        words = match.group(0).split()
        while words and words[0].lower() in NOT_NAMES:
            words = words[1:]
        name = " ".join(words).strip(".'\u2019-")
        if name and name.lower() not in NOT_NAMES and name not in found and len(name) > 2:
            found.append(name)
    return found


def fold(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _has(text: str, name: str) -> bool:
    """Does the text say the name (as whole words, ignoring case)?"""
    return f" {fold(name)} " in f" {fold(text)} "


def question_names(question: str) -> list[str]:
    """The names the question gives; a lone word opening it is no name ("Aside from ...")."""
    first = question.split(maxsplit=1)[0] if question.split() else ""
    return [n for n in names_in(question) if n != first.strip("\"“'")]


def _prefixes(words: Iterable[str]) -> set[str]:
    return {w[:5] for w in words if len(w) >= 3}


def bridge_entities(
    question: str, rows: Sequence[tuple[str, str]], terms: Sequence[str], most: int = 2
) -> list[str]:
    """Names the best rows give that the question depends on but does not say: each name in a
    sentence of a row's text (``(title, text)``) that shares words with the question, ranked by
    how many of the question's words its sentences share (the bridge in "the director of
    Big Stone Gap", the sentence "directed by Adriana Trigiani"). A row's own title is not one
    (that row is about it already), nor a name the question says."""
    asked = fold(question)
    wanted = _prefixes(terms)
    scores: dict[str, float] = {}
    for rank, (title, text) in enumerate(rows):
        for sentence in SENTENCE.split(text)[:40]:
            shared = wanted & _prefixes(re.findall(r"\w+", sentence.lower()))
            if not shared:
                continue
            for name in names_in(sentence):
                if _has(asked, name) or _has(title, name):
                    continue
                if " " not in name and (
                    sentence.startswith(name) or DEMONYM.search(name) or name.lower() in DEMONYMS
                ):
                    continue  # a lone word opening a sentence, or "American": no name
                if name.isupper():
                    continue  # "COP", "ORDER BY": an abbreviation or code, not a page's subject
                weight = len(shared) + (0.5 if " " in name else 0.0)
                scores[name] = scores.get(name, 0.0) + weight / (1 + rank)
    ranked = sorted(scores, key=lambda n: (-scores[n], n))
    return ranked[:most]


def facets(terms: Sequence[str], names: Sequence[str]) -> Facets:
    """The question's facets: its terms, and the names (its own and the bridges found)."""
    return Facets(tuple(terms), tuple(dict.fromkeys(names)))


def uncovered(wanted: Facets, texts: Sequence[tuple[str, str]]) -> list[str]:
    """The facets no brain row or read page covers (``(title, text)`` of those): a term none
    states, a name no title says (no page is about it: a row that only mentions it, such as
    the one that gave a bridge, does not cover it)."""
    said = matched_terms(list(wanted.terms), [f"{t}\n{x}" for t, x in texts])
    missing = [t for t in wanted.terms if t not in said]
    for name in wanted.names:
        if not any(_has(title, name) for title, _ in texts):
            missing.append(name)
    return missing


def says_facet(follow: FollowUp, texts: Sequence[str]) -> bool:
    """Does a row found by a follow-up say what the follow-up looked for: the name, or one
    of the uncovered or unanswered words? Rows that do not are not added (the lexical or
    semantic lane may bring them for other words)."""
    if follow.reason in ("uncovered", "unanswered", "search"):
        return bool(matched_terms(follow.facet.split(), texts))
    return any(_has(text, follow.facet) for text in texts)


def follow_ups(
    gaps: Sequence[str],
    wanted: Facets,
    bridges: Sequence[str],
    asked: Iterable[str],
    unanswered: Sequence[str] = (),
    most: int = MAX_QUERIES,
) -> list[FollowUp]:
    """The next round's queries, most useful first: bridges the best rows named, then names
    the question gives that no row is about, then the terms no evidence states (with the
    question's first name, so the query stays on its subject). When every word is found but
    no sentence answers yet, ``unanswered`` (what the question asks, in its words) with the
    name it is asked of: the last bridge, else the question's first name. Nothing asked
    before."""
    done = {fold(a) for a in asked}
    found: list[FollowUp] = []

    def add(query: str, why: str, reason: str, facet: str) -> None:
        if fold(query) and fold(query) not in done and len(found) < most:
            done.add(fold(query))
            found.append(FollowUp(query, why, reason, facet))

    for name in bridges:
        if name in gaps:
            add(name, f"the best rows name “{name}”, which the question depends on", "bridge", name)
    names = [n for n in wanted.names if n not in bridges]
    for name in names:
        if name in gaps:
            add(name, f"the question names “{name}”, and no row found is about it", "named", name)
    terms = [t for t in gaps if t in wanted.terms]
    if terms:
        anchor = next(iter(names), "")
        query = " ".join([anchor, *terms]).strip()
        listed = ", ".join(f"“{t}”" for t in terms)
        add(query, f"no brain row or page read says {listed}", "uncovered", " ".join(terms))
    if not found and unanswered:
        anchor = next(iter([*bridges, *names]), "")
        query = " ".join([anchor, *unanswered]).strip()
        about = f" of “{anchor}”" if anchor else ""
        add(
            query,
            f"no sentence found yet says what is asked{about}",
            "unanswered",
            " ".join(unanswered),
        )
    return found
