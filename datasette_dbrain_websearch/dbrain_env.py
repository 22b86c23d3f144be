"""dbrain's own environment variables, read as the plugin's config defaults: its providers' API
keys and its ``DBRAIN_EXTERNAL_SEARCH_*`` settings, so what is set for dbrain need not be set
again for the plugin.

A key the plugin's block sets wins; a variable counts only where the block is silent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# dbrain's own names for the providers' keys (its External Search plan, seed 000), read in this
# order when a provider's ``api_key`` is unset or resolves empty, so keys set for dbrain need not
# be set again for the plugin.
DBRAIN_KEY_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "brave": ("BRAVE_SEARCH_API_KEY", "DBRAIN_BRAVE_SEARCH_API_KEY"),
    "exa": ("EXA_API_KEY", "DBRAIN_EXA_API_KEY"),
}
# dbrain's own ``external_search`` settings (same plan), read as defaults under the plugin's
# config: a key the plugin's block sets wins, the variable counts only where the block is silent.
# dbrain names the providers' variable in the plural; the singular is accepted too.
DBRAIN_DEFAULT_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "default_mode": ("DBRAIN_EXTERNAL_SEARCH_MODE",),
    "providers": ("DBRAIN_EXTERNAL_SEARCH_PROVIDERS", "DBRAIN_EXTERNAL_SEARCH_PROVIDER"),
    "count": ("DBRAIN_EXTERNAL_SEARCH_COUNT",),
}
# Every environment variable the config reads: what a cached read of it depends on.
DBRAIN_VARIABLES = tuple(
    variable
    for variables in (*DBRAIN_KEY_VARIABLES.values(), *DBRAIN_DEFAULT_VARIABLES.values())
    for variable in variables
)


def dbrain_defaults(environ: Mapping[str, str]) -> dict[str, tuple[str, Any]]:
    """dbrain's ``DBRAIN_EXTERNAL_SEARCH_*`` settings that are set, as ``{key: (variable,
    value)}`` in the config's shapes (a list of providers, a count); the block's own checks
    validate them, naming the variable."""
    found: dict[str, tuple[str, Any]] = {}
    for key, variables in DBRAIN_DEFAULT_VARIABLES.items():
        variable = next((v for v in variables if (environ.get(v) or "").strip()), None)
        if variable is None:
            continue
        text = environ[variable].strip()
        if key == "providers":
            found[key] = (variable, [p.strip() for p in text.split(",") if p.strip()])
        elif key == "count":
            found[key] = (variable, int(text) if re.fullmatch(r"[0-9]{1,6}", text) else text)
        else:
            found[key] = (variable, text)
    return found


def with_dbrain_keys(
    options: Mapping[str, Mapping[str, Any]], environ: Mapping[str, str]
) -> dict[str, Mapping[str, Any]]:
    """Provider blocks with an unset key filled from dbrain's environment variables."""
    filled = dict(options)
    for name, variables in DBRAIN_KEY_VARIABLES.items():
        block = filled.get(name) or {}
        if str(block.get("api_key") or "").strip():
            continue
        key = next((environ[v].strip() for v in variables if (environ.get(v) or "").strip()), "")
        if key:
            filled[name] = {**block, "api_key": key}
    return filled
