"""dbrain's rows for a promoted page: the ``sources`` row ``dbrain link add`` would write, and
a note's ``manual`` item, built outside the write transaction (pure but for the clock).

A promoted result becomes the row ``dbrain link add`` would have written
(``internal/linkadd/run.go``, ``upsertSourceCandidate``): normalized and canonical URL by
dbrain's rules, ``src:`` key, source type, domain, note path, RFC3339 UTC timestamps, empty
strings rather than NULLs. What is known about the page is kept without claiming more:

- not fetched: the provider's title and text as ``title`` and ``description``, with
  ``extract_status = ''`` (pending), so dbrain's own extractor fetches the page later;
- fetched: what ``SaveSourceExtraction`` writes on success (``ok``, or ``empty`` for a page
  without main text), the fetched page's text as ``extracted_text``;
- fetch failed: what it writes on failure (``error`` and its failure columns, so dbrain retries
  after its cooldown), the provider's text kept as ``description``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .errors import ResearchError
from .fetch import FetchResult
from .schema import go_json, item_content_hash
from .urls import UnsupportedURL, normalize_url, slugify, try_normalize_url

EXTRACT_TOOL = "datasette-dbrain-websearch"


def tool_version() -> str:
    try:
        return version(EXTRACT_TOOL)
    except PackageNotFoundError:
        return ""


@dataclass(frozen=True)
class Annotation:
    """What the person says of the pages they keep: tags for each new source (added to one
    the brain holds), and a note that becomes a dbrain ``manual`` item linked to each, its text
    the note plus the question and run that found the page."""

    tags: tuple[str, ...] = ()
    note: str = ""
    question: str = ""
    run_id: str = ""


@dataclass(frozen=True)
class Candidate:
    """One row to write, prepared outside the write transaction (network work done)."""

    web_source_key: str
    url: str
    columns: dict[str, Any]
    provider: str
    rank: int
    fetch: str
    extract_error: str
    found_url: str = ""  # the URL as the provider gave it (item_source_links.original_url)


def candidate(row: Mapping[str, Any], fetched: FetchResult | None, now: str) -> Candidate:
    """The ``sources`` columns for a web row: link add's, plus what a fetch (if any) found."""
    try:
        normalized = normalize_url(row["canonical_url"])
    except UnsupportedURL as exc:
        raise ResearchError(
            f"{row['canonical_url']} is not a URL dbrain accepts.", code="unsupported_url"
        ) from exc
    provider_text = row.get("text") or row["excerpt"]
    columns: dict[str, Any] = {
        "source_key": normalized.source_key,
        "canonical_url": normalized.canonical_url,
        "normalized_url": normalized.normalized_url,
        "source_type": normalized.source_type,
        "domain": normalized.domain,
        "note_path": normalized.note_path,
        "title": row["title"],
        "description": provider_text,
        "created_at": now,
        "updated_at": now,
    }
    if fetched is not None and fetched.ok:
        final = try_normalize_url(fetched.final_url) or normalized
        columns |= {
            # extraction rewrites canonical_url, never normalized_url
            "canonical_url": final.canonical_url,
            "title": fetched.title or row["title"],
            "description": fetched.description or provider_text,
            "site_name": fetched.site_name,
            "extracted_text": fetched.text,
            "extract_status": "ok" if fetched.text else "empty",
            "extracted_at": now,
            "extract_tool": EXTRACT_TOOL,
            "extract_tool_version": tool_version(),
            "content_hash": hashlib.sha256(fetched.text.encode()).hexdigest(),
        }
    elif fetched is not None:
        columns |= {
            "extract_status": "error",
            "extract_error": fetched.error,
            "extract_failure_kind": fetched.failure_kind or "unknown",
            "extract_failure_count": 1,
            "extract_first_failed_at": now,
            "extract_last_failed_at": now,
        }
    lane = row["retrieval"]["lanes"][0]
    return Candidate(
        web_source_key=row["source_key"],
        url=row["canonical_url"],
        columns=columns,
        provider=lane.get("provider", ""),
        rank=int(lane.get("rank", 0)),
        fetch="not_fetched" if fetched is None else "fetched" if fetched.ok else "failed",
        extract_error="" if fetched is None or fetched.ok else fetched.error,
        found_url=row.get("provider_url") or row["canonical_url"],
    )


def note_item(item: Candidate, annotation: Annotation, now: str) -> dict[str, Any]:
    """The ``items`` row of a note on a kept page, shaped as dbrain's importers shape items
    (a ``manual:`` key, as dbrain's UI reads them; the same note on the same page is the same
    key, so keeping a page twice never writes the note twice)."""
    columns = item.columns
    digest = hashlib.sha256(f"{columns['normalized_url']}\n{annotation.note}".encode()).hexdigest()
    digest = digest[:12]
    title = f"Note: {columns.get('title') or columns['canonical_url']}"[:200]
    row: dict[str, Any] = {
        "source_key": f"manual:{digest}",
        "source_type": "manual",
        "external_id": digest,
        "canonical_url": columns["canonical_url"],
        "title": title,
        "text": f"{annotation.note}\n\nSaved from research: \u201c{annotation.question}\u201d "
        f"(run {annotation.run_id}).",
        "saved_at": now,
        "synced_at": now,
        "primary_domain": columns.get("domain", ""),
        "links_json": go_json([columns["canonical_url"]]),
        "note_path": f"items/manual/{now[:4]}/{slugify(title)}-{digest}.md",
        "raw_json": go_json(
            {
                "tool": EXTRACT_TOOL,
                "run_id": annotation.run_id,
                "question": annotation.question,
                "url": columns["canonical_url"],
            }
        ),
        "user_tags": ",".join(annotation.tags),
        "imported_at": now,
        "updated_at": now,
        "last_seen_at": now,
    }
    row["content_hash"] = item_content_hash(row)
    return row
