"""dbrain-shaped rows, the demo brain's and the bench brain's alike: a ``Builder`` that fills in
dbrain's defaults and bookkeeping, and writing its rows with their FTS rows (``write_brain``).

Its own module so the curated demo (``curated``) and the synthetic bench brain (``synthetic``)
share one way of making rows.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ..fts_rows import ITEMS_FTS_INSERT, SOURCES_FTS_INSERT, item_fts_row, source_fts_row
from ..schema import ITEM_COLUMNS, SOURCE_COLUMNS, X_MEDIA_TRANSCRIPT_ARTICLE_TITLE
from ..urls import normalize_url

BASE_TIME = datetime(2026, 7, 18, tzinfo=UTC)
_INTEGER_COLUMNS = frozenset(
    {
        "id",
        "like_count",
        "repost_count",
        "reply_count",
        "quote_count",
        "bookmark_count",
        "extract_failure_count",
    }
)
SUMMARY_MODEL = "llama3.1:8b"
_OCR_MODEL = "apple-vision"
GITHUB_VIEWER = "demo-user"
SAFARI_DEVICE = "6F0D3A52-9C1B-4E7A-8D2F-1B5C7E9A3D40"


@dataclass
class BrainData:
    items: list[dict[str, Any]]
    sources: list[dict[str, Any]]
    enrichments: list[dict[str, Any]]
    links: list[tuple[int, int, str, str]]
    summary_versions: list[dict[str, Any]]


def write_brain(conn: sqlite3.Connection, data: BrainData) -> None:
    _insert_rows(conn, "items", ITEM_COLUMNS, data.items)
    _insert_rows(conn, "sources", SOURCE_COLUMNS, data.sources)
    enrichment_columns = tuple(data.enrichments[0]) if data.enrichments else ()
    _insert_rows(conn, "item_enrichments", enrichment_columns, data.enrichments)
    conn.executemany(
        "INSERT INTO item_source_links (item_id, source_id, original_url, created_at)"
        " VALUES (?, ?, ?, ?)",
        data.links,
    )
    version_columns = tuple(data.summary_versions[0]) if data.summary_versions else ()
    _insert_rows(conn, "source_summary_versions", version_columns, data.summary_versions)

    by_item: dict[int, dict[str, str]] = {}
    for enrichment in data.enrichments:
        by_item.setdefault(enrichment["item_id"], {})[enrichment["role"]] = enrichment["text"]
    conn.executemany(
        ITEMS_FTS_INSERT,
        (
            item_fts_row(
                item,
                summary=by_item.get(item["id"], {}).get("summary"),
                ocr=by_item.get(item["id"], {}).get("ocr"),
                transcript=by_item.get(item["id"], {}).get("x_media_transcript"),
            )
            for item in data.items
        ),
    )
    # Like dbrain: only sources that were extracted (or summarized or tagged since) are indexed.
    conn.executemany(
        SOURCES_FTS_INSERT,
        (source_fts_row(source) for source in data.sources if source["extract_status"] == "ok"),
    )


def _insert_rows(
    conn: sqlite3.Connection,
    table: str,
    columns: Sequence[str],
    rows: list[dict[str, Any]],
) -> None:
    if not rows:
        return
    placeholders = ", ".join("?" for _ in columns)
    conn.executemany(
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({placeholders})",
        ([row[column] for column in columns] for row in rows),
    )


def blank_row(columns: Sequence[str]) -> dict[str, Any]:
    row: dict[str, Any] = {c: 0 if c in _INTEGER_COLUMNS else "" for c in columns}
    if "links_json" in row:
        row["links_json"] = "[]"
    return row


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256_hex(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def short_id(text: str, length: int = 11) -> str:
    """A stable YouTube-style id from text."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "".join(alphabet[b % 64] for b in digest[:length])


def stable_uuid(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest().upper()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def note_slug(text: str, limit: int = 72) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-") or "note"


def tag_list(rng: random.Random, pool: Sequence[str]) -> str:
    """A dbrain tag list: lowercase, hyphenated, comma-separated, usually led by the main tag."""
    count = rng.randint(1, min(3, len(pool)))
    chosen = [pool[0]] if rng.random() < 0.8 else []
    for tag in rng.sample(list(pool), len(pool)):
        if len(chosen) >= count:
            break
        if tag not in chosen:
            chosen.append(tag)
    return ", ".join(chosen)


class Builder:
    """Accumulates rows with dbrain-shaped defaults and dbrain's bookkeeping."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.data = BrainData([], [], [], [], [])
        self._next_item_id = 1
        self._next_source_id = 1
        self._sources_by_url: dict[str, dict[str, Any]] = {}

    def moment(self, max_days: int = 420) -> datetime:
        offset = timedelta(days=self.rng.randint(1, max_days), seconds=self.rng.randint(0, 86399))
        return BASE_TIME - offset

    def item(self, saved: datetime, **fields: Any) -> dict[str, Any]:
        row = blank_row(ITEM_COLUMNS)
        row.update(fields)
        row["id"] = self._next_item_id
        self._next_item_id += 1
        imported = saved + timedelta(minutes=self.rng.randint(5, 600))
        row["raw_json"] = row["raw_json"] or "{}"
        row["saved_at"] = row["saved_at"] or stamp(saved)
        row["synced_at"] = row["synced_at"] or stamp(imported)
        row["imported_at"] = stamp(imported)
        row["updated_at"] = stamp(imported)
        row["last_seen_at"] = stamp(imported + timedelta(days=self.rng.randint(0, 30)))
        row["content_hash"] = sha256_hex(row["source_key"], row["title"], row["text"])
        self.data.items.append(row)
        return row

    def enrich(self, item: dict[str, Any], role: str, text: str, at: datetime) -> None:
        """Store an enrichment and mirror it into the items columns, as dbrain does."""
        completed = stamp(at)
        model = _OCR_MODEL if role == "ocr" else SUMMARY_MODEL
        prompt_version = "item-summary-v3" if role == "summary" else ""
        tool = {"summary": "dbrain-summarize", "ocr": "dbrain-ocr"}.get(role, "dbrain-transcribe")
        input_hash = sha256_hex(item["content_hash"], role)[:16]
        raw_json = compact_json({"chars": len(text), "role": role})
        self.data.enrichments.append(
            {
                "item_id": item["id"],
                "role": role,
                "status": "ok",
                "text": text,
                "raw_json": raw_json,
                "error": "",
                "model": model,
                "prompt_version": prompt_version,
                "tool": tool,
                "tool_version": "1.4.0",
                "input_hash": input_hash,
                "completed_at": completed,
                "created_at": completed,
                "updated_at": completed,
            }
        )
        if role == "summary":
            item.update(
                summary_text=text,
                summary_json=raw_json,
                summary_status="ok",
                summary_model=model,
                summary_prompt_version=prompt_version,
                summary_tool=tool,
                summary_tool_version="1.4.0",
                summary_input_hash=input_hash,
                summarized_at=completed,
            )
        elif role == "ocr":
            item.update(
                ocr_text=text,
                ocr_json=raw_json,
                ocr_status="ok",
                ocr_model=model,
                ocr_tool=tool,
                ocr_tool_version="1.4.0",
                ocr_input_hash=input_hash,
                ocr_at=completed,
            )
        else:
            item.update(
                article_title=X_MEDIA_TRANSCRIPT_ARTICLE_TITLE,
                article_text=text,
                x_media_transcript_status="ok",
                x_media_transcript_at=completed,
            )

    def source(
        self,
        url: str,
        created: datetime,
        *,
        title: str = "",
        description: str = "",
        site_name: str = "",
        text: str = "",
        summary: str = "",
        tags: str = "",
        status: str = "ok",
    ) -> dict[str, Any]:
        """A source row as ``link add`` creates it, then extracted/summarized if text is given."""
        normalized = normalize_url(url)
        existing = self._sources_by_url.get(normalized.normalized_url)
        if existing is not None:
            return existing
        row = blank_row(SOURCE_COLUMNS)
        row.update(
            id=self.next_source_id(),
            source_key=normalized.source_key,
            canonical_url=normalized.canonical_url,
            normalized_url=normalized.normalized_url,
            source_type=normalized.source_type,
            domain=normalized.domain,
            note_path=normalized.note_path,
            created_at=stamp(created),
            updated_at=stamp(created),
            user_tags=tags,
        )
        if status == "ok":
            extracted = created + timedelta(minutes=self.rng.randint(1, 90))
            row.update(
                title=title,
                description=description,
                site_name=site_name,
                extracted_text=text,
                extract_json=compact_json({"chars": len(text), "words": len(text.split())}),
                extract_status="ok",
                extracted_at=stamp(extracted),
                extract_tool="dbrain-extract",
                extract_tool_version="2.1.0",
                content_hash=sha256_hex(text),
                updated_at=stamp(extracted),
            )
            if summary:
                summarized = extracted + timedelta(minutes=self.rng.randint(1, 240))
                self._summarize(row, summary, summarized)
        elif status == "error":
            failed = created + timedelta(minutes=3)
            row.update(
                extract_status="error",
                extract_error="http 503 Service Unavailable",
                extract_failure_kind="http_5xx",
                extract_failure_count=2,
                extract_first_failed_at=stamp(failed),
                extract_last_failed_at=stamp(failed + timedelta(hours=13)),
                updated_at=stamp(failed + timedelta(hours=13)),
            )
        self.data.sources.append(row)
        self._sources_by_url[normalized.normalized_url] = row
        return row

    def _summarize(self, row: dict[str, Any], summary: str, at: datetime) -> None:
        fields = {
            "summary_text": summary,
            "summary_json": compact_json({"bullets": summary.count(". ") + 1}),
            "summary_status": "ok",
            "summary_model": SUMMARY_MODEL,
            "summary_prompt_version": "source-summary-v2",
            "summary_tool": "dbrain-summarize",
            "summary_tool_version": "1.4.0",
            "summarized_at": stamp(at),
        }
        row.update(fields, summary_content_hash=row["content_hash"], updated_at=stamp(at))
        self.data.summary_versions.append(
            {
                "source_id": row["id"],
                "content_hash": row["content_hash"],
                "summary_error": "",
                **fields,
            }
        )

    def next_source_id(self) -> int:
        self._next_source_id += 1
        return self._next_source_id - 1

    def link(self, item: dict[str, Any], source_id: int, original_url: str) -> None:
        """An ``item_source_links`` row: the item mentions the source's URL."""
        self.data.links.append((item["id"], source_id, original_url, item["imported_at"]))

    def drain(self) -> BrainData:
        """Hand over the rows gathered so far; ids keep counting."""
        data, self.data = self.data, BrainData([], [], [], [], [])
        return data
