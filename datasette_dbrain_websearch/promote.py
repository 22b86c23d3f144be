"""Promotion: writing chosen web results into the brain as ordinary dbrain sources.

A promoted result becomes exactly what ``dbrain link add`` plus a successful extraction would
have written (``internal/linkadd/run.go``, ``upsertSourceCandidate``, ``SaveSourceExtraction``):
normalized and canonical URL by dbrain's rules, ``src:`` key, source type, domain, note path,
RFC3339 UTC timestamps, empty strings rather than NULLs, the provider's text (or the fetched
page's) as ``extracted_text`` with ``extract_status = 'ok'``, and the matching ``sources_fts``
row packed as dbrain packs it. Nothing is added to dbrain's tables; one write transaction per
request; a URL whose normalized form exists already is reported as ``exists``. Only ``ext:``
keys of the run's own trace can be promoted, so no request can inject an arbitrary URL.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .errors import ResearchError
from .fetch import FetchResult, fetch_page
from .schema import sync_source_fts, utc_now
from .store import PROMOTIONS_TABLE
from .traces import RUN_ID
from .urls import UnsupportedURL, normalize_url, try_normalize_url

EXTRACT_TOOL = "datasette-dbrain-websearch"
MAX_KEYS = 50


def tool_version() -> str:
    try:
        return version(EXTRACT_TOOL)
    except PackageNotFoundError:
        return ""


@dataclass(frozen=True)
class PromotionRequest:
    run_id: str
    source_keys: tuple[str, ...]
    fetch: bool


def parse_request(body: Mapping[str, Any]) -> PromotionRequest:
    """Validate ``{"run_id", "source_keys": [...], "fetch": false}`` (JSON or form)."""
    run_id = body.get("run_id")
    keys = body.get("source_keys")
    fetch = body.get("fetch", False)
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise ResearchError(
            "run_id must be a run id like 20260102T150405.000000000Z-0a1b2c3d4e5f.",
            code="bad_run_id",
        )
    if isinstance(keys, str):
        keys = [keys]
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
        raise ResearchError(
            "source_keys must be a non-empty list of ext: keys.", code="bad_source_keys"
        )
    if len(keys) > MAX_KEYS:
        raise ResearchError(f"At most {MAX_KEYS} source_keys at a time.", code="bad_source_keys")
    if isinstance(fetch, str):
        fetch = fetch.lower() in ("1", "true", "on", "yes")
    if not isinstance(fetch, bool):
        raise ResearchError("fetch must be true or false.", code="bad_fetch")
    return PromotionRequest(run_id, tuple(dict.fromkeys(keys)), fetch)


def chosen_rows(trace: Mapping[str, Any], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """The run's external rows for the keys; any key not in the run is a 400."""
    rows = {row["source_key"]: row for row in trace["pack"]["external_evidence"]}
    unknown = [k for k in keys if k not in rows]
    if unknown:
        raise ResearchError(
            f"Not web results of run {trace['run_id']}: {', '.join(unknown)}. Only ext: keys "
            "from that run's external evidence can be promoted.",
            code="not_in_run",
        )
    return [rows[k] for k in keys]


@dataclass(frozen=True)
class Candidate:
    """One row to write, prepared outside the write transaction (network work done)."""

    ext_key: str
    url: str
    columns: dict[str, Any]
    provider: str
    rank: int
    fetched: bool
    extract_error: str


def candidate(row: Mapping[str, Any], fetched: FetchResult | None, now: str) -> Candidate:
    """The ``sources`` columns for a web row, as dbrain's link add + extraction write them."""
    try:
        normalized = normalize_url(row["canonical_url"])
    except UnsupportedURL as exc:
        raise ResearchError(
            f"{row['canonical_url']} is not a URL dbrain accepts.", code="unsupported_url"
        ) from exc
    text, title, description, site_name = row.get("text") or row["excerpt"], row["title"], "", ""
    canonical = normalized.canonical_url
    status = "ok"
    failure: dict[str, Any] = {}
    if fetched is not None and fetched.ok:
        # dbrain's 'empty' (the page had no main text) keeps the provider's text as a stand-in.
        status = "ok" if fetched.text else "empty"
        text = fetched.text or text
        title = fetched.title or title
        description, site_name = fetched.description, fetched.site_name
        final = try_normalize_url(fetched.final_url) or normalized
        canonical = final.canonical_url  # extraction rewrites canonical_url, never normalized_url
    elif fetched is not None:
        # Recorded as dbrain records a failed extraction (so dbrain retries it after its
        # cooldown); the provider's text stays searchable meanwhile.
        status = "error"
        failure = {
            "extract_error": fetched.error,
            "extract_failure_kind": fetched.failure_kind or "unknown",
            "extract_failure_count": 1,
            "extract_first_failed_at": now,
            "extract_last_failed_at": now,
        }
    if not description:
        description = row.get("excerpt", "")
    columns = {
        "source_key": normalized.source_key,
        "canonical_url": canonical,
        "normalized_url": normalized.normalized_url,
        "source_type": normalized.source_type,
        "domain": normalized.domain,
        "note_path": normalized.note_path,
        "title": title,
        "description": description,
        "site_name": site_name,
        "extracted_text": text,
        "extract_status": status,
        "extracted_at": now if status != "error" else "",
        "extract_tool": EXTRACT_TOOL,
        "extract_tool_version": tool_version(),
        "content_hash": hashlib.sha256(text.encode()).hexdigest(),
        "created_at": now,
        "updated_at": now,
        **failure,
    }
    lane = row["retrieval"]["lanes"][0]
    return Candidate(
        ext_key=row["source_key"],
        url=row["canonical_url"],
        columns=columns,
        provider=lane.get("provider", ""),
        rank=int(lane.get("rank", 0)),
        fetched=fetched is not None and fetched.ok,
        extract_error=failure.get("extract_error", ""),
    )


def write_sources(conn: sqlite3.Connection, candidates: list[Candidate]) -> list[dict[str, Any]]:
    """Insert the sources and their FTS rows in one transaction; existing URLs are ``exists``.

    Runs on Datasette's single write thread, so the look-up and the insert cannot interleave
    with another promotion; a writer outside this process (dbrain itself) still hits the
    UNIQUE constraint, which is read as ``exists`` too.
    """
    present = {r[1] for r in conn.execute("pragma table_info(sources)")}
    fts = conn.execute("select 1 from sqlite_master where name = 'sources_fts'").fetchone()
    if "normalized_url" not in present or fts is None:
        raise ResearchError(
            "This brain has no dbrain sources/sources_fts tables to promote into.",
            status=409,
            code="no_sources_table",
        )
    results: list[dict[str, Any]] = []
    with conn:
        for item in candidates:
            columns = {k: v for k, v in item.columns.items() if k in present}
            existing = _existing(conn, columns["normalized_url"])
            if existing is None:
                names = ", ".join(columns)
                marks = ", ".join("?" for _ in columns)
                try:
                    cursor = conn.execute(
                        f"insert into sources ({names}) values ({marks})", list(columns.values())
                    )
                except sqlite3.IntegrityError:
                    existing = _existing(conn, columns["normalized_url"])
                else:
                    sync_source_fts(conn, cursor.lastrowid)
                    results.append(_result(item, "created", cursor.lastrowid, columns))
                    continue
            if existing is None:
                raise ResearchError(
                    f"{item.url} clashes with a row in the brain.", status=409, code="conflict"
                )
            results.append(_result(item, "exists", existing[0], {"source_key": existing[1]}))
    return results


def _existing(conn: sqlite3.Connection, normalized_url: str) -> tuple[int, str] | None:
    row = conn.execute(
        "select id, source_key from sources where normalized_url = ?", [normalized_url]
    ).fetchone()
    return (row[0], row[1]) if row else None


def _result(item: Candidate, status: str, row_id: int, columns: Mapping[str, Any]) -> dict:
    return {
        "source_key": item.ext_key,
        "status": status,
        "local_source_key": columns["source_key"],
        "row_id": row_id,
        "content_hash": columns.get("content_hash", ""),
        "title": item.columns.get("title", ""),
        # "fetched", "failed" (the provider's text was kept) or "not_fetched" (not asked for)
        "fetch": "fetched" if item.fetched else "failed" if item.extract_error else "not_fetched",
    }


async def fetch_all(
    rows: list[dict[str, Any]], allow_networks: tuple[str, ...]
) -> dict[str, FetchResult]:
    """Fetch each row's page (sequentially: promotion is a handful of deliberate clicks)."""
    return {
        row["source_key"]: await fetch_page(row["canonical_url"], allow_networks=allow_networks)
        for row in rows
    }


def provenance_rows(
    trace: Mapping[str, Any],
    database: str,
    candidates: list[Candidate],
    results: list[dict[str, Any]],
    actor_id: str,
    now: str,
) -> list[list[Any]]:
    """One plugin-database row per promoted key: where it came from and who promoted it."""
    queries = {q["provider"]: q["query"] for q in trace["pack"]["query_plan"]["external_queries"]}
    rows = []
    for item, result in zip(candidates, results, strict=True):
        rows.append(
            [
                trace["run_id"],
                item.ext_key,
                result["local_source_key"],
                database,
                result["status"],
                item.url,
                item.provider,
                queries.get(item.provider, ""),
                item.rank,
                trace["started_at"],
                now,
                actor_id,
                result["content_hash"],
                int(item.fetched),
                item.extract_error,
            ]
        )
    return rows


def write_provenance(conn: sqlite3.Connection, rows: list[list[Any]]) -> None:
    with conn:
        conn.executemany(
            f"insert into {PROMOTIONS_TABLE} (run_id, external_source_key, local_source_key, "
            "database_name, status, url, provider, provider_query, provider_rank, retrieved_at, "
            "promoted_at, actor_id, content_hash, fetched, extract_error) "
            "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )


async def promote(
    brain_db: Any,
    plugin_db: Any,
    trace: Mapping[str, Any],
    request: PromotionRequest,
    actor_id: str,
    allow_networks: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Fetch (optionally), then write the sources, then record provenance."""
    if not getattr(brain_db, "is_mutable", False):
        raise ResearchError(
            f"The brain '{trace['database']}' is opened immutable (datasette -i); nothing can "
            "be promoted into it. Open it without -i to promote.",
            status=409,
            code="brain_read_only",
        )
    rows = chosen_rows(trace, request.source_keys)
    fetched = await fetch_all(rows, allow_networks) if request.fetch else {}
    now = utc_now()
    candidates = [candidate(row, fetched.get(row["source_key"]), now) for row in rows]
    try:
        results = await brain_db.execute_write_fn(lambda conn: write_sources(conn, candidates))
    except sqlite3.OperationalError as exc:
        if "readonly" in str(exc) or "read-only" in str(exc):
            raise ResearchError(
                f"The brain '{trace['database']}' is read-only (file permissions); nothing was "
                "promoted.",
                status=409,
                code="brain_read_only",
            ) from exc
        raise ResearchError(
            f"Could not write to the brain: {exc}", status=409, code="write_failed"
        ) from exc
    if plugin_db is not None:
        records = provenance_rows(trace, trace["database"], candidates, results, actor_id, now)
        try:
            await plugin_db.execute_write_fn(lambda conn: write_provenance(conn, records))
        except Exception as exc:  # the sources are written; say so rather than fail
            for result in results:
                result["warning"] = f"provenance_not_saved ({type(exc).__name__})"
    return results


async def promoted_in_run(plugin_db: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """What was promoted from a run so far: ext key -> local key, brain and row id."""
    rows = await plugin_db.execute(
        f"select external_source_key, local_source_key, database_name from {PROMOTIONS_TABLE} "
        "where run_id = ? order by id",
        [run_id],
    )
    return {r[0]: {"local_source_key": r[1], "database": r[2]} for r in rows.rows}
