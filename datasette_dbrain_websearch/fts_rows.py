"""dbrain's FTS rows, packed as dbrain packs them: the ``items_fts`` and ``sources_fts`` row of an
item or a source, and rewriting one in place (``sync_item_fts``, ``sync_source_fts``).

Its own module beside ``schema`` (the DDL): the tables are created there, their rows are written
here, by the demo builder, test fixtures and promotion alike, so a promoted row is indexed exactly
as dbrain would index it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import Any

from sqlite_utils.db import NotFoundError

from .errors import is_busy
from .go_stdlib import go_trim_space
from .schema import X_MEDIA_TRANSCRIPT_ARTICLE_TITLE, sqlite_database

__all__ = [
    "ITEMS_FTS_INSERT",
    "SOURCES_FTS_COLUMNS",
    "SOURCES_FTS_INSERT",
    "FTSWriteError",
    "item_fts_row",
    "source_fts_row",
    "sync_item_fts",
    "sync_source_fts",
]
ITEMS_FTS_INSERT = (
    "INSERT INTO items_fts (rowid, source_key, title, text, article_title, article_text,"
    " author_handle, author_name, primary_category, primary_domain)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
SOURCES_FTS_INSERT = (
    "INSERT INTO sources_fts (rowid, source_key, title, description, site_name, extracted_text,"
    " summary_text, domain) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
# The names of ``source_fts_row``'s values, in order (``rowid`` first).
SOURCES_FTS_COLUMNS = (
    "rowid",
    "source_key",
    "title",
    "description",
    "site_name",
    "extracted_text",
    "summary_text",
    "domain",
)

# Columns sync_item_fts reads; the same model fields dbrain's syncFTSTx uses.
_ITEM_FTS_COLUMNS = (
    "id",
    "source_key",
    "title",
    "text",
    "article_title",
    "article_text",
    "author_handle",
    "author_name",
    "primary_category",
    "primary_domain",
    "x_post_text",
    "summary_text",
    "ocr_text",
    "user_tags",
)


def item_fts_row(
    item: Mapping[str, Any],
    summary: str | None = None,
    ocr: str | None = None,
    transcript: str | None = None,
) -> tuple[Any, ...]:
    """Values for ``ITEMS_FTS_INSERT``, as dbrain's ``syncFTSTx`` computes them.

    ``summary``, ``ocr`` and ``transcript`` are the texts of the item's ``item_enrichments``
    rows (roles ``summary``, ``ocr``, ``x_media_transcript``). ``None`` means there is no such
    row; the mirrored ``items.summary_text`` / ``items.ocr_text`` are used instead, as in
    ``applyItemEnrichmentMirrorFrom``, which only overrides fields for rows that exist.

    ``article_text`` packs, like ``indexedItemArticleText``: ``x_post_text``, ``article_text``,
    summary, OCR text and ``user_tags``, each trimmed (Go ``TrimSpace``), **empty parts skipped**,
    joined with a blank line.
    """
    summary_text = _field(item, "summary_text") if summary is None else summary
    ocr_text = _field(item, "ocr_text") if ocr is None else ocr
    article_title = _field(item, "article_title")
    article_text = _field(item, "article_text")
    if transcript is not None and (
        go_trim_space(transcript)
        or go_trim_space(article_title) == X_MEDIA_TRANSCRIPT_ARTICLE_TITLE
    ):
        article_title, article_text = X_MEDIA_TRANSCRIPT_ARTICLE_TITLE, transcript
    packed = _pack(
        _field(item, "x_post_text"), article_text, summary_text, ocr_text, _field(item, "user_tags")
    )
    return (
        item["id"],
        _field(item, "source_key"),
        _field(item, "title"),
        _field(item, "text"),
        article_title,
        packed,
        _field(item, "author_handle"),
        _field(item, "author_name"),
        _field(item, "primary_category"),
        _field(item, "primary_domain"),
    )


def source_fts_row(source: Mapping[str, Any]) -> tuple[Any, ...]:
    """Values for ``SOURCES_FTS_INSERT``, as dbrain's ``syncSourceFTSByIDTx`` computes them.

    ``summary_text`` packs ``summary_text`` and ``user_tags`` (``indexedSourceSummaryText``):
    trimmed, empty parts skipped, joined with a blank line.
    """
    return (
        source["id"],
        _field(source, "source_key"),
        _field(source, "title"),
        _field(source, "description"),
        _field(source, "site_name"),
        _field(source, "extracted_text"),
        _pack(_field(source, "summary_text"), _field(source, "user_tags")),
        _field(source, "domain"),
    )


def sync_item_fts(conn: sqlite3.Connection, item_id: int) -> None:
    """Rewrite the ``items_fts`` row of one item: delete by rowid, then insert (``syncFTSTx``).

    Reads the item and its enrichment rows in the caller's transaction; raises ``LookupError``
    if the item does not exist.
    """
    row = conn.execute(
        f"SELECT {', '.join(_ITEM_FTS_COLUMNS)} FROM items WHERE id = ?", (item_id,)
    ).fetchone()
    if row is None:
        raise LookupError(f"item {item_id} not found")
    enrichments: dict[str, str] = {}
    for role, text in conn.execute(
        "SELECT role, text FROM item_enrichments WHERE item_id = ?", (item_id,)
    ):
        enrichments[go_trim_space(role)] = text
    fts_row = item_fts_row(
        dict(zip(_ITEM_FTS_COLUMNS, row, strict=True)),
        summary=enrichments.get("summary"),
        ocr=enrichments.get("ocr"),
        transcript=enrichments.get("x_media_transcript"),
    )
    _fts_write(conn, "delete item fts", "DELETE FROM items_fts WHERE rowid = ?", (item_id,))
    _fts_write(conn, "insert item fts", ITEMS_FTS_INSERT, fts_row)


def sync_source_fts(conn: sqlite3.Connection, source_id: int) -> None:
    """Rewrite the ``sources_fts`` row of one source: delete by rowid, then insert.

    dbrain calls this after extraction, a summary or a tag change. Both steps run in one
    sqlite-utils ``atomic()`` block, a savepoint when the caller has a transaction open, so
    they are committed (or rolled back) with the row they index. Raises ``LookupError`` if the
    source does not exist, and ``FTSWriteError`` if either step fails, as dbrain's
    ``syncSourceFTS`` returns its error: a missing ``sources_fts`` is never skipped or created
    as a plain table (sqlite-utils' ``delete_where`` and ``insert`` would).
    """
    db = sqlite_database(conn)
    try:
        source = db.table("sources").get(source_id)
    except NotFoundError as exc:
        raise LookupError(f"source {source_id} not found") from exc
    with db.atomic():
        _fts_write(
            conn, "delete source fts", "DELETE FROM sources_fts WHERE rowid = ?", (source_id,)
        )
        _fts_write(conn, "insert source fts", SOURCES_FTS_INSERT, source_fts_row(source))


class FTSWriteError(sqlite3.DatabaseError):
    """An FTS row could not be rewritten (``items_fts``/``sources_fts`` missing, damaged or not
    dbrain's): the message names the step as dbrain's does, ``delete source fts: …``."""


def _fts_write(conn: sqlite3.Connection, step: str, sql: str, params: Iterable[Any]) -> None:
    """One FTS statement; its failure is an ``FTSWriteError`` naming the step (a busy or
    interrupted connection keeps SQLite's own error, which its callers already answer)."""
    try:
        conn.execute(sql, tuple(params))
    except sqlite3.Error as exc:
        if is_busy(exc) or "interrupted" in str(exc):
            raise
        raise FTSWriteError(f"{step}: {exc}") from exc


def _field(row: Mapping[str, Any], key: str) -> str:
    """A text field, '' when missing or NULL; works for dicts and ``sqlite3.Row``."""
    try:
        value = row[key]
    except (KeyError, IndexError):
        return ""
    return "" if value is None else str(value)


def _pack(*parts: str) -> str:
    return "\n\n".join(trimmed for part in parts if (trimmed := go_trim_space(part)))
