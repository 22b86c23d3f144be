"""Writing promoted pages into the brain: their ``sources`` rows with their FTS rows, the
tags added to a page the brain holds, and a note's item linked to each, in one transaction.

Unlike ``dbrain link add``, the ``sources_fts`` row is written at once (packed as dbrain packs
it), so the next search finds the page; dbrain rewrites it by rowid when it extracts the page.
Rows are written with sqlite-utils in one transaction per request; a URL whose normalized form
exists already is reported as ``exists`` and left as it was, but for the tags the person adds.
Tags go into ``user_tags``; a note becomes a ``manual`` item (with its ``items_fts`` row)
linked to the page through ``item_source_links``, as dbrain links an item to a page it mentions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from sqlite_utils.db import Table

from .errors import ResearchError
from .fts_rows import FTSWriteError, sync_item_fts, sync_source_fts
from .promotion_rows import Annotation, Candidate, note_item
from .schema import sqlite_database, utc_now

NO_ANNOTATION = Annotation()  # no tags, no note


def merged_tags(existing: str, added: Iterable[str]) -> str:
    """``user_tags`` with ``added`` appended where missing, joined with "," as dbrain's
    ``MergeUserTags`` joins them (a tag already there, in any case, is not repeated)."""
    kept = [tag.strip() for tag in existing.split(",") if tag.strip()]
    have = {tag.lower() for tag in kept}
    return ",".join([*kept, *(tag for tag in added if tag not in have)])


def write_sources(
    conn: sqlite3.Connection,
    candidates: list[Candidate],
    annotation: Annotation = NO_ANNOTATION,
    now: str = "",
) -> list[dict[str, Any]]:
    """Insert the sources and their FTS rows in one transaction; existing URLs are ``exists``
    (their tags gain the new ones); a note becomes a manual item linked to each page.

    Runs on Datasette's single write thread, so the look-up and the insert cannot interleave
    with another promotion; a writer outside this process (dbrain itself) still hits the
    UNIQUE constraint, which is read as ``exists`` too. The outer ``atomic()`` opens the
    transaction, so each sqlite-utils write inside it is a savepoint, not a commit.
    """
    now = now or utc_now()
    db = sqlite_database(conn)
    sources = db.table("sources")
    present = set(sources.columns_dict)
    if "normalized_url" not in present or not db.table("sources_fts").exists():
        raise ResearchError(
            "This brain has no dbrain sources/sources_fts tables to promote into.",
            status=409,
            code="no_sources_table",
        )
    tagging = bool(annotation.tags) and "user_tags" in present
    results: list[dict[str, Any]] = []
    try:
        with db.atomic():
            for item in candidates:
                columns = {k: v for k, v in item.columns.items() if k in present}
                if tagging:
                    columns["user_tags"] = ",".join(annotation.tags)
                row_id, status, key = _insert_or_find(conn, sources, columns, item.url)
                result = _result(
                    item, status, row_id, columns if status == "created" else {"source_key": key}
                )
                if tagging:
                    result["tags"] = (
                        columns["user_tags"]
                        if status == "created"
                        else _add_tags(conn, row_id, annotation.tags, now)
                    )
                if annotation.note:
                    result["note_key"], result["note_item_id"] = _write_note(
                        db, item, row_id, annotation, now
                    )
                results.append(result)
    except FTSWriteError as exc:  # rolled back: no row without its FTS row, no tag half-saved
        raise ResearchError(
            f"The brain's full-text index could not be rewritten ({exc}); nothing was "
            "promoted. Its FTS tables are damaged or not dbrain's: rebuild them, then promote "
            "again.",
            status=409,
            code="fts_write_failed",
        ) from exc
    return results


def _insert_or_find(
    conn: sqlite3.Connection, sources: Table, columns: dict[str, Any], url: str
) -> tuple[int, str, str]:
    """Write a new source with its FTS row, or find the one holding its URL: the row id,
    ``created`` or ``exists``, and its key."""
    existing = _existing(sources, columns["normalized_url"])
    if existing is None:
        try:
            sources.insert(columns)
        except sqlite3.IntegrityError:
            existing = _existing(sources, columns["normalized_url"])
            if existing is None:
                raise ResearchError(
                    f"{url} clashes with a row in the brain.", status=409, code="conflict"
                ) from None
        else:
            row_id = sources.last_rowid
            assert row_id is not None  # the insert above succeeded
            sync_source_fts(conn, row_id)
            return row_id, "created", columns["source_key"]
    return existing[0], "exists", existing[1]


def _add_tags(conn: sqlite3.Connection, source_id: int, tags: tuple[str, ...], now: str) -> str:
    """Add tags to a source the brain holds as dbrain's tag setter does: the row's
    ``user_tags`` and ``updated_at``, then its ``sources_fts`` row (which packs the tags)."""
    (existing,) = conn.execute(
        "SELECT user_tags FROM sources WHERE id = ?", (source_id,)
    ).fetchone()
    merged = merged_tags(existing or "", tags)
    if merged != existing:
        conn.execute(
            "UPDATE sources SET user_tags = ?, updated_at = ? WHERE id = ?",
            (merged, now, source_id),
        )
        sync_source_fts(conn, source_id)
    return merged


def _write_note(
    db: Any, item: Candidate, source_id: int, annotation: Annotation, now: str
) -> tuple[str, int]:
    """The note as a manual item (once) with its ``items_fts`` row, linked to the source
    through ``item_source_links`` as dbrain links an item to a page it mentions: its key and
    row id."""
    row = note_item(item, annotation, now)
    items = db.table("items")
    present = set(items.columns_dict)
    found = list(items.rows_where("source_key = ?", [row["source_key"]], select="id", limit=1))
    if found:
        item_id = found[0]["id"]
    else:
        items.insert({k: v for k, v in row.items() if k in present})
        item_id = items.last_rowid
        sync_item_fts(db.conn, item_id)
    db.execute(
        "INSERT OR IGNORE INTO item_source_links (item_id, source_id, original_url, created_at) "
        "VALUES (?, ?, ?, ?)",
        [item_id, source_id, item.found_url, now],
    )
    return row["source_key"], item_id


def _existing(sources: Table, normalized_url: str) -> tuple[int, str] | None:
    for row in sources.rows_where(
        "normalized_url = ?", [normalized_url], select="id, source_key", limit=1
    ):
        return row["id"], row["source_key"]
    return None


def _result(item: Candidate, status: str, row_id: int, columns: Mapping[str, Any]) -> dict:
    return {
        "source_key": item.web_source_key,
        "status": status,
        "local_source_key": columns["source_key"],
        "row_id": row_id,
        "content_hash": columns.get("content_hash", ""),
        "title": item.columns.get("title", ""),
        # What became of the page: "fetched" (its text is the extraction), "failed" (the
        # provider's text kept as the description; dbrain retries), "not_fetched" (dbrain
        # extracts it later) or "skipped" (already in the brain, left as it was).
        "fetch": item.fetch if status == "created" else "skipped",
    }
