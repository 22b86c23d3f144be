"""Promotion: writing chosen web results into the brain as ordinary dbrain sources.

The pages asked for are fetched first (not those the brain holds already), each web row becomes
dbrain's row for it (``promotion_rows``), the provenance records are held
(``promotion_provenance``), the rows written in one transaction (``promotion_write``) and the
records completed; the new rows are then embedded into the semantic index, so the next question
finds them by meaning too. The request itself is checked by ``promotion_request``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

from . import semantic_index
from .errors import ResearchError, sqlite_error
from .extraction import extractor_missing
from .fetch import FetchResult, fetch_page
from .promotion_provenance import (
    complete_provenance,
    hold_provenance,
    provenance_rows,
    release_provenance,
)
from .promotion_request import PromotionRequest, chosen_rows
from .promotion_rows import Annotation, candidate
from .promotion_write import write_sources
from .runs_db import bounded_write
from .schema import sqlite_database, utc_now
from .urls import try_normalize_url


def _normalized(row: Mapping[str, Any]) -> str:
    """A web row's dedupe key in the brain (``normalized_url``), '' if dbrain refuses it."""
    normalized = try_normalize_url(row["canonical_url"])
    return normalized.normalized_url if normalized else ""


async def fetch_all(
    rows: list[dict[str, Any]], allow_networks: tuple[str, ...]
) -> dict[str, FetchResult]:
    """Fetch each row's page (sequentially: promotion is a handful of deliberate clicks)."""
    return {
        row["source_key"]: await fetch_page(row["canonical_url"], allow_networks=allow_networks)
        for row in rows
    }


def held_urls(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> set[str]:
    """The rows' normalized URLs the brain already holds (their pages need no fetch)."""
    urls = [n.normalized_url for r in rows if (n := try_normalize_url(r["canonical_url"]))]
    sources = sqlite_database(conn).table("sources")
    if not urls or "normalized_url" not in sources.columns_dict:
        return set()
    marks = ", ".join("?" for _ in urls)
    return {
        r["normalized_url"]
        for r in sources.rows_where(f"normalized_url in ({marks})", urls, select="normalized_url")
    }


async def promote(
    brain_db: Any,
    plugin_db: Any,
    trace: Mapping[str, Any],
    request: PromotionRequest,
    actor_id: str,
    allow_networks: tuple[str, ...] = (),
    embedding_model: str = "",
    write_options: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Fetch the pages asked for (not those the brain holds already: their fetch would be
    thrown away), then hold the provenance records, write the sources and complete the
    records, then embed the new rows into the semantic index (when the brain has one for
    ``embedding_model``)."""
    if not getattr(brain_db, "is_mutable", False):
        raise ResearchError(
            f"The brain '{trace['database']}' is opened immutable (datasette -i); nothing can "
            "be promoted into it. Open it without -i to promote.",
            status=409,
            code="brain_read_only",
        )
    if request.fetch and extractor_missing():
        raise ResearchError(extractor_missing(), code="fetch_unavailable")
    rows = chosen_rows(trace, request.source_keys)
    fetched: dict[str, FetchResult] = {}
    if request.fetch:
        held = await brain_db.execute_fn(lambda conn: held_urls(conn, rows))
        wanted = [r for r in rows if _normalized(r) not in held]
        fetched = await fetch_all(wanted, allow_networks)
    now = utc_now()
    candidates = [candidate(row, fetched.get(row["source_key"]), now) for row in rows]
    annotation = Annotation(request.tags, request.note, trace["question"], trace["run_id"])
    # Provenance first: a source row is never written without the record of where it came
    # from. The records are held as pending, then completed, or taken back if the brain refuses.
    held_ids = await hold_provenance(plugin_db, trace, candidates, actor_id, now)
    try:
        results = await bounded_write(
            brain_db,
            lambda conn: write_sources(conn, candidates, annotation, now),
            **(write_options or {}),
        )
    except sqlite3.OperationalError as exc:
        await release_provenance(plugin_db, held_ids)
        if "readonly" in str(exc) or "read-only" in str(exc):
            raise ResearchError(
                f"The brain '{trace['database']}' is read-only (file permissions); nothing was "
                "promoted.",
                status=409,
                code="brain_read_only",
            ) from exc
        raise sqlite_error(exc, trace["database"]) from exc
    except BaseException:
        await release_provenance(plugin_db, held_ids)
        raise
    if plugin_db is not None:
        records = provenance_rows(trace, trace["database"], candidates, results, actor_id, now)
        try:
            await bounded_write(
                plugin_db, lambda conn: complete_provenance(conn, held_ids, records)
            )
        except Exception as exc:  # held as pending: the record exists, its outcome is missing
            for result in results:
                result["warning"] = f"provenance_incomplete ({type(exc).__name__})"
        await _index_created(brain_db, plugin_db, trace["database"], embedding_model, results)
    return results


async def _index_created(
    brain_db: Any, plugin_db: Any, database: str, model_id: str, results: list[dict[str, Any]]
) -> None:
    """Embed the sources just created and the notes written with them, so the next question
    finds them by meaning too (and the index is not stale for rows the plugin wrote); a failure
    leaves them to the next ``index`` run and says so on each result."""
    created = [r for r in results if r["status"] == "created"]
    noted = [r for r in results if r.get("note_item_id")]
    if not (created or noted) or not model_id:
        return
    wanted = {
        "source": [r["row_id"] for r in created],
        "item": list(dict.fromkeys(r["note_item_id"] for r in noted)),
    }

    def read(conn: sqlite3.Connection) -> dict[str, list[Any]]:
        return {
            kind: semantic_index.hydrated(conn, kind, ids) for kind, ids in wanted.items() if ids
        }

    def write(conn: sqlite3.Connection) -> None:
        for kind, rows in found.items():
            semantic_index.index_rows(conn, database, model_id, kind, rows)

    try:
        found = await brain_db.execute_fn(read)
        await bounded_write(plugin_db, write)
    except Exception as exc:  # the rows are written; the index catches up on its next run
        for result in [*created, *noted]:
            result["warning"] = f"semantic_index_not_updated ({type(exc).__name__})"
