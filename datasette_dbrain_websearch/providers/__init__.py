"""Web search providers: the contract (``base``), the built-ins and the registry."""

from __future__ import annotations

from collections.abc import Mapping
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
    "DIRECT",
    "DIRECT_LABEL",
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
    "provider_labels",
    "registered_providers",
]

# A web row's "provider" when it is the page the question named by its URL, read directly: no
# search found it. Reserved, so no provider a plugin registers can pass for it.
DIRECT = "direct"
DIRECT_LABEL = "the page you named"


def builtin_providers() -> list[Provider]:
    return [BraveProvider(), ExaProvider(), SearxngProvider()]


def registered_providers(datasette: Any) -> dict[str, Provider]:
    """The built-ins, then every provider other plugins register (a same-named one replaces a
    built-in, so a plugin can swap in its own Brave client)."""
    found = {provider.name: provider for provider in builtin_providers()}
    for group in plugin_hooks().register_dbrain_websearch_providers(datasette=datasette):
        for provider in group or []:
            if isinstance(provider, Provider) and provider.name and provider.name != DIRECT:
                found[provider.name] = provider
    return found


def provider_labels(providers: Mapping[str, Provider]) -> dict[str, str]:
    """Each web row's provider as people read it (``brave`` -> ``Brave``), the page the
    question named included."""
    return {DIRECT: DIRECT_LABEL, **{name: p.label for name, p in providers.items()}}
