"""The texts a brain row holds, read as dbrain reads them (pure functions over a hydrated row,
``brain.hydrate``): its excerpt fields in dbrain's order, an answer's passage, every text FTS
indexed, dbrain's search snippet and what dbrain's relaxed match reads.

An item's transcript (its ``x_media_transcript`` enrichment, or the article text dbrain titles
"X Media Transcript") is read as a transcript wherever dbrain reads it as one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .brain import ITEM_COLUMNS, SOURCE_COLUMNS
from .schema import X_MEDIA_TRANSCRIPT_ARTICLE_TITLE


def excerpt_fields(kind: str, row: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(field, evidence_role, text) in dbrain's excerpt order: compact text first (summary,
    description), then raw (``internal/ask/evidence.go``: post, article, text, OCR for items).

    An item's transcript (its ``x_media_transcript`` enrichment, or article text titled
    "X Media Transcript" as dbrain mirrors it) takes the article's place, as it does in dbrain's
    FTS row, so a transcript match is shown as a transcript.
    """
    if kind == "source":
        return [
            ("summary_text", "derived_summary", row.get("summary_text", "")),
            ("description", "excerpt", row.get("description", "")),
            ("extracted_text", "raw_extract_window", row.get("extracted_text", "")),
        ]
    article = row.get("article_text") or ""
    transcript = row.get("enrichment_x_media_transcript") or ""
    if transcript or (row.get("article_title") or "").strip() == X_MEDIA_TRANSCRIPT_ARTICLE_TITLE:
        transcript, article = transcript or article, ""
    return [
        (
            "summary",
            "derived_summary",
            row.get("enrichment_summary") or row.get("summary_text", ""),
        ),
        ("x_post_text", "raw_item_window", row.get("x_post_text", "")),
        ("transcript", "raw_transcript", transcript),
        ("article_text", "raw_item_window", article),
        ("text", "raw_item_window", row.get("text", "")),
        ("ocr", "raw_ocr", row.get("enrichment_ocr") or row.get("ocr_text", "")),
    ]


PASSAGE_CHARS = 6000


def passage_text(kind: str, row: dict[str, Any]) -> str:
    """A row's prose for an answer: its excerpt fields in dbrain's order, without repeats,
    capped so a long page cannot slow the answer down."""
    texts = dict.fromkeys(str(t).strip() for _, _, t in excerpt_fields(kind, row) if t)
    return "\n".join(t for t in texts if t)[:PASSAGE_CHARS]


def searchable_texts(kind: str, row: dict[str, Any]) -> list[str]:
    """Every text FTS indexed for the row (plus key and URL), for term-coverage checks."""
    names = ITEM_COLUMNS if kind == "item" else SOURCE_COLUMNS
    texts = [str(row.get(n, "")) for n in names]
    texts += [str(v) for k, v in row.items() if k.startswith("enrichment_")]
    return texts


SNIPPET_CHARS = 200  # dbrain's substr(..., 1, 200)


def _flatten(text: Any) -> str:
    """Newlines to spaces, then SQLite's trim(), which removes spaces only."""
    return str(text or "").replace("\n", " ").strip(" ")


def item_transcript(row: dict[str, Any]) -> str:
    """An item's transcript: its ``x_media_transcript`` enrichment, else article text titled
    "X Media Transcript" (the mirror dbrain keeps in ``items``)."""
    transcript = row.get("enrichment_x_media_transcript") or ""
    if not transcript and (row.get("article_title") or "").strip() == (
        X_MEDIA_TRANSCRIPT_ARTICLE_TITLE
    ):
        transcript = row.get("article_text") or ""
    return str(transcript)


def _holds(text: str, words: Sequence[str]) -> int:
    return sum(1 for w in words if w in text)


def dbrain_snippet(kind: str, row: dict[str, Any], terms: Sequence[str] = ()) -> str:
    """dbrain's search snippet: the first non-empty text in its order, newlines flattened,
    200 characters (``internal/store/search.go``).

    With the search's ``terms``, an item whose transcript holds more of them than that text
    does (a generic summary does not quote the recording) gets its snippet from the transcript
    text that matched instead: 200 characters from a little before the first match, as
    dbrain's ``TestSearchSnippetUsesTranscriptMatchText`` asks. Words are lowercase substrings,
    as dbrain's ``matchesRelaxedTerms`` reads them."""
    if kind == "source":
        order = [row.get("summary_text"), row.get("extracted_text")]
    else:
        order = [
            row.get("enrichment_summary"),
            row.get("summary_text"),
            row.get("enrichment_ocr"),
            row.get("ocr_text"),
            row.get("enrichment_x_media_transcript"),
            row.get("article_text"),
            row.get("text"),
        ]
    snippet = _flatten(next((t for t in order if t), ""))[:SNIPPET_CHARS]
    words = [w for w in dict.fromkeys(str(t).lower() for t in terms) if w]
    transcript = _flatten(item_transcript(row)) if kind == "item" and words else ""
    lowered = transcript.lower()
    if transcript and _holds(lowered, words) > _holds(snippet.lower(), words):
        first = min(lowered.find(w) for w in words if w in lowered)
        start = max(0, first - SNIPPET_CHARS // 4)
        space = transcript.find(" ", start, first) if start else -1
        start = space + 1 if space != -1 else start  # start on a word
        return transcript[start : start + SNIPPET_CHARS]
    return snippet


def relaxed_texts(kind: str, row: dict[str, Any], terms: Sequence[str]) -> list[str]:
    """What dbrain's ``matchesRelaxedTerms`` reads: key, title, author handle and name, URL,
    domain, note path, tags and the snippet (``internal/store/search_helpers.go``), which
    follows the search's ``terms`` into an item's transcript (``dbrain_snippet``)."""
    names = (
        "source_key",
        "title",
        "author_handle",
        "author_name",
        "canonical_url",
        "primary_domain" if kind == "item" else "domain",
        "note_path",
        "user_tags",
    )
    texts = [str(row.get(n) or "") for n in names]
    texts.append(dbrain_snippet(kind, row, terms))
    return texts
