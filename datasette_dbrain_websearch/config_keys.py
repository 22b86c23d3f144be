"""The plugin's configuration, declared: every key with its type, default, limits and what it is
for (``CONFIG_KEYS``), the words its choices allow, and the error a block that breaks them raises.

``CONFIG_KEYS`` is the one definition of the configuration: ``config_block`` reads every value
through it (``config`` builds the typed settings from those reads) and the configuration reference
(``config_reference``, docs/configuration.md) is generated from it, so the two cannot drift. Not
to be confused with ``options``, which checks a research request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


class ConfigError(ValueError):
    """The plugin block is malformed; raised at startup with a message naming the key."""


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key: how it is read, its default and limits, and what it is for.

    ``CONFIG_KEYS`` below is the one definition of the plugin's configuration: the parser reads
    every value through it and the configuration reference (docs/configuration.md) is generated
    from it, so the two cannot drift. ``<provider>`` and ``<name>`` stand for keys the user
    chooses.
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
CONFIG_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "databases",
        "strings",
        None,
        "brains to research; default: every attached database that looks like a brain",
    ),
    ConfigKey(
        "default_limit",
        "integer",
        10,
        "rows a question returns by default (at most `max_limit`)",
        1,
        500,
    ),
    ConfigKey("max_limit", "integer", 50, "the most rows `limit=` may ask for", 1, 500),
    ConfigKey("excerpt_chars", "integer", 240, "length of a row's excerpt", 40, 4000),
    ConfigKey(
        "same_site_spends",
        "boolean",
        False,
        "web searches and model answers for browser requests from another site of the same "
        "domain (`Sec-Fetch-Site: same-site`, say another app on a sibling subdomain); off, "
        "they spend nothing, as cross-site ones",
    ),
    ConfigKey(
        "trust_forwarded_for",
        "boolean",
        False,
        "a proxy in front of Datasette sets `X-Forwarded-For`: anonymous visitors are limited "
        "per the address it names; off, requests carrying it share one set of limits (any "
        "local client could write it)",
    ),
    ConfigKey(
        "time_limit_ms",
        "integer",
        3000,
        "time for all of a question's work together: queries, waits, excerpts, the "
        "semantic lane and the answer (not the web's or a model's replies)",
        50,
        120_000,
    ),
    ConfigKey(
        "traces_database",
        "string",
        "",
        "the plugin's own database file; default: `research_runs.db` next to the first brain",
    ),
    ConfigKey(
        "ranking",
        "choice",
        "bm25",
        "`bm25`: BM25 over every search word, re-scored (semantic lane too, when indexed); "
        "`dbrain`: dbrain's own `Store.Search` order (AND query, items then sources)",
        choices=RANKINGS,
    ),
    ConfigKey(
        "semantic.model",
        "string",
        DEFAULT_EMBEDDING_MODEL,
        "the `llm` embedding model of the semantic lane (`datasette dbrain-websearch index`); "
        "empty: no semantic lane",
    ),
    ConfigKey(
        "semantic.weight",
        "number",
        0.3,
        "how much the semantic cosine counts against BM25 when re-scoring (0: BM25 only)",
        0,
        1,
    ),
    ConfigKey(
        "semantic.min_cosine",
        "number",
        0.45,
        "how close in meaning a row holding none of the question's words must be to be shown "
        "(calibrated for `wordllama` on the shared collections: docs/benchmarks.md)",
        0,
        1,
    ),
    ConfigKey(
        "judge.mode",
        "choice",
        "calibrated",
        "`calibrated`: the evidence score of the best rows (how much of the question they hold, "
        "how close they read, how rare the words they share); `dbrain`: dbrain's term-coverage "
        "rule (always used with `ranking: dbrain` and raw FTS5 questions)",
        choices=("calibrated", "dbrain"),
    ),
    ConfigKey(
        "judge.min_score",
        "number",
        0.7,
        "the evidence score (0..1) the best row needs for `enough_evidence` (`judge.mode: "
        "calibrated`)",
        0,
        1,
    ),
    ConfigKey(
        "judge.min_evidence",
        "integer",
        2,
        "rows needed for `enough_evidence` (`judge.mode: dbrain`)",
        1,
        1000,
    ),
    ConfigKey(
        "judge.min_term_coverage",
        "number",
        0.75,
        "share of the question's words the top rows must match (`judge.mode: dbrain`)",
        0,
        1,
    ),
    ConfigKey("judge.top_k", "integer", 3, "how many top rows the judge looks at", 1, 100),
    ConfigKey("feedback.alpha", "number", 1.0, "Rocchio weight of the original query", 0, 10),
    ConfigKey("feedback.beta", "number", 0.75, "Rocchio weight of rows marked relevant", 0, 10),
    ConfigKey("feedback.gamma", "number", 0.15, "Rocchio weight of rows marked irrelevant", 0, 10),
    ConfigKey(
        "profiles.coding.docs", "strings", (), "documentation domains added to the coding profile"
    ),
    ConfigKey(
        "profiles.coding.repos", "strings", (), "code hosting domains added to the coding profile"
    ),
    ConfigKey(
        "profiles.coding.changelog_paths",
        "strings",
        (),
        "changelog path fragments added to the coding profile",
    ),
    ConfigKey(
        "profiles.coding.issue_paths",
        "strings",
        (),
        "issue tracker path fragments added to the coding profile",
    ),
    ConfigKey(
        "profiles.academic.preprints",
        "strings",
        (),
        "preprint server domains added to the academic profile",
    ),
    ConfigKey(
        "profiles.academic.publishers",
        "strings",
        (),
        "publisher domains added to the academic profile",
    ),
    ConfigKey(
        "profiles.academic.paper_paths",
        "strings",
        (),
        "paper path fragments added to the academic profile",
    ),
    ConfigKey(
        "external_search.enabled", "boolean", False, "nothing leaves the machine unless true"
    ),
    ConfigKey(
        "external_search.default_mode",
        "choice",
        "never",
        "web search when a request does not say (`on_weak_local_evidence` and `on-weak` mean "
        "`on_weak`); unset: `DBRAIN_EXTERNAL_SEARCH_MODE` when set",
        choices=MODES,
    ),
    ConfigKey(
        "external_search.providers",
        "strings",
        ("brave",),
        "providers in fallback order; `provider=all` runs them in parallel; unset: "
        "`DBRAIN_EXTERNAL_SEARCH_PROVIDERS` (comma-separated) when set",
    ),
    ConfigKey(
        "external_search.freshness",
        "string",
        "",
        "default freshness: `pd`, `pw`, `pm`, `py` or `YYYY-MM-DDtoYYYY-MM-DD`",
    ),
    ConfigKey(
        "external_search.count",
        "integer",
        5,
        "web rows kept per run (at most `max_count`); unset: `DBRAIN_EXTERNAL_SEARCH_COUNT` "
        "when set",
        1,
        10,
    ),
    ConfigKey(
        "external_search.max_count", "integer", 10, "the most `external_count` may ask for", 1, 10
    ),
    ConfigKey(
        "external_search.max_tokens",
        "integer",
        8192,
        "text budget for all web rows together (about 4 characters a token)",
        1024,
        32768,
    ),
    ConfigKey(
        "external_search.timeout", "number", 20.0, "seconds for the whole web stage", 0.5, 120
    ),
    ConfigKey(
        "external_search.provider_timeout",
        "number",
        0.0,
        "seconds per provider in fallback order; 0: an equal share of the time left",
        0,
        120,
    ),
    ConfigKey(
        "external_search.allow_domains",
        "strings",
        (),
        "if set, only results from these domains (and subdomains)",
    ),
    ConfigKey(
        "external_search.block_domains", "strings", (), "results from these domains are dropped"
    ),
    ConfigKey(
        "external_search.cache_ttl",
        "integer",
        3600,
        "seconds provider answers are cached; 0: off",
        0,
        30 * 24 * 3600,
    ),
    ConfigKey(
        "external_search.max_response_bytes",
        "integer",
        5 * MB,
        "a larger provider response is cut off and ignored",
        1024,
        50 * MB,
    ),
    ConfigKey(
        "external_search.allow",
        "allow",
        None,
        "actors allowed `dbrain-external-search` besides root, e.g. `{id: [alice]}`",
    ),
    ConfigKey(
        "external_search.read",
        "integer",
        0,
        "the top web results whose pages are read before the answer (`read=` per question)",
        0,
        10,
    ),
    ConfigKey(
        "external_search.read_via",
        "string",
        "",
        "a reader service answering `<read_via><page URL>` with the page; empty: fetch pages. "
        "Trusted as named (no `fetch_allow_networks` entry needed); it is sent only pages the "
        "fetcher itself would fetch, whose host name resolves here to public addresses",
    ),
    ConfigKey(
        "external_search.read_unresolved",
        "boolean",
        False,
        "send `read_via` pages whose host name does not resolve here (an offline server, a "
        "reader with names of its own); names internal to a network are refused even then",
    ),
    ConfigKey(
        "external_search.fetch_allow_networks",
        "strings",
        (),
        "private networks (CIDR) that results and promotion fetches may use",
    ),
    ConfigKey(
        "external_search.budgets.<provider>.daily_calls",
        "integer",
        0,
        "calls per UTC day before the provider is skipped; 0: no cap",
        0,
        10_000_000,
    ),
    ConfigKey(
        "external_search.budgets.<provider>.monthly_usd",
        "number",
        0.0,
        "estimated dollars per UTC month before the provider is skipped; 0: no cap",
        0,
        1_000_000,
    ),
    ConfigKey(
        "external_search.<provider>.api_key",
        "secret",
        "",
        "the provider's key, always through `$env` or `$file`",
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.<provider>.base_url",
        "string",
        "",
        "the provider's API address (SearXNG: required)",
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.<provider>.price_per_call",
        "number",
        None,
        "estimated cost of one answered call; default $0.005 for Brave and Exa, $0 otherwise",
        0,
        100,
    ),
    ConfigKey(
        "external_search.brave.endpoint",
        "choice",
        "llm_context",
        "Brave endpoint",
        choices=BRAVE_ENDPOINTS,
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.brave.context_threshold_mode",
        "string",
        "balanced",
        "LLM Context's relevance threshold",
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.brave.country", "string", "", "Brave's `country`", checked_by="provider"
    ),
    ConfigKey(
        "external_search.brave.search_lang",
        "string",
        "",
        "Brave's `search_lang`",
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.exa.type",
        "choice",
        "auto",
        "Exa search type",
        choices=EXA_SEARCH_TYPES,
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.exa.text_via_contents",
        "boolean",
        False,
        "search with highlights only, then one `/contents` call for the texts",
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.searxng.language",
        "string",
        "",
        "like `en`, `de`, `pt-BR` or `auto`",
        checked_by="provider",
    ),
    ConfigKey(
        "external_search.searxng.categories",
        "string",
        "",
        "SearXNG categories, e.g. `general,science`",
        checked_by="provider",
    ),
    ConfigKey(
        "deep.rounds",
        "integer",
        3,
        "rounds of a deep research run (`depth=deep`), the first one included",
        1,
        10,
    ),
    ConfigKey(
        "deep.web_searches",
        "integer",
        6,
        "provider calls a deep research run may make, all rounds together",
        0,
        50,
    ),
    ConfigKey(
        "deep.reads",
        "integer",
        6,
        "pages a deep research run may read, all rounds together",
        0,
        30,
    ),
    ConfigKey(
        "deep.time_limit_ms",
        "integer",
        20_000,
        "time for a deep research run's rounds, the web's and a model's replies included; "
        "no round starts after it",
        1000,
        600_000,
    ),
    ConfigKey(
        "deep.pro_brain_queries",
        "boolean",
        False,
        "a `strategy=pro` run's model may send the web searches words only your brain's rows "
        "hold; off, such a search is refused (a web page's injected text could ask for your "
        "notes), and the question's and the web results' words are searched",
    ),
    ConfigKey(
        "answer.daily_calls",
        "integer",
        0,
        "calls to the language model per UTC day, for everyone (answers, pro steps and "
        "repairs; 0: no cap); every call is in the ledger, `/-/research/usage`",
        0,
        1_000_000,
    ),
    ConfigKey("answer.default", "boolean", False, "write an answer when a request does not say"),
    ConfigKey(
        "answer.synthesizer",
        "choice",
        "extractive",
        "`extractive` runs offline; `llm` asks a model of the llm library",
        choices=SYNTHESIZERS,
    ),
    ConfigKey(
        "answer.model", "string", "", "the llm model id (datasette-llm's default model when empty)"
    ),
    ConfigKey("answer.max_sentences", "integer", 6, "sentences in an answer", 1, 30),
    ConfigKey("answer.max_evidence", "integer", 12, "evidence rows an answer may use", 1, 50),
    ConfigKey(
        "answer.max_chars",
        "integer",
        24_000,
        "characters of evidence sent to a model",
        1000,
        400_000,
    ),
    ConfigKey("answer.timeout", "number", 60.0, "seconds for a model's answer", 1, 600),
    ConfigKey(
        "answer.min_support",
        "number",
        0.4,
        "content-word overlap below which a sentence is unsupported",
        0,
        1,
    ),
    ConfigKey(
        "answer.keep_unsupported",
        "boolean",
        False,
        "keep a model's unsupported sentences in the answer, marked (else listed as removed)",
    ),
    ConfigKey("answer.allow", "allow", None, "actors allowed `dbrain-llm-answer` besides root"),
    ConfigKey(
        "answer.api_key",
        "secret",
        "",
        "the model's key, through `$env` or `$file` (else llm's own keys)",
    ),
)
