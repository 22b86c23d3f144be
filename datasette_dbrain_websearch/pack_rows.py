"""The pack's rows, typed: a row of the brain (``BrainRow``, with the page it links to when
that matched too), a page outside it (``WebRow``), why each is in the run (``Retrieval``), and
the one reading order over both (``reading_order``).

``evidence`` builds them; ``pack.Pack`` holds them and writes each with its ``to_json()``, in
the pinned key order of ``research_pack.v1``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from .brain import Facts
from .excerpts import Excerpt
from .pack_json import (
    BRAIN_ORIGIN,
    WEB_ORIGIN,
    EvidenceJSON,
    LinkedSourceJSON,
    RetrievalJSON,
    Signal,
    WebEvidenceJSON,
)

Lane = dict[str, Any]  # one retrieval lane's record: its fields differ by lane


@dataclass
class Retrieval:
    """Why a row is in the run: its score, the lanes that found it, the signals that moved it
    and the question terms it holds."""

    score: float
    fused_score: float
    lanes: list[Lane]
    signals: list[Signal]
    matched_terms: list[str]
    missing_terms: list[str]

    def to_json(self) -> RetrievalJSON:
        return {
            "score": self.score,
            "fused_score": self.fused_score,
            "lanes": [dict(lane) for lane in self.lanes],
            "signals": [Signal(**signal) for signal in self.signals],
            "matched_terms": list(self.matched_terms),
            "missing_terms": list(self.missing_terms),
        }


@dataclass(kw_only=True)
class HeldPage:
    """What a row of the brain's and the page an item links to share: the row, its facts and
    excerpt, and what the web said of it (``also_found_by``; the provider's own text when
    dbrain has not extracted the page, kept apart as ``provider_excerpt``)."""

    source_key: str
    facts: Facts
    excerpt: Excerpt
    row_url: str
    also_found_by: list[str] = field(default_factory=list)
    provider_excerpt: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        return self.facts.kind

    @property
    def title(self) -> str:
        return self.facts.title

    @property
    def url(self) -> str:
        return self.facts.url

    @property
    def domain(self) -> str:
        return self.facts.domain

    @property
    def source_type(self) -> str:
        return self.facts.source_type

    @property
    def published_at(self) -> str:
        return self.facts.published_at

    @property
    def saved_at(self) -> str:
        return self.facts.saved_at

    @property
    def needs_extraction(self) -> bool:
        """A page the web also found whose text dbrain has not extracted."""
        return (
            self.kind == "source" and bool(self.also_found_by) and self.facts.extract_status != "ok"
        )

    def _head(self) -> dict[str, Any]:
        return {"source_key": self.source_key, "kind": self.kind}

    def _body(self) -> dict[str, Any]:
        return {
            **self.facts.to_json(),
            "excerpt": self.excerpt.text,
            "excerpt_html": self.excerpt.html,
            "evidence_role": self.excerpt.role,
            "row_url": self.row_url,
        }

    def _web_notes(self) -> dict[str, Any]:
        notes: dict[str, Any] = {}
        if self.also_found_by:
            notes["also_found_by"] = list(self.also_found_by)
        if self.provider_excerpt is not None:
            notes["provider_excerpt"] = dict(self.provider_excerpt)
        return notes


@dataclass(kw_only=True)
class LinkedPage(HeldPage):
    """The page an item links to (``item_source_links``), matched too: shown inside the item's
    row as its ``linked_source``."""

    matched_terms: list[str]

    def to_json(self) -> LinkedSourceJSON:
        row = {
            **self._head(),
            **self._body(),
            "matched_terms": list(self.matched_terms),
            **self._web_notes(),
        }
        return cast(LinkedSourceJSON, row)


@dataclass(kw_only=True)
class BrainRow(HeldPage):
    """One row of the brain (``evidence``), with the page it links to when that matched too."""

    retrieval: Retrieval
    linked: LinkedPage | None = None

    origin = BRAIN_ORIGIN

    @property
    def keys(self) -> list[str]:
        """Its own key and its linked page's: both were retrieved (answers may cite either)."""
        return [self.source_key, *([self.linked.source_key] if self.linked else [])]

    @property
    def pages(self) -> list[HeldPage]:
        return [self, *([self.linked] if self.linked else [])]

    @property
    def is_exact(self) -> bool:
        """Did the question name this row exactly (key, URL, id or note path)?"""
        return any(lane["name"] == "exact_lookup" for lane in self.retrieval.lanes)

    @property
    def is_strong(self) -> bool:
        return self.is_exact or not self.retrieval.missing_terms

    def to_json(self) -> EvidenceJSON:
        row = {**self._head(), "origin": self.origin, **self._body()}
        row["retrieval"] = self.retrieval.to_json()
        if self.linked is not None:
            row["linked_source"] = self.linked.to_json()
        return cast(EvidenceJSON, {**row, **self._web_notes()})


@dataclass
class WebRow:
    """One ``external_evidence`` row: a page outside the brain, ephemeral, with its providers."""

    source_key: str
    canonical_url: str
    provider_url: str
    title: str
    domain: str
    excerpt: Excerpt
    text: str
    published_at: str
    author: str
    depth: str  # "page" when the page itself was read, else "snippet"
    providers: list[str]
    retrieval: Retrieval
    cosine: float | None = None  # the semantic lane's, when it ran (``web_ranking``; the judge)
    # The page the question named by its URL, read directly: no search found it.
    direct_url: bool = False

    origin = WEB_ORIGIN
    kind = "external"
    source_type = "external_web"
    saved_at = ""  # never saved: ephemeral

    @property
    def url(self) -> str:
        return self.canonical_url

    @property
    def keys(self) -> list[str]:
        return [self.source_key]

    @property
    def is_exact(self) -> bool:
        return False

    @property
    def evidence_role(self) -> str:
        return self.excerpt.role or "external_snippet"

    def to_json(self) -> WebEvidenceJSON:
        # ``direct_url`` sits before ``retrieval`` in the pinned JSON, only on a page read
        # directly: a TypedDict literal cannot hold a key that is there only sometimes.
        direct: dict[str, bool] = {"direct_url": True} if self.direct_url else {}
        return cast(
            WebEvidenceJSON,
            {
                "source_key": self.source_key,
                "kind": self.kind,
                "source_type": self.source_type,
                "origin": self.origin,
                "store": "ephemeral",
                "url": self.canonical_url,
                "canonical_url": self.canonical_url,
                "provider_url": self.provider_url,
                "title": self.title,
                "domain": self.domain,
                "excerpt": self.excerpt.text,
                "excerpt_html": self.excerpt.html,
                "text": self.text,
                "published_at": self.published_at,
                "author": self.author,
                "evidence_role": self.evidence_role,
                "depth": self.depth,
                "providers": list(self.providers),
                **direct,
                "retrieval": self.retrieval.to_json(),
            },
        )


Row = BrainRow | WebRow


def reading_order(brain: list[BrainRow], web: list[WebRow], current_state: bool) -> list[Row]:
    """One reading order over both lists. Local rows keep their order and web rows follow
    them, except for questions about the current state of things, where web rows may go ahead
    of weak local rows (never ahead of exact hits or of local rows that match every term)."""
    if not current_state:
        return [*brain, *web]
    strong = [r for r in brain if r.is_strong]
    return [*strong, *web, *(r for r in brain if not r.is_strong)]
