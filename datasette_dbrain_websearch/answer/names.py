"""The names a text gives, and the names a question depends on but does not say (pure).

A name is a run of capitalised words joined by the small words names contain ("Duke of York");
a *bridge* is a name the best rows give in a sentence that shares the question's words ("the
director of Big Stone Gap": "directed by Adriana Trigiani"), through which a two-part question
is answered. The answer check reads bridges (``answerability``), and deep research follows
them (``deep_follow_ups``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

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


@lru_cache(maxsize=4096)
def _names_of(sentence: str) -> tuple[str, ...]:
    """``names_in`` remembered: a run's checks read the same best rows more than once."""
    return tuple(names_in(sentence))


def fold(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def says_name(text: str, name: str) -> bool:
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
    asked = f" {fold(question)} "
    wanted = _prefixes(terms)
    scores: dict[str, float] = {}
    for rank, (title, text) in enumerate(rows):
        titled = f" {fold(title)} "
        for sentence in SENTENCE.split(text)[:40]:
            shared = wanted & _prefixes(re.findall(r"\w+", sentence.lower()))
            if not shared:
                continue
            for name in _names_of(sentence):
                folded = f" {fold(name)} "
                if folded in asked or folded in titled:
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
