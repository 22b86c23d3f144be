"""The configuration reference as Markdown: every key with its type, default and limits.

Read from ``config_keys.CONFIG_KEYS`` (which the parser reads too), so it cannot drift. It stays in
the package, not in scripts/, because the command line prints it at run time (``datasette
dbrain-websearch config-reference``); ``make docs`` writes it into docs/configuration.md (cog).
"""

from __future__ import annotations

from typing import Any

from .config_keys import CONFIG_KEYS, ConfigKey

_KINDS = {
    "integer": "integer",
    "number": "number",
    "boolean": "true/false",
    "choice": "one of",
    "strings": "list of strings",
    "string": "string",
    "allow": "allow block",
    "secret": "secret",
}


def _shown(value: Any) -> str:
    if value is None or value in ("", ()):
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(value) + "]"
    return (
        f"{value:,}"
        if isinstance(value, int)
        else f"{value:g}"
        if isinstance(value, float)
        else str(value)
    )


def _allowed(key: ConfigKey) -> str:
    if key.choices:
        return ", ".join(f"`{c}`" for c in key.choices)
    if key.low is not None and key.high is not None:
        return f"{_shown(key.low)} to {_shown(key.high)}"
    return ""


def reference_markdown() -> str:
    """The configuration reference: every key with its type, default and limits (a table)."""
    lines = [
        "| key | type | default | allowed | what it does |",
        "|---|---|---|---|---|",
    ]
    for key in CONFIG_KEYS:
        doc = key.doc + (" (checked by the provider)" if key.checked_by == "provider" else "")
        lines.append(
            f"| `{key.path}` | {_KINDS[key.kind]} | {_shown(key.default)} | "
            f"{_allowed(key)} | {doc} |"
        )
    return "\n".join(lines)
