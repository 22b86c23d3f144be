"""Web search providers: the contract (``base``), the built-ins and the registry."""

from __future__ import annotations

from typing import Any

from .base import (
    Capabilities,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    WebResult,
    plain_text,
)
from .brave import BraveProvider
from .exa import ExaProvider
from .searxng import SearxngProvider

__all__ = [
    "BraveProvider",
    "Capabilities",
    "ExaProvider",
    "Provider",
    "ProviderContext",
    "ProviderError",
    "SearchRequest",
    "SearxngProvider",
    "WebResult",
    "builtin_providers",
    "plain_text",
    "registered_providers",
]


def builtin_providers() -> list[Provider]:
    return [BraveProvider(), ExaProvider(), SearxngProvider()]


def registered_providers(datasette: Any) -> dict[str, Provider]:
    """The built-ins, then every provider other plugins register (a same-named one replaces a
    built-in, so a plugin can swap in its own Brave client)."""
    from datasette.plugins import pm

    from .. import hookspecs

    # Added here, not at import time: importing datasette.plugins from our __init__ would load
    # the plugins while this package is half-imported. pluggy keeps other plugins' impls of the
    # hook until its spec arrives, then validates them.
    if not hasattr(pm.hook, "register_dbrain_websearch_providers"):
        pm.add_hookspecs(hookspecs)
    found = {provider.name: provider for provider in builtin_providers()}
    for group in pm.hook.register_dbrain_websearch_providers(datasette=datasette):
        for provider in group or []:
            if isinstance(provider, Provider) and provider.name:
                found[provider.name] = provider
    return found
