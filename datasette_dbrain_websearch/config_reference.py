"""The configuration reference as Markdown: every key with its type, default and limits.

Read from ``config.OPTIONS`` (which the parser reads too), so it cannot drift. Its own module, out
of ``config`` (which reads and checks the config): ``datasette dbrain-websearch config-reference``
prints it and ``make docs`` writes it into docs/configuration.md (cog).
"""

from __future__ import annotations

from typing import Any

from .config import OPTIONS, Option

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


def _allowed(option: Option) -> str:
    if option.choices:
        return ", ".join(f"`{c}`" for c in option.choices)
    if option.low is not None and option.high is not None:
        return f"{_shown(option.low)} to {_shown(option.high)}"
    return ""


def reference_markdown() -> str:
    """The configuration reference: every key with its type, default and limits (a table)."""
    lines = [
        "| key | type | default | allowed | what it does |",
        "|---|---|---|---|---|",
    ]
    for option in OPTIONS:
        doc = option.doc + (" (checked by the provider)" if option.checked_by == "provider" else "")
        lines.append(
            f"| `{option.path}` | {_KINDS[option.kind]} | {_shown(option.default)} | "
            f"{_allowed(option)} | {doc} |"
        )
    return "\n".join(lines)
