"""Where the semantic lane reads the rows' vectors, and what says they changed: the plugin's own
index (``PluginIndex``: its database, read-only, one connection per thread, ``index_reader``;
versioned by ``index_version``) or the vectors dbrain itself made with the lane's model
(``DbrainVectors``: read from the brain, versioned with it).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

from .brain import TABLE
from .embeddings import numpy
from .lexical import brain_version
from .semantic_index import EMBEDDINGS_TABLE, generation

# How long a question waits for the index another program holds locked: briefly, then it is
# answered by its words, saying why (a WAL file's readers are not blocked by its writers).
INDEX_WAIT_S = 0.2
_LOCAL = threading.local()


def index_reader(path: str) -> sqlite3.Connection:
    """A read-only connection to the index, one per thread and file."""
    connections: dict[str, sqlite3.Connection] = getattr(_LOCAL, "connections", None) or {}
    _LOCAL.connections = connections
    conn = connections.get(path)
    if conn is None:
        conn = connections[path] = sqlite3.connect(
            f"file:{Path(path).resolve()}?mode=ro",
            uri=True,
            check_same_thread=False,
            timeout=INDEX_WAIT_S,
        )
    return conn


class PluginIndex:
    """Vectors this plugin embedded (``build_index``), in its own database."""

    store = "plugin_index"
    matrix_is_stored = True  # the nearest-row matrix holds the stored vectors, unchanged

    def __init__(self, index_path: str, database: str, model_id: str) -> None:
        self.index_path, self.database, self.model_id = index_path, database, model_id

    def vectors(self, conn: sqlite3.Connection, kind: str, ids: list[int]) -> list[tuple[int, Any]]:
        marks = ", ".join("?" for _ in ids)
        rows = (
            index_reader(self.index_path)
            .execute(
                f"select row_id, vector from [{EMBEDDINGS_TABLE}] where database_name = ? "
                f"and model = ? and kind = ? and row_id in ({marks})",
                [self.database, self.model_id, kind, *ids],
            )
            .fetchall()
        )
        return [(r[0], numpy().frombuffer(r[1], dtype="<f2")) for r in rows]

    def state(self, conn: sqlite3.Connection, kind: str) -> Any:
        return index_version(self.index_path, self.database, self.model_id, [kind])

    def rows(self, conn: sqlite3.Connection, kind: str) -> list[tuple[int, bytes]]:
        return (
            index_reader(self.index_path)
            .execute(
                f"select row_id, vector from [{EMBEDDINGS_TABLE}] where database_name = ? "
                "and model = ? and kind = ? order by row_id",
                [self.database, self.model_id, kind],
            )
            .fetchall()
        )

    def key(self, kind: str) -> tuple[str, ...]:
        return (self.index_path, self.database, self.model_id, kind)

    dtype = "<f2"


class DbrainVectors:
    """dbrain's own vectors (``retrieval_embeddings`` of one profile: dense_f32, little-endian,
    one per chunk of a row), read from the brain, a row scoring as its best chunk."""

    store = "dbrain_retrieval_embeddings"
    dtype = "<f4"
    matrix_is_stored = False  # its matrix is float16, one row per chunk

    def __init__(self, brain_path: str, profile_id: str) -> None:
        self.brain_path, self.profile_id = brain_path, profile_id

    def _sql(self, kind: str, where: str) -> str:
        return (
            f"select t.id, e.vector_bytes from [{TABLE[kind]}] t "
            "join retrieval_chunks c on c.parent_source_key = t.source_key and c.parent_kind = ? "
            "join retrieval_embeddings e on e.chunk_id = c.chunk_id where e.profile_id = ? "
            f"and e.status = 'ready' and e.representation = 'dense_f32'{where}"
        )

    def vectors(self, conn: sqlite3.Connection, kind: str, ids: list[int]) -> list[tuple[int, Any]]:
        marks = ", ".join("?" for _ in ids)
        sql = self._sql(kind, f" and t.id in ({marks})")
        rows = conn.execute(sql, [kind, self.profile_id, *ids]).fetchall()
        return [(r[0], _unit(numpy().frombuffer(r[1], dtype="<f4"))) for r in rows]

    def state(self, conn: sqlite3.Connection, kind: str) -> Any:
        return brain_version(conn)

    def rows(self, conn: sqlite3.Connection, kind: str) -> list[tuple[int, bytes]]:
        return conn.execute(self._sql(kind, " order by t.id"), [kind, self.profile_id]).fetchall()

    def key(self, kind: str) -> tuple[str, ...]:
        return (self.brain_path, self.profile_id, kind)


def _unit(vector: Any) -> Any:
    norm = float(numpy().linalg.norm(vector))
    return vector / norm if norm else vector


def dbrain_profile(conn: sqlite3.Connection, model_id: str, dims: int | None = None) -> str | None:
    """The profile of dbrain's own vectors made by this model (its last name part, without an
    Ollama tag: ``ollama/nomic-embed-text`` matches ``nomic-embed-text:latest``), if any."""
    names = {r[0] for r in conn.execute("select name from sqlite_master where type = 'table'")}
    if not {"retrieval_embeddings", "retrieval_chunks"} <= names:
        return None

    def bare(name: str) -> str:
        return name.strip().lower().rsplit("/", 1)[-1].split(":", 1)[0]

    for profile_id, model, found_dims in conn.execute(
        "select profile_id, model, max(dimensions) from retrieval_embeddings "
        "where status = 'ready' and representation = 'dense_f32' group by profile_id, model"
    ):
        if bare(model) == bare(model_id) and dims in (None, found_dims):
            return profile_id
    return None


def index_version(
    index_path: str | None, database: str, model_id: str, kinds: list[str]
) -> tuple[Any, ...] | None:
    """What changes whenever the index's vectors of these tables do: the file (a rebuilt one is
    another) and each table's ``generation``; None when it cannot be read (nothing is cached).
    Saved runs share the file, so its size and time would change with every question."""
    if not index_path:
        return None
    try:
        found = os.stat(index_path)
        conn = index_reader(index_path)
        return (
            found.st_dev,
            found.st_ino,
            *(generation(conn, database, model_id, kind) for kind in kinds),
        )
    except (OSError, sqlite3.Error):
        return None
