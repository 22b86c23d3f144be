"""The semantic lane at question time: re-scoring the lexical lane's rows by meaning, and
whether the lane can run for a brain.

``SemanticLane`` embeds the question once; the lexical lane's top rows read only their own
vectors (``cosines``) and BM25 is interpolated with the cosine (``lexical.rescore``, weight
``semantic.weight``). The vectors are dbrain's own when it made them with the configured model,
else the plugin's index (``semantic_index``). When a table's lexical lane finds fewer rows than
asked for, the nearest rows by meaning alone join it (``nearest``), from a matrix held in memory
once per process and reloaded when the index changes. A missing model or index is a warning in
the pack (``semantic_state``, ``semantic_warnings``), never an error: the question is answered
lexically.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .brain import TABLE, brain_shape
from .brain_access import Checkpoint, paced, unbounded
from .embeddings import (
    BATCH,
    INDEX_MISSING,
    INDEX_UNREADABLE,
    MODEL_UNAVAILABLE,
    SemanticUnavailable,
    embed,
    embedding_model,
    numpy,
    question_vector,
)
from .lexical import Remembered, brain_version
from .semantic_index import EMBEDDINGS_TABLE
from .semantic_vectors import (
    DbrainVectors,
    PluginIndex,
    dbrain_profile,
    index_reader,
    index_version,
)

NEAREST_BATCH = 64  # rows found by meaning checked against the filters at a time
# Rows of the matrix scored at a time: ~5 ms each on a 2-core machine, between checkpoints.
SCORE_BATCH = 8192


def indexed_up_to(index: sqlite3.Connection, database: str, model_id: str, kind: str) -> int:
    """The highest row id of the table the index holds (0: none), one primary-key lookup, so
    every question can afford it on any size of brain."""
    found = index.execute(
        f"select max(row_id) from [{EMBEDDINGS_TABLE}] "
        "where database_name = ? and model = ? and kind = ?",
        [database, model_id, kind],
    ).fetchone()
    return found[0] or 0


# How many of a table's newest rows are checked against the index: the rows dbrain added since
# the last build stay among them until that many rows are promoted after them.
NEWEST_CHECKED = 64


def newest_rows(brain: sqlite3.Connection, kind: str) -> list[int]:
    """The row ids of the table's ``NEWEST_CHECKED`` newest rows, newest first."""
    sql = f"select rowid from [{TABLE[kind]}] order by rowid desc limit {NEWEST_CHECKED}"
    return [r[0] for r in brain.execute(sql)]


def _added_since(
    index: sqlite3.Connection,
    database: str,
    model_id: str,
    kind: str,
    up_to: int,
    newest: list[int],
) -> bool:
    """Whether rows were added to the table that the index does not hold: a row beyond the
    highest it holds (``up_to``), or one of the ``newest`` it lacks (dbrain added it, then a
    promotion embedded the rows it wrote after it). One indexed lookup of a few rows."""
    if not newest or newest[0] > up_to:
        return bool(newest)
    marks = ", ".join("?" for _ in newest)
    held = index.execute(
        f"select count(*) from [{EMBEDDINGS_TABLE}] where database_name = ? and model = ? "
        f"and kind = ? and row_id in ({marks})",
        [database, model_id, kind, *newest],
    ).fetchone()[0]
    return held < len(newest)


# Per process: the matrices of nearest-row search (float16), by where their vectors are, with
# the version they were read at (``index_version``, or the brain's ``brain_version`` for
# dbrain's own vectors); reloaded when it changes.
_MATRICES: dict[tuple[str, ...], tuple[Any, Any, Any]] = {}
_MATRICES_LOCK = threading.Lock()


class SemanticLane:
    """The question's vector and where the rows' vectors are, for one research run
    (``bm25_lanes.Rescorer``): dbrain's own when it made them with this model, else this plugin's
    index. ``checkpoint`` (the run's deadline) runs every few rows or texts of its loops."""

    def __init__(
        self,
        index_path: str,
        database: str,
        model_id: str,
        question: str,
        weight: float,
        brain: sqlite3.Connection | None = None,
        min_cosine: float = 0.0,
        checkpoint: Checkpoint = unbounded,
    ) -> None:
        self.model_id = model_id
        self.checkpoint = checkpoint
        self.weight = weight
        self.min_cosine = min_cosine
        self.model = embedding_model(model_id)
        self.query = question_vector(model_id, question)
        self.used = False
        self._states: dict[str, Any] = {}
        profile = dbrain_profile(brain, model_id, len(self.query)) if brain is not None else None
        brain_path = brain.execute("pragma database_list").fetchone()[2] if brain else ""
        self.vectors: PluginIndex | DbrainVectors = (
            DbrainVectors(brain_path, profile)
            if profile
            else PluginIndex(index_path, database, model_id)
        )

    def cosines(self, conn: sqlite3.Connection, kind: str, ids: list[int]) -> list[float] | None:
        """Each row's cosine with the question (0.0 for a row without a vector), None when none
        has one. The vectors come from the nearest-row matrix when it is in memory and holds
        exactly what is stored (the plugin's index), else from SQLite; scored in one product."""
        if not ids:
            return None
        self.checkpoint()
        # Only a matrix already in memory: re-scoring never loads one (an 8x brain's is 400 MB).
        held = self._held_matrix(conn, kind) if self.vectors.matrix_is_stored else None
        np = numpy()
        if held is not None and held[1] is not None:
            row_ids, vectors = _rows_of(held[0], held[1], ids)
        else:
            found = self.vectors.vectors(conn, kind, ids)
            row_ids = [row_id for row_id, _ in found]
            vectors = np.stack([v for _, v in found]) if found else None
        if vectors is None:
            return None
        self.used = True
        best: dict[int, float] = {}
        scores = (vectors.astype(np.float32) @ self.query).tolist()
        for row_id, score in zip(row_ids, scores, strict=True):
            best[row_id] = max(best.get(row_id, -1.0), score)
        return [best.get(row_id, 0.0) for row_id in ids]

    def similarity(self, texts: Sequence[str]) -> list[float]:
        """Each text's cosine with the question (an answer's candidate sentences), embedded
        ``BATCH`` at a time."""
        batches = [texts[start : start + BATCH] for start in range(0, len(texts), BATCH)]
        return [
            float(v)
            for batch in paced(batches, self.checkpoint, every=1)
            for v in embed(self.model, batch) @ self.query
        ]

    def nearest(
        self,
        conn: sqlite3.Connection,
        kind: str,
        count: int,
        skip: set[int],
        keep: Callable[[list[int]], set[int]] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``count`` rows nearest the question at ``min_cosine`` or closer, best first,
        without ``skip``; ``keep`` (the request's filters) says which of some ids may be shown,
        so a filter holds on rows found by meaning as on every other row."""
        ids, matrix = self._matrix(conn, kind)
        if matrix is None or not len(ids) or count <= 0:
            return []
        np = numpy()
        scores = _scores(matrix, self.query, self.checkpoint)
        close = np.flatnonzero(scores >= self.min_cosine)
        order = close[np.argsort(-scores[close], kind="stable")]
        found: list[tuple[int, float]] = []
        # Only as many of the close rows are read as it takes to find ``count`` (a question
        # close to much of a large brain would otherwise read it all).
        for start in paced(range(0, len(order), NEAREST_BATCH), self.checkpoint, every=1):
            batch = [(int(ids[i]), float(scores[i])) for i in order[start : start + NEAREST_BATCH]]
            batch = [c for c in batch if c[0] not in skip]
            if not batch:
                continue
            allowed = keep([row_id for row_id, _ in batch]) if keep is not None else None
            found += [c for c in batch if allowed is None or c[0] in allowed]
            if len(found) >= count:
                break
        self.used = self.used or bool(found)
        return found[:count]

    def _state(self, conn: sqlite3.Connection, kind: str) -> Any:
        """The version of the table's vectors, read once a run (re-scoring and nearest-row
        search both ask for it)."""
        if kind not in self._states:
            self._states[kind] = self.vectors.state(conn, kind)
        return self._states[kind]

    def _held_matrix(self, conn: sqlite3.Connection, kind: str) -> tuple[Any, Any] | None:
        """The table's (ids, matrix) when they are in memory and current, else None."""
        state = self._state(conn, kind)
        with _MATRICES_LOCK:
            cached = _MATRICES.get(self.vectors.key(kind))
        if cached is None or state is None or cached[0] != state:
            return None
        return cached[1], cached[2]

    def _matrix(self, conn: sqlite3.Connection, kind: str) -> tuple[Any, Any]:
        """The table's (ids, matrix), read from its store unless held (``_held_matrix``)."""
        held = self._held_matrix(conn, kind)
        if held is not None:
            return held
        np = numpy()
        rows = self.vectors.rows(conn, kind)
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = None
        if rows:
            matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=self.vectors.dtype)
            matrix = matrix.reshape(len(rows), -1).astype(np.float16)
            if isinstance(self.vectors, DbrainVectors):
                norms = np.linalg.norm(matrix.astype(np.float32), axis=1, keepdims=True)
                matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float16)
        with _MATRICES_LOCK:
            _MATRICES[self.vectors.key(kind)] = (self._state(conn, kind), ids, matrix)
        return ids, matrix


def _rows_of(ids: Any, matrix: Any, wanted: list[int]) -> tuple[list[int], Any]:
    """The ids among ``wanted`` that the matrix holds and their rows (``ids`` is sorted, a row
    id at most once: the plugin's index)."""
    np = numpy()
    asked = np.asarray(wanted, dtype=np.int64)
    at = np.minimum(np.searchsorted(ids, asked), len(ids) - 1)
    present = ids[at] == asked
    return asked[present].tolist(), (matrix[at[present]] if present.any() else None)


def _scores(matrix: Any, query: Any, checkpoint: Checkpoint) -> Any:
    """Every row's cosine with the (float32) query. The matrix is kept as float16 (half the
    memory), but numpy multiplies float16 without BLAS and sums in float16: each batch is
    copied into one float32 buffer first, twice as fast and exact to float32 (float16 sums
    were off by up to 0.03 on 100,000 rows)."""
    np = numpy()
    buffer = np.empty((min(SCORE_BATCH, len(matrix)), matrix.shape[1]), dtype=np.float32)
    found = []
    for start in paced(range(0, len(matrix), SCORE_BATCH), checkpoint, every=1):
        batch = matrix[start : start + SCORE_BATCH]
        rows = buffer[: len(batch)]
        rows[...] = batch
        found.append(rows @ query)
    return np.concatenate(found)


def semantic_question(question: str) -> str:
    """The question as the lane embeds it: the chat scaffolding and framing removed."""
    from .question_terms import search_text, strip_scaffolding

    return strip_scaffolding(search_text(question)) or question


def semantic_state(
    brain: sqlite3.Connection,
    index_path: str | None,
    database: str,
    model_id: str,
    filters: Any,
) -> dict[str, Any]:
    """Whether the lane can run for this brain, and how fresh its index is (never raises):
    ``{"status": "used"|"disabled", "reason"?, "message"?, "store"?, "stale_tables"?}``.
    Reasons: ``not_configured``, ``model_unavailable``, ``index_missing``,
    ``index_unreadable``."""
    try:
        embedding_model(model_id)
    except SemanticUnavailable as exc:
        return {"status": "disabled", "reason": exc.reason, "message": str(exc)}
    profile = dbrain_profile(brain, model_id)
    if profile:
        return {"status": "used", "store": DbrainVectors.store, "profile": profile}
    kinds = filters.kinds(brain_shape(brain))
    key = (
        brain_version(brain),
        index_version(index_path, database, model_id, kinds),
        database,
        model_id,
        tuple(kinds),
    )
    known = (
        _index_state(brain, index_path, database, model_id, kinds)
        if key[0] is None or key[1] is None
        else _STATES.get(
            key,
            lambda: _index_state(brain, index_path, database, model_id, kinds),
            keep=lambda state: state.get("reason") != INDEX_UNREADABLE,  # a lock passes
        )
    )
    return {
        **known,
        **({"stale_tables": [*known["stale_tables"]]} if "stale_tables" in known else {}),
    }


# Per process: ``_index_state`` by the brain's and the index's versions, so a question pays
# a file stat and a lookup for the index's freshness, not its queries.
_STATES = Remembered(most=64)


def _index_state(
    brain: sqlite3.Connection,
    index_path: str | None,
    database: str,
    model_id: str,
    kinds: list[str],
) -> dict[str, Any]:
    """``semantic_state`` for the plugin's own index: missing, unreadable, or used (and which
    tables are stale)."""
    indexed: dict[str, int] = {}
    stale: list[str] = []
    if index_path and Path(index_path).exists():
        newest = {kind: newest_rows(brain, kind) for kind in kinds}
        try:
            conn = index_reader(index_path)
            indexed = {kind: indexed_up_to(conn, database, model_id, kind) for kind in kinds}
            stale = [
                TABLE[kind]
                for kind, up_to in indexed.items()
                if _added_since(conn, database, model_id, kind, up_to, newest[kind])
            ]
        except sqlite3.Error as exc:
            if "no such table" not in str(exc):  # locked, corrupt, unreadable: say so
                return {
                    "status": "disabled",
                    "reason": INDEX_UNREADABLE,
                    "message": "Rows are found by their words only: the index of search by "
                    f"meaning could not be read ({exc}); another program may be holding the "
                    "plugin's database.",
                }
            indexed = {}
    if not any(indexed.values()):
        path = brain.execute("pragma database_list").fetchone()[2] or f"{database}.db"
        return {
            "status": "disabled",
            "reason": INDEX_MISSING,
            "message": "Rows are found by their words only: search by meaning needs an index "
            f"of this brain ({model_id}). Build it with "
            f"`datasette dbrain-websearch index {Path(path).name}`.",
        }
    found: dict[str, Any] = {"status": "used", "store": PluginIndex.store}
    if stale:
        found["stale_tables"] = stale
    return found


WARNINGS = {
    MODEL_UNAVAILABLE: "semantic_model_unavailable",
    INDEX_MISSING: "semantic_index_missing",
    INDEX_UNREADABLE: "semantic_index_unreadable",
}


def semantic_warnings(state: dict[str, Any]) -> list[dict[str, str]]:
    """The pack's warnings about the lane: a missing model or index, or rows added since the
    index was built (a deliberately disabled lane says nothing)."""
    code = WARNINGS.get(state.get("reason", ""))
    if code:
        return [{"code": code, "message": state.get("message", "")}]
    if state.get("stale_tables"):
        tables = " and ".join(state["stale_tables"])
        return [
            {
                "code": "semantic_index_stale",
                "message": f"Rows were added to {tables} since this brain was indexed for "
                "search by meaning; they are found by their words only until "
                "`datasette dbrain-websearch index` runs again.",
            }
        ]
    return []
