"""The demo brain: dbrain's schema v20, rows shaped like dbrain's, and the demo questions."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from datasette_dbrain_websearch.demo import DEMO_QUESTIONS, build_demo_brain
from datasette_dbrain_websearch.fts_rows import sync_item_fts, sync_source_fts
from datasette_dbrain_websearch.schema import create_brain_schema
from datasette_dbrain_websearch.triggers import create_retrieval_triggers
from datasette_dbrain_websearch.urls import normalize_url

# internal/store/schema.go, then ensureItemColumns, in order.
ITEM_COLUMNS = (
    "id source_key source_type external_id canonical_url title author_handle author_name "
    "published_at saved_at synced_at language text article_title article_text primary_category "
    "primary_domain links_json categories domains github_urls folder_names like_count "
    "repost_count reply_count quote_count bookmark_count content_hash note_path raw_json "
    "imported_at updated_at last_seen_at x_post_text x_post_lang x_post_json x_post_fetched_at "
    "x_post_status x_post_error link_extract_synced_at summary_text summary_json summary_status "
    "summary_error summary_model summary_prompt_version summary_tool summary_tool_version "
    "summary_input_hash summarized_at ocr_text ocr_json ocr_status ocr_error ocr_model ocr_tool "
    "ocr_tool_version ocr_input_hash ocr_at x_media_transcript_status x_media_transcript_error "
    "x_media_transcript_at user_tags"
).split()
# internal/store/source_schema.go.
SOURCE_COLUMNS = (
    "id source_key canonical_url normalized_url source_type domain title description site_name "
    "extracted_text extract_json extract_status extract_error extract_failure_kind "
    "extract_failure_count extract_first_failed_at extract_last_failed_at extracted_at "
    "extract_tool extract_tool_version summary_text summary_json summary_status summary_error "
    "summary_model summary_content_hash summary_prompt_version summary_tool summary_tool_version "
    "summarized_at content_hash note_path user_tags created_at updated_at"
).split()
ITEM_INTEGERS = {"like_count", "repost_count", "reply_count", "quote_count", "bookmark_count"}
ITEM_REQUIRED = {
    "source_key", "source_type", "external_id", "canonical_url", "content_hash", "raw_json",
    "imported_at", "updated_at", "last_seen_at",
}  # fmt: skip
SOURCE_REQUIRED = {
    "source_key", "canonical_url", "normalized_url", "source_type", "created_at", "updated_at",
}  # fmt: skip
ITEM_PREFIXES = ("x:", "apple-note:", "gh-star:", "feed-entry:", "yt:", "safari-tab:", "manual:")
RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")
TAGS = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*(?:, [a-z0-9]+(?:-[a-z0-9]+)*)*")
CLUSTER_QUESTIONS = [
    "fts5 bm25",
    "porter stemming",
    "datasette plugin hooks",
    "tokio scheduler",
    "espresso grinder",
    "sourdough hydration",
    "kubernetes networking",
    "cold climate heat pump",
    "bikepacking tubeless",
]


@pytest.fixture(scope="module")
def demo_path(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "brain.db"
    build_demo_brain(path)  # how long it takes is bench/'s business, not a test's
    return path


@pytest.fixture
def db(demo_path):
    conn = sqlite3.connect(demo_path)
    conn.row_factory = sqlite3.Row
    yield conn
    conn.close()


def dbrain_match(question: str, operator: str = "AND") -> str:
    """dbrain's buildFTSQueryWithOperator: quoted prefix terms joined by AND or OR."""
    terms = []
    for token in question.split():
        token = re.sub(r"^[\W_]+|[\W_]+$", "", token)
        if token:
            terms.append('"' + token.replace('"', '""') + '"*')
    return f" {operator} ".join(terms) or '""'


def fts_keys(conn, table: str, match: str) -> set[str]:
    rows = conn.execute(f"SELECT source_key FROM {table} WHERE {table} MATCH ?", (match,))
    return {row[0] for row in rows}


def search(conn, question: str, operator: str = "AND") -> set[str]:
    match = dbrain_match(question, operator)
    return fts_keys(conn, "items_fts", match) | fts_keys(conn, "sources_fts", match)


def tag_list(value: str) -> list[str]:
    return [tag.strip() for tag in value.split(",") if tag.strip()]


def packed(*parts: str) -> str:
    return "\n\n".join(part.strip() for part in parts if part.strip())


# -----------------------------------------------------------------------------------------------
# Schema.


def test_items_and_sources_have_dbrains_columns_in_order(db):
    items = db.execute("PRAGMA table_info(items)").fetchall()
    assert [row["name"] for row in items] == ITEM_COLUMNS
    for row in items:
        if row["name"] == "id":
            assert (row["type"], row["pk"]) == ("INTEGER", 1)
        elif row["name"] in ITEM_INTEGERS:
            assert (row["type"], row["notnull"], row["dflt_value"]) == ("INTEGER", 1, "0")
        elif row["name"] in ITEM_REQUIRED:
            assert (row["type"], row["notnull"], row["dflt_value"]) == ("TEXT", 1, None)
        elif row["name"] == "links_json":
            assert (row["type"], row["notnull"], row["dflt_value"]) == ("TEXT", 1, "'[]'")
        else:
            assert (row["type"], row["notnull"], row["dflt_value"]) == ("TEXT", 1, "''")

    sources = db.execute("PRAGMA table_info(sources)").fetchall()
    assert [row["name"] for row in sources] == SOURCE_COLUMNS
    for row in sources:
        if row["name"] in ("id", "extract_failure_count"):
            assert row["type"] == "INTEGER"
        elif row["name"] in SOURCE_REQUIRED:
            assert (row["notnull"], row["dflt_value"]) == (1, None)
        else:
            assert (row["type"], row["notnull"], row["dflt_value"]) == ("TEXT", 1, "''")


def test_unique_keys_and_indexes(db):
    unique = {
        (table, info["name"])
        for table in ("items", "sources")
        for index in db.execute(f"PRAGMA index_list({table})")
        if index["unique"]
        for info in db.execute(f"PRAGMA index_info({index['name']})")
    }
    assert {("items", "source_key"), ("sources", "source_key"), ("sources", "normalized_url")} <= (
        unique
    )
    names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {
        "idx_items_source_type", "idx_items_external_id", "idx_items_last_seen_at",
        "idx_items_primary_domain", "idx_items_primary_category", "idx_sources_source_type",
        "idx_sources_domain", "idx_sources_created_at", "idx_sources_updated_at",
        "idx_sources_extracted_at", "idx_sources_summarized_at",
        "idx_sources_extract_last_failed_at", "idx_sources_extract_status",
        "idx_sources_summary_status", "idx_item_source_links_source_id",
        "idx_source_summary_versions_source_id", "idx_item_enrichments_item",
        "idx_item_enrichments_role_status", "idx_item_enrichments_updated_at",
        "idx_item_enrichments_completed_at", "idx_item_item_links_child_item_id",
    } <= names  # fmt: skip


def test_link_enrichment_and_history_tables(db):
    def columns(table):
        return [row["name"] for row in db.execute(f"PRAGMA table_info({table})")]

    assert columns("item_source_links") == ["item_id", "source_id", "original_url", "created_at"]
    assert (
        columns("item_enrichments")
        == (
            "id item_id role status text raw_json error model prompt_version tool tool_version "
            "input_hash completed_at created_at updated_at"
        ).split()
    )
    assert (
        columns("source_summary_versions")
        == (
            "id source_id content_hash summary_text summary_json summary_status summary_error "
            "summary_model summary_prompt_version summary_tool summary_tool_version summarized_at"
        ).split()
    )
    assert columns("item_item_links") == [
        "parent_item_id", "child_item_id", "link_kind", "ordinal", "created_at", "updated_at",
    ]  # fmt: skip
    assert columns("schema_migrations") == ["version", "name", "applied_at"]
    item = db.execute("SELECT id FROM items LIMIT 1").fetchone()[0]
    insert = (
        "INSERT INTO item_enrichments (item_id, role, created_at, updated_at)"
        " VALUES (?, 'z', '', '')"
    )
    db.execute(insert, (item,))
    with pytest.raises(sqlite3.IntegrityError):  # UNIQUE(item_id, role)
        db.execute(insert, (item,))
    db.rollback()


def test_fts_tables_are_standalone_fts5_with_dbrains_columns(db):
    definitions = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE name LIKE '%_fts'"))
    for name, columns in (
        ("items_fts", "source_key title text article_title article_text author_handle "
                      "author_name primary_category primary_domain"),
        ("sources_fts", "source_key title description site_name extracted_text summary_text "
                        "domain"),
    ):  # fmt: skip
        sql = " ".join(definitions[name].split())
        assert "USING fts5(" in sql
        assert "source_key UNINDEXED," in sql
        assert "tokenize = 'porter unicode61'" in sql
        assert "content" not in sql.replace("content=", "CONTENT=").lower().split("(", 1)[0]
        assert "content=" not in sql.replace(" ", "")
        assert [row["name"] for row in db.execute(f"PRAGMA table_info({name})")] == columns.split()
    # No trigger keeps either FTS table in sync.
    triggers = db.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger'").fetchall()
    assert not [sql for (sql,) in triggers if "_fts" in sql]


def test_porter_stemming_and_unindexed_source_key(db):
    assert fts_keys(db, "sources_fts", "stems")  # "stem" in the text, found through porter
    key = db.execute("SELECT source_key FROM sources_fts LIMIT 1").fetchone()[0]
    assert not fts_keys(db, "sources_fts", '"' + key[4:] + '"')


def test_schema_version_and_migrations(db):
    assert db.execute("PRAGMA user_version").fetchone()[0] == 20
    migrations = dict(db.execute("SELECT version, name FROM schema_migrations"))
    assert sorted(migrations) == list(range(1, 21))
    assert migrations[1] == "current_schema_baseline"
    assert migrations[3] == "item_enrichments_current_state"
    assert migrations[12] == "audit_provenance_v1"
    assert all(name for name in migrations.values())


def test_create_brain_schema_is_idempotent_and_repairs_old_tables():
    # A brain from before the X-post, summary, OCR and tag columns existed.
    baseline = ITEM_COLUMNS[: ITEM_COLUMNS.index("last_seen_at") + 1]
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE items (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        + ", ".join(f"{name} TEXT NOT NULL DEFAULT ''" for name in baseline[1:])
        + ")"
    )
    conn.execute("CREATE TABLE sources (id INTEGER PRIMARY KEY AUTOINCREMENT, source_key TEXT"
                 " NOT NULL UNIQUE, canonical_url TEXT NOT NULL, normalized_url TEXT NOT NULL"
                 " UNIQUE, source_type TEXT NOT NULL, title TEXT NOT NULL DEFAULT '',"
                 " created_at TEXT NOT NULL, updated_at TEXT NOT NULL)")  # fmt: skip
    create_brain_schema(conn)
    create_brain_schema(conn)
    names = [row[1] for row in conn.execute("PRAGMA table_info(items)")]
    assert names == ITEM_COLUMNS
    source_names = {row[1] for row in conn.execute("PRAGMA table_info(sources)")}
    assert source_names == set(SOURCE_COLUMNS)
    assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == 20


# -----------------------------------------------------------------------------------------------
# Rows.


def test_counts_and_mix(db):
    assert 230 <= db.execute("SELECT count(*) FROM items").fetchone()[0] <= 270
    assert 140 <= db.execute("SELECT count(*) FROM sources").fetchone()[0] <= 170
    kinds = {row[0] for row in db.execute("SELECT DISTINCT source_type FROM items")}
    assert {"apple_note", "x_bookmark", "github_star", "youtube", "feed_entry", "safari_tab"} <= (
        kinds
    )
    types = {row[0] for row in db.execute("SELECT DISTINCT source_type FROM sources")}
    assert {"web", "github", "youtube", "pdf", "x_article"} <= types
    roles = dict(db.execute("SELECT role, count(*) FROM item_enrichments GROUP BY role"))
    assert roles["summary"] >= 20 and roles["ocr"] >= 8 and roles["x_media_transcript"] >= 1
    assert db.execute("SELECT count(*) FROM item_source_links").fetchone()[0] >= 150
    assert db.execute("SELECT count(*) FROM source_summary_versions").fetchone()[0] >= 50


def test_no_nulls_anywhere(db):
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert "items" in tables and "sources_fts" in tables
    for table in tables:
        for column in db.execute(f"PRAGMA table_info({table})"):
            nulls = db.execute(
                f'SELECT count(*) FROM "{table}" WHERE "{column["name"]}" IS NULL'
            ).fetchone()[0]
            assert nulls == 0, (table, column["name"])


def test_timestamps_tags_hashes_and_json(db):
    for table in ("items", "sources", "item_enrichments", "item_source_links"):
        stamp_columns = [
            row["name"]
            for row in db.execute(f"PRAGMA table_info({table})")
            if row["name"].endswith("_at")
        ]
        for row in db.execute(f"SELECT {', '.join(stamp_columns)} FROM {table}"):
            for value in row:
                assert value == "" or RFC3339.fullmatch(value), (table, value)
    for table in ("items", "sources"):
        for (tags,) in db.execute(f"SELECT user_tags FROM {table}"):
            assert tags == "" or TAGS.fullmatch(tags), tags
    for content_hash, raw_json, links_json in db.execute(
        "SELECT content_hash, raw_json, links_json FROM items"
    ):
        assert re.fullmatch(r"[0-9a-f]{64}", content_hash)
        assert isinstance(json.loads(raw_json), dict)
        assert isinstance(json.loads(links_json), list)
    tagged = {
        tag: db.execute(
            "SELECT count(*) FROM items WHERE instr(',' || replace(user_tags, ', ', ',') || ',',"
            " ',' || ? || ',') > 0",
            (tag,),
        ).fetchone()[0]
        for tag in ("sqlite", "espresso", "rust")
    }
    assert all(count >= 5 for count in tagged.values()), tagged


def test_item_keys_use_dbrains_prefixes(db):
    for key, note in db.execute("SELECT source_key, note_path FROM items"):
        assert key.startswith(ITEM_PREFIXES), key
        assert re.fullmatch(r"items/[a-z-]+/\d{4}/[^/]+\.md", note), note


def test_source_keys_and_note_paths_come_from_url_normalization(db):
    for row in db.execute("SELECT * FROM sources"):
        normalized = normalize_url(row["canonical_url"])
        assert row["normalized_url"] == row["canonical_url"] == normalized.canonical_url
        assert row["source_key"] == normalized.source_key
        assert row["note_path"] == normalized.note_path
        assert row["domain"] == normalized.domain
        assert row["source_type"] == normalized.source_type


def test_links_point_at_existing_rows_and_keep_the_original_url(db):
    rows = db.execute(
        "SELECT l.original_url, s.normalized_url FROM item_source_links l"
        " JOIN items i ON i.id = l.item_id JOIN sources s ON s.id = l.source_id"
    ).fetchall()
    assert len(rows) == db.execute("SELECT count(*) FROM item_source_links").fetchone()[0]
    assert all(normalize_url(original).normalized_url == url for original, url in rows)
    assert any(original != url for original, url in rows)  # tracking parameters were shared


def test_html_needing_title_exists(db):
    titles = [row[0] for row in db.execute("SELECT title FROM sources")]
    assert any("&" in title and "<b>" in title for title in titles)


# -----------------------------------------------------------------------------------------------
# FTS rows.


def test_fts_rowids_equal_base_ids(db):
    items = db.execute(
        "SELECT count(*), sum(i.source_key = f.source_key) FROM items i"
        " JOIN items_fts f ON f.rowid = i.id"
    ).fetchone()
    assert items[0] == items[1] == db.execute("SELECT count(*) FROM items").fetchone()[0]
    extracted = {row[0] for row in db.execute("SELECT id FROM sources WHERE extract_status = 'ok'")}
    indexed = {row[0] for row in db.execute("SELECT rowid FROM sources_fts")}
    assert indexed == extracted
    mismatched = db.execute(
        "SELECT count(*) FROM sources s JOIN sources_fts f ON f.rowid = s.id"
        " WHERE s.source_key != f.source_key OR s.title != f.title"
    ).fetchone()[0]
    assert mismatched == 0


def test_pending_and_failed_sources_have_no_fts_row(db):
    rows = db.execute(
        "SELECT s.id, s.title, s.extract_status, f.rowid AS fts FROM sources s"
        " LEFT JOIN sources_fts f ON f.rowid = s.id WHERE s.extract_status != 'ok'"
    ).fetchall()
    pending = [row for row in rows if row["extract_status"] == ""]
    assert len(pending) >= 3
    assert all(row["title"] == "" for row in pending)
    assert all(row["fts"] is None for row in rows)
    assert {row["extract_status"] for row in rows} == {"", "error"}


def test_items_fts_article_text_packs_post_article_summary_ocr_and_tags(db):
    enrichments: dict[int, dict[str, str]] = {}
    for item_id, role, text in db.execute("SELECT item_id, role, text FROM item_enrichments"):
        enrichments.setdefault(item_id, {})[role] = text
    rows = db.execute(
        "SELECT i.*, f.article_text AS fts_article_text, f.article_title AS fts_article_title"
        " FROM items i JOIN items_fts f ON f.rowid = i.id"
    ).fetchall()
    seen = {"summary": 0, "ocr": 0, "x_media_transcript": 0, "tags": 0}
    for row in rows:
        roles = enrichments.get(row["id"], {})
        article_text = roles.get("x_media_transcript", row["article_text"])
        expected = packed(
            row["x_post_text"],
            article_text,
            roles.get("summary", row["summary_text"]),
            roles.get("ocr", row["ocr_text"]),
            row["user_tags"],
        )
        assert row["fts_article_text"] == expected
        # The enrichment rows are mirrored into the items columns.
        assert row["summary_text"] == roles.get("summary", "")
        assert row["ocr_text"] == roles.get("ocr", "")
        for role in ("summary", "ocr", "x_media_transcript"):
            if role in roles:
                assert roles[role].strip() in row["fts_article_text"]
                seen[role] += 1
        if "x_media_transcript" in roles:
            assert row["fts_article_title"] == "X Media Transcript"
        if row["user_tags"]:
            assert row["fts_article_text"].endswith(row["user_tags"])
            seen["tags"] += 1
    assert all(seen.values()), seen


def test_sources_fts_summary_text_packs_summary_and_tags(db):
    rows = db.execute(
        "SELECT s.summary_text, s.user_tags, f.summary_text AS fts FROM sources s"
        " JOIN sources_fts f ON f.rowid = s.id"
    ).fetchall()
    assert any(row["summary_text"] and row["user_tags"] for row in rows)
    assert any(not row["summary_text"] and row["user_tags"] for row in rows)
    for row in rows:
        assert row["fts"] == packed(row["summary_text"], row["user_tags"])


def test_sync_functions_reproduce_the_stored_fts_rows(demo_path, tmp_path):
    copy = tmp_path / "copy.db"
    source = sqlite3.connect(demo_path)
    target = sqlite3.connect(copy)
    source.backup(target)
    source.close()
    before_items = target.execute("SELECT rowid, * FROM items_fts ORDER BY rowid").fetchall()
    before_sources = target.execute("SELECT rowid, * FROM sources_fts ORDER BY rowid").fetchall()
    for (item_id,) in target.execute("SELECT id FROM items").fetchall():
        sync_item_fts(target, item_id)
    for (source_id,) in target.execute(
        "SELECT id FROM sources WHERE extract_status = 'ok'"
    ).fetchall():
        sync_source_fts(target, source_id)
    assert target.execute("SELECT rowid, * FROM items_fts ORDER BY rowid").fetchall() == (
        before_items
    )
    assert target.execute("SELECT rowid, * FROM sources_fts ORDER BY rowid").fetchall() == (
        before_sources
    )
    with pytest.raises(LookupError):
        sync_item_fts(target, 10_000_000)
    target.close()


def test_retrieval_triggers_track_writes_like_dbrain(demo_path, tmp_path):
    copy = tmp_path / "copy.db"
    source = sqlite3.connect(demo_path)
    conn = sqlite3.connect(copy)
    source.backup(conn)
    source.close()
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert {f"trg_retrieval_{t}_dirty_{e}" for t in ("items", "sources", "item_enrichments")
            for e in ("insert", "update", "delete")} <= names  # fmt: skip
    revision = conn.execute("SELECT projection_work_revision FROM retrieval_state").fetchone()[0]
    url = normalize_url("https://example.net/promoted-result")
    conn.execute(
        "INSERT INTO sources (source_key, canonical_url, normalized_url, source_type, domain,"
        " note_path, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (url.source_key, url.canonical_url, url.normalized_url, url.source_type, url.domain,
         url.note_path, "2026-07-18T00:00:00Z", "2026-07-18T00:00:00Z"),
    )  # fmt: skip
    conn.commit()
    assert conn.execute("SELECT projection_work_revision FROM retrieval_state").fetchone()[0] == (
        revision + 1
    )
    pending = conn.execute(
        "SELECT status FROM retrieval_parent_projections WHERE parent_kind = 'source'"
        " AND parent_source_key = ?",
        (url.source_key,),
    ).fetchone()
    assert pending == ("pending",)
    # A no-op update of an unwatched column does not bump the revision.
    conn.execute("UPDATE sources SET site_name = 'x' WHERE source_key = ?", (url.source_key,))
    assert conn.execute("SELECT projection_work_revision FROM retrieval_state").fetchone()[0] == (
        revision + 1
    )
    conn.close()


def test_retrieval_triggers_can_be_added_to_a_fresh_schema():
    conn = sqlite3.connect(":memory:")
    create_brain_schema(conn)
    create_retrieval_triggers(conn, database_id="fixture")
    create_retrieval_triggers(conn, database_id="fixture")
    conn.execute(
        "INSERT INTO items (source_key, source_type, external_id, canonical_url, content_hash,"
        " raw_json, imported_at, updated_at, last_seen_at) VALUES"
        " ('manual:a', 'manual', 'a', '', 'h', '{}', 't', 't', 't')"
    )
    conn.execute(
        "INSERT INTO item_enrichments (item_id, role, text, created_at, updated_at)"
        " VALUES (1, 'summary', 'text', 't', 't')"
    )
    assert conn.execute("SELECT projection_work_revision FROM retrieval_state").fetchone()[0] == 2
    assert conn.execute("SELECT count(*) FROM retrieval_parent_projections").fetchone()[0] == 1


# -----------------------------------------------------------------------------------------------
# Build behaviour.


def dump(path: Path) -> dict[str, list[tuple]]:
    conn = sqlite3.connect(path)
    tables = (
        "items", "sources", "item_enrichments", "item_source_links", "source_summary_versions",
        "schema_migrations", "retrieval_state",
    )  # fmt: skip
    result = {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
              for table in tables}  # fmt: skip
    result["items_fts"] = conn.execute("SELECT rowid, * FROM items_fts ORDER BY rowid").fetchall()
    result["sources_fts"] = conn.execute(
        "SELECT rowid, * FROM sources_fts ORDER BY rowid"
    ).fetchall()
    conn.close()
    return result


def test_builds_are_deterministic(demo_path, tmp_path):
    again = tmp_path / "again.db"
    build_demo_brain(again)
    assert dump(again) == dump(demo_path)


def test_refuses_to_overwrite_unless_asked(tmp_path):
    path = tmp_path / "brain.db"
    path.write_text("precious")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        build_demo_brain(path)
    assert path.read_text() == "precious"
    counts = build_demo_brain(path, overwrite=True)
    assert counts["items"] > 0
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_synthetic_brain_has_n_items_and_half_as_many_sources(tmp_path):
    path = tmp_path / "big.db"
    counts = build_demo_brain(path, size=2000)
    assert counts["items"] == counts["items_fts"] == 2000
    assert counts["sources"] == 1000
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    extracted = conn.execute("SELECT count(*) FROM sources WHERE extract_status = 'ok'").fetchone()
    assert counts["sources_fts"] == extracted[0] < 1000
    assert tuple(conn.execute("SELECT min(id), max(id) FROM items").fetchone()) == (1, 2000)
    for row in conn.execute("SELECT * FROM sources WHERE id % 37 = 1"):
        normalized = normalize_url(row["canonical_url"])
        assert (normalized.canonical_url, normalized.source_key, normalized.note_path) == (
            row["canonical_url"], row["source_key"], row["note_path"],
        )  # fmt: skip
    for (key,) in conn.execute("SELECT source_key FROM items"):
        assert key.startswith(ITEM_PREFIXES)
    words = conn.execute(
        "SELECT avg(length(extracted_text) - length(replace(extracted_text, ' ', '')) + 1)"
        " FROM sources WHERE extract_status = 'ok'"
    ).fetchone()[0]
    assert 150 < words < 500
    hits = [len(search(conn, q)) for q in ("tokio", "espresso grinder", "dutch oven", "bm25")]
    assert all(hits) and len(set(hits)) == len(hits), hits
    conn.close()


# -----------------------------------------------------------------------------------------------
# Demo questions.


@pytest.mark.parametrize("question", CLUSTER_QUESTIONS)
def test_each_cluster_answers_a_short_question_from_several_rows(db, question):
    assert len(search(db, question)) >= 4


@pytest.mark.parametrize("entry", DEMO_QUESTIONS, ids=[entry["q"] for entry in DEMO_QUESTIONS])
def test_demo_questions_behave_as_advertised(db, entry):
    assert entry["shows"]
    q, expect = entry["q"], entry["expect"]
    if expect == "exact":
        key = q if q.startswith("src:") else normalize_url(q).source_key
        assert key == entry["source_key"]
        assert db.execute("SELECT count(*) FROM sources WHERE source_key = ?", (key,)).fetchone()[0]
        return
    if entry.get("syntax") == "raw":
        hits = fts_keys(db, "items_fts", q) | fts_keys(db, "sources_fts", q)
    elif entry.get("kind") == "source":
        hits = fts_keys(db, "sources_fts", dbrain_match(q))
        assert hits and all(key.startswith("src:") for key in hits)
    else:
        hits = search(db, q)
    if "tag" in entry:
        hits = {
            key
            for key in hits
            for (tags,) in db.execute(
                "SELECT user_tags FROM items WHERE source_key = ?"
                " UNION ALL SELECT user_tags FROM sources WHERE source_key = ?",
                (key, key),
            )
            if entry["tag"] in tag_list(tags)
        }
    if expect == "enough":
        assert len(hits) >= 3, hits
    elif expect == "first_hop":
        # The brain holds the first hop (the note naming the book's author) and nothing of
        # the second: where she lives is only on the fake web.
        assert len(search(db, "Slow Loaf author Ingrid Halvorsen")) == 1
        assert search(db, "Ingrid Halvorsen Bergen") == set()
    elif expect == "no_answer":
        # A row holds a word of the question ("capitals"), none its name ("Mongolia").
        assert search(db, "capital", "OR") and search(db, "mongolia", "OR") == set()
    elif expect == "weak":
        assert hits == set()
        partial = search(db, q, "OR")
        assert len(partial) == 1
        (key,) = partial
        text = db.execute("SELECT text FROM items WHERE source_key = ?", (key,)).fetchone()[0]
        matched = [term for term in q.split() if term in text.lower()]
        assert 1 <= len(matched) < len(q.split())
    else:
        assert expect == "none"
        assert search(db, q, "OR") == set()


def test_pending_demo_question_points_at_a_source_without_fts_row(db):
    (entry,) = [e for e in DEMO_QUESTIONS if "never extracted" in e["shows"]]
    row = db.execute(
        "SELECT s.extract_status, f.rowid FROM sources s LEFT JOIN sources_fts f"
        " ON f.rowid = s.id WHERE s.source_key = ?",
        (entry["source_key"],),
    ).fetchone()
    assert tuple(row) == ("", None)


def test_demo_questions_cover_every_feature():
    expects = [entry["expect"] for entry in DEMO_QUESTIONS]
    assert {"enough", "weak", "none", "exact", "first_hop", "no_answer"} == set(expects)
    assert any("tag" in entry for entry in DEMO_QUESTIONS)
    assert any(entry.get("kind") == "source" for entry in DEMO_QUESTIONS)
    assert any(entry.get("syntax") == "raw" for entry in DEMO_QUESTIONS)
    assert any(entry["q"].startswith("src:") for entry in DEMO_QUESTIONS)
    assert any(entry["q"].startswith("http") for entry in DEMO_QUESTIONS)
