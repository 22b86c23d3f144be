"""dbrain's retrieval dirty-tracking triggers (migrations 17/18, internal/store/retrieval_dirty.go).

A fixture-level reproduction: the tables the triggers read or write (with the columns dbrain's
semantic-foundation migration gives them) and the nine triggers, so a test can show that plain
INSERT/UPDATE statements from this plugin keep working on a brain that has them. Its own module
beside ``schema`` (the tables every brain has): only the demo and tests create them.
"""

from __future__ import annotations

import sqlite3

from .schema import utc_now

__all__ = ["RETRIEVAL_DIRTY_DDL", "create_retrieval_triggers"]

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
    for statement in RETRIEVAL_DIRTY_DDL:
        conn.execute(statement)
    conn.execute(
        "INSERT OR IGNORE INTO retrieval_state"
        " (singleton, database_id, projection_work_revision, purge_epoch, updated_at)"
        " VALUES (1, ?, 0, 0, ?)",
        (database_id, now or utc_now()),
    )
    conn.commit()
