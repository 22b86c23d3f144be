"""Has deep research answered the question? The answer check (``answer.answerability``) over
the rows its answer would read, through the names the rows gave (pure).

A two-part question ("Where did the author of The Slow Loaf train?") is answered in two hops:
a row says who the author is (the bridge, Ingrid Halvorsen), another what is asked of her. The
second hop's sentence names her, not the book, so the check reads it with what the first hop
established (``given``: the question's words the rows naming her hold, "author", "Slow Loaf")
and asks that sentence itself to say what is asked ("bakeries", not only where she lives).
The loop stops ``answered`` on this check, its confidence stands on it, and the answer leads
with its sentence: one account of the run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .answer.answerability import Answerability, Claim, Question, Similarity, assess
from .answer.extractive import checked_claims
from .answer.text import stems
from .deep_follow_ups import bridge_entities, facets, fold, uncovered
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


def answer_check(
    loop: Loop, question: Question, similarity: Similarity | None, most: int
) -> Answerability:
    """Does a sentence of the first ``most`` rows the answer reads answer the question,
    directly or through a bridge the rows gave (module docstring)?"""
    passages = loop.first.passages()
    texts = [p for row in answer_rows(loop)[:most] for k in row.keys if (p := passages.get(k))]
    claims = checked_claims(loop.terms, texts)
    found = assess(question, claims, similarity)
    if found.answered:
        return found
    asked = {fold(n) for n, _ in question.names}
    best = loop.best_rows(passages)
    bridges = dict.fromkeys([*loop.names, *bridge_entities(question.text, best, loop.terms)])
    for bridge in bridges:
        if fold(bridge) in asked:
            continue
        answered = _through(question, claims, stems(bridge), similarity)
        if answered is not None:
            return answered
    return found


def _through(
    question: Question,
    claims: Sequence[Claim],
    bridge: frozenset[str],
    similarity: Similarity | None,
) -> Answerability | None:
    """The check through one bridge: what the sentences naming it beside the question's own
    words establish, then the sentences about it, or None when none answers."""
    if not bridge:
        return None
    focus = frozenset(question.focus)
    first_hop = [c for c in claims if bridge <= stems(c.sentence) and not _titled(c, bridge)]
    given = frozenset().union(*((stems(c.sentence) | stems(c.title)) & focus for c in first_hop))
    if not given:
        return None
    second_hop = [
        c
        for c in claims
        if _titled(c, bridge) or bridge <= stems(" ".join([c.sentence, *c.neighbours]))
    ]
    found = assess(question, second_hop, similarity, given)
    return found if found.answered else None


def _titled(claim: Claim, bridge: frozenset[str]) -> bool:
    return bool(bridge) and bridge <= stems(claim.title)


def round_gaps(loop: Loop, found: Answerability) -> list[str]:
    """What the rows still lack, for a round's record: nothing once a sentence answers (no
    "still missing" beside an answer), else the question's facets no row covers."""
    if found.answered:
        return []
    return uncovered(facets(loop.terms, loop.names), loop.evidence_texts(loop.first.passages()))
