"""The plugin's own hook, added to Datasette's plugin manager so any plugin can implement it."""

from __future__ import annotations

from typing import Any

from pluggy import HookspecMarker

hookspec = HookspecMarker("datasette")


@hookspec
def register_dbrain_websearch_providers(datasette: Any) -> Any:
    """Return a list of ``datasette_dbrain_websearch.providers.Provider`` instances."""
