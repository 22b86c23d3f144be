"""dbrain's schema (version 20): its tables, indexes and FTS tables, as dbrain creates them.

One implementation for everything that must look like dbrain wrote it: the demo builder, test
fixtures and promotion of web results into a real ``brain.db``. The statements follow dbrain's
``internal/store`` files: ``CREATE TABLE IF NOT EXISTS`` with the original columns, then
``ALTER TABLE ... ADD COLUMN`` for columns added later (``ensureColumns``), so a fresh database
has the same columns, order and ``sqlite_master`` text as one dbrain created.

Not reproduced: media, feed, auth, MCP, chat-share, link-capture and semantic-index tables. A
research plugin never reads them and no trigger of interest touches them. The FTS rows are
written by ``fts_rows`` and the retrieval triggers created by ``triggers``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import sqlite_utils

__all__ = [
    "ITEM_COLUMNS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SOURCE_COLUMNS",
    "X_MEDIA_TRANSCRIPT_ARTICLE_TITLE",
    "create_brain_schema",
    "sqlite_database",
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


def sqlite_database(conn: sqlite3.Connection) -> sqlite_utils.Database:
    """sqlite-utils over a connection Datasette owns (a brain's or the plugin database's),
    leaving the connection's settings as they were; writes nest in the caller's transaction.

    Its defaults would turn on ``recursive_triggers`` and run sqlite-utils plugins on what may
    be Datasette's shared write connection to the user's real brain.
    """
    return sqlite_utils.Database(conn, recursive_triggers=False, execute_plugins=False)


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
