"""The few places Datasette 0.65 and 1.0a differ, detected by feature, never by version string.

Config: 0.65 publishes raw metadata at ``/-/metadata.json``; events and write hooks are 1.0's;
API keys come from datasette-secrets where it is installed. Permissions are in ``permissions``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .config import Settings
from .config_keys import PLUGIN_NAME

if TYPE_CHECKING:  # traces imports the runs database, which imports this module
    from .traces import TraceJSON


def publishes_raw_metadata(datasette: Any) -> bool:
    """0.65 serves the raw metadata (literal secrets included) at ``/-/metadata.json``."""
    return not hasattr(datasette, "allowed")


def raw_plugin_config(datasette: Any) -> Any:
    """The plugin block before ``$env``/``$file`` resolution (0.65 metadata)."""
    return (datasette.metadata("plugins") or {}).get(PLUGIN_NAME)


PROMOTE_EVENT = "dbrain-promote"


def event_classes() -> list[Any]:
    """1.0a: the events the plugin tracks (``register_events``); 0.65 has no events."""
    try:
        from datasette.events import Event
    except ImportError:
        return []
    return [_promotion_event(Event)]


def _promotion_event(base: Any) -> Any:
    @dataclass
    class PromoteEvent(base):
        """Web results of a research run written into a brain by a person."""

        name = PROMOTE_EVENT
        database: str = ""
        run_id: str = ""
        new_rows: int = 0
        already_held: int = 0
        keys: list[str] = field(default_factory=list)

    return PromoteEvent


async def track_promotion(
    datasette: Any, actor: dict | None, trace: TraceJSON, results: list[dict[str, Any]]
) -> None:
    """Tell Datasette 1.0's ``track_event`` hooks about a promotion (nothing on 0.65)."""
    classes = {getattr(c, "name", ""): c for c in getattr(datasette, "event_classes", ())}
    event_class = classes.get(PROMOTE_EVENT)
    if event_class is None:
        return
    await datasette.track_event(
        event_class(
            actor=actor,
            database=trace["database"],
            run_id=trace["run_id"],
            new_rows=sum(r["status"] == "created" for r in results),
            already_held=sum(r["status"] == "exists" for r in results),
            keys=[r["local_source_key"] for r in results],
        )
    )


def write_options(database: Any, request: Any) -> dict[str, Any]:
    """``request=`` for a write on Datasette 1.0, whose write hooks see who wrote; 0.65's
    ``execute_write_fn`` takes none."""
    accepts = "request" in inspect.signature(database.execute_write_fn).parameters
    return {"request": request} if accepts and request is not None else {}


def write_opens_transaction(database: Any) -> bool:
    """Datasette 1.0's ``execute_write_fn`` begins the transaction before the function runs
    (unless given ``transaction=False``); 0.65's leaves it to the function."""
    return "transaction" in inspect.signature(database.execute_write_fn).parameters


# datasette-secrets' names for the providers' keys (its convention on Datasette 1.0).
STORED_KEYS = {"brave": "BRAVE_SEARCH_API_KEY", "exa": "EXA_API_KEY"}
KEY_PAGES = {
    "brave": ("https://api-dashboard.search.brave.com", "Get a Brave Search API key"),
    "exa": ("https://dashboard.exa.ai", "Get an Exa API key"),
}


def stored_secrets() -> list[Any]:
    """``register_secrets`` (datasette-secrets): the providers' keys, set in its UI or as
    ``DATASETTE_SECRETS_<NAME>``; nothing when it is not installed."""
    try:
        from datasette_secrets import Secret
    except ImportError:
        return []
    return [
        Secret(
            name=name,
            description=f"{provider.title()} API key for datasette-dbrain-websearch",
            obtain_url=KEY_PAGES[provider][0],
            obtain_label=KEY_PAGES[provider][1],
        )
        for provider, name in STORED_KEYS.items()
    ]


async def with_stored_keys(datasette: Any, settings: Settings, actor_id: str = "") -> Settings:
    """The settings with each provider key that neither the config nor the environment gave
    taken from datasette-secrets, when it is installed and holds one."""
    missing = {
        provider: name
        for provider, name in STORED_KEYS.items()
        if not str(settings.web.options_for(provider).get("api_key") or "").strip()
    }
    if not missing or not settings.web.enabled:
        return settings
    try:
        from datasette_secrets import get_secret
    except ImportError:
        return settings
    options = dict(settings.web.provider_options)
    for provider, name in missing.items():
        key = await get_secret(datasette, name, actor_id or None)
        if key and key.strip():
            options[provider] = {**options.get(provider, {}), "api_key": key.strip()}
    return replace(settings, web=replace(settings.web, provider_options=options))
