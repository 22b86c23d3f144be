"""The citation verifier: the same check for every synthesizer (pure functions).

An answer may only cite what its run retrieved. Every ``[...]`` marker that looks like a
citation is read; a key that is not one of the run's ``evidence`` or ``external_evidence`` keys
is removed from the text and reported in ``rejected_citations``; valid keys are split into
local (the brain) and external (the web). A sentence is ``supported`` only when it cites at
least one valid key and enough of its content words occur in the rows it cites.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..pack_json import RejectedCitationJSON
from .text import content_words, marked_sentences, split_sentences, stems

MARKER = re.compile(r"\[([^\[\]\n]{1,300})\]")
KEY_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9_.+-]*:\S+$")
NUMBER = re.compile(r"^#?\d{1,4}$")
# Markers that open a sentence ("X. [src:a] Y.") belong to the sentence before them.
LEADING_MARKERS = re.compile(r"^(?:\[[^\[\]\n]{1,300}\](?!\()\s*)+")
MAX_SHOWN_UNMATCHED = 8

REMOVED = "\x00"  # marks where a marker was taken out; a NUL the text held becomes a space
NOT_IN_RUN = "not_in_run"
NOT_A_KEY = "not_a_key"


@dataclass(frozen=True)
class RunKeys:
    """The keys a run retrieved, by origin, and the text each row can support claims with."""

    brain: tuple[str, ...]
    web: tuple[str, ...]
    passages: Mapping[str, str] = field(default_factory=dict)
    _stems: dict[str, frozenset[str]] = field(default_factory=dict, compare=False, repr=False)
    _sentences: dict[str, list[tuple[str, frozenset[str]]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def stems(self, key: str) -> frozenset[str]:
        """The word stems of a row's text, read once per run however often it is cited."""
        cache = self._stems
        if key not in cache:
            cache[key] = stems(self.passages.get(key, ""))
        return cache[key]

    def sentences(self, key: str) -> list[tuple[str, frozenset[str]]]:
        """A row's sentences with their content words, cut once per run however often the
        row is cited."""
        cache = self._sentences
        if key not in cache:
            cache[key] = [
                (s, frozenset(content_words(s)))
                for s in split_sentences(self.passages.get(key, ""))
            ]
        return cache[key]

    def origin(self, key: str) -> str:
        if key in self.brain:
            return "local"
        return "external" if key in self.web else ""


@dataclass
class Verified:
    """What the verifier made of a draft."""

    sentences: list[dict[str, Any]]
    rejected: list[RejectedCitationJSON]
    brain: list[str]
    web: list[str]
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    dropped_conflicts: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)  # unsupported, taken out

    @property
    def text(self) -> str:
        """The answer as text, each sentence followed by its valid ``[key]`` citations."""
        return " ".join(sentence_with_citations(s) for s in self.sentences)


def without_unsupported(verified: Verified, keys: RunKeys) -> Verified:
    """The answer with the sentences its cited rows do not support taken out (listed in
    ``removed``, with why), and its citations those of the sentences that stay."""
    kept = [s for s in verified.sentences if s["supported"]]
    cited = list(dict.fromkeys(k for s in kept for k in s["citations"]))
    return Verified(
        sentences=kept,
        rejected=verified.rejected,
        brain=[k for k in cited if keys.origin(k) == "local"],
        web=[k for k in cited if keys.origin(k) == "external"],
        conflicts=verified.conflicts,
        dropped_conflicts=verified.dropped_conflicts,
        removed=[s for s in verified.sentences if not s["supported"]],
    )


def sentence_with_citations(sentence: dict[str, Any]) -> str:
    return " ".join([sentence["text"], *(f"[{key}]" for key in sentence["citations"])])


def _parts(marker: str) -> list[str]:
    return [p.strip() for p in re.split(r"[,;]|\s+(?=[A-Za-z][\w.+-]*:)", marker) if p.strip()]


def is_citation(marker: str, keys: RunKeys) -> bool:
    """Does a bracket's content read as citations (run keys, ``prefix:rest`` keys, ``1``)?"""
    parts = _parts(marker)
    return bool(parts) and all(
        keys.origin(p) or KEY_LIKE.match(p) or NUMBER.match(p) for p in parts
    )


def strip_citations(text: str) -> str:
    """Text with anything that reads as a citation removed (a quoted page's own ``[1]``)."""
    bare = RunKeys((), ())
    return " ".join(
        MARKER.sub(lambda m: "" if is_citation(m.group(1), bare) else m.group(0), text).split()
    )


def read_markers(text: str, keys: RunKeys) -> tuple[str, list[str], list[RejectedCitationJSON]]:
    """Take the citation markers out of one sentence.

    Returns the sentence without markers, the valid keys in order of first citation, and the
    rejected ones. A marker counts as a citation when each comma-separated part is a run key,
    looks like a key (``prefix:rest``) or is a bare number (``[1]``); other brackets are text.
    """
    valid: list[str] = []
    rejected: list[RejectedCitationJSON] = []

    def replace(match: re.Match[str]) -> str:
        if not is_citation(match.group(1), keys):
            return match.group(0)
        for part in _parts(match.group(1)):
            if keys.origin(part):
                if part not in valid:
                    valid.append(part)
            else:
                reason = NOT_A_KEY if NUMBER.match(part) else NOT_IN_RUN
                rejected.append({"key": part, "reason": reason})
        return REMOVED

    stripped = MARKER.sub(replace, text)
    # "works [key]." reads "works." once the marker is gone; other spacing stays as written.
    stripped = re.sub(rf"(?:\s*{REMOVED})+\s*(?=[.,;:!?])", "", stripped).replace(REMOVED, " ")
    return " ".join(stripped.split()), valid, rejected


def support(sentence: str, cited: list[str], keys: RunKeys, min_support: float) -> dict:
    """How much of the sentence the cited rows hold: content-word overlap, 0..1."""
    if not cited:
        return {"reason": "no_citation", "overlap": 0.0}
    wanted = content_words(sentence)
    if not wanted:
        return {"reason": "ok", "overlap": 1.0, "content_words": 0, "matched_words": 0}
    held = frozenset().union(*(keys.stems(k) for k in cited))
    matched = [w for w in wanted if w in held]
    overlap = round(len(matched) / len(wanted), 3)
    return {
        "reason": "ok" if overlap >= min_support else "low_overlap",
        "overlap": overlap,
        "min_overlap": min_support,
        "content_words": len(wanted),
        "matched_words": len(matched),
        "unmatched_words": [w for w in wanted if w not in held][:MAX_SHOWN_UNMATCHED],
    }


def quote(sentence: str, keys: RunKeys, key: str) -> str:
    """The sentence of a cited row's text that holds most of the answer sentence's words:
    what the row shows as cited, so the claim can be checked where it points."""
    wanted = set(content_words(sentence))
    best, best_shared = "", 0
    for candidate, held in keys.sentences(key):
        shared = len(wanted & held)
        if shared > best_shared:
            best, best_shared = candidate, shared
    return best


def attach_citations(pieces: list[str], keys: RunKeys) -> list[str]:
    """Move citation markers that open a sentence to the end of the sentence before it, where
    a writer who cites after the full stop meant them."""
    joined: list[str] = []
    for piece in pieces:
        lead = LEADING_MARKERS.match(piece)
        if lead and joined and all(is_citation(m, keys) for m in MARKER.findall(lead.group(0))):
            joined[-1] = f"{joined[-1]} {lead.group(0).strip()}"
            piece = piece[lead.end() :]
        if piece.strip():
            joined.append(piece)
    return joined


def verify(
    draft: str, keys: RunKeys, min_support: float, conflicts: list[str] | None = None
) -> Verified:
    """Check a synthesizer's draft (and its conflict lines) against the run's keys."""
    sentences: list[dict[str, Any]] = []
    rejected: list[RejectedCitationJSON] = []
    marked = marked_sentences(draft)
    items = {read_markers(sentence, keys)[0] for sentence, item in marked if item}
    for raw in attach_citations([sentence for sentence, _ in marked], keys):
        text, cited, refused = read_markers(raw, keys)
        rejected += [{**r, "sentence": len(sentences) + 1} for r in refused]
        if not any(ch.isalnum() for ch in text):
            continue
        check = support(text, cited, keys, min_support)
        sentences.append(
            {
                "text": text,
                "citations": cited,
                "supported": check["reason"] == "ok",
                "support": check,
                "quotes": [{"key": k, "text": quote(text, keys, k)} for k in cited],
                "item": text in items,  # written as a list item: the page shows a bullet
            }
        )
    cited_keys = list(dict.fromkeys(k for s in sentences for k in s["citations"]))
    outcome = Verified(
        sentences=sentences,
        rejected=rejected,
        brain=[k for k in cited_keys if keys.origin(k) == "local"],
        web=[k for k in cited_keys if keys.origin(k) == "external"],
    )
    for line in conflicts or []:
        text, cited, refused = read_markers(line, keys)
        outcome.rejected += [{**r, "conflict": True} for r in refused]
        if len(cited) >= 2 and any(ch.isalnum() for ch in text):
            outcome.conflicts.append({"text": text, "citations": cited})
        elif text:
            outcome.dropped_conflicts.append(
                {"text": text, "citations": cited, "reason": "fewer_than_two_valid_citations"}
            )
    return outcome
