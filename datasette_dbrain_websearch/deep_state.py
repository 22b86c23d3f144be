"""A deep run's state: what it has spent of its budgets, and every round's rows merged into
round 1's pack.

``Loop`` holds round 1's gathering; a follow-up's new rows that say what it looked for join it
with their round recorded (``merge``), a page the model asked to read replaces its snippet row
(``merge_read``), and the provider calls and page reads are counted against ``deep``'s budgets
(``count``). At the end ``reorder`` puts what the follow-ups found after round 1's best rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .answer import Passage
from .deep_follow_ups import FollowUp, says_facet
from .pack import Pack
from .pack_json import ResearchRoundJSON, Signal
from .pack_rows import BrainRow, Row, WebRow
from .pipeline import Gathered
from .web import BUDGET_EXHAUSTED

# A row of either list of a pack, kept to its own kind.
_R = TypeVar("_R", BrainRow, WebRow)
FOLLOW_UP_ROWS = 3  # new rows of each list one follow-up may add
TOP_ROWS = 5  # round 1's best rows, which bridge names are read from
KEPT_FIRST = 2  # round 1's best rows stay ahead of what follow-ups add


@dataclass
class Spent:
    """What the run has used of its ``deep`` budgets."""

    rounds: int = 0
    web_searches: int = 0
    reads: int = 0
    over_money: bool = False  # a provider reported its ledger cap reached

    def as_dict(self) -> dict[str, int]:
        return {"rounds": self.rounds, "web_searches": self.web_searches, "reads": self.reads}


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
        return [row_text(row, passages) for row in self.rows()]

    def best_rows(self, passages: Mapping[str, Passage]) -> list[tuple[str, str]]:
        """The rows bridges are read from: round 1's best (the question's own hop; a name a
        follow-up's page gives is a hop further than a two-part question goes)."""
        added = set(self.added_order)
        first = [r for r in self.rows() if r.source_key not in added][:TOP_ROWS]
        return [row_text(row, passages) for row in first]

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
        brain_rows = new_rows[:FOLLOW_UP_ROWS]
        for row in brain_rows:
            row.retrieval.signals.append(signal)
            pack.evidence.append(row)
            added.append(row.source_key)
        keys = {k for r in brain_rows for k in r.keys}
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


def row_text(row: Row, passages: Mapping[str, Passage]) -> tuple[str, str]:
    """A row's title and whole text (an item's linked page's too)."""
    texts = [p.text for key in row.keys if (p := passages.get(key)) is not None]
    return row.title, "\n".join(texts) or row.excerpt.text


def rows_of(pack: Pack) -> list[Row]:
    """A pack's rows, the brain's then the web's."""
    return [*pack.evidence, *pack.web_rows]


def _added_after_the_best(rows: list[_R], added: set[str]) -> None:
    """Round 1's best ``KEPT_FIRST`` rows, then the rows follow-ups ``added``, then the rest."""
    first: list[_R] = [r for r in rows if r.source_key not in added]
    later: list[_R] = [r for r in rows if r.source_key in added]
    rows[:] = first[:KEPT_FIRST] + later + first[KEPT_FIRST:]
