"""Web rows ranked against the question, before they are cut to the run's ``external_count``.

The providers' own order says little about *this* question: two providers rank by their own
rules, and what they send is cut to the page's limit. So each candidate row is scored from
named signals, every one of them written into the row's ``retrieval.signals`` (its "why"):

- ``external_provider_rank``: the providers' reciprocal ranks (RRF, ``merge.web_score``),
  shared among the providers that answered (rank 1 at every one of them is worth 1): today's
  fused order is the base, and a page several providers agree on keeps its lead;
- ``term_coverage_title`` / ``term_coverage_snippet`` / ``term_coverage_page``: how much of the
  question the title, the provider's snippet and text, and the read page hold, found by the
  plan's ``TermMatcher`` and weighed by ``lexical.coverage`` as local rows are (a prose
  question by the rarity of its words in the brain, a list of keywords by their share);
- ``semantic_cosine``: the semantic lane's cosine between the question and the row's title and
  text, when the lane ran (the verdict reads the same cosine);
- ``ranker_<name>``: what a ranker another plugin registers adds
  (``register_dbrain_websearch_rankers``).

Bounded and cheap: no network, the texts are the provider's (bounded by ``max_chars``) and read
pages (``reading.PAGE_CHARS``), and each term is looked for only until it is found. Equal scores
keep the providers' fused order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .hookspecs import plugin_hooks
from .lexical import coverage
from .merge import RRF_K, MergedResult, rrf_contribution
from .pack_json import RANKER_PREFIX, Signal
from .query_plan import QueryPlan
from .stemming import fold

MEANING_CHARS = 600  # of a row's text embedded for its cosine (its opening says what it is about)
UNIT = rrf_contribution(1)  # a signal worth 1 adds as much as rank 1 at the only provider
SCORE_DIGITS = 6  # scores are compared rounded, so float noise cannot undo a provider's order


@dataclass(frozen=True)
class WebWeights:
    """What each signal's value (0..1) is worth in a web row's score, in ``UNIT``s."""

    provider: float = 1.0
    title: float = 0.5
    snippet: float = 0.5
    page: float = 0.5
    meaning: float = 0.5


@dataclass(frozen=True)
class WebCandidate:
    """What a ranker reads of one web row: its URL, title, the provider's snippet and text, the
    page's own text when it was read, and each provider's rank for it."""

    url: str
    title: str
    snippet: str
    text: str
    page: str
    ranks: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, result: MergedResult, page: str = "") -> WebCandidate:
        hits = result.hits
        return cls(
            url=result.canonical_url,
            title=next((h.result.title for h in hits if h.result.title), ""),
            snippet=next((h.result.snippet for h in hits if h.result.snippet), ""),
            text=max((h.result.text for h in hits), key=len),
            page=page,
            ranks=tuple((h.provider, h.rank) for h in hits),
        )

    @property
    def meaning_text(self) -> str:
        """What the semantic lane compares with the question: the title and the page, or what
        the provider sent of it."""
        body = self.page or "\n".join(t for t in (self.snippet, self.text) if t)
        return f"{self.title}\n{body[:MEANING_CHARS]}"


class WebRanker:
    """A ranker another plugin adds: ``score`` gives each candidate a value from 0 to 1 (cheap
    and offline: it runs inside the request), worth ``weight`` in the row's score and shown as
    the signal ``ranker_<name>``."""

    name: str = ""
    label: str = ""
    weight: float = 0.5

    def score(self, question: str, rows: Sequence[WebCandidate]) -> Sequence[float]:
        raise NotImplementedError


def registered_rankers(datasette: Any) -> tuple[WebRanker, ...]:
    """The rankers other plugins register (``register_dbrain_websearch_rankers``), one per
    name (the last registered wins)."""
    found: dict[str, WebRanker] = {}
    for group in plugin_hooks().register_dbrain_websearch_rankers(datasette=datasette):
        for ranker in group or []:
            if isinstance(ranker, WebRanker) and ranker.name:
                found[ranker.name] = ranker
    return tuple(found.values())


Similarity = Callable[[Sequence[str]], list[float]]


@dataclass
class RowRank:
    """A web row's score and the signals it came from."""

    score: float
    signals: list[Signal]
    cosine: float | None = None


@dataclass
class WebRanking:
    """Ranks one run's web rows: before the cut (title, snippet, meaning) and again once the
    top pages are read (their text too). Remembers each text's cosine, so the second pass
    embeds only the pages read, and each row's ``RowRank`` for its ``web_row``."""

    question: str
    plan: QueryPlan
    term_weights: Mapping[str, float] = field(default_factory=dict)
    similarity: Similarity | None = None
    rankers: Sequence[WebRanker] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    weights: WebWeights = field(default_factory=WebWeights)
    ranks: dict[str, RowRank] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    _cosines: dict[str, float] = field(default_factory=dict)

    def order(
        self, results: list[MergedResult], pages: Mapping[str, str] | None = None
    ) -> list[MergedResult]:
        """``results`` (in the providers' fused order) best first; ``pages``: read pages'
        text by canonical URL."""
        read = pages or {}
        candidates = [WebCandidate.of(r, read.get(r.canonical_url, "")) for r in results]
        ranked = rank_web(
            candidates,
            self.plan,
            self.term_weights,
            self._meaning(candidates),
            self._plugin_scores(candidates),
            self.labels,
            self.weights,
        )
        for result, rank in zip(results, ranked, strict=True):
            self.ranks[result.canonical_url] = rank
        return [results[i] for i in ranked_order(ranked)]

    def _meaning(self, candidates: list[WebCandidate]) -> list[float] | None:
        if self.similarity is None or not candidates:
            return None
        texts = [c.meaning_text for c in candidates]
        new = [t for t in dict.fromkeys(texts) if t not in self._cosines]
        if new:
            self._cosines.update(zip(new, self.similarity(new), strict=True))
        return [self._cosines[t] for t in texts]

    def _plugin_scores(self, candidates: list[WebCandidate]) -> list[tuple[WebRanker, list[float]]]:
        """Each plugin ranker's values, clamped to 0..1; a ranker that fails or answers
        out of shape is left out, with a warning (the run goes on)."""
        scored: list[tuple[WebRanker, list[float]]] = []
        for ranker in self.rankers:
            try:
                values = [_unit(v) for v in ranker.score(self.question, candidates)]
                if len(values) != len(candidates):
                    raise ValueError(f"{len(values)} scores for {len(candidates)} rows")
            except Exception as exc:  # another plugin's code: never fails the run
                if any(w["ranker"] == ranker.name for w in self.warnings):
                    continue  # said once, though both passes ran it
                self.warnings.append(
                    {
                        "code": "web_ranker_failed",
                        "ranker": ranker.name,
                        "message": f"The web ranker {ranker.name} failed "
                        f"({type(exc).__name__}); the web rows are ranked without it.",
                    }
                )
                continue
            scored.append((ranker, values))
        return scored


def _unit(value: Any) -> float:
    number = float(value)
    return min(1.0, max(0.0, number)) if math.isfinite(number) else 0.0


def rank_web(
    candidates: Sequence[WebCandidate],
    plan: QueryPlan,
    term_weights: Mapping[str, float],
    cosines: Sequence[float] | None = None,
    plugin_scores: Sequence[tuple[WebRanker, Sequence[float]]] = (),
    labels: Mapping[str, str] | None = None,
    weights: WebWeights | None = None,
) -> list[RowRank]:
    """Each candidate's score and signals, in the candidates' order (pure).

    Every signal's ``weight`` is what it adds to the score, in ``UNIT``s (a page at rank 1 at
    the only provider scores one): the score stays on the scale of the providers' RRF, so a
    research profile's boosts (``profiles``) mean the same on web rows as on the brain's.
    ``term_weights``: each term's rarity in the brain (``judge.term_weights``); a term it does
    not weigh counts as the rarest. ``cosines``: the semantic lane's, one per candidate, or None
    when the lane did not run."""
    names = [t.name for t in plan.question_terms] or list(plan.query_terms)
    rarest = max(term_weights.values(), default=1.0)
    idf = {name: term_weights.get(name, rarest) for name in names}
    weights = weights or WebWeights()
    labels = labels or {}
    providers = len({p for c in candidates for p, _ in c.ranks}) or 1
    ranked: list[RowRank] = []
    for n, row in enumerate(candidates):
        signals: list[Signal] = [
            _signal(
                "external_provider_rank",
                f"rank {rank} at {labels.get(provider, provider)}; RRF 1/({RRF_K}+{rank})"
                + (f", shared by the {providers} providers that answered" if providers > 1 else ""),
                rrf_contribution(rank) / UNIT / providers,
                weights.provider,
            )
            for provider, rank in row.ranks
        ]
        sent = "\n".join(t for t in (row.snippet, row.text) if t)
        fields = [
            ("term_coverage_title", "title", row.title, weights.title),
            ("term_coverage_snippet", "provider's snippet and text", sent, weights.snippet),
        ]
        if row.page:
            fields.append(("term_coverage_page", "page read", row.page, weights.page))
        for name, where, text, weight in fields:
            held = plan.matcher.held_in(fold(text)) if text else set()
            found = [t for t in names if t in held]
            signals.append(
                _signal(
                    name,
                    f"in the {where}: {len(found)} of the question's {len(names)} terms"
                    + (f" ({', '.join(found)})" if found else ""),
                    coverage(held, names, idf),
                    weight,
                )
            )
        cosine = cosines[n] if cosines is not None else None
        if cosine is not None:
            signals.append(
                _signal(
                    "semantic_cosine",
                    f"cosine {cosine:.3f} between the question and its title and text",
                    max(0.0, cosine),
                    weights.meaning,
                )
            )
        for ranker, values in plugin_scores:
            signals.append(
                _signal(
                    f"{RANKER_PREFIX}{ranker.name}",
                    ranker.label or ranker.name,
                    values[n],
                    ranker.weight,
                )
            )
        score = round(sum(s["weight"] for s in signals), SCORE_DIGITS)
        ranked.append(RowRank(score, signals, cosine))
    return ranked


def _signal(name: str, detail: str, value: float, weight: float) -> Signal:
    """A signal whose value (0..1) is worth ``weight`` units: its detail names both."""
    return {
        "name": name,
        "detail": f"{detail}: {value:.3f} x {weight}",
        "weight": round(value * weight * UNIT, SCORE_DIGITS),
    }


def ranked_order(ranked: Sequence[RowRank]) -> list[int]:
    """The candidates' indexes, best score first; equal scores keep the candidates' order."""
    return sorted(range(len(ranked)), key=lambda i: (-ranked[i].score, i))
