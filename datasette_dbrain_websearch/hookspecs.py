"""The plugin's own hooks, added to Datasette's plugin manager so any plugin can implement them."""

from __future__ import annotations

from typing import Any

from pluggy import HookspecMarker

hookspec = HookspecMarker("datasette")


@hookspec
def register_dbrain_websearch_providers(datasette: Any) -> Any:
    """Return a list of ``datasette_dbrain_websearch.providers.Provider`` instances."""


@hookspec
def register_dbrain_websearch_rankers(datasette: Any) -> Any:
    """Return a list of ``datasette_dbrain_websearch.web_ranking.WebRanker`` instances."""


def plugin_hooks() -> Any:
    """Datasette's hook caller, with these hooks' specs added the first time.

    Added here, not at import time: importing datasette.plugins from our __init__ would load
    the plugins while this package is half-imported. pluggy keeps other plugins' impls of a
    hook until its spec arrives, then validates them."""
    import sys

    from datasette.plugins import pm

    caller = getattr(pm.hook, "register_dbrain_websearch_rankers", None)
    if caller is None or caller.spec is None:
        pm.add_hookspecs(sys.modules[__name__])
    return pm.hook
