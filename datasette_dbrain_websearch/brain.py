"""What a dbrain brain is, and its rows: recognising one (its shape, which columns it has),
filters as SQL, hits and their hydrated rows (what they say of themselves: ``Facts``; the texts
they hold: ``row_texts``), and looking up a row by its key and sources by URL. ``retrieval``
searches it; ``brain_access`` bounds every query against it.

Everything here runs synchronously on one SQLite connection (Datasette's read connection via
``execute_fn``, or a plain read-only ``sqlite3`` connection in the CLI and benchmark), so a
research run costs one thread hop and the SQL is the same on every surface.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS = ("item", "source")
TABLE = {"item": "items", "source": "sources"}
FTS_TABLE = {"item": "items_fts", "source": "sources_fts"}

# Columns read when hydrating a hit; a column a brain lacks reads as ''.
ITEM_COLUMNS = (
    "source_key",
    "source_type",
    "external_id",
    "canonical_url",
    "title",
    "author_handle",
    "author_name",
    "published_at",
    "saved_at",
    "imported_at",
    "note_path",
    "user_tags",
    "text",
    "article_title",
    "article_text",
    "x_post_text",
    "summary_text",
    "ocr_text",
    "primary_category",
    "primary_domain",
)
SOURCE_COLUMNS = (
    "source_key",
    "source_type",
    "canonical_url",
    "normalized_url",
    "domain",
    "title",
    "description",
    "site_name",
    "extracted_text",
    "summary_text",
    "note_path",
    "user_tags",
    "created_at",
    "updated_at",
    "extracted_at",
    "summarized_at",
    "extract_status",
)
ENRICHMENT_ROLES = ("summary", "ocr", "x_media_transcript")


@dataclass(frozen=True)
class BrainShape:
    """Which dbrain tables and columns this database has (brains differ in age)."""

    columns: dict[str, tuple[str, ...]]  # in the table's order

    def has(self, table: str) -> bool:
        return table in self.columns

    def searchable_kinds(self) -> list[str]:
        return [k for k in KINDS if self.has(TABLE[k]) and self.has(FTS_TABLE[k])]

    def col(self, table: str, name: str, alias: str = "t") -> str:
        """``alias.name`` when the column exists, else an empty-string literal."""
        return f"{alias}.{name}" if name in self.columns.get(table, ()) else "''"


def is_brain(table_names: Iterable[str]) -> bool:
    """A brain has dbrain's items + items_fts and/or sources + sources_fts."""
    names = set(table_names)
    return any({TABLE[k], FTS_TABLE[k]} <= names for k in KINDS)


SHAPE_TABLES = (
    "items",
    "sources",
    "items_fts",
    "sources_fts",
    "item_enrichments",
    "item_source_links",
)
# Shapes by (file, device, inode, schema_version): read once per brain file and schema, not
# once per query (six statements on every request otherwise).
_SHAPES: dict[tuple[str, int, int, int], BrainShape] = {}
MAX_SHAPES = 64


def read_shape(conn: sqlite3.Connection) -> BrainShape:
    """Read the dbrain tables' columns in one pass over sqlite_master."""
    marks = ", ".join("?" for _ in SHAPE_TABLES)
    names = [
        r[0]
        for r in conn.execute(
            f"select name from sqlite_master where type = 'table' and name in ({marks})",
            SHAPE_TABLES,
        )
    ]
    columns = {
        name: tuple(r[1] for r in conn.execute(f"pragma table_info([{name}])")) for name in names
    }
    return BrainShape(columns)


def brain_shape(conn: sqlite3.Connection) -> BrainShape:
    """The brain's shape, cached per database file and ``schema_version`` (which SQLite bumps
    on every schema change, so a migrated brain is read again); in-memory brains are read
    every time."""
    path = conn.execute("pragma database_list").fetchone()[2]
    version = conn.execute("pragma schema_version").fetchone()[0]
    try:
        found = os.stat(path) if path else None
    except OSError:
        found = None
    if found is None:
        return read_shape(conn)
    key = (path, found.st_dev, found.st_ino, version)
    shape = _SHAPES.get(key)
    if shape is None:
        if len(_SHAPES) >= MAX_SHAPES:
            _SHAPES.clear()
        shape = _SHAPES[key] = read_shape(conn)
    return shape


@dataclass(frozen=True)
class Filters:
    """Row filters; every lane and the exact lookup apply the same ones."""

    tags: tuple[str, ...] = ()
    source_types: tuple[str, ...] = ()
    kind: str = ""
    since: str = ""
    until: str = ""

    def kinds(self, shape: BrainShape) -> list[str]:
        return [k for k in shape.searchable_kinds() if not self.kind or k == self.kind]

    def active(self) -> dict[str, Any]:
        return {
            k: v
            for k, v in {
                "tag": list(self.tags),
                "source_type": list(self.source_types),
                "kind": self.kind,
                "since": self.since,
                "until": self.until,
            }.items()
            if v
        }


def date_expr(kind: str, shape: BrainShape) -> str:
    """The date a filter compares: published, else saved, else imported (items); added (sources)."""
    if kind == "source":
        return shape.col("sources", "created_at")
    parts = [f"nullif({shape.col('items', c)}, '')" for c in ("published_at", "saved_at")]
    return f"coalesce({', '.join(parts)}, {shape.col('items', 'imported_at')})"


def filter_sql(kind: str, filters: Filters, shape: BrainShape) -> tuple[str, list[Any]]:
    """``AND ...`` clauses (alias ``t``) and their parameters for one table."""
    table = TABLE[kind]
    clauses: list[str] = []
    params: list[Any] = []
    for tag in filters.tags:
        # dbrain's exact-tag test (internal/store/search_tags.go): a comma-boundary match.
        clauses.append(
            "instr(',' || replace(replace(lower("
            + shape.col(table, "user_tags")
            + "), ', ', ','), ' ,', ',') || ',', ',' || ? || ',') > 0"
        )
        params.append(tag)
    if filters.source_types:
        marks = ", ".join("?" for _ in filters.source_types)
        clauses.append(f"{shape.col(table, 'source_type')} in ({marks})")
        params.extend(filters.source_types)
    if filters.since:
        clauses.append(f"substr({date_expr(kind, shape)}, 1, 10) >= ?")
        params.append(filters.since)
    if filters.until:
        clauses.append(f"substr({date_expr(kind, shape)}, 1, 10) <= ?")
        params.append(filters.until)
    return "".join(f" and {c}" for c in clauses), params


@dataclass
class Hit:
    """One local row on its way to becoming an evidence row."""

    kind: str
    id: int
    exact_field: str = ""
    exact_rank: int = 0
    lane_rank: int = 0
    lane_size: int = 0
    weight: float = 1.0  # the lane's weight (``lane_weights``)
    bm25: float | None = None
    fused: float = 0.0
    mode: str = ""
    matched: list[str] = field(default_factory=list)
    # What re-scored the row (``lexical.rescore``): its share of the question, a phrase, the
    # semantic cosine; ``held`` counts the search terms (dbrain's and the others) it holds.
    coverage: float | None = None
    held: int = 0
    phrase: bool = False
    cosine: float | None = None
    dense_only: bool = False  # found by the semantic lane alone (no word in common)
    row: dict[str, Any] = field(default_factory=dict)
    # A source this item links to (item_source_links) that matched too: shown inside the
    # item's row, so one bookmark and its page take one place in the list, not two.
    linked: Hit | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.kind, self.id)

    def parts(self) -> list[Hit]:
        """The hit and the linked source it carries, if any."""
        return [self] if self.linked is None else [self, self.linked]


def hydrate(conn: sqlite3.Connection, hits: list[Hit], shape: BrainShape) -> None:
    """Load the columns evidence rows show (and excerpts need) for the given hits, in place."""
    for kind in KINDS:
        wanted = [h for h in hits if h.kind == kind and not h.row]
        if not wanted:
            continue
        table = TABLE[kind]
        names = ITEM_COLUMNS if kind == "item" else SOURCE_COLUMNS
        select = [f"{shape.col(table, c)} as [{c}]" for c in names]
        if kind == "item" and shape.has("item_enrichments"):
            select += [
                "coalesce((select e.text from item_enrichments e where e.item_id = t.id "
                f"and e.role = '{role}' and e.text != '' limit 1), '') as [enrichment_{role}]"
                for role in ENRICHMENT_ROLES
            ]
        marks = ", ".join("?" for _ in wanted)
        sql = f"select t.id as id, {', '.join(select)} from [{table}] t where t.id in ({marks})"
        cursor = conn.execute(sql, [h.id for h in wanted])
        names_out = [d[0] for d in cursor.description]
        rows = {r[0]: dict(zip(names_out, r, strict=True)) for r in cursor}
        for hit in wanted:
            hit.row = rows.get(hit.id, {"id": hit.id})


@dataclass(frozen=True)
class Facts:
    """What a brain row says about itself (title, URL, type, tags, who and when), named as the
    pack names it, so an evidence row, a linked page and a fetched source read their columns
    alike. Items and sources say different things: ``to_json`` writes each kind's fields."""

    kind: str
    title: str
    url: str
    source_type: str
    user_tags: list[str]
    note_path: str
    published_at: str
    saved_at: str
    author: str = ""  # items
    domain: str = ""  # sources, from here on
    extracted_at: str = ""
    extract_status: str = ""
    summarized_at: str = ""

    @classmethod
    def from_row(cls, kind: str, row: Mapping[str, Any]) -> Facts:
        url = row.get("canonical_url", "")
        common = {
            "kind": kind,
            "title": row.get("title")
            or row.get("article_title")
            or url
            or row.get("source_key", ""),
            "url": url,
            "source_type": row.get("source_type", ""),
            "user_tags": split_tags(row.get("user_tags", "")),
            "note_path": row.get("note_path", ""),
        }
        if kind == "item":
            return cls(
                **common,
                author=row.get("author_name") or row.get("author_handle", ""),
                published_at=row.get("published_at", ""),
                saved_at=row.get("saved_at") or row.get("imported_at", ""),
            )
        return cls(
            **common,
            domain=row.get("domain", ""),
            published_at="",
            saved_at=row.get("created_at", ""),
            extracted_at=row.get("extracted_at", ""),
            extract_status=row.get("extract_status", ""),
            summarized_at=row.get("summarized_at", ""),
        )

    def to_json(self) -> dict[str, Any]:
        facts: dict[str, Any] = {
            "title": self.title,
            "url": self.url,
            "source_type": self.source_type,
            "user_tags": list(self.user_tags),
            "note_path": self.note_path,
        }
        if self.kind == "item":
            facts.update(author=self.author, published_at=self.published_at, saved_at=self.saved_at)
            return facts
        facts.update(
            domain=self.domain,
            published_at=self.published_at,
            saved_at=self.saved_at,
            extracted_at=self.extracted_at,
            extract_status=self.extract_status,
            summarized_at=self.summarized_at,
        )
        return facts


def row_by_key(conn: sqlite3.Connection, key: str) -> Hit | None:
    """The item or source with this ``source_key``, hydrated as research hydrates its hits."""
    shape = brain_shape(conn)
    kinds = ("source", "item") if key.startswith("src:") else KINDS
    for kind in kinds:
        if not shape.has(TABLE[kind]):
            continue
        found = conn.execute(
            f"select id from [{TABLE[kind]}] where source_key = ?", [key]
        ).fetchone()
        if found:
            hit = Hit(kind, found[0])
            hydrate(conn, [hit], shape)
            return hit
    return None


def row_facts(kind: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """A brain row's ``Facts`` as the pack writes them."""
    return Facts.from_row(kind, row).to_json()


def split_tags(user_tags: str) -> list[str]:
    """dbrain's comma-separated ``user_tags`` as a list (lowercased, empties dropped)."""
    return [t.strip() for t in (user_tags or "").lower().split(",") if t.strip()]


def sources_by_url(
    conn: sqlite3.Connection, urls: list[str], filters: Filters
) -> dict[str, Hit | None]:
    """The brain's sources whose ``normalized_url`` (dbrain's dedupe key) is one of the URLs.

    Every held URL is a key (a web hit for it must never become a web row); its value is the
    hydrated source when it passes the request's filters, else None.
    """
    shape = brain_shape(conn)
    if not urls or "normalized_url" not in shape.columns.get("sources", ()):
        return {}
    marks = ", ".join("?" for _ in urls)
    held: dict[str, Hit | None] = {
        row[0]: None
        for row in conn.execute(
            f"select normalized_url from sources where normalized_url in ({marks})", urls
        )
    }
    if not held or (filters.kind and filters.kind != "source"):
        return held
    where, params = filter_sql("source", filters, shape)
    rows = conn.execute(
        f"select t.id, t.normalized_url from sources t where t.normalized_url in ({marks}){where}",
        [*urls, *params],
    ).fetchall()
    hits = [Hit("source", row[0]) for row in rows]
    hydrate(conn, hits, shape)
    for hit, row in zip(hits, rows, strict=True):
        held[row[1]] = hit
    return held
