"""dbrain's schema (version 20) and the way dbrain writes its FTS rows.

One implementation for everything that must look like dbrain wrote it: the demo builder, test
fixtures and promotion of web results into a real ``brain.db``. The statements follow dbrain's
``internal/store`` files: ``CREATE TABLE IF NOT EXISTS`` with the original columns, then
``ALTER TABLE ... ADD COLUMN`` for columns added later (``ensureColumns``), so a fresh database
has the same columns, order and ``sqlite_master`` text as one dbrain created.

Not reproduced: media, feed, auth, MCP, chat-share, link-capture and semantic-index tables. A
research plugin never reads them and no trigger of interest touches them.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import sqlite_utils
from sqlite_utils.db import NotFoundError

from .errors import is_busy
from .urls import go_trim_space

__all__ = [
    "ITEMS_FTS_INSERT",
    "ITEM_COLUMNS",
    "MIGRATIONS",
    "RETRIEVAL_DIRTY_DDL",
    "SCHEMA_VERSION",
    "SOURCES_FTS_COLUMNS",
    "SOURCES_FTS_INSERT",
    "SOURCE_COLUMNS",
    "X_MEDIA_TRANSCRIPT_ARTICLE_TITLE",
    "FTSWriteError",
    "create_brain_schema",
    "create_retrieval_triggers",
    "item_fts_row",
    "source_fts_row",
    "sqlite_database",
    "sync_item_fts",
    "sync_source_fts",
    "utc_now",
]

SCHEMA_VERSION = 20

# (version, name) exactly as recorded by internal/store/migrations.go.
MIGRATIONS: tuple[tuple[int, str], ...] = (
    (1, "current_schema_baseline"),
    (2, "media_download_retry_state"),
    (3, "item_enrichments_current_state"),
    (4, "x_article_canonical_i_article_urls"),
    (5, "feed_ingestion_tables"),
    (6, "auth_user_approvals"),
    (7, "mcp_bearer_tokens"),
    (8, "auth_user_approvals_repair"),
    (9, "public_chat_shares"),
    (10, "feed_parse_error_retry_repair"),
    (11, "review_event_indexes"),
    (12, "audit_provenance_v1"),
    (13, "retrieval_hybrid_storage_v1"),
    (14, "retrieval_profile_invariant_triggers_repair"),
    (15, "retrieval_chunk_projection_provenance"),
    (16, "retrieval_semantic_foundation_v2"),
    (17, "retrieval_projection_dirty_triggers"),
    (18, "retrieval_projection_dirty_trigger_provenance_repair"),
    (19, "retrieval_embedding_profile_definitions"),
    (20, "retrieval_embedding_revision_provenance_repair"),
)

# model.XMediaTranscriptArticleTitle: an item whose transcript enrichment has text shows it as
# its article.
X_MEDIA_TRANSCRIPT_ARTICLE_TITLE = "X Media Transcript"

_TEXT = "TEXT NOT NULL DEFAULT ''"
_INTEGER = "INTEGER NOT NULL DEFAULT 0"

_ITEMS_TABLE = """CREATE TABLE IF NOT EXISTS items (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_key TEXT NOT NULL UNIQUE,
    source_type TEXT NOT NULL,
    external_id TEXT NOT NULL,
    canonical_url TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    author_handle TEXT NOT NULL DEFAULT '',
    author_name TEXT NOT NULL DEFAULT '',
    published_at TEXT NOT NULL DEFAULT '',
    saved_at TEXT NOT NULL DEFAULT '',
    synced_at TEXT NOT NULL DEFAULT '',
    language TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    article_title TEXT NOT NULL DEFAULT '',
    article_text TEXT NOT NULL DEFAULT '',
    primary_category TEXT NOT NULL DEFAULT '',
    primary_domain TEXT NOT NULL DEFAULT '',
    links_json TEXT NOT NULL DEFAULT '[]',
    categories TEXT NOT NULL DEFAULT '',
    domains TEXT NOT NULL DEFAULT '',
    github_urls TEXT NOT NULL DEFAULT '',
    folder_names TEXT NOT NULL DEFAULT '',
    like_count INTEGER NOT NULL DEFAULT 0,
    repost_count INTEGER NOT NULL DEFAULT 0,
    reply_count INTEGER NOT NULL DEFAULT 0,
    quote_count INTEGER NOT NULL DEFAULT 0,
    bookmark_count INTEGER NOT NULL DEFAULT 0,
    content_hash TEXT NOT NULL,
    note_path TEXT NOT NULL DEFAULT '',
    raw_json TEXT NOT NULL,
    imported_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL
)"""

_ITEMS_INDEXES = (
    "CREATE INDEX IF NOT EXISTS idx_items_source_type ON items(source_type)",
    "CREATE INDEX IF NOT EXISTS idx_items_external_id ON items(external_id)",
    "CREATE INDEX IF NOT EXISTS idx_items_last_seen_at ON items(last_seen_at)",
    "CREATE INDEX IF NOT EXISTS idx_items_primary_domain ON items(primary_domain)",
    "CREATE INDEX IF NOT EXISTS idx_items_primary_category ON items(primary_category)",
)

# ensureItemColumns, in dbrain's order.
_ITEM_ADDED_COLUMNS = tuple(
    (name, _TEXT)
    for name in (
        "x_post_text",
        "x_post_lang",
        "x_post_json",
        "x_post_fetched_at",
        "x_post_status",
        "x_post_error",
        "link_extract_synced_at",
        "summary_text",
        "summary_json",
        "summary_status",
        "summary_error",
        "summary_model",
        "summary_prompt_version",
        "summary_tool",
        "summary_tool_version",
        "summary_input_hash",
        "summarized_at",
        "ocr_text",
        "ocr_json",
        "ocr_status",
        "ocr_error",
        "ocr_model",
        "ocr_tool",
        "ocr_tool_version",
        "ocr_input_hash",
        "ocr_at",
        "x_media_transcript_status",
        "x_media_transcript_error",
        "x_media_transcript_at",
        "user_tags",
    )
)

_SOURCES_TABLE = """CREATE TABLE IF NOT EXISTS sources (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_key TEXT NOT NULL UNIQUE,
    canonical_url TEXT NOT NULL,
    normalized_url TEXT NOT NULL UNIQUE,
    source_type TEXT NOT NULL,
    domain TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    site_name TEXT NOT NULL DEFAULT '',
    extracted_text TEXT NOT NULL DEFAULT '',
    extract_json TEXT NOT NULL DEFAULT '',
    extract_status TEXT NOT NULL DEFAULT '',
    extract_error TEXT NOT NULL DEFAULT '',
    extract_failure_kind TEXT NOT NULL DEFAULT '',
    extract_failure_count INTEGER NOT NULL DEFAULT 0,
    extract_first_failed_at TEXT NOT NULL DEFAULT '',
    extract_last_failed_at TEXT NOT NULL DEFAULT '',
    extracted_at TEXT NOT NULL DEFAULT '',
    extract_tool TEXT NOT NULL DEFAULT '',
    extract_tool_version TEXT NOT NULL DEFAULT '',
    summary_text TEXT NOT NULL DEFAULT '',
    summary_json TEXT NOT NULL DEFAULT '',
    summary_status TEXT NOT NULL DEFAULT '',
    summary_error TEXT NOT NULL DEFAULT '',
    summary_model TEXT NOT NULL DEFAULT '',
    summary_content_hash TEXT NOT NULL DEFAULT '',
    summary_prompt_version TEXT NOT NULL DEFAULT '',
    summary_tool TEXT NOT NULL DEFAULT '',
    summary_tool_version TEXT NOT NULL DEFAULT '',
    summarized_at TEXT NOT NULL DEFAULT '',
    content_hash TEXT NOT NULL DEFAULT '',
    note_path TEXT NOT NULL DEFAULT '',
    user_tags TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
)"""

_SOURCE_STATEMENTS = (
    "CREATE INDEX IF NOT EXISTS idx_sources_source_type ON sources(source_type)",
    "CREATE INDEX IF NOT EXISTS idx_sources_domain ON sources(domain)",
    "CREATE INDEX IF NOT EXISTS idx_sources_created_at ON sources(created_at)",
    "CREATE INDEX IF NOT EXISTS idx_sources_updated_at ON sources(updated_at)",
    "CREATE INDEX IF NOT EXISTS idx_sources_extracted_at ON sources(extracted_at)",
    "CREATE INDEX IF NOT EXISTS idx_sources_summarized_at ON sources(summarized_at)",
    "CREATE INDEX IF NOT EXISTS idx_sources_extract_last_failed_at"
    " ON sources(extract_last_failed_at)",
    "CREATE INDEX IF NOT EXISTS idx_sources_extract_status ON sources(extract_status)",
    "CREATE INDEX IF NOT EXISTS idx_sources_summary_status ON sources(summary_status)",
    """CREATE TABLE IF NOT EXISTS item_source_links (
    item_id INTEGER NOT NULL,
    source_id INTEGER NOT NULL,
    original_url TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (item_id, source_id),
    FOREIGN KEY (item_id) REFERENCES items(id) ON DELETE CASCADE,
    FOREIGN KEY (source_id) REFERENCES sources(id) ON DELETE CASCADE
)""",
    "CREATE INDEX IF NOT EXISTS idx_item_source_links_source_id ON item_source_links(source_id)",
    """CREATE TABLE IF NOT EXISTS source_summary_versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_id INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    summary_text TEXT NOT NULL,
    summary_json TEXT NOT NULL,
    summary_status TEXT NOT NULL,
    summary_error TEXT NOT NULL DEFAULT '',
    summary_model TEXT NOT NULL DEFAULT '',
    summary_prompt_version TEXT NOT NULL DEFAULT '',
    summary_tool TEXT NOT NULL DEFAULT '',
    summary_tool_version TEXT NOT NULL DEFAULT '',
    summarized_at TEXT NOT NULL,
    FOREIGN KEY (source_id) REFERENCES sources(id) ON DELETE CASCADE
)""",
    "CREATE INDEX IF NOT EXISTS idx_source_summary_versions_source_id"
    " ON source_summary_versions(source_id, summarized_at DESC)",
)

# ensureSourceColumns repairs databases created before these columns existed.
_SOURCE_ADDED_COLUMNS = tuple(
    (name, _INTEGER if name == "extract_failure_count" else _TEXT)
    for name in (
        "domain",
        "description",
        "site_name",
        "extracted_text",
        "extract_json",
        "extract_status",
        "extract_error",
        "extract_failure_kind",
        "extract_failure_count",
        "extract_first_failed_at",
        "extract_last_failed_at",
        "extracted_at",
        "extract_tool",
        "extract_tool_version",
        "summary_text",
        "summary_json",
        "summary_status",
        "summary_error",
        "summary_model",
        "summary_content_hash",
        "summary_prompt_version",
        "summary_tool",
        "summary_tool_version",
        "summarized_at",
        "content_hash",
        "note_path",
        "user_tags",
    )
)


def _column_names(create_table: str) -> tuple[str, ...]:
    """Column names of a ``CREATE TABLE`` written one column per line, as above."""
    lines = create_table.splitlines()[1:-1]
    return tuple(
        line.split()[0] for line in lines if not line.lstrip().startswith(("PRIMARY", "FOREIGN"))
    )


# Every column in table order, as PRAGMA table_info reports it on a database dbrain created.
ITEM_COLUMNS = _column_names(_ITEMS_TABLE) + tuple(name for name, _ in _ITEM_ADDED_COLUMNS)
SOURCE_COLUMNS = _column_names(_SOURCES_TABLE)

_SOURCES_FTS = """CREATE VIRTUAL TABLE IF NOT EXISTS sources_fts USING fts5(
    source_key UNINDEXED,
    title,
    description,
    site_name,
    extracted_text,
    summary_text,
    domain,
    tokenize = 'porter unicode61'
)"""

_ITEM_LINK_STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS item_item_links (
    parent_item_id INTEGER NOT NULL,
    child_item_id INTEGER NOT NULL,
    link_kind TEXT NOT NULL DEFAULT '',
    ordinal INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (parent_item_id, child_item_id, link_kind),
    UNIQUE (parent_item_id, link_kind, ordinal),
    FOREIGN KEY (parent_item_id) REFERENCES items(id) ON DELETE CASCADE,
    FOREIGN KEY (child_item_id) REFERENCES items(id) ON DELETE CASCADE
)""",
    "CREATE INDEX IF NOT EXISTS idx_item_item_links_child_item_id"
    " ON item_item_links(child_item_id)",
    "CREATE INDEX IF NOT EXISTS idx_item_item_links_link_kind ON item_item_links(link_kind)",
)

_ITEM_ENRICHMENT_STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS item_enrichments (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id INTEGER NOT NULL,
    role TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT '',
    text TEXT NOT NULL DEFAULT '',
    raw_json TEXT NOT NULL DEFAULT '',
    error TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    prompt_version TEXT NOT NULL DEFAULT '',
    tool TEXT NOT NULL DEFAULT '',
    tool_version TEXT NOT NULL DEFAULT '',
    input_hash TEXT NOT NULL DEFAULT '',
    completed_at TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE(item_id, role),
    FOREIGN KEY(item_id) REFERENCES items(id) ON DELETE CASCADE
)""",
    "CREATE INDEX IF NOT EXISTS idx_item_enrichments_item ON item_enrichments(item_id)",
    "CREATE INDEX IF NOT EXISTS idx_item_enrichments_role_status ON item_enrichments(role, status)",
    "CREATE INDEX IF NOT EXISTS idx_item_enrichments_updated_at ON item_enrichments(updated_at)",
    "CREATE INDEX IF NOT EXISTS idx_item_enrichments_completed_at"
    " ON item_enrichments(completed_at)",
)

_ITEMS_FTS = """CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(
    source_key UNINDEXED,
    title,
    text,
    article_title,
    article_text,
    author_handle,
    author_name,
    primary_category,
    primary_domain,
    tokenize = 'porter unicode61'
)"""

_SCHEMA_MIGRATIONS = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)"""

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


# dbrain's ``itemhash.Compute``: the fields an item's content hash covers, in its order.
ITEM_HASH_FIELDS = (
    "source_type",
    "source_key",
    "canonical_url",
    "title",
    "author_handle",
    "author_name",
    "published_at",
    "saved_at",
    "language",
    "text",
    "article_title",
    "article_text",
    "primary_category",
    "primary_domain",
    "links_json",
    "categories",
    "domains",
    "github_urls",
    "folder_names",
    "like_count",
    "repost_count",
    "reply_count",
    "quote_count",
    "bookmark_count",
)


GO_JSON_ESCAPES = (
    ("&", "\\u0026"),
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def item_content_hash(item: Mapping[str, Any]) -> str:
    """An item's ``content_hash`` as dbrain's ``itemhash.Compute`` makes it: SHA-256 (hex) of
    the Go JSON of ``ITEM_HASH_FIELDS`` in order (keys as the columns are named)."""
    payload = {
        name: item.get(name, 0 if name.endswith("_count") else "") for name in ITEM_HASH_FIELDS
    }
    return hashlib.sha256(go_json(payload).encode()).hexdigest()


def go_json(value: Any) -> str:
    """JSON as Go's ``json.Marshal`` writes it (dbrain's ``links_json``, ``raw_json``): compact,
    UTF-8, with ``<``, ``>``, ``&``, U+2028 and U+2029 escaped."""
    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in GO_JSON_ESCAPES:
        encoded = encoded.replace(char, escaped)
    return encoded


def utc_now() -> str:
    """Now as dbrain stores timestamps: RFC3339 UTC with second precision."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def create_brain_schema(conn: sqlite3.Connection, *, applied_at: str | None = None) -> None:
    """Create dbrain's tables, indexes and FTS tables as schema v20, then commit.

    Idempotent: everything is ``IF NOT EXISTS`` and missing columns are added, as dbrain's own
    migrations do. Records migrations 1-20 (``applied_at`` defaults to now) and sets
    ``PRAGMA user_version = 20`` so the file looks fully migrated. No triggers are created;
    see ``create_retrieval_triggers``.
    """
    # Columns are repaired before indexes are created, unlike dbrain, so that an old table
    # missing an indexed column is repaired rather than rejected; fresh files are identical.
    # One transaction: each statement committed alone would sync the file ~140 times.
    if not conn.in_transaction:
        conn.execute("BEGIN")
    _execute_all(conn, (_ITEMS_TABLE,))
    _ensure_columns(conn, "items", _ITEM_ADDED_COLUMNS)
    _execute_all(conn, _ITEMS_INDEXES)
    _execute_all(conn, (_SOURCES_TABLE,))
    _ensure_columns(conn, "sources", _SOURCE_ADDED_COLUMNS)
    _execute_all(conn, _SOURCE_STATEMENTS)
    _ensure_columns(
        conn, "source_summary_versions", (("summary_tool", _TEXT), ("summary_tool_version", _TEXT))
    )
    _execute_all(conn, (_SOURCES_FTS, *_ITEM_LINK_STATEMENTS, *_ITEM_ENRICHMENT_STATEMENTS))
    _execute_all(conn, (_ITEMS_FTS, _SCHEMA_MIGRATIONS))
    stamp = applied_at or utc_now()
    conn.executemany(
        "INSERT OR IGNORE INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        [(version, name, stamp) for version, name in MIGRATIONS],
    )
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.commit()


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


def sqlite_database(conn: sqlite3.Connection) -> sqlite_utils.Database:
    """sqlite-utils over a connection Datasette owns (a brain's or the plugin database's),
    leaving the connection's settings as they were; writes nest in the caller's transaction.

    Its defaults would turn on ``recursive_triggers`` and run sqlite-utils plugins on what may
    be Datasette's shared write connection to the user's real brain.
    """
    return sqlite_utils.Database(conn, recursive_triggers=False, execute_plugins=False)


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


def _execute_all(conn: sqlite3.Connection, statements: Iterable[str]) -> None:
    for statement in statements:
        conn.execute(statement)


def _ensure_columns(
    conn: sqlite3.Connection, table: str, columns: Iterable[tuple[str, str]]
) -> None:
    """dbrain's ``ensureColumns``: add each missing column with ``ALTER TABLE``."""
    existing = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    for name, definition in columns:
        if name not in existing:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {definition}")


# ---------------------------------------------------------------------------------------------
# Retrieval dirty-tracking (migrations 17/18, internal/store/retrieval_dirty.go).
#
# A fixture-level reproduction: the tables the triggers read or write (with the columns
# dbrain's semantic-foundation migration gives them) and the nine triggers, so a test can show
# that plain INSERT/UPDATE statements from this plugin keep working on a brain that has them.

_RETRIEVAL_NOW = "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"
_PROJECTION_VERSION = "retrieval-projection-v2"
_CHUNKER_VERSION = "retrieval-chunker-v3"
_PROJECTED_ROLES = "('summary', 'ocr', 'x_media_transcript')"

_RETRIEVAL_TABLES = (
    """CREATE TABLE IF NOT EXISTS retrieval_chunks (
    chunk_id TEXT PRIMARY KEY,
    parent_kind TEXT NOT NULL,
    parent_source_key TEXT NOT NULL,
    evidence_role TEXT NOT NULL,
    section_ordinal INTEGER NOT NULL DEFAULT 0,
    ordinal INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    projection_version TEXT NOT NULL DEFAULT '',
    chunker_version TEXT NOT NULL,
    input_content_hash TEXT NOT NULL,
    chunk_text_hash TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    section_key TEXT NOT NULL DEFAULT '',
    heading_hash TEXT NOT NULL DEFAULT '',
    derived INTEGER NOT NULL DEFAULT 0,
    UNIQUE(parent_kind, parent_source_key, ordinal)
)""",
    """CREATE TABLE IF NOT EXISTS retrieval_embeddings (
    chunk_id TEXT NOT NULL,
    profile_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    representation TEXT NOT NULL,
    normalization TEXT NOT NULL,
    vector_bytes BLOB NOT NULL,
    chunk_text_hash TEXT NOT NULL,
    status TEXT NOT NULL,
    attempt_count INTEGER NOT NULL DEFAULT 0,
    last_error TEXT NOT NULL DEFAULT '',
    next_attempt_at TEXT NOT NULL DEFAULT '',
    embedded_at TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL,
    revision INTEGER NOT NULL DEFAULT 0,
    vector_hash TEXT NOT NULL DEFAULT '',
    PRIMARY KEY(chunk_id, profile_id),
    FOREIGN KEY(chunk_id) REFERENCES retrieval_chunks(chunk_id) ON DELETE CASCADE
)""",
    """CREATE TABLE IF NOT EXISTS retrieval_index_generations (
    generation_id TEXT PRIMARY KEY,
    profile_id TEXT NOT NULL,
    backend TEXT NOT NULL,
    backend_version TEXT NOT NULL,
    dimensions INTEGER NOT NULL,
    distance_metric TEXT NOT NULL,
    indexed_chunk_count INTEGER NOT NULL DEFAULT 0,
    source_manifest_hash TEXT NOT NULL DEFAULT '',
    build_status TEXT NOT NULL,
    build_error TEXT NOT NULL DEFAULT '',
    relative_cache_path TEXT NOT NULL DEFAULT '',
    build_started_at TEXT NOT NULL DEFAULT '',
    build_completed_at TEXT NOT NULL DEFAULT '',
    activated_at TEXT NOT NULL DEFAULT '',
    active INTEGER NOT NULL DEFAULT 0 CHECK(active IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS retrieval_state (
    singleton INTEGER PRIMARY KEY CHECK(singleton = 1),
    database_id TEXT NOT NULL,
    projection_work_revision INTEGER NOT NULL DEFAULT 0,
    purge_epoch INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL
)""",
    """CREATE TABLE IF NOT EXISTS retrieval_parent_projections (
    parent_kind TEXT NOT NULL,
    parent_source_key TEXT NOT NULL,
    projection_hash TEXT NOT NULL DEFAULT '',
    projection_version TEXT NOT NULL DEFAULT '',
    chunker_version TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL DEFAULT 'pending',
    chunk_count INTEGER NOT NULL DEFAULT 0,
    reason TEXT NOT NULL DEFAULT '',
    dirty_at TEXT NOT NULL DEFAULT '',
    dirty_revision INTEGER NOT NULL DEFAULT 0,
    projected_revision INTEGER NOT NULL DEFAULT 0,
    projected_at TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL DEFAULT '',
    PRIMARY KEY(parent_kind, parent_source_key)
)""",
    "CREATE INDEX IF NOT EXISTS idx_retrieval_parent_projections_pending"
    " ON retrieval_parent_projections(status, dirty_revision, parent_kind, parent_source_key)",
)


def _state_bump() -> str:
    return (
        "UPDATE retrieval_state SET projection_work_revision = projection_work_revision + 1,"
        f" updated_at = {_RETRIEVAL_NOW} WHERE singleton = 1;"
    )


def _invalidate_generations(kind: str, key: str, when: str) -> str:
    return f"""UPDATE retrieval_index_generations
        SET build_status = 'stale', active = 0, activated_at = '', updated_at = {_RETRIEVAL_NOW}
        WHERE ({when}) AND build_status != 'stale' AND profile_id IN (
            SELECT DISTINCT embedding.profile_id FROM retrieval_embeddings embedding
            JOIN retrieval_chunks chunk ON chunk.chunk_id = embedding.chunk_id
            WHERE chunk.parent_kind = '{kind}' AND chunk.parent_source_key = {key});"""


def _upsert_pending(kind: str, key: str, when: str) -> str:
    return f"""INSERT INTO retrieval_parent_projections (
            parent_kind, parent_source_key, projection_version, chunker_version,
            status, reason, dirty_at, dirty_revision, updated_at)
        SELECT '{kind}', {key}, '{_PROJECTION_VERSION}', '{_CHUNKER_VERSION}',
            'pending', '', {_RETRIEVAL_NOW}, projection_work_revision, {_RETRIEVAL_NOW}
        FROM retrieval_state
        WHERE singleton = 1 AND ({when}) AND trim(COALESCE({key}, '')) != ''
        ON CONFLICT(parent_kind, parent_source_key) DO UPDATE SET
            projection_version = excluded.projection_version,
            chunker_version = excluded.chunker_version,
            status = excluded.status,
            reason = '',
            dirty_at = excluded.dirty_at,
            dirty_revision = excluded.dirty_revision,
            updated_at = excluded.updated_at;"""


def _row_trigger(name: str, event: str, table: str, kind: str, key: str, when: str) -> str:
    return f"""CREATE TRIGGER {name}
    AFTER {event} ON {table}
    WHEN ({when}) AND trim(COALESCE({key}, '')) != ''
    BEGIN
        {_state_bump()}
        {_invalidate_generations(kind, key, "1")}
        {_upsert_pending(kind, key, "1")}
    END"""


def _update_trigger(
    name: str, table: str, kind: str, columns: tuple[str, ...], old_key: str, new_key: str
) -> str:
    changed = " OR ".join(f"OLD.{column} IS NOT NEW.{column}" for column in columns)
    renamed = f"{old_key} IS NOT {new_key}"
    return f"""CREATE TRIGGER {name}
    AFTER UPDATE OF {", ".join(columns)} ON {table}
    WHEN {changed}
    BEGIN
        {_state_bump()}
        {_invalidate_generations(kind, old_key, renamed)}
        {_invalidate_generations(kind, new_key, "1")}
        {_upsert_pending(kind, old_key, renamed)}
        {_upsert_pending(kind, new_key, "1")}
    END"""


def _enrichment_update_trigger() -> str:
    old_key, new_key = _ENRICHMENT_OLD_KEY, _ENRICHMENT_NEW_KEY
    old_projected = f"OLD.role IN {_PROJECTED_ROLES}"
    new_projected = f"NEW.role IN {_PROJECTED_ROLES}"
    return f"""CREATE TRIGGER trg_retrieval_item_enrichments_dirty_update
    AFTER UPDATE OF item_id, role, text ON item_enrichments
    WHEN (OLD.item_id IS NOT NEW.item_id OR OLD.role IS NOT NEW.role OR OLD.text IS NOT NEW.text)
        AND (({old_projected}) OR ({new_projected}))
    BEGIN
        {_state_bump()}
        {_invalidate_generations("item", old_key, old_projected)}
        {_invalidate_generations("item", new_key, new_projected)}
        {_upsert_pending("item", old_key, old_projected)}
        {_upsert_pending("item", new_key, new_projected)}
    END"""


_ITEM_DIRTY_COLUMNS = (
    "source_key",
    "content_hash",
    "title",
    "source_type",
    "author_name",
    "author_handle",
    "text",
    "x_post_text",
    "ocr_text",
    "article_title",
    "article_text",
    "summary_text",
    "note_path",
)
_SOURCE_DIRTY_COLUMNS = (
    "source_key",
    "content_hash",
    "title",
    "source_type",
    "domain",
    "extracted_text",
    "summary_text",
    "note_path",
)
_ENRICHMENT_NEW_KEY = "(SELECT source_key FROM items WHERE id = NEW.item_id)"
_ENRICHMENT_OLD_KEY = "(SELECT source_key FROM items WHERE id = OLD.item_id)"


def _dirty_triggers() -> tuple[tuple[str, str], ...]:
    """(name, CREATE TRIGGER) for the nine ``semanticProjectionDirtyTriggers``."""
    triggers: list[tuple[str, str]] = []
    for table, kind, columns in (
        ("items", "item", _ITEM_DIRTY_COLUMNS),
        ("sources", "source", _SOURCE_DIRTY_COLUMNS),
    ):
        prefix = f"trg_retrieval_{table}_dirty"
        triggers += [
            (
                f"{prefix}_insert",
                _row_trigger(f"{prefix}_insert", "INSERT", table, kind, "NEW.source_key", "1"),
            ),
            (
                f"{prefix}_update",
                _update_trigger(
                    f"{prefix}_update", table, kind, columns, "OLD.source_key", "NEW.source_key"
                ),
            ),
            (
                f"{prefix}_delete",
                _row_trigger(f"{prefix}_delete", "DELETE", table, kind, "OLD.source_key", "1"),
            ),
        ]
    prefix = "trg_retrieval_item_enrichments_dirty"
    triggers += [
        (
            f"{prefix}_insert",
            _row_trigger(
                f"{prefix}_insert",
                "INSERT",
                "item_enrichments",
                "item",
                _ENRICHMENT_NEW_KEY,
                f"NEW.role IN {_PROJECTED_ROLES}",
            ),
        ),
        (f"{prefix}_update", _enrichment_update_trigger()),
        (
            f"{prefix}_delete",
            _row_trigger(
                f"{prefix}_delete",
                "DELETE",
                "item_enrichments",
                "item",
                _ENRICHMENT_OLD_KEY,
                f"OLD.role IN {_PROJECTED_ROLES}",
            ),
        ),
    ]
    return tuple(triggers)


_RETRIEVAL_TRIGGERS = _dirty_triggers()

# Every statement create_retrieval_triggers runs, in order (the triggers are dropped first,
# as dbrain does, so re-running replaces them).
RETRIEVAL_DIRTY_DDL: tuple[str, ...] = (
    *_RETRIEVAL_TABLES,
    *(f"DROP TRIGGER IF EXISTS {name}" for name, _ in _RETRIEVAL_TRIGGERS),
    *(sql for _, sql in _RETRIEVAL_TRIGGERS),
)


def create_retrieval_triggers(
    conn: sqlite3.Connection, *, database_id: str = "", now: str | None = None
) -> None:
    """Reproduce dbrain's retrieval dirty-tracking triggers and the tables they touch, then commit.

    Also creates the ``retrieval_state`` singleton row (dbrain generates a random
    ``database_id``; pass one for reproducible fixtures). From then on every insert into
    ``items``/``sources``/``item_enrichments`` bumps ``projection_work_revision`` and queues a
    ``pending`` row in ``retrieval_parent_projections``, as in a real brain.
    """
    _execute_all(conn, RETRIEVAL_DIRTY_DDL)
    conn.execute(
        "INSERT OR IGNORE INTO retrieval_state"
        " (singleton, database_id, projection_work_revision, purge_epoch, updated_at)"
        " VALUES (1, ?, 0, 0, ?)",
        (database_id, now or utc_now()),
    )
    conn.commit()
