"""Typed plugin configuration: defaults, validation and one place that reads the config block.

The block is read on every request (``Settings.from_datasette``) so ``$env``/``$file`` secrets
resolve late and a changed config never needs a restart of the plugin's own state. Provider
blocks (``external_search.brave`` ...) keep their resolved values, API keys included, in a field
that is never part of any repr, so a key cannot leak through a log line or a traceback.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

PLUGIN_NAME = "datasette-dbrain-websearch"
MODES = ("never", "on_weak", "always")
# dbrain's plan (seed 000) calls the middle mode by its long name; both are accepted.
MODE_ALIASES = {"on_weak_local_evidence": "on_weak"}


def external_mode(value: str) -> str:
    """A mode as given by a request or config, with dbrain's long name folded to ``on_weak``."""
    value = value.strip().lower()
    return MODE_ALIASES.get(value, value)


SYNTHESIZERS = ("extractive", "llm")
FRESHNESS_RE = re.compile(r"^(pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$")
MAX_EXTERNAL_COUNT = 10
SECRET_KEYS = ("api_key",)


class ConfigError(ValueError):
    """The plugin block is malformed; raised at startup with a message naming the key."""


class _Block:
    """Typed reads from one mapping, with errors that name the full key path."""

    def __init__(self, raw: Any, path: str, known: set[str]) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{PLUGIN_NAME}: '{path or 'plugin config'}' must be a mapping")
        unknown = sorted(set(raw) - known)
        if unknown:
            where = f" in '{path}'" if path else ""
            raise ConfigError(
                f"{PLUGIN_NAME}: unknown config key(s) {', '.join(unknown)}{where}; "
                f"expected some of {', '.join(sorted(known))}"
            )
        self.raw = raw
        self.path = path

    def name(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def int(self, key: str, default: int, lo: int, hi: int) -> int:
        value = self.raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ConfigError(
                f"{PLUGIN_NAME}: '{self.name(key)}' must be an integer from {lo} to {hi}"
            )
        return value

    def number(self, key: str, default: float, lo: float, hi: float) -> float:
        value = self.raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise ConfigError(
                f"{PLUGIN_NAME}: '{self.name(key)}' must be a number from {lo} to {hi}"
            )
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if not isinstance(value, bool):
            raise ConfigError(f"{PLUGIN_NAME}: '{self.name(key)}' must be true or false")
        return value

    def choice(
        self,
        key: str,
        default: str,
        choices: tuple[str, ...],
        fold: Callable[[Any], Any] = lambda v: v,
    ) -> str:
        value = fold(self.raw.get(key, default))
        if value not in choices:
            raise ConfigError(
                f"{PLUGIN_NAME}: '{self.name(key)}' must be one of {', '.join(choices)}"
            )
        return value

    def strings(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self.raw.get(key, list(default))
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{PLUGIN_NAME}: '{self.name(key)}' must be a list of strings")
        return tuple(value)


@dataclass(frozen=True)
class JudgeThresholds:
    """When local evidence counts as enough (see judge.py for how they are applied)."""

    min_evidence: int = 2
    min_term_coverage: float = 0.75
    top_k: int = 3


@dataclass(frozen=True)
class Budget:
    """A provider's spending caps (``external_search.budgets.<provider>``); 0 means no cap."""

    daily_calls: int = 0
    monthly_usd: float = 0.0


# List prices of one search (Brave Search and Exa: $5 per 1,000 requests), overridable per
# provider with ``price_per_call``; a self-hosted SearXNG costs nothing per call.
PRICE_PER_CALL = {"brave": 0.005, "exa": 0.005}


@dataclass(frozen=True)
class ExternalSettings:
    """The ``external_search`` block. Nothing leaves the machine unless ``enabled``."""

    enabled: bool = False
    default_mode: str = "never"
    providers: tuple[str, ...] = ("brave",)
    freshness: str = ""
    count: int = 5
    max_count: int = MAX_EXTERNAL_COUNT
    max_tokens: int = 8192
    timeout: float = 20.0
    allow_domains: tuple[str, ...] = ()
    block_domains: tuple[str, ...] = ()
    cache_ttl: int = 3600
    max_response_bytes: int = 5 * 1024 * 1024
    allow: Any = None
    fetch_allow_networks: tuple[str, ...] = ()
    provider_timeout: float = 0.0  # 0: the time left, shared among the providers still to try
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    provider_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)

    def options_for(self, provider: str) -> Mapping[str, Any]:
        """A provider's resolved config block (``{}`` when absent)."""
        return self.provider_options.get(provider) or {}

    def price_per_call(self, provider: str) -> float:
        """The estimated cost of one billed call, for the ledger and ``monthly_usd`` caps."""
        return float(
            self.options_for(provider).get("price_per_call", PRICE_PER_CALL.get(provider, 0.0))
        )

    def secrets(self) -> list[str]:
        """Every configured secret value (keys, passwords in base URLs), for redaction."""
        found: list[str] = []
        for block in self.provider_options.values():
            for key in SECRET_KEYS:
                if block.get(key):
                    found.append(str(block[key]).strip())
            found.extend(url_credentials(block.get("base_url")))
        return [secret for secret in found if secret]


EXTERNAL_KEYS = {
    "enabled",
    "default_mode",
    "providers",
    "freshness",
    "count",
    "max_count",
    "max_tokens",
    "timeout",
    "allow_domains",
    "block_domains",
    "cache_ttl",
    "max_response_bytes",
    "allow",
    "fetch_allow_networks",
    "provider_timeout",
    "budgets",
}


def parse_external(raw: Any) -> ExternalSettings:
    """Validate the ``external_search`` block. Provider blocks are any other mapping keys."""
    provider_names = {k for k, v in (raw or {}).items() if isinstance(v, Mapping)} - EXTERNAL_KEYS
    block = _Block(raw, "external_search", EXTERNAL_KEYS | provider_names)
    freshness = block.raw.get("freshness", "") or ""
    if not isinstance(freshness, str) or (freshness and not FRESHNESS_RE.match(freshness)):
        raise ConfigError(
            f"{PLUGIN_NAME}: 'external_search.freshness' must be pd, pw, pm, py or "
            "YYYY-MM-DDtoYYYY-MM-DD"
        )
    max_count = block.int("max_count", MAX_EXTERNAL_COUNT, 1, MAX_EXTERNAL_COUNT)
    providers = block.strings("providers", ("brave",))
    if not providers:
        raise ConfigError(f"{PLUGIN_NAME}: 'external_search.providers' must name a provider")
    allow = block.raw.get("allow")
    if allow is not None and not isinstance(allow, bool | Mapping):
        raise ConfigError(
            f"{PLUGIN_NAME}: 'external_search.allow' must be an allow block like {{id: root}}"
        )
    return ExternalSettings(
        enabled=block.bool("enabled", False),
        default_mode=block.choice(
            "default_mode", "never", MODES, fold=lambda v: external_mode(str(v))
        ),
        providers=providers,
        freshness=freshness,
        count=block.int("count", 5, 1, max_count),
        max_count=max_count,
        max_tokens=block.int("max_tokens", 8192, 1024, 32768),
        timeout=block.number("timeout", 20.0, 0.5, 120.0),
        allow_domains=tuple(d.lower().strip(".") for d in block.strings("allow_domains")),
        block_domains=tuple(d.lower().strip(".") for d in block.strings("block_domains")),
        cache_ttl=block.int("cache_ttl", 3600, 0, 30 * 24 * 3600),
        max_response_bytes=block.int("max_response_bytes", 5 * 1024 * 1024, 1024, 50 * 1024**2),
        allow=allow,
        fetch_allow_networks=_networks(block),
        provider_timeout=block.number("provider_timeout", 0.0, 0.0, 120.0),
        budgets=_budgets(block.raw.get("budgets")),
        provider_options={name: _provider_block(block.raw[name], name) for name in provider_names},
    )


def _budgets(raw: Any) -> dict[str, Budget]:
    """``budgets: {brave: {daily_calls: 1000, monthly_usd: 5}}``."""
    names = set(raw) if isinstance(raw, Mapping) else set()
    block = _Block(raw, "external_search.budgets", names)
    budgets = {}
    for name in block.raw:
        caps = _Block(
            block.raw[name], f"external_search.budgets.{name}", {"daily_calls", "monthly_usd"}
        )
        budgets[name] = Budget(
            daily_calls=caps.int("daily_calls", 0, 0, 10_000_000),
            monthly_usd=caps.number("monthly_usd", 0.0, 0.0, 1_000_000.0),
        )
    return budgets


def _provider_block(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A provider's options as given; the keys every provider shares are checked here."""
    options = dict(raw)
    if "price_per_call" in options:
        _Block(options, f"external_search.{name}", set(options)).number(
            "price_per_call", 0.0, 0.0, 100.0
        )
    return options


@dataclass(frozen=True)
class AnswerSettings:
    """The ``answer`` block: an answer over the run's evidence, off unless asked for.

    ``extractive`` runs offline; ``llm`` sends the evidence to a model of the ``llm`` library
    (or of ``datasette-llm`` where installed), for actors allowed ``dbrain-llm-answer``.
    """

    default: bool = False
    synthesizer: str = "extractive"
    model: str = ""
    max_sentences: int = 6
    max_evidence: int = 12
    max_chars: int = 24_000
    timeout: float = 60.0
    min_support: float = 0.4
    allow: Any = None
    api_key: str = field(default="", repr=False)


ANSWER_KEYS = {
    "default",
    "synthesizer",
    "model",
    "max_sentences",
    "max_evidence",
    "max_chars",
    "timeout",
    "min_support",
    "allow",
    "api_key",
}


def parse_answer(raw: Any) -> AnswerSettings:
    """Validate the ``answer`` block."""
    block = _Block(raw, "answer", ANSWER_KEYS)
    allow = block.raw.get("allow")
    if allow is not None and not isinstance(allow, bool | Mapping):
        raise ConfigError(f"{PLUGIN_NAME}: 'answer.allow' must be an allow block like {{id: root}}")
    model = block.raw.get("model") or ""
    api_key = block.raw.get("api_key") or ""
    for key, value in (("model", model), ("api_key", api_key)):
        if not isinstance(value, str):
            raise ConfigError(f"{PLUGIN_NAME}: 'answer.{key}' must be a string")
    return AnswerSettings(
        default=block.bool("default", False),
        synthesizer=block.choice("synthesizer", "extractive", SYNTHESIZERS),
        model=model.strip(),
        max_sentences=block.int("max_sentences", 6, 1, 30),
        max_evidence=block.int("max_evidence", 12, 1, 50),
        max_chars=block.int("max_chars", 24_000, 1000, 400_000),
        timeout=block.number("timeout", 60.0, 1, 600),
        min_support=block.number("min_support", 0.4, 0, 1),
        allow=allow,
        api_key=api_key.strip(),
    )


@dataclass(frozen=True)
class Settings:
    """Everything the plugin reads from its config block, validated."""

    databases: tuple[str, ...] | None = None
    default_limit: int = 10
    max_limit: int = 50
    excerpt_chars: int = 240
    time_limit_ms: int = 3000
    judge: JudgeThresholds = field(default_factory=JudgeThresholds)
    external: ExternalSettings = field(default_factory=ExternalSettings)
    traces_database: str = ""
    profiles: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    feedback: RocchioSettings = field(default_factory=lambda: RocchioSettings())
    answer: AnswerSettings = field(default_factory=AnswerSettings)

    def secrets(self) -> list[str]:
        """Every configured secret value (provider keys, the model key), for redaction."""
        return [*self.external.secrets(), *([self.answer.api_key] if self.answer.api_key else [])]

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> Settings:
        """Validate a plugin block (``None`` means defaults) and build Settings."""
        known = {
            "databases",
            "default_limit",
            "max_limit",
            "excerpt_chars",
            "time_limit_ms",
            "judge",
            "external_search",
            "traces_database",
            "profiles",
            "feedback",
            "answer",
        }
        block = _Block(raw, "", known)
        databases = None
        if "databases" in block.raw:
            databases = block.strings("databases")
        judge = _Block(
            block.raw.get("judge"), "judge", {"min_evidence", "min_term_coverage", "top_k"}
        )
        max_limit = block.int("max_limit", 50, 1, 500)
        return cls(
            databases=databases,
            default_limit=block.int("default_limit", 10, 1, max_limit),
            max_limit=max_limit,
            excerpt_chars=block.int("excerpt_chars", 240, 40, 4000),
            time_limit_ms=block.int("time_limit_ms", 3000, 50, 120_000),
            judge=JudgeThresholds(
                min_evidence=judge.int("min_evidence", 2, 1, 1000),
                min_term_coverage=judge.number("min_term_coverage", 0.75, 0, 1),
                top_k=judge.int("top_k", 3, 1, 100),
            ),
            external=parse_external(block.raw.get("external_search")),
            traces_database=_path(block, "traces_database"),
            profiles=_profiles(block.raw.get("profiles")),
            feedback=_rocchio(block.raw.get("feedback")),
            answer=parse_answer(block.raw.get("answer")),
        )

    @classmethod
    def from_datasette(cls, datasette: Any) -> Settings:
        """Read the plugin block from a running Datasette (top level, never per database)."""
        return cls.from_config(datasette.plugin_config(PLUGIN_NAME))


@dataclass(frozen=True)
class RocchioSettings:
    """Weights of the Rocchio update: original query, marked-relevant, marked-irrelevant."""

    alpha: float = 1.0
    beta: float = 0.75
    gamma: float = 0.15


def _rocchio(raw: Any) -> RocchioSettings:
    block = _Block(raw, "feedback", {"alpha", "beta", "gamma"})
    return RocchioSettings(
        alpha=block.number("alpha", 1.0, 0, 10),
        beta=block.number("beta", 0.75, 0, 10),
        gamma=block.number("gamma", 0.15, 0, 10),
    )


PROFILE_LISTS = {
    "coding": ("docs", "repos", "changelog_paths", "issue_paths"),
    "academic": ("preprints", "publishers", "paper_paths"),
}


def _profiles(raw: Any) -> dict[str, dict[str, tuple[str, ...]]]:
    """``profiles: {coding: {docs: [...]}}``: domains and paths added to a built-in profile."""
    block = _Block(raw, "profiles", set(PROFILE_LISTS))
    return {
        name: {key: inner.strings(key) for key in inner.raw}
        for name in block.raw
        for inner in [_Block(block.raw[name], f"profiles.{name}", set(PROFILE_LISTS[name]))]
    }


def _networks(block: _Block) -> tuple[str, ...]:
    """CIDR blocks a promotion fetch may reach although private (self-hosted sites, tests)."""
    networks = block.strings("fetch_allow_networks")
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError as exc:
            raise ConfigError(
                f"{PLUGIN_NAME}: 'external_search.fetch_allow_networks' has {network!r}, which is "
                "not a network like 10.0.0.0/8"
            ) from exc
    return networks


def _path(block: _Block, key: str) -> str:
    value = block.raw.get(key) or ""
    if not isinstance(value, str):
        raise ConfigError(f"{PLUGIN_NAME}: '{key}' must be a file path")
    return value


def url_credentials(url: Any) -> list[str]:
    """The password (and ``user:password``) embedded in a URL, if any."""
    if not isinstance(url, str) or "@" not in url:
        return []
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    return [password, f"{user}:{password}"] if password else []


def literal_secrets(raw: Any, path: str = "") -> list[str]:
    """Config paths holding a secret as a literal string rather than ``$env``/``$file``."""
    found: list[str] = []
    if isinstance(raw, Mapping):
        for key, value in raw.items():
            where = f"{path}.{key}" if path else str(key)
            if (key in SECRET_KEYS and isinstance(value, str) and value) or url_credentials(value):
                found.append(where)
            else:
                found.extend(literal_secrets(value, where))
    return found
