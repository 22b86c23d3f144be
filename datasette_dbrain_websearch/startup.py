"""What happens when Datasette starts: check the config, then open the plugin's own database.

Config problems stop startup with a message naming the key. A provider without its API key only
logs a warning (that provider is unavailable; everything else works). On Datasette 0.65, which
publishes raw metadata at ``/-/metadata.json``, a literal ``api_key`` stops startup.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sqlite3
from pathlib import Path
from typing import Any

from datasette.utils import StartupError

from . import compat, runs_db
from .config import Settings, literal_secrets
from .config_keys import ConfigError
from .embeddings import SemanticUnavailable, embedding_model
from .providers import registered_providers

log = logging.getLogger("datasette_dbrain_websearch")


def check_and_prepare(datasette: Any) -> Any:
    try:
        settings = Settings.from_datasette(datasette)
    except ConfigError as exc:
        raise StartupError(str(exc)) from exc
    if compat.publishes_raw_metadata(datasette):
        literal = literal_secrets(compat.raw_plugin_config(datasette))
        if literal:
            raise StartupError(
                f"{', '.join(literal)} is written into the config as plain text, and Datasette "
                "0.65 publishes its config at /-/metadata.json. Use an environment variable "
                'instead, e.g. api_key: {"$env": "BRAVE_SEARCH_API_KEY"}.'
            )
    if settings.web.enabled:
        providers = registered_providers(datasette)
        for name in settings.web.providers:
            provider = providers.get(name)
            reason = (
                "no such provider is installed"
                if provider is None
                else provider.unavailable_reason(settings.web.options_for(name))
            )
            if reason:
                log.warning("dbrain-websearch: provider %s is unavailable: %s", name, reason)

    async def inner() -> None:
        await attach_plugin_database(datasette, settings)
        freeze_startup_heap(settings)

    return inner


_FROZEN: list[bool] = []


def freeze_startup_heap(settings: Settings) -> None:
    """Once per process: load what the first research would (the semantic lane's ``llm`` model
    and its plugins), then move everything loaded so far (Datasette, plugins, their libraries:
    some 180,000 objects) out of the garbage collector's oldest generation (``gc.freeze``).

    A full collection then scans only what requests made: without this, each one stalled every
    request for about a tenth of a second, the tail of ``bench/bench_fairness.py``. The first
    question is no slower than the next."""
    if _FROZEN:
        return
    _FROZEN.append(True)
    with contextlib.suppress(SemanticUnavailable):
        embedding_model(settings.semantic.model)
    gc.collect()
    gc.freeze()


async def attach_plugin_database(datasette: Any, settings: Settings) -> None:
    """Create ``research_runs.db`` (or ``traces_database``) and attach it as ``research_runs``.

    Never a file Datasette already serves: the plugin's tables must not land in a brain.
    """
    from datasette.database import Database

    from .service import brain_databases

    if settings.traces_database:
        path: Path | None = Path(settings.traces_database)
    else:
        brains = await brain_databases(datasette, settings)
        path = runs_db.default_path([datasette.databases[b].path or "" for b in brains])
    if path is None:
        return
    taken = {Path(db.path).resolve(): name for name, db in datasette.databases.items() if db.path}
    if path.resolve() in taken:
        message = (
            f"{path} is already attached as database '{taken[path.resolve()]}'; the plugin keeps "
            "its own tables in a separate file (set traces_database to another path)."
        )
        if settings.traces_database:
            raise StartupError(f"datasette-dbrain-websearch: traces_database: {message}")
        log.warning("dbrain-websearch: %s Runs are not saved and the cache is off.", message)
        return
    try:
        runs_db.create(path)
    except (OSError, sqlite3.Error) as exc:  # a read-only mount says so either way
        log.warning(
            "dbrain-websearch: cannot create %s (%s); runs are not saved and the cache is off",
            path,
            exc,
        )
        return
    database = Database(datasette, path=str(path), is_mutable=True)
    runs_db.remember(datasette, datasette.add_database(database, name=runs_db.DATABASE_NAME))
