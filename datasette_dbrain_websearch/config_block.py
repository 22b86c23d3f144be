"""Typed reads from one mapping of the plugin's config block, each checked against its key in
``config_keys.CONFIG_KEYS``: the type, the limits and the keys a block may hold.

Every error names the full key (``'external_search.budgets.brave.daily_calls'``) and, when one of
dbrain's environment variables set it, that variable; ``config`` builds the typed settings from
these reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from .config_keys import CONFIG_KEYS, PLUGIN_NAME, ConfigError, ConfigKey

_BY_PATH = {key.path: key for key in CONFIG_KEYS}


@functools.cache
def _children(spec: str) -> frozenset[str]:
    """The keys a block accepts: the next segment of every key below ``spec`` (the keys
    never change, and every request reads the config)."""
    prefix = f"{spec}." if spec else ""
    return frozenset(
        o.path[len(prefix) :].split(".", 1)[0]
        for o in CONFIG_KEYS
        if o.path.startswith(prefix) and not o.path[len(prefix) :].startswith("<")
    )


class ConfigBlock:
    """Typed reads from one mapping, by its keys in ``CONFIG_KEYS``; errors name the full key.

    ``path`` is where the mapping is (``external_search.budgets.brave``), ``spec`` the key
    path it follows (``external_search.budgets.<provider>``); ``extra`` are keys the user names
    (provider blocks)."""

    def __init__(
        self, raw: Any, path: str, spec: str | None = None, extra: set[str] | None = None
    ) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{PLUGIN_NAME}: '{path or 'plugin config'}' must be a mapping")
        self.spec = path if spec is None else spec
        known = _children(self.spec) | (extra or set())
        unknown = sorted(set(raw) - known)
        if unknown:
            where = f" in '{path}'" if path else ""
            raise ConfigError(
                f"{PLUGIN_NAME}: unknown config key(s) {', '.join(unknown)}{where}; "
                f"expected some of {', '.join(sorted(known))}"
            )
        self.raw = raw
        self.path = path
        self.origins: dict[str, str] = {}  # key -> the environment variable that set it

    def name(self, key: str) -> str:
        """The key as an error names it, with the variable that set it when one did."""
        name = f"'{self.path}.{key}'" if self.path else f"'{key}'"
        return f"{name} (from {self.origins[key]})" if key in self.origins else name

    def fill(self, defaults: Mapping[str, tuple[str, Any]]) -> None:
        """Take ``{key: (variable, value)}`` for the keys the block leaves unset."""
        for key, (variable, value) in defaults.items():
            if key not in self.raw:
                self.raw = {**self.raw, key: value}
                self.origins[key] = variable

    def declared(self, key: str) -> ConfigKey:
        return _BY_PATH[f"{self.spec}.{key}" if self.spec else key]

    def int(self, key: str, high: int | None = None) -> int:
        declared = self.declared(key)
        top = declared.high if high is None else high
        if top is None:
            raise TypeError(f"{declared.path} is an integer with no upper limit")
        lo, hi = int(declared.low or 0), int(top)
        value = self.raw.get(key, declared.default)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ConfigError(
                f"{PLUGIN_NAME}: {self.name(key)} must be an integer from {lo} to {hi}"
            )
        return value

    def number(self, key: str) -> float:
        declared = self.declared(key)
        lo, hi = declared.low or 0, declared.high
        if hi is None:
            raise TypeError(f"{declared.path} is a number with no upper limit")
        value = self.raw.get(key, declared.default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise ConfigError(
                f"{PLUGIN_NAME}: {self.name(key)} must be a number from {lo:g} to {hi:g}"
            )
        return float(value)

    def bool(self, key: str) -> bool:
        value = self.raw.get(key, self.declared(key).default)
        if not isinstance(value, bool):
            raise ConfigError(f"{PLUGIN_NAME}: {self.name(key)} must be true or false")
        return value

    def choice(self, key: str, fold: Callable[[Any], Any] = lambda v: v) -> str:
        declared = self.declared(key)
        value = fold(self.raw.get(key, declared.default))
        if value not in declared.choices:
            raise ConfigError(
                f"{PLUGIN_NAME}: {self.name(key)} must be one of {', '.join(declared.choices)}"
            )
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key, list(self.declared(key).default or ()))
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{PLUGIN_NAME}: {self.name(key)} must be a list of strings")
        return tuple(value)

    def string(self, key: str) -> str:
        value = self.raw.get(key) or self.declared(key).default
        if not isinstance(value, str):
            raise ConfigError(f"{PLUGIN_NAME}: {self.name(key)} must be a string")
        return value

    def allow(self, key: str) -> Any:
        value = self.raw.get(key)
        if value is not None and not isinstance(value, bool | Mapping):
            raise ConfigError(
                f"{PLUGIN_NAME}: {self.name(key)} must be an allow block like {{id: root}}"
            )
        return value
