"""The semantic lane's index: every item and source of a brain embedded once, kept in the
plugin's own database, and rebuilt only where a row's text changed.

A note about a "grinder" should answer a question about a "coffee mill". Every item and source
is embedded once (the text its FTS row holds, ``embedding_text``) with an ``llm`` embedding
model (``embeddings``). The vectors live in the plugin's own database
(``dbrain_websearch_embeddings``), never in dbrain's tables, as float16, L2-normalized, keyed by
brain, model, table and row id, with a hash of the text so a rebuild embeds only what changed
(``build_index``: ``datasette dbrain-websearch index``). Promotion indexes the rows it writes
(``index_rows``).
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .brain import KINDS, TABLE, Hit, brain_shape, hydrate
from .embeddings import BATCH, embed, embedding_model, numpy

EMBEDDINGS_TABLE = "dbrain_websearch_embeddings"
# A counter per brain, model and table, moved on by every write of its vectors: what a cache of
# them is kept by. (The database file's version would not do: every saved run changes it.)
GENERATIONS_TABLE = "dbrain_websearch_embedding_generations"
EMBED_CHARS = 4000  # a row's text is cut here: titles and openings carry most of its meaning

Progress = Callable[[int], None]


def embedding_text(kind: str, row: dict[str, Any]) -> str:
    """What a row is about, as its FTS row holds it: title first, then its summary and text."""
    if kind == "source":
        parts = ["title", "description", "summary_text", "extracted_text"]
    else:
        parts = [
            "title",
            "article_title",
            "enrichment_summary",
            "summary_text",
            "x_post_text",
            "text",
            "article_text",
        ]
    seen: dict[str, None] = {}
    for name in parts:
        text = " ".join(str(row.get(name) or "").split())
        if text:
            seen.setdefault(text, None)
    return "\n".join(seen)[:EMBED_CHARS]


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def to_blob(vector: Any) -> bytes:
    """float16, little-endian: half the size, and cosines need no more."""
    return numpy().asarray(vector, dtype="<f2").tobytes()


def create_table(conn: sqlite3.Connection) -> None:
    """The index table (``runs_db.create`` makes it at startup; the CLI may run before)."""
    conn.execute(
        f"create table if not exists [{EMBEDDINGS_TABLE}] ("
        "database_name text not null, model text not null, kind text not null, "
        "row_id integer not null, source_key text not null, content_hash text not null, "
        "dims integer not null, vector blob not null, indexed_at text not null, "
        "primary key (database_name, model, kind, row_id))"
    )
    conn.execute(
        f"create table if not exists [{GENERATIONS_TABLE}] ("
        "database_name text not null, model text not null, kind text not null, "
        "generation integer not null, primary key (database_name, model, kind))"
    )


def generation(index: sqlite3.Connection, database: str, model_id: str, kind: str) -> int:
    """How many times the table's vectors were written (0: never, or an index built before the
    counter was kept). One primary-key lookup."""
    try:
        found = index.execute(
            f"select generation from [{GENERATIONS_TABLE}] "
            "where database_name = ? and model = ? and kind = ?",
            [database, model_id, kind],
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return 0
    return found[0] if found else 0


def _written(index: sqlite3.Connection, database: str, model_id: str, kind: str) -> None:
    """Move the table's generation on (inside the write's transaction)."""
    index.execute(
        f"insert into [{GENERATIONS_TABLE}] values (?, ?, ?, 1) on conflict "
        "(database_name, model, kind) do update set generation = generation + 1",
        [database, model_id, kind],
    )


@dataclass
class IndexReport:
    """What ``build_index`` did."""

    rows: int = 0
    embedded: int = 0
    unchanged: int = 0
    removed: int = 0


def _pages(conn: sqlite3.Connection, kind: str, size: int) -> Iterator[list[Hit]]:
    """The table's rows in id order, ``size`` at a time, hydrated as retrieval reads them."""
    last = 0
    while True:
        ids = [
            r[0]
            for r in conn.execute(
                f"select id from [{TABLE[kind]}] where id > ? order by id limit ?", [last, size]
            )
        ]
        if not ids:
            return
        yield hydrated(conn, kind, ids)
        last = ids[-1]


def build_index(
    brain: sqlite3.Connection,
    index: sqlite3.Connection,
    database: str,
    model_id: str,
    progress: Progress | None = None,
    batch: int = BATCH,
) -> IndexReport:
    """Embed every row whose text changed since the last build (by hash), drop the rows the
    brain no longer has; memory stays bounded by ``batch`` rows."""
    model = embedding_model(model_id)
    create_table(index)
    report = IndexReport()
    shape = brain_shape(brain)
    for kind in KINDS:
        if not shape.has(TABLE[kind]):
            continue
        kept: set[int] = set()
        for page in _pages(brain, kind, batch):
            ids = [h.id for h in page]
            marks = ", ".join("?" for _ in ids)
            known = dict(
                index.execute(
                    f"select row_id, content_hash from [{EMBEDDINGS_TABLE}] where "
                    f"database_name = ? and model = ? and kind = ? and row_id in ({marks})",
                    [database, model_id, kind, *ids],
                ).fetchall()
            )
            texts = {h.id: embedding_text(kind, h.row) for h in page}
            changed = [h for h in page if known.get(h.id) != content_hash(texts[h.id])]
            if changed:
                texts_changed = [texts[h.id] for h in changed]
                _store(index, model, database, model_id, kind, changed, texts_changed)
            kept.update(ids)
            report.rows += len(page)
            report.embedded += len(changed)
            report.unchanged += len(page) - len(changed)
            if progress is not None:
                progress(len(page))
        report.removed += _drop_missing(index, database, model_id, kind, kept)
    return report


def brain_rows(brain: Path) -> int:
    """How many rows ``index_brain`` will read (for a progress bar)."""
    conn = sqlite3.connect(f"file:{brain.resolve()}?mode=ro", uri=True)
    try:
        shape = brain_shape(conn)
        return sum(
            conn.execute(f"select count(*) from [{TABLE[kind]}]").fetchone()[0]
            for kind in KINDS
            if shape.has(TABLE[kind])
        )
    finally:
        conn.close()


def index_brain(
    brain: Path, index_path: Path, model_id: str, progress: Progress | None = None
) -> IndexReport:
    """``build_index`` for a brain file (read-only) into the plugin database file."""
    source = sqlite3.connect(f"file:{brain.resolve()}?mode=ro", uri=True)
    target = sqlite3.connect(index_path)
    try:
        return build_index(source, target, brain.stem, model_id, progress=progress)
    finally:
        source.close()
        target.close()


def _drop_missing(
    index: sqlite3.Connection, database: str, model_id: str, kind: str, kept: set[int]
) -> int:
    stale = [
        r[0]
        for r in index.execute(
            f"select row_id from [{EMBEDDINGS_TABLE}] "
            "where database_name = ? and model = ? and kind = ?",
            [database, model_id, kind],
        )
        if r[0] not in kept
    ]
    if not stale:
        return 0
    with index:
        index.executemany(
            f"delete from [{EMBEDDINGS_TABLE}] where database_name = ? and model = ? "
            "and kind = ? and row_id = ?",
            [(database, model_id, kind, row_id) for row_id in stale],
        )
        _written(index, database, model_id, kind)
    return len(stale)


def hydrated(brain: sqlite3.Connection, kind: str, ids: list[int]) -> list[Hit]:
    """The rows, read as ``index_rows`` embeds them."""
    hits = [Hit(kind, row_id) for row_id in ids]
    hydrate(brain, hits, brain_shape(brain))
    return hits


def index_rows(
    index: sqlite3.Connection, database: str, model_id: str, kind: str, hits: list[Hit]
) -> int:
    """Embed the given (hydrated) rows now, when this brain already has an index for the model:
    promotion calls this for the rows it writes, so the next question finds them by meaning.
    Returns how many were embedded (none without an index: a lone row is no index)."""
    if not hits:
        return 0
    create_table(index)
    has_index = index.execute(
        f"select 1 from [{EMBEDDINGS_TABLE}] where database_name = ? and model = ? limit 1",
        [database, model_id],
    ).fetchone()
    if not has_index:
        return 0
    texts = [embedding_text(kind, h.row) for h in hits]
    _store(index, embedding_model(model_id), database, model_id, kind, hits, texts)
    return len(hits)


def _store(
    index: sqlite3.Connection,
    model: Any,
    database: str,
    model_id: str,
    kind: str,
    hits: list[Hit],
    texts: list[str],
) -> None:
    """Embed the rows' texts and write their vectors (with the texts' hashes), in one
    transaction: the one write of the index, for a build and for promotion alike."""
    vectors = embed(model, texts)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with index:
        index.executemany(
            f"insert or replace into [{EMBEDDINGS_TABLE}] values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    database,
                    model_id,
                    kind,
                    h.id,
                    h.row.get("source_key", ""),
                    content_hash(text),
                    vectors.shape[1],
                    to_blob(vector),
                    now,
                )
                for h, text, vector in zip(hits, texts, vectors, strict=True)
            ],
        )
        _written(index, database, model_id, kind)
