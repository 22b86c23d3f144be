"""Build a demo or benchmark ``brain.db`` that looks exactly like one dbrain wrote.

``build_demo_brain(path)`` writes a small curated brain (about 250 items and 160 sources) whose
topics make good research questions (``curated``; ``questions.DEMO_QUESTIONS`` lists questions
that show off each feature against it). ``build_demo_brain(path, size=N)`` writes a large
synthetic brain (N items, N // 2 sources) for benchmarks (``synthetic``). This module writes
either to its file; both make their rows with ``rows.Builder``.

Both are deterministic: a fixed seed and a fixed clock (``rows.BASE_TIME``), never ``now()``, so two
builds hold the same rows. Rows follow dbrain's conventions: empty strings rather than NULLs,
RFC3339 UTC timestamps, lowercase hyphenated comma-separated tags, dbrain's key prefixes,
``src:`` keys and note paths from ``urls.py``, FTS rows packed by ``fts_rows.py``, and no
``sources_fts`` row for sources that were saved but never extracted.
"""

from __future__ import annotations

import hashlib
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

from ..schema import create_brain_schema
from ..triggers import create_retrieval_triggers
from .curated import curated_brain
from .rows import BASE_TIME, write_brain
from .synthetic import synthetic_brain

__all__ = ["DEMO_SEED", "build_demo_brain"]

DEMO_SEED = 20260718

_BASE_STAMP = BASE_TIME.strftime("%Y-%m-%dT%H:%M:%SZ")


def build_demo_brain(
    path: str | Path,
    size: int | None = None,
    *,
    overwrite: bool = False,
    seed: int = DEMO_SEED,
) -> dict[str, Any]:
    """Write a demo brain to ``path`` and return row counts and the build time in seconds.

    ``size=None`` builds the curated brain; ``size=N`` a synthetic one with N items and
    N // 2 sources. Refuses to replace an existing file unless ``overwrite=True``. The bulk
    load runs in one transaction with ``journal_mode=OFF`` and ``synchronous=OFF``; the file is
    then switched to WAL, the mode dbrain's writable connections use, so it behaves like a
    real ``brain.db``. dbrain's retrieval dirty-tracking triggers are added after the load (so
    they fire for later writes, such as promoted web results, but queued none of the demo rows).
    """
    started = time.perf_counter()
    target = Path(path)
    if target.exists():
        if not overwrite:
            raise FileExistsError(
                f"{target} already exists; pass overwrite=True to replace it with a demo brain"
            )
        for leftover in (target, *(Path(f"{target}{suffix}") for suffix in ("-wal", "-shm"))):
            leftover.unlink(missing_ok=True)
    if size is not None and size < 0:
        raise ValueError("size must not be negative")

    rng = random.Random(seed)
    chunks = [curated_brain(rng)] if size is None else synthetic_brain(rng, size)
    conn = sqlite3.connect(target, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        create_brain_schema(conn, applied_at=_BASE_STAMP)
        conn.execute("BEGIN")
        for chunk in chunks:
            write_brain(conn, chunk)
        conn.execute("COMMIT")
        create_retrieval_triggers(
            conn,
            database_id=hashlib.sha256(f"demo-{seed}".encode()).hexdigest()[:32],
            now=_BASE_STAMP,
        )
        conn.execute("PRAGMA journal_mode = WAL")
        counts = {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in (
                "items",
                "sources",
                "items_fts",
                "sources_fts",
                "item_enrichments",
                "item_source_links",
            )
        }
    finally:
        conn.close()
    return {**counts, "path": str(target), "seconds": round(time.perf_counter() - started, 3)}
