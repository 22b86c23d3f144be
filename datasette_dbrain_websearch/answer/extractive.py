"""The extractive synthesizer: an answer made of the evidence's own sentences, the ones that
answer the question (pure, offline, deterministic).

Query-focused extraction, as summarizers that answer questions do it:

1. Candidates are the claims in the text each row shows (an item's linked page is its own
   passage, cited by the page's key): never titles, headings, questions, link lines, capture
   metadata or fragments; a long sentence is trimmed to the clauses that hold the question.
2. Each is scored by sentence-level BM25 over the candidates (the index's own stemmer, so
   "backflushing" is "backflush"), interpolated with its meaning's closeness to the question
   when a similarity is given (the semantic lane), plus a prior for its row's rank and for the
   brain.
   A row's rank is its place among the rows of its own origin: the reading order puts every
   brain row before the web's, which says nothing of which answers better, so the brain's
   first row and the web's first row weigh alike (the brain keeps its small prior).
3. Picks are greedy, MMR-style: each pick's score less its closeness to what is already picked;
   near-duplicates never; at most three per row; a candidate far below the best stops the answer.

The draft leads with the first pick, the sentence that best answers whatever its origin (a
brain row, a web row, a note of the person's); then the other brain sentences, then the
web's, each side best first. Each cites the row whose text holds it, so the verifier finds
every word of it in the cited row.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..brain_access import Checkpoint, paced, unbounded
from ..stemming import TermMatcher
from .answerability import Claim
from .text import content_words, is_boilerplate, marked_sentences, words
from .verify import strip_citations

MIN_CHARS = 25
MAX_CHARS = 600
LONG_CHARS = 240  # a sentence longer than this is trimmed to the clauses that answer
MIN_WORDS = 5  # words outside URLs: "Good write-up: https://…" is not a claim
MOST_SENTENCES = 5
SAME_AS_TITLE = 0.7  # Jaccard similarity of content words with a row's title
URL = re.compile(r"\bhttps?://\S+|\bwww\.\S+", re.IGNORECASE)
LINK_INTRO = re.compile(r"[^.!?]*:\s*$")  # "Good write-up:" once its link is gone
CLAUSE = re.compile(r"(?<=[;:,\u2014])\s+|\s+(?=\u2014)|\s+(?=(?:but|while|whereas|because)\s)")
MAX_PER_ROW = 3
NEAR_DUPLICATE = 0.6  # Jaccard similarity of content words
K1, B = 1.2, 0.75  # BM25 over sentences (Lucene's defaults)
ROW_PRIOR = 0.8  # a row's rank adds ROW_PRIOR / (1 + rank) to a 0..1 relevance
BRAIN_PRIOR = 0.05
REDUNDANCY = 0.5  # MMR: a pick's score less this times its closeness to earlier picks
# A question term only the sentence's row's title holds counts a quarter in the score (the
# sentence that says the word itself ranks first).
TITLE_SCORE = 0.25
# After the first pick, another sentence of its row that answers the question (``leads``)
# scores this much more and is never cut by ``STOP_BELOW``: a row that answers often says the
# rest of its answer in its next sentence. Other rows' answering sentences get nothing more:
# on SQuAD they lifted right answers from 0.79 to 0.83 but were mostly about something else
# (bench_answer_quality's "cites relevant" fell from 0.63 to 0.51).
ANSWERING = 0.3
STOP_BELOW = 0.6  # a candidate under this share of the first pick's score (priors in) stops
SEMANTIC_WEIGHT = 0.3  # as the ranking's lane interpolation

Similarity = Callable[[Sequence[str]], Sequence[float]]


@dataclass(frozen=True)
class Passage:
    """A row's text as a synthesizer sees it."""

    key: str
    origin: str  # "local" or "external"
    text: str
    title: str = ""
    exact: bool = False  # the question names this row: its leading claims answer it
    rank: int = 0  # the row's place in the evidence (a linked page shares its item's)


@dataclass(frozen=True)
class Candidate:
    """A sentence that may answer, with what it holds of the question."""

    rank: int  # its row's place among the rows of the same origin
    position: int
    key: str
    from_brain: bool
    sentence: str
    counts: dict[str, int]  # question term -> occurrences
    length: int  # word tokens
    words: frozenset[str]  # content-word stems, for near-duplicates
    exact: bool = False
    context: frozenset[str] = frozenset()  # question terms its row's title holds
    item: bool = False  # it stands in a list item of its row


@lru_cache(maxsize=64)
def matcher_for(terms: tuple[str, ...]) -> TermMatcher:
    """The question's terms' matcher, built once for a run's claims, candidates and checks
    (building one is a fifth of a millisecond)."""
    return TermMatcher.for_words(terms)


def trim(sentence: str, matcher: TermMatcher) -> str:
    """A long sentence cut to its clauses that hold the question's terms (the run from the
    first such clause to the last, marked "…" where the sentence goes on)."""
    if len(sentence) <= LONG_CHARS:
        return sentence
    clauses = [c for c in CLAUSE.split(sentence) if c]
    holding = [i for i, c in enumerate(clauses) if any(True for _ in matcher.finditer(c))]
    if not holding:
        return sentence
    first, last = holding[0], holding[-1]
    while last > first and len(" ".join(clauses[first : last + 1])) > LONG_CHARS:
        last -= 1
    text = " ".join(clauses[first : last + 1]).rstrip(",;:\u2014 ")
    if first > 0:
        text = "\u2026 " + text
    if last < len(clauses) - 1:
        text += " \u2026"
    return text


def claims(passage: Passage, terms: tuple[str, ...]) -> tuple[tuple[int, str, bool], ...]:
    """(position, sentence, in a list item) of the passage's sentences that read as claims:
    not its title, a heading, a question, a link or capture metadata; link tails cut off, long
    ones trimmed to the clauses holding ``terms``."""
    return _claims(passage.title, passage.text, terms)


@lru_cache(maxsize=256)
def _claims(title: str, text: str, terms: tuple[str, ...]) -> tuple[tuple[int, str, bool], ...]:
    """``claims``, read once a run (the verdict's check, the answer and the comparison of its
    sources all read them), hence remembered."""
    matcher = matcher_for(terms)
    title_words = frozenset(content_words(title))
    found: list[tuple[int, str, bool]] = []
    for position, (raw, item) in enumerate(marked_sentences(text, headings=False)):
        sentence = strip_citations(raw)
        if URL.search(sentence):  # "Good write-up: https://… Claim." keeps the claim only
            pieces = [p for p in URL.split(sentence) if p.strip() and not LINK_INTRO.fullmatch(p)]
            sentence = " ".join(" ".join(pieces).split())
        if sentence.rstrip(".").endswith("?") or is_boilerplate(sentence):
            continue
        if not MIN_CHARS <= len(sentence) <= MAX_CHARS or len(sentence.split()) < MIN_WORDS:
            continue
        claim = frozenset(content_words(sentence))
        if not claim or (title_words and _similarity(claim, title_words) >= SAME_AS_TITLE):
            continue
        found.append((position, trim(sentence, matcher), item))
    return tuple(found)


def checked_claims(terms: Sequence[str], passages: Sequence[Passage]) -> list[Claim]:
    """The passages' claims as the answer check reads them: each with its row's key and
    title and the claims around it, two before and one after (``answerability``)."""
    found: list[Claim] = []
    for passage in passages:
        said = [sentence for _, sentence, _ in claims(passage, tuple(terms))]
        for n, sentence in enumerate(said):
            neighbours = tuple(said[max(0, n - 2) : n] + said[n + 1 : n + 2])
            found.append(Claim(passage.key, passage.title, sentence, neighbours))
    return found


def candidates(
    terms: Sequence[str],
    passages: Sequence[Passage],
    checkpoint: Checkpoint = unbounded,
    leads: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """Every claim of every passage with its term counts (claims holding none are kept only
    for a row the question names exactly, or when they answer it: ``leads``), ranked by its
    row's place among its origin's rows; a sentence several rows repeat (a post and the page
    it links to) once, from the best-ranked row. ``checkpoint`` runs before each passage."""
    matcher = matcher_for(tuple(terms))
    found: list[Candidate] = []
    seen: set[str] = set()
    ordered = sorted(passages, key=lambda p: p.rank)
    places: dict[tuple[str, int], int] = {}
    rows: Counter[str] = Counter()
    for p in ordered:
        if (p.origin, p.rank) not in places:
            places[p.origin, p.rank] = rows[p.origin]
            rows[p.origin] += 1
    for passage in paced(ordered, checkpoint, every=1):
        context = frozenset(name for _, _, name in matcher.finditer(passage.title))
        for position, sentence, item in claims(passage, tuple(terms)):
            counts = Counter(name for _, _, name in matcher.finditer(sentence))
            same = " ".join(words(sentence))
            if (not counts and not passage.exact and sentence not in leads) or same in seen:
                continue
            seen.add(same)
            found.append(
                Candidate(
                    places[passage.origin, passage.rank],
                    position,
                    passage.key,
                    passage.origin == "local",
                    sentence,
                    dict(counts),
                    len(words(sentence)),
                    frozenset(content_words(sentence)),
                    passage.exact,
                    context,
                    item,
                )
            )
    return found


def idf(pool: Sequence[Candidate], terms: Sequence[str]) -> dict[str, float]:
    """Each term's rarity among the candidates (Lucene's idf, always positive): the word that
    sets the question apart from its context ("backflush" beside "espresso machine") is the
    one few candidates hold."""
    n = len(pool)
    df = Counter(t for c in pool for t in c.counts)
    return {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms if df[t]}


def bm25(pool: Sequence[Candidate], weights: Mapping[str, float]) -> list[float]:
    """Each candidate's BM25 score against the question, the candidates as the collection; a
    term only its row's title holds counts ``TITLE_SCORE`` of once in an average sentence."""
    if not pool:
        return []
    average = sum(c.length for c in pool) / len(pool) or 1.0
    scores = []
    for c in pool:
        norm = K1 * (1 - B + B * c.length / average)
        scores.append(
            sum(weights[t] * f * (K1 + 1) / (f + norm) for t, f in c.counts.items() if t in weights)
            + TITLE_SCORE * sum(weights.get(t, 0.0) for t in c.context - c.counts.keys())
        )
    return scores


def relevance(
    pool: Sequence[Candidate],
    weights: Mapping[str, float],
    similarity: Similarity | None = None,
    semantic_weight: float = SEMANTIC_WEIGHT,
) -> list[float]:
    """0..1 (the best 1): BM25 over the candidates, interpolated with the semantic
    similarity to the question when there is one. A named row's leading claims answer."""
    scores = bm25(pool, weights)
    best = max(scores, default=0.0)
    lexical = [s / best if best else 0.0 for s in scores]
    lexical = [1.0 if c.exact and c.position < 2 else s for c, s in zip(pool, lexical, strict=True)]
    if similarity is None or not pool:
        return lexical
    closeness = [max(0.0, float(v)) for v in similarity([c.sentence for c in pool])]
    return [
        (1 - semantic_weight) * s + semantic_weight * v
        for s, v in zip(lexical, closeness, strict=True)
    ]


def pick(
    pool: Sequence[Candidate],
    scores: Sequence[float],
    most: int,
    checkpoint: Checkpoint = unbounded,
    leads: frozenset[str] | None = None,
    then: str | None = None,
) -> list[Candidate]:
    """Greedy MMR: the best score less its closeness to earlier picks, never a near-duplicate,
    at most ``MAX_PER_ROW`` a row; stops when what is left is far below the first pick.
    ``leads``: the sentences that may come first (those that answer the question), when only
    some may, and after it, from the first pick's row, rank ``ANSWERING`` higher; ``then``:
    the sentence that must come second (a two-part answer's first part). ``checkpoint`` runs
    before each pick (a pass over the pool)."""
    base = [
        s + ROW_PRIOR / (1 + c.rank) + (BRAIN_PRIOR if c.from_brain else 0.0)
        for c, s in zip(pool, scores, strict=True)
    ]
    answering = leads or frozenset()
    lead_row = ""  # the first pick's row
    picked: list[int] = []
    second = then if any(c.sentence == then for c in pool) else None  # in the pool, it comes
    per_row: Counter[str] = Counter()
    overlap = [0.0] * len(pool)
    top = 0.0
    while len(picked) < most:
        checkpoint()
        best: tuple[float, int, int, int] | None = None
        for i, c in enumerate(pool):
            if i in picked or overlap[i] >= NEAR_DUPLICATE or per_row[c.key] >= MAX_PER_ROW:
                continue
            if not picked and leads is not None and c.sentence not in leads:
                continue
            if len(picked) == 1 and second is not None and c.sentence != second:
                continue
            bonus = ANSWERING if lead_row == c.key and c.sentence in answering else 0.0
            rank = (base[i] + bonus - REDUNDANCY * overlap[i], -c.rank, -c.position, -i)
            if best is None or rank > best:
                best = rank
        if best is None:
            break
        i = -best[3]
        kept = pool[i].sentence == then or (
            lead_row == pool[i].key and pool[i].sentence in answering
        )
        if picked and base[i] < STOP_BELOW * top and not kept:
            break
        top = max(top, base[i])
        lead_row = lead_row or pool[i].key
        picked.append(i)
        per_row[pool[i].key] += 1
        chosen = pool[i].words
        overlap = [max(o, _similarity(c.words, chosen)) for o, c in zip(overlap, pool, strict=True)]
    return [pool[i] for i in picked]


def extract(
    terms: Sequence[str],
    passages: Sequence[Passage],
    max_sentences: int,
    similarity: Similarity | None = None,
    checkpoint: Checkpoint = unbounded,
    leads: frozenset[str] | None = None,
    then: str | None = None,
) -> str:
    """The draft answer: one picked sentence per line, each ending with ``[its row's key]``,
    the first pick (the best answer) first, then the brain's, then the web's. Returns ``""``
    when no sentence mentions any term. ``similarity`` scores sentences by meaning too (the
    semantic lane's); ``checkpoint`` (the run's deadline) runs between passages and picks;
    ``leads``: the sentences that answer the question, one of which comes first; ``then``:
    the sentence that comes second (a two-part answer's first part, naming its bridge)."""
    pool = candidates(terms, passages, checkpoint, (leads or frozenset()) | {then or ""})
    weights = idf(pool, terms)
    most = min(MOST_SENTENCES, max_sentences)
    chosen = pick(pool, relevance(pool, weights, similarity), most, checkpoint, leads, then)
    # The first pick leads; then the brain's, then the web's, each side best first.
    chosen[1:] = sorted(chosen[1:], key=lambda c: not c.from_brain)
    return "\n".join(f"{bullet(c, chosen)}{c.sentence} [{c.key}]" for c in chosen)


def bullet(candidate: Candidate, chosen: Sequence[Candidate]) -> str:
    """``"- "`` for a list item picked with another item of the same row's list: the answer
    enumerates them as the row did."""
    siblings = sum(1 for c in chosen if c.item and c.key == candidate.key)
    return "- " if candidate.item and siblings >= 2 else ""


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0
