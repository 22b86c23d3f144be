"""A promotion request, checked: which run, which of its web rows, whether to fetch the pages,
and the person's tags and note; anything invalid is a ``ResearchError`` (400) before any write.

Only ``ext:`` keys of the run's own trace can be promoted (``chosen_rows``), so no request can
inject an arbitrary URL. Tags are written as dbrain's tag vocabulary writes them
(``dbrain_tags``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ResearchError
from .providers.base import clean
from .traces import RUN_ID

MAX_KEYS = 50
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
