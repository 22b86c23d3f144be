"""Has deep research answered the question? The answer check (``answer.answerability``) over
the rows its answer would read, in the order it reads them (``answer_rows``), through the
names the loop followed and those its best rows give (pure).

A two-part question ("Where did the author of The Slow Loaf train?") is answered in two hops:
a row says who the author is (the bridge, Ingrid Halvorsen), another what is asked of her
(``answerability.assess`` with ``bridges``). The loop stops ``answered`` on this check, its
confidence stands on it, and the answer leads with its sentence: one account of the run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from .answer.answerability import Answerability, Question, Similarity, bridges_in
from .answer.extractive import checked_claims
from .answer.names import fold
from .answer.stage import answer_check
from .deep_follow_ups import facets, uncovered
from .deep_state import KEPT_FIRST, Loop
from .pack_rows import Row, WebRow

PARENTHESIS = re.compile(r"\s*\([^)]*\)\s*$")


def answer_rows(loop: Loop) -> list[Row]:
    """The rows the answer reads, in order, each hop's best in turn: for each name the question
    depends on (its own, then the bridges followed) the row about it, then round 1's best
    row, the pages read and what follow-ups added, then the rest. Read before citing: a web
    row whose page was neither read nor tried is left out."""
    read = loop.first.read_urls
    rows: list[Row] = [
        *loop.pack.evidence,
        *(r for r in loop.pack.web_rows if r.depth == "page" or r.canonical_url in read),
    ]
    added = set(loop.added_order)
    hops = [row for name in loop.names if (row := _about(rows, name)) is not None]
    brain_rows = [r for r in loop.pack.evidence if r.source_key not in added]
    pages = [r for r in rows if isinstance(r, WebRow) and r.source_key not in added]
    later = [r for key in loop.added_order for r in rows if r.source_key == key]
    ordered = [*hops, *brain_rows[:KEPT_FIRST], *pages, *later, *brain_rows[KEPT_FIRST:]]
    return list({id(r): r for r in ordered}.values())


def _about(rows: Sequence[Row], name: str) -> Row | None:
    """The row about a name: titled with it ("Big Stone Gap (film)" is about "Big Stone
    Gap")."""
    return next((r for r in rows if fold(PARENTHESIS.sub("", r.title)) == fold(name)), None)


def loop_check(
    loop: Loop, question: Question, similarity: Similarity | None, most: int
) -> Answerability:
    """Does a sentence of the first ``most`` rows the answer reads answer the question,
    directly or through a bridge: the names the loop followed and those round 1's best rows
    give (module docstring)?"""
    passages = loop.first.passages()
    texts = [p for row in answer_rows(loop)[:most] for k in row.keys if (p := passages.get(k))]
    asked = {fold(n) for n, _ in question.names}
    followed = [n for n in loop.names if fold(n) not in asked]

    def bridges() -> Iterator[str]:
        found = [*followed, *bridges_in(question, loop.best_rows(passages), loop.terms)]
        yield from dict.fromkeys(found)

    found = answer_check(question, loop.terms, texts, similarity, bridges=bridges())
    return found.completed(checked_claims(loop.terms, texts))


def complete(found: Answerability) -> bool:
    """Has the run answered every part of the question: a sentence answers it, and the
    answer's sentences state what it asks beside its names (a two-part question: both
    parts), all but one word where they state at least as many ("spent six years at
    bakeries" for "train as a baker": a paraphrase). Stopping on less stops a two-part
    question after its first part, with the wrong name as its answer."""
    if not found.answered:
        return False
    unstated = found.unstated()
    stated = len(found.question.plain) - len(unstated)
    return not unstated or (len(unstated) == 1 and stated >= 1)


def round_gaps(loop: Loop, found: Answerability) -> list[str]:
    """What the rows still lack, for a round's record: nothing once the answer states every
    part of the question (no "still missing" beside an answer), what it leaves unstated when
    a sentence answers, else the question's facets no row covers."""
    if found.answered:
        return found.unstated()
    return uncovered(facets(loop.terms, loop.names), loop.evidence_texts(loop.first.passages()))
