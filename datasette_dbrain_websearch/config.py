"""Typed plugin configuration: the settings the config block becomes, validated, and the one
place that reads the block.

The block is read on every request (``Settings.from_datasette``) so ``$env``/``$file`` secrets
resolve late and a changed config never needs a restart of the plugin's own state. Provider
blocks (``external_search.brave`` ...) keep their resolved values, API keys included, in a field
that is never part of any repr, so a key cannot leak through a log line or a traceback.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .config_block import ConfigBlock
from .config_keys import CONFIG_KEYS, DEFAULT_EMBEDDING_MODEL, PLUGIN_NAME, ConfigError, web_mode
from .dbrain_env import DBRAIN_VARIABLES, dbrain_defaults, with_dbrain_keys

FRESHNESS_RE = re.compile(r"^(pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$")
MAX_WEB_COUNT = 10
SECRET_KEYS = ("api_key",)

# The external_search keys that are not provider blocks (a provider may have any other name).
_WEB_KEYS = {
    o.path.split(".")[1]
    for o in CONFIG_KEYS
    if o.path.startswith("external_search.") and o.checked_by == "config"
} - {"<provider>"}


@dataclass(frozen=True)
class JudgeThresholds:
    """When local evidence counts as enough (see judge.py for how they are applied)."""

    min_evidence: int = 2
    min_term_coverage: float = 0.75
    top_k: int = 3
    mode: str = "calibrated"
    min_score: float = 0.7


@dataclass(frozen=True)
class Budget:
    """A provider's spending caps (``external_search.budgets.<provider>``); 0 means no cap."""

    daily_calls: int = 0
    monthly_usd: float = 0.0


# List prices of one search (Brave Search and Exa: $5 per 1,000 requests), overridable per
# provider with ``price_per_call``; a self-hosted SearXNG costs nothing per call.
PRICE_PER_CALL = {"brave": 0.005, "exa": 0.005}


@dataclass(frozen=True)
class WebSettings:
    """The ``external_search`` block. Nothing leaves the machine unless ``enabled``."""

    enabled: bool = False
    default_mode: str = "never"
    providers: tuple[str, ...] = ("brave",)
    freshness: str = ""
    count: int = 5
    max_count: int = MAX_WEB_COUNT
    max_tokens: int = 8192
    timeout: float = 20.0
    allow_domains: tuple[str, ...] = ()
    block_domains: tuple[str, ...] = ()
    cache_ttl: int = 3600
    max_response_bytes: int = 5 * 1024 * 1024
    allow: Any = None
    fetch_allow_networks: tuple[str, ...] = ()
    read: int = 0
    read_via: str = ""
    read_unresolved: bool = False
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
        found.extend(url_credentials(self.read_via))
        return [secret for secret in found if secret]


def parse_web(raw: Any, environ: Mapping[str, str] | None = None) -> WebSettings:
    """Validate the ``external_search`` block. Provider blocks are any other mapping keys;
    a provider without a key takes dbrain's from ``environ`` (the process environment), and
    so do ``default_mode``, ``providers`` and ``count`` when the block leaves them unset."""
    environ = os.environ if environ is None else environ
    mappings = {k for k, v in (raw or {}).items() if isinstance(v, Mapping)}
    provider_names = mappings - _WEB_KEYS
    block = ConfigBlock(raw, "external_search", extra=provider_names)
    block.fill(dbrain_defaults(environ))
    freshness = block.string("freshness")
    if freshness and not FRESHNESS_RE.match(freshness):
        raise ConfigError(
            f"{PLUGIN_NAME}: 'external_search.freshness' must be pd, pw, pm, py or "
            "YYYY-MM-DDtoYYYY-MM-DD"
        )
    max_count = block.int("max_count")
    providers = block.strings("providers")
    if not providers:
        raise ConfigError(f"{PLUGIN_NAME}: {block.name('providers')} must name a provider")
    return WebSettings(
        enabled=block.bool("enabled"),
        default_mode=block.choice("default_mode", fold=lambda v: web_mode(str(v))),
        providers=providers,
        freshness=freshness,
        count=block.int("count", high=max_count),
        max_count=max_count,
        max_tokens=block.int("max_tokens"),
        timeout=block.number("timeout"),
        allow_domains=tuple(d.lower().strip(".") for d in block.strings("allow_domains")),
        block_domains=tuple(d.lower().strip(".") for d in block.strings("block_domains")),
        cache_ttl=block.int("cache_ttl"),
        max_response_bytes=block.int("max_response_bytes"),
        allow=block.allow("allow"),
        fetch_allow_networks=_networks(block),
        read=block.int("read"),
        read_via=_reader(block.string("read_via")),
        read_unresolved=block.bool("read_unresolved"),
        provider_timeout=block.number("provider_timeout"),
        budgets=_budgets(block.raw.get("budgets")),
        provider_options=with_dbrain_keys(
            {name: _provider_block(block.raw[name], name) for name in provider_names}, environ
        ),
    )


def _reader(value: str) -> str:
    """``read_via``: an http(s) address the page's URL is appended to."""
    value = value.strip()
    if value and urlsplit(value).scheme not in ("http", "https"):
        raise ConfigError(
            f"{PLUGIN_NAME}: 'external_search.read_via' must be an http(s) address such as "
            f"http://127.0.0.1:3000/, not {value[:80]!r}"
        )
    return value


def _budgets(raw: Any) -> dict[str, Budget]:
    """``budgets: {brave: {daily_calls: 1000, monthly_usd: 5}}``."""
    names = set(raw) if isinstance(raw, Mapping) else set()
    block = ConfigBlock(raw, "external_search.budgets", extra=names)
    budgets = {}
    for name in block.raw:
        caps = ConfigBlock(
            block.raw[name],
            f"external_search.budgets.{name}",
            spec="external_search.budgets.<provider>",
        )
        budgets[name] = Budget(
            daily_calls=caps.int("daily_calls"), monthly_usd=caps.number("monthly_usd")
        )
    return budgets


def _provider_block(raw: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A provider's options as given (each provider checks its own); the keys every provider
    shares and that the plugin itself uses are checked here."""
    options = dict(raw)
    if "price_per_call" in options:
        ConfigBlock(
            options,
            f"external_search.{name}",
            spec="external_search.<provider>",
            extra=set(options),
        ).number("price_per_call")
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
    keep_unsupported: bool = False
    allow: Any = None
    api_key: str = field(default="", repr=False)
    daily_calls: int = 0  # model calls per UTC day for everyone (0: no cap)


def parse_answer(raw: Any) -> AnswerSettings:
    """Validate the ``answer`` block."""
    block = ConfigBlock(raw, "answer")
    return AnswerSettings(
        default=block.bool("default"),
        synthesizer=block.choice("synthesizer"),
        model=block.string("model").strip(),
        max_sentences=block.int("max_sentences"),
        max_evidence=block.int("max_evidence"),
        max_chars=block.int("max_chars"),
        timeout=block.number("timeout"),
        min_support=block.number("min_support"),
        keep_unsupported=block.bool("keep_unsupported"),
        allow=block.allow("allow"),
        api_key=block.string("api_key").strip(),
        daily_calls=block.int("daily_calls"),
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
    web: WebSettings = field(default_factory=WebSettings)
    traces_database: str = ""
    profiles: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    feedback: RocchioSettings = field(default_factory=lambda: RocchioSettings())
    answer: AnswerSettings = field(default_factory=AnswerSettings)
    ranking: str = "bm25"
    semantic: SemanticSettings = field(default_factory=lambda: SemanticSettings())
    deep: DeepSettings = field(default_factory=lambda: DeepSettings())
    same_site_spends: bool = False
    trust_forwarded_for: bool = False

    def secrets(self) -> list[str]:
        """Every configured secret value (provider keys, the model key), for redaction."""
        return [*self.web.secrets(), *([self.answer.api_key] if self.answer.api_key else [])]

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> Settings:
        """Validate a plugin block (``None`` means defaults) and build Settings."""
        block = ConfigBlock(raw, "")
        databases = block.strings("databases") if "databases" in block.raw else None
        judge = ConfigBlock(block.raw.get("judge"), "judge")
        max_limit = block.int("max_limit")
        return cls(
            databases=databases,
            default_limit=block.int("default_limit", high=max_limit),
            max_limit=max_limit,
            excerpt_chars=block.int("excerpt_chars"),
            time_limit_ms=block.int("time_limit_ms"),
            judge=JudgeThresholds(
                min_evidence=judge.int("min_evidence"),
                min_term_coverage=judge.number("min_term_coverage"),
                top_k=judge.int("top_k"),
                mode=judge.choice("mode", lambda v: v.lower() if isinstance(v, str) else v),
                min_score=judge.number("min_score"),
            ),
            web=parse_web(block.raw.get("external_search")),
            traces_database=block.string("traces_database"),
            profiles=_profiles(block.raw.get("profiles")),
            feedback=_rocchio(block.raw.get("feedback")),
            answer=parse_answer(block.raw.get("answer")),
            ranking=block.choice("ranking", lambda v: v.lower() if isinstance(v, str) else v),
            semantic=_semantic(block.raw.get("semantic")),
            deep=_deep(block.raw.get("deep")),
            same_site_spends=block.bool("same_site_spends"),
            trust_forwarded_for=block.bool("trust_forwarded_for"),
        )

    @classmethod
    def from_datasette(cls, datasette: Any) -> Settings:
        """Read the plugin block from a running Datasette (top level, never per database),
        validated once per distinct block: every request reads it."""
        raw = datasette.plugin_config(PLUGIN_NAME)
        # dbrain's variables fill what the block leaves unset, so they are part of the read.
        environment = [os.environ.get(variable) for variable in DBRAIN_VARIABLES]
        key = json.dumps([raw, environment], sort_keys=True, default=repr)
        settings = _READ.get(key)
        if settings is None:
            settings = cls.from_config(raw)
            if len(_READ) >= 32:  # a config that keeps changing ($env values) stays bounded
                _READ.clear()
            _READ[key] = settings
        return settings


_READ: dict[str, Settings] = {}


@dataclass(frozen=True)
class SemanticSettings:
    """The semantic lane: which ``llm`` embedding model, and its weight when re-scoring."""

    model: str = DEFAULT_EMBEDDING_MODEL
    weight: float = 0.3
    min_cosine: float = 0.45  # a row sharing no word with the question is shown from here


def _semantic(raw: Any) -> SemanticSettings:
    block = ConfigBlock(raw, "semantic")
    # An empty model turns the lane off (other empty strings mean "the default").
    model = "" if block.raw.get("model") == "" else block.string("model").strip()
    return SemanticSettings(
        model=model, weight=block.number("weight"), min_cosine=block.number("min_cosine")
    )


@dataclass(frozen=True)
class DeepSettings:
    """Deep research's budgets (``deep``): every round, provider call and page read of one
    run counts against them (the providers' own caps in the ledger apply as well)."""

    rounds: int = 3
    web_searches: int = 6
    reads: int = 6
    time_limit_ms: int = 20_000
    pro_brain_queries: bool = False  # a pro run's model may search the web for brain words


def _deep(raw: Any) -> DeepSettings:
    block = ConfigBlock(raw, "deep")
    return DeepSettings(
        rounds=block.int("rounds"),
        web_searches=block.int("web_searches"),
        reads=block.int("reads"),
        time_limit_ms=block.int("time_limit_ms"),
        pro_brain_queries=block.bool("pro_brain_queries"),
    )


@dataclass(frozen=True)
class RocchioSettings:
    """Weights of the Rocchio update: original query, marked-relevant, marked-irrelevant."""

    alpha: float = 1.0
    beta: float = 0.75
    gamma: float = 0.15


def _rocchio(raw: Any) -> RocchioSettings:
    block = ConfigBlock(raw, "feedback")
    return RocchioSettings(
        alpha=block.number("alpha"), beta=block.number("beta"), gamma=block.number("gamma")
    )


def _profiles(raw: Any) -> dict[str, dict[str, tuple[str, ...]]]:
    """``profiles: {coding: {docs: [...]}}``: domains and paths added to a built-in profile."""
    block = ConfigBlock(raw, "profiles")
    return {
        name: {key: inner.strings(key) for key in inner.raw}
        for name in block.raw
        for inner in [ConfigBlock(block.raw[name], f"profiles.{name}")]
    }


def _networks(block: ConfigBlock) -> tuple[str, ...]:
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
