"""Typed plugin configuration: defaults, validation and one place that reads the config block.

The block is read on every request (``Settings.from_datasette``) so ``$env``/``$file`` secrets
resolve late and a changed config never needs a restart of the plugin's own state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

PLUGIN_NAME = "datasette-dbrain-websearch"


class ConfigError(ValueError):
    """The plugin block is malformed; raised at startup with a message naming the key."""


@dataclass(frozen=True)
class JudgeThresholds:
    """When local evidence counts as enough (see judge.py for how they are applied)."""

    min_evidence: int = 2
    min_term_coverage: float = 0.75
    top_k: int = 3


@dataclass(frozen=True)
class Settings:
    """Everything the plugin reads from its config block, validated."""

    databases: tuple[str, ...] | None = None
    default_limit: int = 10
    max_limit: int = 50
    excerpt_chars: int = 240
    time_limit_ms: int = 3000
    judge: JudgeThresholds = field(default_factory=JudgeThresholds)

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> Settings:
        """Validate a plugin block (``None`` means defaults) and build Settings."""
        raw = dict(raw or {})
        known = {
            "databases",
            "default_limit",
            "max_limit",
            "excerpt_chars",
            "time_limit_ms",
            "judge",
        }
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ConfigError(
                f"{PLUGIN_NAME}: unknown config key(s) {', '.join(unknown)}; "
                f"expected some of {', '.join(sorted(known))}"
            )
        databases = raw.get("databases")
        if databases is not None:
            if isinstance(databases, str):
                databases = [databases]
            if not isinstance(databases, list) or not all(isinstance(d, str) for d in databases):
                raise ConfigError(f"{PLUGIN_NAME}: 'databases' must be a list of database names")
            databases = tuple(databases)
        judge_raw = raw.get("judge")
        judge_raw = {} if judge_raw is None else judge_raw
        if not isinstance(judge_raw, Mapping):
            raise ConfigError(f"{PLUGIN_NAME}: 'judge' must be a mapping")
        unknown_judge = sorted(set(judge_raw) - {"min_evidence", "min_term_coverage", "top_k"})
        if unknown_judge:
            raise ConfigError(f"{PLUGIN_NAME}: unknown judge key(s) {', '.join(unknown_judge)}")
        judge = JudgeThresholds(
            min_evidence=_int(judge_raw, "min_evidence", 2, lo=1, hi=1000, prefix="judge."),
            min_term_coverage=_float(judge_raw, "min_term_coverage", 0.75, prefix="judge."),
            top_k=_int(judge_raw, "top_k", 3, lo=1, hi=100, prefix="judge."),
        )
        max_limit = _int(raw, "max_limit", 50, lo=1, hi=500)
        default_limit = _int(raw, "default_limit", 10, lo=1, hi=max_limit)
        return cls(
            databases=databases,
            default_limit=default_limit,
            max_limit=max_limit,
            excerpt_chars=_int(raw, "excerpt_chars", 240, lo=40, hi=4000),
            time_limit_ms=_int(raw, "time_limit_ms", 3000, lo=50, hi=120_000),
            judge=judge,
        )

    @classmethod
    def from_datasette(cls, datasette: Any) -> Settings:
        """Read the plugin block from a running Datasette (top level, never per database)."""
        return cls.from_config(datasette.plugin_config(PLUGIN_NAME))


def _int(
    raw: Mapping[str, Any], key: str, default: int, *, lo: int, hi: int, prefix: str = ""
) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"{PLUGIN_NAME}: '{prefix}{key}' must be an integer from {lo} to {hi}")
    return value


def _float(raw: Mapping[str, Any], key: str, default: float, *, prefix: str = "") -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ConfigError(f"{PLUGIN_NAME}: '{prefix}{key}' must be a number from 0 to 1")
    return float(value)
