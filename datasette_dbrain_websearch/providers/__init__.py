"""Web search providers: the contract (``base``), the built-ins and the registry."""

from __future__ import annotations

from typing import Any

from ..hookspecs import plugin_hooks
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
    found = {provider.name: provider for provider in builtin_providers()}
    for group in plugin_hooks().register_dbrain_websearch_providers(datasette=datasette):
        for provider in group or []:
            if isinstance(provider, Provider) and provider.name:
                found[provider.name] = provider
    return found
