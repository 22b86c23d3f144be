"""Expand's words, with the brain's own counts: ``expansion.refine_query`` gives a tie between
words to the one fewer of the brain's rows hold, read from FTS5's vocabulary."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from functools import partial
from typing import Any

from .brain import FTS_TABLE
from .brain_access import reader, table_names
from .errors import ResearchError
from .expansion import refine_query
from .pack_json import PackJSON
from .spelling import vocab_table


def rows_holding(conn: sqlite3.Connection, tables: list[str], stems: Iterable[str]) -> dict:
    """How many rows of the brain's FTS tables hold each stem (one vocabulary probe each)."""
    held = dict.fromkeys(stems, 0)
    for table in tables:
        vocab = vocab_table(conn, table, "row")
        for term in held:
            row = conn.execute(f"select doc from temp.[{vocab}] where term = ?", [term])
            held[term] += (row.fetchone() or [0])[0]
    return held


async def refinement(datasette: Any, pack: PackJSON, marks: list[dict[str, str]]) -> dict:
    """``refine_query`` over a run's brain; without the brain's counts (the brain detached,
    locked, or an SQLite without ``fts5vocab``) ties go to the rarer word in the run."""
    db = datasette.databases.get(pack.get("database"))
    if db is None:
        return refine_query(pack, marks)

    def suggest(conn: sqlite3.Connection) -> dict:
        present = set(table_names(conn))
        tables = [t for t in FTS_TABLE.values() if t in present]
        return refine_query(pack, marks, brain_rows=partial(rows_holding, conn, tables))

    try:
        return await reader(db)(suggest)
    except ResearchError:
        return refine_query(pack, marks)
