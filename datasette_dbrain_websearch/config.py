"""Typed plugin configuration: defaults, validation and one place that reads the config block.

The block is read on every request (``Settings.from_datasette``) so ``$env``/``$file`` secrets
resolve late and a changed config never needs a restart of the plugin's own state. Provider
blocks (``external_search.brave`` ...) keep their resolved values, API keys included, in a field
that is never part of any repr, so a key cannot leak through a log line or a traceback.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .providers.brave import ENDPOINTS as BRAVE_ENDPOINTS
from .providers.exa import SEARCH_TYPES as EXA_SEARCH_TYPES

PLUGIN_NAME = "datasette-dbrain-websearch"
MODES = ("never", "on_weak", "always")
# dbrain's plan (seed 000) calls the middle mode by its long name in config and ``on-weak`` on
# its command line; all three are accepted.
MODE_ALIASES = {"on_weak_local_evidence": "on_weak", "on-weak": "on_weak"}


def web_mode(value: str) -> str:
    """A mode as given by a request or config, with dbrain's long name folded to ``on_weak``."""
    value = value.strip().lower()
    return MODE_ALIASES.get(value, value)


SYNTHESIZERS = ("extractive", "llm")
RANKINGS = ("bm25", "dbrain")
# The offline model this package registers with llm (the ``[semantic]`` extra installs it).
DEFAULT_EMBEDDING_MODEL = "wordllama"
FRESHNESS_RE = re.compile(r"^(pd|pw|pm|py|\d{4}-\d{2}-\d{2}to\d{4}-\d{2}-\d{2})$")
MAX_WEB_COUNT = 10
SECRET_KEYS = ("api_key",)
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


class ConfigError(ValueError):
    """The plugin block is malformed; raised at startup with a message naming the key."""


@dataclass(frozen=True)
class Option:
    """One configuration key: how it is read, its default and limits, and what it is for.

    ``OPTIONS`` below is the one definition of the plugin's configuration: the parser reads every
    value through it and the configuration reference (docs/configuration.md) is generated from
    it, so the two cannot drift. ``<provider>`` and ``<name>`` stand for keys the user chooses.
    """

    path: str
    kind: str  # integer | number | boolean | choice | strings | string | allow | secret | mapping
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    checked_by: str = "config"  # "provider": the provider checks it when it is used


MB = 1024 * 1024
OPTIONS: tuple[Option, ...] = (
    Option(
        "databases",
        "strings",
        None,
        "brains to research; default: every attached database that looks like a brain",
    ),
    Option(
        "default_limit",
        "integer",
        10,
        "rows a question returns by default (at most `max_limit`)",
        1,
        500,
    ),
    Option("max_limit", "integer", 50, "the most rows `limit=` may ask for", 1, 500),
    Option("excerpt_chars", "integer", 240, "length of a row's excerpt", 40, 4000),
    Option(
        "time_limit_ms",
        "integer",
        3000,
        "time for all of a question's work together: queries, waits, excerpts, the "
        "semantic lane and the answer (not the web's or a model's replies)",
        50,
        120_000,
    ),
    Option(
        "traces_database",
        "string",
        "",
        "the plugin's own database file; default: `research_runs.db` next to the first brain",
    ),
    Option(
        "ranking",
        "choice",
        "bm25",
        "`bm25`: BM25 over every search word, re-scored (semantic lane too, when indexed); "
        "`dbrain`: dbrain's own `Store.Search` order (AND query, items then sources)",
        choices=RANKINGS,
    ),
    Option(
        "semantic.model",
        "string",
        DEFAULT_EMBEDDING_MODEL,
        "the `llm` embedding model of the semantic lane (`datasette dbrain-websearch index`); "
        "empty: no semantic lane",
    ),
    Option(
        "semantic.weight",
        "number",
        0.3,
        "how much the semantic cosine counts against BM25 when re-scoring (0: BM25 only)",
        0,
        1,
    ),
    Option(
        "semantic.min_cosine",
        "number",
        0.45,
        "how close in meaning a row holding none of the question's words must be to be shown "
        "(calibrated for `wordllama` on the shared collections: docs/benchmarks.md)",
        0,
        1,
    ),
    Option(
        "judge.mode",
        "choice",
        "calibrated",
        "`calibrated`: the evidence score of the best rows (how much of the question they hold, "
        "how close they read, how rare the words they share); `dbrain`: dbrain's term-coverage "
        "rule (always used with `ranking: dbrain` and raw FTS5 questions)",
        choices=("calibrated", "dbrain"),
    ),
    Option(
        "judge.min_score",
        "number",
        0.7,
        "the evidence score (0..1) the best row needs for `enough_evidence` (`judge.mode: "
        "calibrated`)",
        0,
        1,
    ),
    Option(
        "judge.min_evidence",
        "integer",
        2,
        "rows needed for `enough_evidence` (`judge.mode: dbrain`)",
        1,
        1000,
    ),
    Option(
        "judge.min_term_coverage",
        "number",
        0.75,
        "share of the question's words the top rows must match (`judge.mode: dbrain`)",
        0,
        1,
    ),
    Option("judge.top_k", "integer", 3, "how many top rows the judge looks at", 1, 100),
    Option("feedback.alpha", "number", 1.0, "Rocchio weight of the original query", 0, 10),
    Option("feedback.beta", "number", 0.75, "Rocchio weight of rows marked relevant", 0, 10),
    Option("feedback.gamma", "number", 0.15, "Rocchio weight of rows marked irrelevant", 0, 10),
    Option(
        "profiles.coding.docs", "strings", (), "documentation domains added to the coding profile"
    ),
    Option(
        "profiles.coding.repos", "strings", (), "code hosting domains added to the coding profile"
    ),
    Option(
        "profiles.coding.changelog_paths",
        "strings",
        (),
        "changelog path fragments added to the coding profile",
    ),
    Option(
        "profiles.coding.issue_paths",
        "strings",
        (),
        "issue tracker path fragments added to the coding profile",
    ),
    Option(
        "profiles.academic.preprints",
        "strings",
        (),
        "preprint server domains added to the academic profile",
    ),
    Option(
        "profiles.academic.publishers",
        "strings",
        (),
        "publisher domains added to the academic profile",
    ),
    Option(
        "profiles.academic.paper_paths",
        "strings",
        (),
        "paper path fragments added to the academic profile",
    ),
    Option("external_search.enabled", "boolean", False, "nothing leaves the machine unless true"),
    Option(
        "external_search.default_mode",
        "choice",
        "never",
        "web search when a request does not say (`on_weak_local_evidence` and `on-weak` mean "
        "`on_weak`); unset: `DBRAIN_EXTERNAL_SEARCH_MODE` when set",
        choices=MODES,
    ),
    Option(
        "external_search.providers",
        "strings",
        ("brave",),
        "providers in fallback order; `provider=all` runs them in parallel; unset: "
        "`DBRAIN_EXTERNAL_SEARCH_PROVIDERS` (comma-separated) when set",
    ),
    Option(
        "external_search.freshness",
        "string",
        "",
        "default freshness: `pd`, `pw`, `pm`, `py` or `YYYY-MM-DDtoYYYY-MM-DD`",
    ),
    Option(
        "external_search.count",
        "integer",
        5,
        "web rows kept per run (at most `max_count`); unset: `DBRAIN_EXTERNAL_SEARCH_COUNT` "
        "when set",
        1,
        10,
    ),
    Option(
        "external_search.max_count", "integer", 10, "the most `external_count` may ask for", 1, 10
    ),
    Option(
        "external_search.max_tokens",
        "integer",
        8192,
        "text budget for all web rows together (about 4 characters a token)",
        1024,
        32768,
    ),
    Option("external_search.timeout", "number", 20.0, "seconds for the whole web stage", 0.5, 120),
    Option(
        "external_search.provider_timeout",
        "number",
        0.0,
        "seconds per provider in fallback order; 0: an equal share of the time left",
        0,
        120,
    ),
    Option(
        "external_search.allow_domains",
        "strings",
        (),
        "if set, only results from these domains (and subdomains)",
    ),
    Option(
        "external_search.block_domains", "strings", (), "results from these domains are dropped"
    ),
    Option(
        "external_search.cache_ttl",
        "integer",
        3600,
        "seconds provider answers are cached; 0: off",
        0,
        30 * 24 * 3600,
    ),
    Option(
        "external_search.max_response_bytes",
        "integer",
        5 * MB,
        "a larger provider response is cut off and ignored",
        1024,
        50 * MB,
    ),
    Option(
        "external_search.allow",
        "allow",
        None,
        "actors allowed `dbrain-external-search` besides root, e.g. `{id: [alice]}`",
    ),
    Option(
        "external_search.read",
        "integer",
        0,
        "the top web results whose pages are read before the answer (`read=` per question)",
        0,
        10,
    ),
    Option(
        "external_search.read_via",
        "string",
        "",
        "a reader service answering `<read_via><page URL>` with the page; empty: fetch pages. "
        "Trusted as named (no `fetch_allow_networks` entry needed); it is sent only pages the "
        "fetcher itself would fetch",
    ),
    Option(
        "external_search.fetch_allow_networks",
        "strings",
        (),
        "private networks (CIDR) that results and promotion fetches may use",
    ),
    Option(
        "external_search.budgets.<provider>.daily_calls",
        "integer",
        0,
        "calls per UTC day before the provider is skipped; 0: no cap",
        0,
        10_000_000,
    ),
    Option(
        "external_search.budgets.<provider>.monthly_usd",
        "number",
        0.0,
        "estimated dollars per UTC month before the provider is skipped; 0: no cap",
        0,
        1_000_000,
    ),
    Option(
        "external_search.<provider>.api_key",
        "secret",
        "",
        "the provider's key, always through `$env` or `$file`",
        checked_by="provider",
    ),
    Option(
        "external_search.<provider>.base_url",
        "string",
        "",
        "the provider's API address (SearXNG: required)",
        checked_by="provider",
    ),
    Option(
        "external_search.<provider>.price_per_call",
        "number",
        None,
        "estimated cost of one answered call; default $0.005 for Brave and Exa, $0 otherwise",
        0,
        100,
    ),
    Option(
        "external_search.brave.endpoint",
        "choice",
        "llm_context",
        "Brave endpoint",
        choices=BRAVE_ENDPOINTS,
        checked_by="provider",
    ),
    Option(
        "external_search.brave.context_threshold_mode",
        "string",
        "balanced",
        "LLM Context's relevance threshold",
        checked_by="provider",
    ),
    Option(
        "external_search.brave.country", "string", "", "Brave's `country`", checked_by="provider"
    ),
    Option(
        "external_search.brave.search_lang",
        "string",
        "",
        "Brave's `search_lang`",
        checked_by="provider",
    ),
    Option(
        "external_search.exa.type",
        "choice",
        "auto",
        "Exa search type",
        choices=EXA_SEARCH_TYPES,
        checked_by="provider",
    ),
    Option(
        "external_search.exa.text_via_contents",
        "boolean",
        False,
        "search with highlights only, then one `/contents` call for the texts",
        checked_by="provider",
    ),
    Option(
        "external_search.searxng.language",
        "string",
        "",
        "like `en`, `de`, `pt-BR` or `auto`",
        checked_by="provider",
    ),
    Option(
        "external_search.searxng.categories",
        "string",
        "",
        "SearXNG categories, e.g. `general,science`",
        checked_by="provider",
    ),
    Option(
        "deep.rounds",
        "integer",
        3,
        "rounds of a deep research run (`depth=deep`), the first one included",
        1,
        10,
    ),
    Option(
        "deep.web_searches",
        "integer",
        6,
        "provider calls a deep research run may make, all rounds together",
        0,
        50,
    ),
    Option(
        "deep.reads",
        "integer",
        6,
        "pages a deep research run may read, all rounds together",
        0,
        30,
    ),
    Option(
        "deep.time_limit_ms",
        "integer",
        20_000,
        "time for a deep research run's rounds, the web's and a model's replies included; "
        "no round starts after it",
        1000,
        600_000,
    ),
    Option("answer.default", "boolean", False, "write an answer when a request does not say"),
    Option(
        "answer.synthesizer",
        "choice",
        "extractive",
        "`extractive` runs offline; `llm` asks a model of the llm library",
        choices=SYNTHESIZERS,
    ),
    Option(
        "answer.model", "string", "", "the llm model id (datasette-llm's default model when empty)"
    ),
    Option("answer.max_sentences", "integer", 6, "sentences in an answer", 1, 30),
    Option("answer.max_evidence", "integer", 12, "evidence rows an answer may use", 1, 50),
    Option(
        "answer.max_chars",
        "integer",
        24_000,
        "characters of evidence sent to a model",
        1000,
        400_000,
    ),
    Option("answer.timeout", "number", 60.0, "seconds for a model's answer", 1, 600),
    Option(
        "answer.min_support",
        "number",
        0.4,
        "content-word overlap below which a sentence is unsupported",
        0,
        1,
    ),
    Option(
        "answer.keep_unsupported",
        "boolean",
        False,
        "keep a model's unsupported sentences in the answer, marked (else listed as removed)",
    ),
    Option("answer.allow", "allow", None, "actors allowed `dbrain-llm-answer` besides root"),
    Option(
        "answer.api_key",
        "secret",
        "",
        "the model's key, through `$env` or `$file` (else llm's own keys)",
    ),
)
_BY_PATH = {option.path: option for option in OPTIONS}


@functools.cache
def _children(spec: str) -> frozenset[str]:
    """The keys a block accepts: the next segment of every option below ``spec`` (the options
    never change, and every request reads the config)."""
    prefix = f"{spec}." if spec else ""
    return frozenset(
        o.path[len(prefix) :].split(".", 1)[0]
        for o in OPTIONS
        if o.path.startswith(prefix) and not o.path[len(prefix) :].startswith("<")
    )


# The external_search keys that are not provider blocks (a provider may have any other name).
_WEB_KEYS = {
    o.path.split(".")[1]
    for o in OPTIONS
    if o.path.startswith("external_search.") and o.checked_by == "config"
} - {"<provider>"}


class _Block:
    """Typed reads from one mapping, by its options in ``OPTIONS``; errors name the full key.

    ``path`` is where the mapping is (``external_search.budgets.brave``), ``spec`` the option
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

    def option(self, key: str) -> Option:
        return _BY_PATH[f"{self.spec}.{key}" if self.spec else key]

    def int(self, key: str, high: int | None = None) -> int:
        option = self.option(key)
        top = option.high if high is None else high
        if top is None:
            raise TypeError(f"{option.path} is an integer with no upper limit")
        lo, hi = int(option.low or 0), int(top)
        value = self.raw.get(key, option.default)
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ConfigError(
                f"{PLUGIN_NAME}: {self.name(key)} must be an integer from {lo} to {hi}"
            )
        return value

    def number(self, key: str) -> float:
        option = self.option(key)
        lo, hi = option.low or 0, option.high
        if hi is None:
            raise TypeError(f"{option.path} is a number with no upper limit")
        value = self.raw.get(key, option.default)
        if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
            raise ConfigError(
                f"{PLUGIN_NAME}: {self.name(key)} must be a number from {lo:g} to {hi:g}"
            )
        return float(value)

    def bool(self, key: str) -> bool:
        value = self.raw.get(key, self.option(key).default)
        if not isinstance(value, bool):
            raise ConfigError(f"{PLUGIN_NAME}: {self.name(key)} must be true or false")
        return value

    def choice(self, key: str, fold: Callable[[Any], Any] = lambda v: v) -> str:
        option = self.option(key)
        value = fold(self.raw.get(key, option.default))
        if value not in option.choices:
            raise ConfigError(
                f"{PLUGIN_NAME}: {self.name(key)} must be one of {', '.join(option.choices)}"
            )
        return value

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.raw.get(key, list(self.option(key).default or ()))
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{PLUGIN_NAME}: {self.name(key)} must be a list of strings")
        return tuple(value)

    def string(self, key: str) -> str:
        value = self.raw.get(key) or self.option(key).default
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
    block = _Block(raw, "external_search", extra=provider_names)
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
        provider_timeout=block.number("provider_timeout"),
        budgets=_budgets(block.raw.get("budgets")),
        provider_options=with_dbrain_keys(
            {name: _provider_block(block.raw[name], name) for name in provider_names}, environ
        ),
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
    block = _Block(raw, "external_search.budgets", extra=names)
    budgets = {}
    for name in block.raw:
        caps = _Block(
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
        _Block(
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


def parse_answer(raw: Any) -> AnswerSettings:
    """Validate the ``answer`` block."""
    block = _Block(raw, "answer")
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

    def secrets(self) -> list[str]:
        """Every configured secret value (provider keys, the model key), for redaction."""
        return [*self.web.secrets(), *([self.answer.api_key] if self.answer.api_key else [])]

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> Settings:
        """Validate a plugin block (``None`` means defaults) and build Settings."""
        block = _Block(raw, "")
        databases = block.strings("databases") if "databases" in block.raw else None
        judge = _Block(block.raw.get("judge"), "judge")
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
    block = _Block(raw, "semantic")
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


def _deep(raw: Any) -> DeepSettings:
    block = _Block(raw, "deep")
    return DeepSettings(
        rounds=block.int("rounds"),
        web_searches=block.int("web_searches"),
        reads=block.int("reads"),
        time_limit_ms=block.int("time_limit_ms"),
    )


@dataclass(frozen=True)
class RocchioSettings:
    """Weights of the Rocchio update: original query, marked-relevant, marked-irrelevant."""

    alpha: float = 1.0
    beta: float = 0.75
    gamma: float = 0.15


def _rocchio(raw: Any) -> RocchioSettings:
    block = _Block(raw, "feedback")
    return RocchioSettings(
        alpha=block.number("alpha"), beta=block.number("beta"), gamma=block.number("gamma")
    )


def _profiles(raw: Any) -> dict[str, dict[str, tuple[str, ...]]]:
    """``profiles: {coding: {docs: [...]}}``: domains and paths added to a built-in profile."""
    block = _Block(raw, "profiles")
    return {
        name: {key: inner.strings(key) for key in inner.raw}
        for name in block.raw
        for inner in [_Block(block.raw[name], f"profiles.{name}")]
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
