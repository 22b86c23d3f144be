"""Deep research (``depth=deep``): a bounded loop of follow-up rounds over one question.

Round 1 is the quick run (``pipeline.gather``). Each further round asks follow-up queries
derived deterministically from what the evidence so far lacks: a name the best rows give that
the question depends on but does not say (the bridge in "the position held by the woman who
played X"), a name the question says that no row is about yet, and question terms no brain row
or read page states (what the answer could not support). Each follow-up is a run of its own:
the brain, then the web where the mode and permission allow, its top new pages read through
the guarded reader. Its new rows join the run with their round recorded, and the gaps are
computed again. The loop stops for a named reason (``answered``, ``no_progress``, ``budget``,
``time``); one answer is then written over everything, citing a web row only where its page
was read (or, where reading failed, marked as resting on the provider's snippet).

Every provider call and page read counts against ``deep``'s budgets, checked before the call
with the worst case (every provider of the fallback order); the providers' own caps in the
ledger apply as well. Decisions are pure functions (``facets``, ``bridge_entities``,
``follow_ups``, ``stop_reason``, ``confidence``); ``run_deep`` does the I/O.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .answer import AnswerAccess, Passage
from .answer.model import ModelFailure, ask_model, resolve_model
from .config import DeepSettings, Settings
from .deep_pro import (
    MAX_REFUSALS,
    READ,
    REFUSALS,
    REPEATED,
    SEARCH,
    STEP_SYSTEM,
    InvalidStep,
    Known,
    Step,
    parse_step,
    proposal,
    refusal,
    step_prompt,
)
from .display import plural
from .errors import ResearchError
from .options import PRO, QUICK, ResearchRequest
from .pack import Pack
from .pack_json import ConfidenceJSON, ResearchJSON, ResearchRoundJSON, Signal
from .pack_rows import LocalRow, Row, WebRow
from .pipeline import Gathered, Progress, RunContext, WebAccess, answer_gathered, gather
from .query_plan import matched_terms
from .web import BUDGET_EXHAUSTED, provider_order

ANSWERED, NO_PROGRESS, BUDGET, TIME = "answered", "no_progress", "budget", "time"
# A row of either list of a pack, kept to its own kind.
_R = TypeVar("_R", LocalRow, WebRow)
DEEP_BUDGET = "deep_budget"  # round 1's web skipped: one search could spend more than it allows
STOP_MESSAGES = {
    ANSWERED: "every part of the question is covered by your brain's rows or pages read",
    NO_PROGRESS: "the last round found nothing new, or nothing was left to ask",
    BUDGET: "its budget of rounds, web searches, page reads or provider spending ran out",
    TIME: "its time ran out",
}
MAX_QUERIES = 3  # follow-ups in one round
FOLLOW_UP_ROWS = 3  # new rows of each list one follow-up may add
TOP_ROWS = 5  # round 1's best rows, which bridge names are read from
KEPT_FIRST = 2  # round 1's best rows stay ahead of what follow-ups add
MIN_ROUND_S = 1.0  # less time than this left: no round starts

# The deep loop's clock (a test replaces it to spend a run's time without waiting).
clock: Callable[[], float] = time.monotonic

# A name: capitalised words, joined by the small words names contain ("Duke of York").
NAME = re.compile(
    r"\b[A-Z][\w'\u2019.\-]*[\w](?:[ \t]+(?:(?:of|de|del|da|di|van|von|der|den|la|le|du|y|the)"
    r"[ \t]+)?[A-Z][\w'\u2019.\-]*[\w])*"
)  # on one line: a title above the text is no part of a name the text opens with
# A lone capitalised word that names a people or language ("American", "Danish", "Bengali"),
# and those the endings miss ("a Dutch oven" is no lead to follow).
DEMONYM = re.compile(r"(?:an|ish|ese|i|ic)$")
DEMONYMS = frozenset("basque czech dutch french greek inuit maori slovak swiss thai welsh".split())
PARENTHESIS = re.compile(r"\s*\([^)]*\)\s*$")
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


@dataclass
class Spent:
    """What the run has used of its ``deep`` budgets."""

    rounds: int = 0
    web_searches: int = 0
    reads: int = 0
    over_money: bool = False  # a provider reported its ledger cap reached

    def as_dict(self) -> dict[str, int]:
        return {"rounds": self.rounds, "web_searches": self.web_searches, "reads": self.reads}


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


def _fold(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def _has(text: str, name: str) -> bool:
    """Does the text say the name (as whole words, ignoring case)?"""
    return f" {_fold(name)} " in f" {_fold(text)} "


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
    asked = _fold(question)
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
    of the uncovered terms? Rows that do not are not added (the lexical or semantic lane may
    bring them for other words)."""
    if follow.reason in ("uncovered", "search"):
        return bool(matched_terms(follow.facet.split(), texts))
    return any(_has(text, follow.facet) for text in texts)


def follow_ups(
    gaps: Sequence[str],
    wanted: Facets,
    bridges: Sequence[str],
    asked: Iterable[str],
    most: int = MAX_QUERIES,
) -> list[FollowUp]:
    """The next round's queries, most useful first: bridges the best rows named, then names
    the question gives that no row is about, then the terms no evidence states (with the
    question's first name, so the query stays on its subject). Nothing asked before."""
    done = {_fold(a) for a in asked}
    found: list[FollowUp] = []

    def add(query: str, why: str, reason: str, facet: str) -> None:
        if _fold(query) and _fold(query) not in done and len(found) < most:
            done.add(_fold(query))
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
    return found


def stop_reason(
    gaps: Sequence[str],
    queries: Sequence[FollowUp],
    spent: Spent,
    budget: DeepSettings,
    seconds_left: float,
) -> str | None:
    """Why the loop stops before the next round, or None to go on (checked in this order:
    answered, out of rounds or money, out of time, nothing left to ask)."""
    if not gaps:
        return ANSWERED
    if spent.rounds >= budget.rounds or spent.over_money:
        return BUDGET
    if seconds_left < MIN_ROUND_S:
        return TIME
    if not queries:
        return NO_PROGRESS
    return None


def confidence(
    covered: int, facet_count: int, cited_web: Sequence[WebRow], conflicts: Mapping[str, Any]
) -> ConfidenceJSON:
    """How far to trust the answer: how much of the question the evidence covers (most of the
    weight), how much of the web it cites was read rather than a snippet, and whether the
    cited sources agree (unknown when they were not compared)."""
    coverage = covered / facet_count if facet_count else 1.0
    read_depth = (
        sum(1 for r in cited_web if r.depth == "page") / len(cited_web) if cited_web else 1.0
    )
    if conflicts.get("status") == "assessed":
        agreement = max(0.0, 1.0 - 0.25 * len(conflicts.get("items") or []))
    else:
        agreement = 0.75
    score = round(0.6 * coverage + 0.2 * read_depth + 0.2 * agreement, 2)
    level = "high" if score >= 0.8 else "medium" if score >= 0.5 else "low"
    return {
        "score": score,
        "level": level,
        "coverage": round(coverage, 2),
        "read_depth": round(read_depth, 2),
        "agreement": round(agreement, 2),
    }


def bounded(settings: Settings, seconds_left: float) -> Settings:
    """A round's settings: its web stage and brain search end within the loop's time left."""
    left_ms = max(50, int(seconds_left * 1000))
    web = replace(settings.web, timeout=max(0.5, min(settings.web.timeout, seconds_left)))
    return replace(settings, web=web, time_limit_ms=min(settings.time_limit_ms, left_ms))


def web_cost(options: ResearchRequest, settings: Settings, web: WebAccess) -> int:
    """The most provider calls one search may make: every provider of its order (a fallback
    calls the next when one fails)."""
    names, _ = provider_order(options.web.providers, settings.web, web.providers)
    return max(1, len(names))


def round_reads(budget: DeepSettings, spent: Spent, rounds_left: int, queries: int) -> int:
    """Pages one search of this round may read: an even share of what is left."""
    left = max(0, budget.reads - spent.reads)
    return min(left, math.ceil(left / max(1, rounds_left) / max(1, queries)))


@dataclass
class Loop:
    """One deep run's state: the first round's gathering, into which later rounds merge."""

    first: Gathered
    terms: tuple[str, ...]
    names: list[str]
    asked: list[str]
    spent: Spent = field(default_factory=Spent)
    rounds: list[ResearchRoundJSON] = field(default_factory=list)
    added_order: list[str] = field(default_factory=list)
    proposals: list[dict[str, Any]] = field(default_factory=list)  # a model's steps (pro)
    model_directed: bool = False  # a model proposed at least one step (``strategy=pro``)

    @property
    def pack(self) -> Pack:
        return self.first.pack

    def rows(self) -> list[Row]:
        """The brain's rows and the pages read: what covers a facet."""
        return [*self.pack.evidence, *(r for r in self.pack.web_rows if r.depth == "page")]

    def evidence_texts(self, passages: Mapping[str, Passage]) -> list[tuple[str, str]]:
        """(title, text) of the brain's rows and the pages read, each whole."""
        return [_text(row, passages) for row in self.rows()]

    def best_rows(self, passages: Mapping[str, Passage]) -> list[tuple[str, str]]:
        """The rows bridges are read from: round 1's best (the question's own hop; a name a
        follow-up's page gives is a hop further than a two-part question goes)."""
        added = set(self.added_order)
        first = [r for r in self.rows() if r.source_key not in added][:TOP_ROWS]
        return [_text(row, passages) for row in first]

    def count(self, gathered: Gathered) -> None:
        """A round's provider calls (not the cache's answers, nor calls a cap refused) and
        page reads, against the budgets; a refusal by a provider's cap ends the spending."""
        queries = gathered.pack.web_queries
        self.spent.web_searches += sum(
            1 for q in queries if q.get("error") != BUDGET_EXHAUSTED and not q.get("cached")
        )
        self.spent.reads += len(gathered.read_urls)
        if any(q.get("error") == BUDGET_EXHAUSTED for q in queries):
            self.spent.over_money = True

    def merge(self, sub: Gathered, round_no: int, follow: FollowUp) -> list[str]:
        """A follow-up's new rows that say what it looked for into the run, their round
        recorded; a page now read replaces its snippet row. Returns the keys added."""
        pack, new = self.pack, sub.pack
        held = {k for r in pack.evidence for k in r.keys}
        passages = sub.passages()
        added: list[str] = []
        signal: Signal = {
            "name": "deep_round",
            "detail": f"found in round {round_no} by the follow-up “{follow.query}”",
            "weight": 0.0,
        }

        def says(row: Row) -> bool:
            texts = [f"{row.title}\n{p.text}" for k in row.keys if (p := passages.get(k))]
            return says_facet(follow, texts or [f"{row.title}\n{row.excerpt.text}"])

        new_rows = [r for r in new.evidence if not set(r.keys) & held and says(r)]
        local = new_rows[:FOLLOW_UP_ROWS]
        for row in local:
            row.retrieval.signals.append(signal)
            pack.evidence.append(row)
            added.append(row.source_key)
        keys = {k for r in local for k in r.keys}
        self.first.hits += [h for h in sub.hits if h.row.get("source_key") in keys]
        known = {r.source_key: n for n, r in enumerate(pack.web_rows)}
        fresh = [r for r in new.web_rows if r.source_key not in known and says(r)]
        fresh = sorted(fresh, key=lambda r: r.depth != "page")[:FOLLOW_UP_ROWS]
        for page in new.web_rows:
            at = known.get(page.source_key)
            upgrade = at is not None and pack.web_rows[at].depth != "page"
            if upgrade and page.depth == "page" and says(page):
                page.retrieval.signals.append(signal)
                pack.web_rows[known[page.source_key]] = page
                self.first.web_passages[page.source_key] = sub.web_passages[page.source_key]
                added.append(page.source_key)
        for page in fresh:
            page.retrieval.signals.append(signal)
            pack.web_rows.append(page)
            self.first.web_passages[page.source_key] = sub.web_passages[page.source_key]
            added.append(page.source_key)
        self.first.read_urls |= sub.read_urls
        self._record_web(new, round_no)
        return added

    def merge_read(self, sub: Gathered, round_no: int, follow: FollowUp) -> list[str]:
        """A page the model asked to read (``strategy=pro``), into the row it was found as:
        the row now rests on the page's text. Returns its key when the read succeeded."""
        self.first.read_urls |= sub.read_urls
        search, read_now = self.pack.web_search, sub.pack.web_search.read
        if read_now:
            search.read = [*(search.read or []), *read_now]
        page = next((r for r in sub.pack.web_rows if r.depth == "page"), None)
        rows = self.pack.web_rows
        at = next(
            (n for n, r in enumerate(rows) if page and r.canonical_url == page.canonical_url),
            None,
        )
        if page is None or at is None:
            return []
        key = rows[at].source_key
        read = replace(rows[at], depth="page", excerpt=page.excerpt, text=page.text)
        read.retrieval.signals.append(
            {
                "name": "deep_round",
                "detail": f"read in round {round_no} at the model's proposal ({follow.why})",
                "weight": 0.0,
            }
        )
        rows[at] = read
        self.first.web_passages[key] = replace(sub.web_passages[page.source_key], key=key)
        return [key]

    def _record_web(self, new: Pack, round_no: int) -> None:
        """The follow-up's provider calls, pages read and warnings, into the run's."""
        pack = self.pack
        search, sub = pack.web_search, new.web_search
        pack.web_queries += [{**q, "round": round_no} for q in new.web_queries]
        if sub.ran:
            search.ran = True
            search.skipped_reason = ""
            search.providers = list(dict.fromkeys([*search.providers, *sub.providers]))
            search.returned = [*(search.returned or []), *(sub.returned or [])]
        if sub.read:
            search.read = [*(search.read or []), *sub.read]
        pack.merge_decisions += new.merge_decisions
        seen = {(w.get("code"), w.get("message")) for w in pack.warnings}
        pack.warnings += [w for w in new.warnings if (w.get("code"), w.get("message")) not in seen]

    def reorder(self) -> None:
        """The pack's reading order: round 1's best rows first, then what follow-ups added,
        then round 1's others (a follow-up's find is not left below round 1's weakest)."""
        added = set(self.added_order)
        _added_after_the_best(self.pack.evidence, added)
        _added_after_the_best(self.pack.web_rows, added)


def follow_up_options(
    options: ResearchRequest, query: str, reads: int, web_allowed: bool
) -> ResearchRequest:
    """A follow-up's request: the question's filters and web choices, the follow-up's words,
    no answer, its share of the reads, and the web only while the budget allows."""
    request = replace(options.web, read=reads, mode=options.web.mode if web_allowed else "never")
    return replace(
        options, question=query, answer=False, expand=(), syntax="simple", depth=QUICK, web=request
    )


Search = Callable[..., Awaitable[Gathered]]  # one follow-up: options, bounds, pages read


async def run_deep(options: ResearchRequest, run: RunContext) -> Pack:
    """Research the question in rounds (``pipeline.run_pipeline``'s arguments) and return the
    pack with its ``research`` record; the answer, when asked for, is written once at the end
    over every round's rows."""
    settings, answering = run.settings, run.answering
    emit = run.progress or _silent
    budget = settings.deep
    deadline = clock() + budget.time_limit_ms / 1000
    cost = web_cost(options, settings, run.web)

    async def search(
        asked: ResearchRequest, bounds: Settings, read: frozenset[str], since: float | None = None
    ) -> Gathered:
        return await gather(asked, replace(run, settings=bounds, arrived=since), read)

    # Round 1 reads half the pages: the question's own results are the likeliest to answer.
    first_reads = max(math.ceil(budget.reads / 2), options.web.read)
    mode = options.web.mode if cost <= budget.web_searches else "never"
    first_options = replace(
        options, web=replace(options.web, read=min(first_reads, budget.reads), mode=mode)
    )
    await _say_round(emit, 1, [FollowUp(options.question, "the question itself", "question", "")])
    first = await search(
        first_options, bounded(settings, deadline - clock()), frozenset(), run.arrived
    )
    if mode != options.web.mode:  # the budget kept round 1 off the web, not the request
        first.pack.web_search.mode = options.web.mode
        first.pack.web_search.skipped_reason = DEEP_BUDGET
    terms = first.pack.plan.query_terms
    loop = Loop(first, terms, question_names(options.question), [options.question])
    loop.count(first)
    loop.spent.rounds = 1
    passages = first.passages()
    loop.rounds.append(
        {
            "round": 1,
            "queries": [
                {
                    "query": options.question,
                    "why": "the question itself",
                    "reason": "question",
                    "searched_web": first.pack.web_search.ran,
                    "added": len(first.pack.evidence) + len(first.pack.web_rows),
                    "proposed_by": "runtime",
                }
            ],
            "added": [r.source_key for r in rows_of(first.pack)],
            "gaps": uncovered(facets(terms, loop.names), loop.evidence_texts(passages)),
        }
    )
    # A question that names a page (its key or URL, held or read directly) is that page.
    named = any(r.is_exact for r in first.pack.evidence) or any(
        r.direct_url for r in first.pack.web_rows
    )
    reason = ANSWERED if named else None
    rounds_started = time.perf_counter()
    with first.budget.paused():
        if reason is None and options.strategy == PRO:
            reason = await _pro_rounds(loop, options, settings, search, emit, deadline, answering)
        while reason is None:
            bridges = bridge_entities(options.question, loop.best_rows(passages), terms)
            loop.names = list(dict.fromkeys([*loop.names, *bridges]))
            wanted = facets(terms, loop.names)
            gaps = uncovered(wanted, loop.evidence_texts(passages))
            queries = follow_ups(gaps, wanted, bridges, loop.asked)
            reason = stop_reason(gaps, queries, loop.spent, budget, deadline - clock())
            if reason is not None:
                break
            added = await _round(loop, queries, options, settings, search, emit, deadline, cost)
            passages = first.passages()
            loop.rounds[-1]["gaps"] = uncovered(
                facets(terms, loop.names), loop.evidence_texts(passages)
            )
            if not added:
                out_of_time = deadline - clock() < MIN_ROUND_S
                out_of_money = loop.spent.over_money
                reason = TIME if out_of_time else BUDGET if out_of_money else NO_PROGRESS
    loop.reorder()
    pack = first.pack
    pack.timings_ms["deep_rounds"] = round((time.perf_counter() - rounds_started) * 1000, 3)
    if options.answer:
        # A model that directed the rounds writes the answer as claims bound to keys.
        writer = replace(answering, claims=True) if loop.model_directed else answering
        await answer_gathered(first, replace(run, answering=writer), answer_rows(loop))
    pack.research = _research(loop, options, reason, first.passages())
    await emit(
        {
            "stage": "deep",
            "status": "done",
            "stop_reason": reason,
            "confidence": pack.research["confidence"],
            "message": f"Deep research stopped after {plural(loop.spent.rounds, 'round')}: "
            f"{STOP_MESSAGES[reason]}; confidence {pack.research['confidence']['level']} "
            f"({pack.research['confidence']['score']:.2f})",
        }
    )
    first.finish()
    return pack


def _research(
    loop: Loop, options: ResearchRequest, reason: str, passages: Mapping[str, Passage]
) -> ResearchJSON:
    """The pack's ``research``: the rounds, why the loop stopped and how far to trust it (the
    loop's own, over every round: the ``judge`` verdict is round 1's)."""
    pack = loop.pack
    wanted = facets(loop.terms, loop.names)
    gaps = uncovered(wanted, loop.evidence_texts(passages))
    cited = set(pack.answer.citations.get("external", []))
    return {
        "depth": options.depth,
        "strategy": options.strategy,
        "proposals": loop.proposals,
        "rounds": loop.rounds,
        "stop_reason": reason,
        "stop_message": STOP_MESSAGES[reason],
        "confidence": confidence(
            len(wanted.all()) - len(gaps),
            len(wanted.all()),
            [r for r in pack.web_rows if r.source_key in cited],
            pack.answer.conflicts,
        ),
        "spent": loop.spent.as_dict(),
    }


async def _say_round(emit: Progress, round_no: int, queries: Sequence[FollowUp]) -> None:
    """The page's progress line for a round: its queries and why each is asked."""
    said = "; ".join(f"“{q.query}” ({q.why})" for q in queries)
    await emit(
        {
            "stage": "deep",
            "status": "round",
            "round": round_no,
            "queries": [{"query": q.query, "why": q.why} for q in queries],
            "message": f"Deep research, round {round_no}: {said}",
        }
    )


async def _round(
    loop: Loop,
    queries: list[FollowUp],
    options: ResearchRequest,
    settings: Settings,
    search: Search,
    emit: Progress,
    deadline: float,
    cost: int,
) -> list[str]:
    """One follow-up round: each query researched in turn (the brain, then the web while the
    budget allows), its new rows merged. Returns the keys the round added."""
    spent, deep = loop.spent, settings.deep
    spent.rounds += 1
    round_no = spent.rounds
    await _say_round(emit, round_no, queries)
    record: ResearchRoundJSON = {"round": round_no, "queries": [], "added": [], "gaps": []}
    loop.rounds.append(record)
    for n, follow in enumerate(queries):
        left = deadline - clock()
        if left < MIN_ROUND_S:
            break
        reading = follow.reason == "read"  # a model's read: the page itself, no provider
        web_allowed = reading or (
            not spent.over_money and spent.web_searches + cost <= deep.web_searches
        )
        reads = (
            1 if reading else round_reads(deep, spent, deep.rounds - round_no + 1, len(queries) - n)
        )
        loop.asked.append(follow.query)
        try:
            sub = await search(
                follow_up_options(options, follow.query, reads, web_allowed),
                bounded(settings, left),
                frozenset(loop.first.read_urls),
            )
        except ResearchError as exc:  # a busy brain or a spent time limit: the run goes on
            loop.pack.warnings.append(
                {
                    "code": "deep_follow_up_failed",
                    "message": f"The follow-up “{follow.query}” could not be researched: "
                    f"{exc.message}",
                }
            )
            record["queries"].append(_asked(follow, False, 0))
            continue
        loop.count(sub)
        added = (loop.merge_read if reading else loop.merge)(sub, round_no, follow)
        loop.added_order += added
        record["added"] += added
        record["queries"].append(_asked(follow, sub.pack.web_search.ran, len(added)))
        await emit(
            {
                "stage": "deep",
                "status": "query",
                "round": round_no,
                "query": follow.query,
                "added": len(added),
                "message": f"“{follow.query}”: {plural(len(added), 'new row')}",
            }
        )
    return record["added"]


def _asked(follow: FollowUp, searched_web: bool, added: int) -> dict[str, Any]:
    return {
        "query": follow.query,
        "why": follow.why,
        "reason": follow.reason,
        "searched_web": searched_web,
        "added": added,
        "proposed_by": follow.proposed_by,
    }


def _text(row: Row, passages: Mapping[str, Passage]) -> tuple[str, str]:
    """A row's title and whole text (an item's linked page's too)."""
    texts = [p.text for key in row.keys if (p := passages.get(key)) is not None]
    return row.title, "\n".join(texts) or row.excerpt.text


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
    local = [r for r in loop.pack.evidence if r.source_key not in added]
    pages = [r for r in rows if isinstance(r, WebRow) and r.source_key not in added]
    later = [r for key in loop.added_order for r in rows if r.source_key == key]
    ordered = [*hops, *local[:KEPT_FIRST], *pages, *later, *local[KEPT_FIRST:]]
    return list({id(r): r for r in ordered}.values())


def _about(rows: Sequence[Row], name: str) -> Row | None:
    """The row about a name: titled with it ("Big Stone Gap (film)" is about "Big Stone
    Gap")."""
    return next((r for r in rows if _fold(PARENTHESIS.sub("", r.title)) == _fold(name)), None)


async def _silent(event: dict[str, Any]) -> None:
    """Nobody is watching."""


FALLBACK = "deep_pro_fallback"


async def _pro_rounds(
    loop: Loop,
    options: ResearchRequest,
    settings: Settings,
    search: Search,
    emit: Progress,
    deadline: float,
    answering: AnswerAccess | None,
) -> str | None:
    """``strategy=pro``: the answer's model proposes each round (``deep_pro``), the runtime
    checks and runs it. Returns why the loop stopped, or None to hand over to the
    deterministic loop (the model may not be asked, failed, wrote something that is not a
    step, or had its proposals refused twice in a row), which a warning then says."""
    budget, spent = settings.deep, loop.spent
    if answering is None or not answering.model_permitted or answering.cross_site:
        why = (
            "this request came from another site, so no model was asked on your account"
            if answering is not None and answering.cross_site
            else "your account may not send evidence to a language model (dbrain-llm-answer)"
        )
        _fall_back(loop, why)
        return None
    try:
        resolved = await resolve_model(
            settings.answer.model, settings.answer.api_key, answering.datasette, answering.actor
        )
    except ModelFailure as exc:
        _fall_back(loop, str(exc))
        return None
    policy = options.web.domain_policy(settings.web)
    refused, refusals = "", 0
    while True:
        if spent.rounds >= budget.rounds or spent.over_money:
            return BUDGET
        left = deadline - clock()
        if left < MIN_ROUND_S:
            return TIME
        passages = loop.first.passages()
        prompt = step_prompt(
            options.question,
            [(r.source_key, *_text(r, passages)) for r in rows_of(loop.pack)],
            _known(loop),
            loop.asked,
            {
                "rounds": budget.rounds - spent.rounds,
                "web_searches": max(0, budget.web_searches - spent.web_searches),
                "reads": max(0, budget.reads - spent.reads),
            },
            refused,
        )
        turn = len(loop.proposals) + 1
        try:
            reply = await ask_model(
                resolved.model,
                STEP_SYSTEM,
                prompt,
                resolved.key,
                min(settings.answer.timeout, left),
                _quiet,
            )
            step = parse_step(reply)
        except (ModelFailure, InvalidStep) as exc:
            loop.proposals.append(proposal(turn, None, "invalid", str(exc)))
            _fall_back(loop, f"its step {turn} was not usable ({exc})")
            return None
        loop.model_directed = True
        if step.action not in (SEARCH, READ):
            loop.proposals.append(proposal(turn, step, "stop"))
            await _say_proposal(emit, step, "stop")
            gaps = uncovered(facets(loop.terms, loop.names), loop.evidence_texts(passages))
            return NO_PROGRESS if gaps else ANSWERED
        why_not = refusal(
            step,
            loop.asked,
            _known(loop),
            budget.reads - spent.reads,
            policy,
            settings.web.fetch_allow_networks,
        )
        if why_not == REPEATED:  # the model is going round in circles
            loop.proposals.append(proposal(turn, step, "refused", why_not))
            await _say_proposal(emit, step, "refused", REFUSALS[why_not])
            return NO_PROGRESS
        if why_not:
            loop.proposals.append(proposal(turn, step, "refused", why_not))
            await _say_proposal(emit, step, "refused", REFUSALS[why_not])
            refused, refusals = REFUSALS[why_not], refusals + 1
            if refusals >= MAX_REFUSALS:
                _fall_back(loop, f"{plural(refusals, 'proposal')} in a row were refused")
                return None
            continue
        refused, refusals = "", 0
        loop.proposals.append(proposal(turn, step, "accepted"))
        follow = _follow(step)
        await _round(
            loop,
            [follow],
            options,
            settings,
            search,
            emit,
            deadline,
            web_cost(options, settings, loop.first.web),
        )
        loop.rounds[-1]["gaps"] = uncovered(
            facets(loop.terms, loop.names), loop.evidence_texts(loop.first.passages())
        )


def _follow(step: Step) -> FollowUp:
    """A model's accepted step as a follow-up: a search for its query, or a read of its URL."""
    if step.action == READ:
        return FollowUp(
            step.url, step.why or "the model asked to read it", "read", step.url, "model"
        )
    return FollowUp(step.query, step.why or "the model asked it", "search", step.query, "model")


def _known(loop: Loop) -> list[Known]:
    """The run's web results as the model may ask to read them."""
    read = loop.first.read_urls
    return [
        Known(r.source_key, r.canonical_url, r.title, r.depth == "page" or r.canonical_url in read)
        for r in loop.pack.web_rows
    ]


def rows_of(pack: Pack) -> list[Row]:
    """A pack's rows, the brain's then the web's."""
    return [*pack.evidence, *pack.web_rows]


def _added_after_the_best(rows: list[_R], added: set[str]) -> None:
    """Round 1's best ``KEPT_FIRST`` rows, then the rows follow-ups ``added``, then the rest."""
    first: list[_R] = [r for r in rows if r.source_key not in added]
    later: list[_R] = [r for r in rows if r.source_key in added]
    rows[:] = first[:KEPT_FIRST] + later + first[KEPT_FIRST:]


def _fall_back(loop: Loop, why: str) -> None:
    """Hand the rounds to the deterministic loop, saying why."""
    loop.pack.warnings.append(
        {
            "code": FALLBACK,
            "message": f"Deep research was to be directed by a model, but {why}; the "
            "deterministic follow-up rounds went on instead.",
        }
    )


async def _say_proposal(emit: Progress, step: Step, status: str, detail: str = "") -> None:
    """The page's progress line for a model's proposal that did not become a round."""
    what = {"stop": "stop", "refused": f"{step.action} refused: {detail}"}[status]
    await emit(
        {
            "stage": "deep",
            "status": "proposal",
            "proposal": {**step.as_dict(), "status": status},
            "message": f"The model proposed to {what}",
        }
    )


async def _quiet(chunk: str) -> None:
    """A step's reply is not streamed to the page: only the step it proposes is shown."""
