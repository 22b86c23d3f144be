"""Deep research's follow-up queries, derived from what the evidence so far lacks (pure).

A name the best rows give that the question depends on but does not say (the bridge in "the
position held by the woman who played X", ``bridge_entities``), a name the question says that
no row is about yet, and question terms no brain row or read page states (``uncovered``):
``follow_ups`` turns those gaps into the next round's queries, each with why it is asked, and
``says_facet`` keeps only the rows a follow-up found that say what it looked for. Pure
functions, so every decision ``deep`` takes about what to ask next can be tested alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .answer.names import fold, says_name
from .query_plan import matched_terms

MAX_QUERIES = 3  # follow-ups in one round


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
        if not any(says_name(title, name) for title, _ in texts):
            missing.append(name)
    return missing


def says_facet(follow: FollowUp, texts: Sequence[str]) -> bool:
    """Does a row found by a follow-up say what the follow-up looked for: the name, or one
    of the uncovered or unanswered words? Rows that do not are not added (the lexical or
    semantic lane may bring them for other words)."""
    if follow.reason in ("uncovered", "unanswered", "search"):
        return bool(matched_terms(follow.facet.split(), texts))
    return any(says_name(text, follow.facet) for text in texts)


def follow_ups(
    gaps: Sequence[str],
    wanted: Facets,
    bridges: Sequence[str],
    asked: Iterable[str],
    unanswered: Sequence[str] = (),
    anchor: str = "",
    most: int = MAX_QUERIES,
) -> list[FollowUp]:
    """The next round's queries, most useful first: bridges the best rows named, then names
    the question gives that no row is about, then the terms no evidence states (with the
    question's first name, so the query stays on its subject). When every word is found but
    no sentence answers yet, or the answer leaves part of the question unstated,
    ``unanswered`` (what is still asked, in the question's words) with the name it is asked
    of: ``anchor`` (the answer found so far), else the best bridge, else the question's first
    name. Nothing asked before."""
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
        anchor = anchor or next(iter([*bridges, *names]), "")
        query = " ".join([anchor, *unanswered]).strip()
        about = f" of “{anchor}”" if anchor else ""
        add(
            query,
            f"no sentence found yet says what is asked{about}",
            "unanswered",
            " ".join(unanswered),
        )
    return found
