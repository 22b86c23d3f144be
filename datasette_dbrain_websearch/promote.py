"""Promotion: writing chosen web results into the brain as ordinary dbrain sources.

A promoted result becomes the row ``dbrain link add`` would have written
(``internal/linkadd/run.go``, ``upsertSourceCandidate``): normalized and canonical URL by
dbrain's rules, ``src:`` key, source type, domain, note path, RFC3339 UTC timestamps, empty
strings rather than NULLs. What is known about the page is kept without claiming more:

- not fetched: the provider's title and text as ``title`` and ``description``, with
  ``extract_status = ''`` (pending), so dbrain's own extractor fetches the page later;
- fetched: what ``SaveSourceExtraction`` writes on success (``ok``, or ``empty`` for a page
  without main text), the fetched page's text as ``extracted_text``;
- fetch failed: what it writes on failure (``error`` and its failure columns, so dbrain retries
  after its cooldown), the provider's text kept as ``description``.

Unlike ``dbrain link add``, the ``sources_fts`` row is written at once (packed as dbrain packs
it), so the next search finds the page; dbrain rewrites it by rowid when it extracts the page.
Rows are written with sqlite-utils in one transaction per request; a URL whose normalized form
exists already is reported as ``exists`` and left as it was, but for the tags the person adds.
Tags go into ``user_tags`` as dbrain's tag vocabulary writes them; a note becomes a ``manual``
item (with its ``items_fts`` row) linked to the page through ``item_source_links``, as dbrain
links an item to a page it mentions. Only ``ext:`` keys of the run's own trace can be promoted,
so no request can inject an arbitrary URL.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from sqlite_utils.db import Table

from . import semantic
from .errors import ResearchError, sqlite_error
from .extraction import extractor_missing
from .fetch import FetchResult, fetch_page
from .fts_rows import FTSWriteError, sync_item_fts, sync_source_fts
from .providers.base import clean
from .runs_db import PROMOTIONS_TABLE, bounded_write
from .schema import go_json, item_content_hash, sqlite_database, utc_now
from .traces import RUN_ID
from .urls import UnsupportedURL, normalize_url, slugify, try_normalize_url

EXTRACT_TOOL = "datasette-dbrain-websearch"
MAX_KEYS = 50


def tool_version() -> str:
    try:
        return version(EXTRACT_TOOL)
    except PackageNotFoundError:
        return ""


MAX_TAGS = 20
MAX_NOTE_CHARS = 4000
_NOT_TAG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class PromotionRequest:
    run_id: str
    source_keys: tuple[str, ...]
    fetch: bool
    tags: tuple[str, ...] = ()
    note: str = ""


def dbrain_tags(values: Iterable[str]) -> tuple[str, ...]:
    """Tags as dbrain's category vocabulary writes them (``categoryvocab.ApplyToCSV``): lower
    case, every run of other characters one hyphen, none at either end, each once, in the
    order given. Each value may hold several, comma-separated."""
    tags: list[str] = []
    for value in values:
        for part in value.split(","):
            tag = _NOT_TAG.sub("-", part.strip().lower()).strip("-")[:64].strip("-")
            if tag and tag not in tags:
                tags.append(tag)
    return tuple(tags)


def merged_tags(existing: str, added: Iterable[str]) -> str:
    """``user_tags`` with ``added`` appended where missing, joined with "," as dbrain's
    ``MergeUserTags`` joins them (a tag already there, in any case, is not repeated)."""
    kept = [tag.strip() for tag in existing.split(",") if tag.strip()]
    have = {tag.lower() for tag in kept}
    return ",".join([*kept, *(tag for tag in added if tag not in have)])


def parse_request(body: Mapping[str, Any]) -> PromotionRequest:
    """Validate ``{"run_id", "source_keys": [...], "fetch": false, "tags": [...], "note": ""}``
    (JSON or form; ``tags`` may be one comma-separated string)."""
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
    tags = body.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ResearchError(
            "tags must be a list of words, or one comma-separated string.", code="bad_tags"
        )
    tags = dbrain_tags(tags)
    if len(tags) > MAX_TAGS:
        raise ResearchError(f"At most {MAX_TAGS} tags at a time.", code="bad_tags")
    note = body.get("note") or ""
    if not isinstance(note, str) or len(note) > MAX_NOTE_CHARS:
        raise ResearchError(
            f"note must be text of at most {MAX_NOTE_CHARS:,} characters.", code="bad_note"
        )
    return PromotionRequest(run_id, tuple(dict.fromkeys(keys)), fetch, tags, clean(note).strip())


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
class Annotation:
    """What the person says of the pages they keep: tags for each new source (added to one
    the brain holds), and a note that becomes a dbrain ``manual`` item linked to each, its text
    the note plus the question and run that found the page."""

    tags: tuple[str, ...] = ()
    note: str = ""
    question: str = ""
    run_id: str = ""


@dataclass(frozen=True)
class Candidate:
    """One row to write, prepared outside the write transaction (network work done)."""

    ext_key: str
    url: str
    columns: dict[str, Any]
    provider: str
    rank: int
    fetch: str
    extract_error: str
    found_url: str = ""  # the URL as the provider gave it (item_source_links.original_url)


def candidate(row: Mapping[str, Any], fetched: FetchResult | None, now: str) -> Candidate:
    """The ``sources`` columns for a web row: link add's, plus what a fetch (if any) found."""
    try:
        normalized = normalize_url(row["canonical_url"])
    except UnsupportedURL as exc:
        raise ResearchError(
            f"{row['canonical_url']} is not a URL dbrain accepts.", code="unsupported_url"
        ) from exc
    provider_text = row.get("text") or row["excerpt"]
    columns: dict[str, Any] = {
        "source_key": normalized.source_key,
        "canonical_url": normalized.canonical_url,
        "normalized_url": normalized.normalized_url,
        "source_type": normalized.source_type,
        "domain": normalized.domain,
        "note_path": normalized.note_path,
        "title": row["title"],
        "description": provider_text,
        "created_at": now,
        "updated_at": now,
    }
    if fetched is not None and fetched.ok:
        final = try_normalize_url(fetched.final_url) or normalized
        columns |= {
            # extraction rewrites canonical_url, never normalized_url
            "canonical_url": final.canonical_url,
            "title": fetched.title or row["title"],
            "description": fetched.description or provider_text,
            "site_name": fetched.site_name,
            "extracted_text": fetched.text,
            "extract_status": "ok" if fetched.text else "empty",
            "extracted_at": now,
            "extract_tool": EXTRACT_TOOL,
            "extract_tool_version": tool_version(),
            "content_hash": hashlib.sha256(fetched.text.encode()).hexdigest(),
        }
    elif fetched is not None:
        columns |= {
            "extract_status": "error",
            "extract_error": fetched.error,
            "extract_failure_kind": fetched.failure_kind or "unknown",
            "extract_failure_count": 1,
            "extract_first_failed_at": now,
            "extract_last_failed_at": now,
        }
    lane = row["retrieval"]["lanes"][0]
    return Candidate(
        ext_key=row["source_key"],
        url=row["canonical_url"],
        columns=columns,
        provider=lane.get("provider", ""),
        rank=int(lane.get("rank", 0)),
        fetch="not_fetched" if fetched is None else "fetched" if fetched.ok else "failed",
        extract_error="" if fetched is None or fetched.ok else fetched.error,
        found_url=row.get("provider_url") or row["canonical_url"],
    )


def note_item(item: Candidate, annotation: Annotation, now: str) -> dict[str, Any]:
    """The ``items`` row of a note on a kept page, shaped as dbrain's importers shape items
    (a ``manual:`` key, as dbrain's UI reads them; the same note on the same page is the same
    key, so keeping a page twice never writes the note twice)."""
    columns = item.columns
    digest = hashlib.sha256(f"{columns['normalized_url']}\n{annotation.note}".encode()).hexdigest()
    digest = digest[:12]
    title = f"Note: {columns.get('title') or columns['canonical_url']}"[:200]
    row: dict[str, Any] = {
        "source_key": f"manual:{digest}",
        "source_type": "manual",
        "external_id": digest,
        "canonical_url": columns["canonical_url"],
        "title": title,
        "text": f"{annotation.note}\n\nSaved from research: \u201c{annotation.question}\u201d "
        f"(run {annotation.run_id}).",
        "saved_at": now,
        "synced_at": now,
        "primary_domain": columns.get("domain", ""),
        "links_json": go_json([columns["canonical_url"]]),
        "note_path": f"items/manual/{now[:4]}/{slugify(title)}-{digest}.md",
        "raw_json": go_json(
            {
                "tool": EXTRACT_TOOL,
                "run_id": annotation.run_id,
                "question": annotation.question,
                "url": columns["canonical_url"],
            }
        ),
        "user_tags": ",".join(annotation.tags),
        "imported_at": now,
        "updated_at": now,
        "last_seen_at": now,
    }
    row["content_hash"] = item_content_hash(row)
    return row


def write_sources(
    conn: sqlite3.Connection,
    candidates: list[Candidate],
    annotation: Annotation = Annotation(),
    now: str = "",
) -> list[dict[str, Any]]:
    """Insert the sources and their FTS rows in one transaction; existing URLs are ``exists``
    (their tags gain the new ones); a note becomes a manual item linked to each page.

    Runs on Datasette's single write thread, so the look-up and the insert cannot interleave
    with another promotion; a writer outside this process (dbrain itself) still hits the
    UNIQUE constraint, which is read as ``exists`` too. The outer ``atomic()`` opens the
    transaction, so each sqlite-utils write inside it is a savepoint, not a commit.
    """
    now = now or utc_now()
    db = sqlite_database(conn)
    sources = db.table("sources")
    present = set(sources.columns_dict)
    if "normalized_url" not in present or not db.table("sources_fts").exists():
        raise ResearchError(
            "This brain has no dbrain sources/sources_fts tables to promote into.",
            status=409,
            code="no_sources_table",
        )
    tagging = bool(annotation.tags) and "user_tags" in present
    results: list[dict[str, Any]] = []
    try:
        with db.atomic():
            for item in candidates:
                columns = {k: v for k, v in item.columns.items() if k in present}
                if tagging:
                    columns["user_tags"] = ",".join(annotation.tags)
                row_id, status, key = _insert_or_find(conn, sources, columns, item.url)
                result = _result(
                    item, status, row_id, columns if status == "created" else {"source_key": key}
                )
                if tagging:
                    result["tags"] = (
                        columns["user_tags"]
                        if status == "created"
                        else _add_tags(conn, row_id, annotation.tags, now)
                    )
                if annotation.note:
                    result["note_key"], result["note_item_id"] = _write_note(
                        db, item, row_id, annotation, now
                    )
                results.append(result)
    except FTSWriteError as exc:  # rolled back: no row without its FTS row, no tag half-saved
        raise ResearchError(
            f"The brain's full-text index could not be rewritten ({exc}); nothing was "
            "promoted. Its FTS tables are damaged or not dbrain's: rebuild them, then promote "
            "again.",
            status=409,
            code="fts_write_failed",
        ) from exc
    return results


def _insert_or_find(
    conn: sqlite3.Connection, sources: Table, columns: dict[str, Any], url: str
) -> tuple[int, str, str]:
    """Write a new source with its FTS row, or find the one holding its URL: the row id,
    ``created`` or ``exists``, and its key."""
    existing = _existing(sources, columns["normalized_url"])
    if existing is None:
        try:
            sources.insert(columns)
        except sqlite3.IntegrityError:
            existing = _existing(sources, columns["normalized_url"])
            if existing is None:
                raise ResearchError(
                    f"{url} clashes with a row in the brain.", status=409, code="conflict"
                ) from None
        else:
            row_id = sources.last_rowid
            assert row_id is not None  # the insert above succeeded
            sync_source_fts(conn, row_id)
            return row_id, "created", columns["source_key"]
    return existing[0], "exists", existing[1]


def _add_tags(conn: sqlite3.Connection, source_id: int, tags: tuple[str, ...], now: str) -> str:
    """Add tags to a source the brain holds as dbrain's tag setter does: the row's
    ``user_tags`` and ``updated_at``, then its ``sources_fts`` row (which packs the tags)."""
    (existing,) = conn.execute(
        "SELECT user_tags FROM sources WHERE id = ?", (source_id,)
    ).fetchone()
    merged = merged_tags(existing or "", tags)
    if merged != existing:
        conn.execute(
            "UPDATE sources SET user_tags = ?, updated_at = ? WHERE id = ?",
            (merged, now, source_id),
        )
        sync_source_fts(conn, source_id)
    return merged


def _write_note(
    db: Any, item: Candidate, source_id: int, annotation: Annotation, now: str
) -> tuple[str, int]:
    """The note as a manual item (once) with its ``items_fts`` row, linked to the source
    through ``item_source_links`` as dbrain links an item to a page it mentions: its key and
    row id."""
    row = note_item(item, annotation, now)
    items = db.table("items")
    present = set(items.columns_dict)
    found = list(items.rows_where("source_key = ?", [row["source_key"]], select="id", limit=1))
    if found:
        item_id = found[0]["id"]
    else:
        items.insert({k: v for k, v in row.items() if k in present})
        item_id = items.last_rowid
        sync_item_fts(db.conn, item_id)
    db.execute(
        "INSERT OR IGNORE INTO item_source_links (item_id, source_id, original_url, created_at) "
        "VALUES (?, ?, ?, ?)",
        [item_id, source_id, item.found_url, now],
    )
    return row["source_key"], item_id


def _existing(sources: Table, normalized_url: str) -> tuple[int, str] | None:
    for row in sources.rows_where(
        "normalized_url = ?", [normalized_url], select="id, source_key", limit=1
    ):
        return row["id"], row["source_key"]
    return None


def _result(item: Candidate, status: str, row_id: int, columns: Mapping[str, Any]) -> dict:
    return {
        "source_key": item.ext_key,
        "status": status,
        "local_source_key": columns["source_key"],
        "row_id": row_id,
        "content_hash": columns.get("content_hash", ""),
        "title": item.columns.get("title", ""),
        # What became of the page: "fetched" (its text is the extraction), "failed" (the
        # provider's text kept as the description; dbrain retries), "not_fetched" (dbrain
        # extracts it later) or "skipped" (already in the brain, left as it was).
        "fetch": item.fetch if status == "created" else "skipped",
    }


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


def provenance_rows(
    trace: Mapping[str, Any],
    database: str,
    candidates: list[Candidate],
    results: list[dict[str, Any]],
    actor_id: str,
    now: str,
) -> list[dict[str, Any]]:
    """One plugin-database row per promoted key: where it came from and who promoted it."""
    queries = {q["provider"]: q["query"] for q in trace["pack"]["query_plan"]["external_queries"]}
    return [
        {
            "run_id": trace["run_id"],
            "external_source_key": item.ext_key,
            "local_source_key": result["local_source_key"],
            "database_name": database,
            "status": result["status"],
            "url": item.url,
            "provider": item.provider,
            "provider_query": queries.get(item.provider, ""),
            "provider_rank": item.rank,
            "retrieved_at": trace["started_at"],
            "promoted_at": now,
            "actor_id": actor_id,
            "content_hash": result["content_hash"],
            "fetched": int(result["fetch"] == "fetched"),
            "extract_error": item.extract_error if result["fetch"] == "failed" else "",
            "tags": result.get("tags", ""),
            "note_item_key": result.get("note_key", ""),
        }
        for item, result in zip(candidates, results, strict=True)
    ]


def write_provenance(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> list[int]:
    """Append the provenance rows to the plugin's own database (never the brain); their ids."""
    table = sqlite_database(conn).table(PROMOTIONS_TABLE)
    ids = []
    with conn:
        for row in rows:
            table.insert(row)
            ids.append(int(table.last_rowid or 0))
    return ids


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
    held_ids = await _hold_provenance(plugin_db, trace, candidates, actor_id, now)
    try:
        results = await bounded_write(
            brain_db,
            lambda conn: write_sources(conn, candidates, annotation, now),
            **(write_options or {}),
        )
    except sqlite3.OperationalError as exc:
        await _release_provenance(plugin_db, held_ids)
        if "readonly" in str(exc) or "read-only" in str(exc):
            raise ResearchError(
                f"The brain '{trace['database']}' is read-only (file permissions); nothing was "
                "promoted.",
                status=409,
                code="brain_read_only",
            ) from exc
        raise sqlite_error(exc, trace["database"]) from exc
    except BaseException:
        await _release_provenance(plugin_db, held_ids)
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


PENDING = "pending"  # a provenance record held before its source row is written


async def _hold_provenance(
    plugin_db: Any, trace: Mapping[str, Any], candidates: list[Candidate], actor_id: str, now: str
) -> list[int]:
    """Record where each page comes from before the brain is written, or refuse the promotion
    (503) when the plugin's database cannot take the records."""
    if plugin_db is None:
        return []
    pending = [
        {
            "source_key": c.ext_key,
            "local_source_key": c.columns["source_key"],
            "status": PENDING,
            "content_hash": "",
            "fetch": "not_fetched",
        }
        for c in candidates
    ]
    records = provenance_rows(trace, trace["database"], candidates, pending, actor_id, now)
    try:
        return await bounded_write(plugin_db, lambda conn: write_provenance(conn, records))
    except sqlite3.Error as exc:
        raise ResearchError(
            "Nothing was promoted: the plugin's database could not record where the pages come "
            f"from ({type(exc).__name__}); try again in a moment.",
            503,
            "provenance_not_saved",
            retry_after=2,
        ) from exc


async def _release_provenance(plugin_db: Any, ids: list[int]) -> None:
    """Take back the pending records of a promotion the brain refused (best effort: left
    behind, a pending record names no row of the brain)."""
    if plugin_db is None or not ids:
        return
    marks = ", ".join("?" for _ in ids)

    def release(conn: sqlite3.Connection) -> None:
        with conn:
            conn.execute(
                f"delete from {PROMOTIONS_TABLE} where status = ? and id in ({marks})",
                [PENDING, *ids],
            )

    with contextlib.suppress(Exception):
        await bounded_write(plugin_db, release)


def complete_provenance(
    conn: sqlite3.Connection, ids: list[int], records: list[dict[str, Any]]
) -> None:
    """The pending records, completed with what the brain write did."""
    table = sqlite_database(conn).table(PROMOTIONS_TABLE)
    with conn:
        for row_id, record in zip(ids, records, strict=True):
            table.update(row_id, record)


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
        return {kind: semantic.hydrated(conn, kind, ids) for kind, ids in wanted.items() if ids}

    def write(conn: sqlite3.Connection) -> None:
        for kind, rows in found.items():
            semantic.index_rows(conn, database, model_id, kind, rows)

    try:
        found = await brain_db.execute_fn(read)
        await bounded_write(plugin_db, write)
    except Exception as exc:  # the rows are written; the index catches up on its next run
        for result in [*created, *noted]:
            result["warning"] = f"semantic_index_not_updated ({type(exc).__name__})"


async def promoted_from(plugin_db: Any, database: str, source_key: str) -> str | None:
    """The run whose web result a promotion made into this brain's source, if one did; None
    too while the plugin database is locked (a row page shows the plain key then)."""
    try:
        rows = await plugin_db.execute(
            f"select run_id from {PROMOTIONS_TABLE} where database_name = ? "
            "and local_source_key = ? and status = 'created' order by id limit 1",
            [database, source_key],
        )
    except sqlite3.Error:
        return None
    return rows.rows[0][0] if rows.rows else None


async def promoted_in_run(plugin_db: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """What was promoted from a run so far: ext key -> local key, brain and row id."""
    rows = await plugin_db.execute(
        f"select external_source_key, local_source_key, database_name from {PROMOTIONS_TABLE} "
        "where run_id = ? and status != ? order by id",
        [run_id, PENDING],
    )
    return {r[0]: {"local_source_key": r[1], "database": r[2]} for r in rows.rows}
