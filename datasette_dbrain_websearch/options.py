"""A research request, checked: ``ResearchRequest``, built by ``checked_request`` from a tool's
typed arguments or by ``request_from_params`` from a query string (the page's, the JSON API's,
the CLI's); anything invalid becomes a ``ResearchError`` (400) before a query runs.
``run_params`` goes back from a saved run to its parameters."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from .brain import Filters
from .config import FRESHNESS_RE, Settings
from .config_keys import MODES, RANKINGS, web_mode
from .errors import ResearchError
from .pack_json import PackJSON
from .profiles import PROFILE_NAMES
from .providers.base import clean
from .reading import MAX_READ
from .urls import site_domain
from .web import ALL
from .web_gate import WebRequest

MAX_QUESTION_CHARS = 20_000


SYNTAXES = ("simple", "raw")


QUICK, DEEP = "quick", "deep"
DEPTHS = (QUICK, DEEP)
AUTO, PRO = "auto", "pro"  # who directs a deep run: the deterministic loop, or a model
STRATEGIES = (AUTO, PRO)


KIND_CHOICES = ("", "all", "item", "source")


DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


Params = Mapping[str, Sequence[str]]


# A number or a yes/no as a surface gives it: typed (the tools) or as text (a query string).
Whole = int | str | None
Flag = bool | str | None


@dataclass(frozen=True)
class ResearchRequest:
    """What a research run is asked, checked (``checked_request``): the question, its filters
    and ranking, the web's part, whether to answer, and how deep. Who asks, and how the run is
    made, is the service's ``RunOptions``."""

    question: str
    limit: int
    syntax: str
    filters: Filters
    web: WebRequest
    profile: str = "general"
    answer: bool = False
    ranking: str = "bm25"
    expand: tuple[str, ...] = ()  # words OR-ed into the ranking query only (Expand)
    depth: str = QUICK  # ``deep``: follow-up rounds until answered or out of budget (``deep``)
    strategy: str = AUTO  # ``pro``: a model proposes each deep round (``deep_pro``)


@dataclass(frozen=True)
class WebFields:
    """The web part of a request as a surface gives it, before ``checked_web``: ``external``,
    ``provider`` (or ``all``), ``freshness`` (or ``custom`` with ``freshness_since`` and
    ``freshness_until``), ``external_count``, ``read``, ``site`` and ``not_site``."""

    mode: str = ""
    providers: Sequence[str] = ()
    freshness: str = ""
    freshness_since: str = ""
    freshness_until: str = ""
    count: Whole = None
    read: Whole = None
    sites: Sequence[str] = ()
    not_sites: Sequence[str] = ()


def is_date(value: str) -> bool:
    """A real calendar date written YYYY-MM-DD (2026-02-30 is not)."""
    if not DATE_RE.match(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _last(params: Params, name: str) -> str:
    values = params.get(name) or []
    return values[-1] if values else ""


def _text(value: str) -> str:
    return clean(value).strip()


def param(params: Params, name: str) -> str:
    """A single-valued parameter: its last value, cleaned and stripped ("" when absent)."""
    return _text(_last(params, name))


# Parameters that may repeat; of any other, the last value counts.
MANY_VALUED = ("tag", "source_type", "provider", "expand", "site", "not_site")


def one_value_each(params: Params) -> Params:
    """The parameters as the request is read: every value of a repeatable one, the last of
    any other (a checkbox with a default sends ``answer=0&answer=1``)."""
    return {k: (list(v) if k in MANY_VALUED else list(v[-1:])) for k, v in params.items() if v}


def _listed(values: Sequence[str]) -> tuple[str, ...]:
    """A repeatable value's words: each value split at commas, lower-cased, each word once."""
    found: dict[str, None] = {}  # ordered, and each word checked at once however many there are
    for value in values:
        for part in clean(value).split(","):
            part = part.strip().lower()
            if part:
                found[part] = None
    return tuple(found)


MAX_EXPAND = 8


EXPAND_WORD = re.compile(r"[^\W_]{1,40}")


BOOLEAN_VALUES = {"1": True, "true": True, "yes": True, "on": True}
BOOLEAN_VALUES |= {"0": False, "false": False, "no": False, "off": False}


def _flag(name: str, value: Flag, default: bool) -> bool:
    """A yes or no: typed, or written as a query string writes it (``1``, ``true``, ``on``...)."""
    if isinstance(value, bool):
        return value
    raw = _text(value or "").lower()
    if not raw:
        return default
    if raw not in BOOLEAN_VALUES:
        raise ResearchError(f"{name} must be 1 or 0.", code=f"bad_{name}")
    return BOOLEAN_VALUES[raw]


def _whole(name: str, value: Whole, default: int, most: int, code: str, low: int = 1) -> int:
    """A whole number from ``low`` to ``most``, typed or as text (ASCII digits only: ``²`` is a
    digit to Python)."""
    raw = "" if value is None else _text(str(value))
    if not raw:
        return default
    if not re.fullmatch(r"[0-9]{1,6}", raw) or not low <= int(raw) <= most:
        raise ResearchError(f"{name} must be a whole number from {low} to {most}.", code=code)
    return int(raw)


def request_from_params(params: Params, settings: Settings) -> ResearchRequest:
    """A query string's request (the page's, the JSON API's, the CLI's): ``q``, ``limit``,
    ``tag``, ``source_type``, ``kind``, ``syntax``, ``since``, ``until``, ``profile``,
    ``ranking``, ``expand``, ``answer``, ``depth``, ``strategy`` and the web ones
    (``WebFields``), checked by ``checked_request``."""
    return checked_request(
        settings,
        question=_last(params, "q"),
        limit=_last(params, "limit"),
        syntax=_last(params, "syntax"),
        kind=_last(params, "kind"),
        tags=params.get("tag") or (),
        source_types=params.get("source_type") or (),
        since=_last(params, "since"),
        until=_last(params, "until"),
        profile=_last(params, "profile"),
        ranking=_last(params, "ranking"),
        expand=params.get("expand") or (),
        depth=_last(params, "depth"),
        strategy=_last(params, "strategy"),
        answer=_last(params, "answer"),
        web=WebFields(
            mode=_last(params, "external"),
            providers=params.get("provider") or (),
            freshness=_last(params, "freshness"),
            freshness_since=_last(params, "freshness_since"),
            freshness_until=_last(params, "freshness_until"),
            count=_last(params, "external_count"),
            read=_last(params, "read"),
            sites=params.get("site") or (),
            not_sites=params.get("not_site") or (),
        ),
    )


def checked_request(
    settings: Settings,
    *,
    question: str,
    limit: Whole = None,
    syntax: str = "",
    kind: str = "",
    tags: Sequence[str] = (),
    source_types: Sequence[str] = (),
    since: str = "",
    until: str = "",
    profile: str = "",
    ranking: str = "",
    expand: Sequence[str] = (),
    depth: str = "",
    strategy: str = "",
    answer: Flag = None,
    web: WebFields = WebFields(),
) -> ResearchRequest:
    """The one check of a research request, whichever surface built it: a query string
    (``request_from_params``) or a tool's typed arguments. Values are cleaned as a query
    string's are; an empty one takes the config's default. The checks run in
    one order, so a request with several mistakes is told the same first one everywhere."""
    question = _text(question)
    if not question:
        raise ResearchError("Missing the question: pass it as ?q=...", code="missing_q")
    if len(question) > MAX_QUESTION_CHARS:
        raise ResearchError(
            f"The question is {len(question):,} characters; the limit is {MAX_QUESTION_CHARS:,}.",
            code="question_too_long",
        )
    limit_n = _whole("limit", limit, settings.default_limit, settings.max_limit, "bad_limit")
    syntax = _text(syntax).lower() or "simple"
    if syntax not in SYNTAXES:
        raise ResearchError("syntax must be 'simple' or 'raw'.", code="bad_syntax")
    kind = _text(kind).lower()
    if kind not in KIND_CHOICES:
        raise ResearchError("kind must be 'item', 'source' or 'all'.", code="bad_kind")
    dates = {"since": _text(since), "until": _text(until)}
    for name, value in dates.items():
        if value and not is_date(value):
            raise ResearchError(
                f"{name} must be a real date like 2026-01-31 (got {value[:20]!r}).", code="bad_date"
            )
    if dates["since"] and dates["until"] and dates["since"] > dates["until"]:
        raise ResearchError("since must not be after until.", code="bad_date")
    filters = Filters(
        tags=_filter_values(tags, "tag", "bad_tag"),
        source_types=_filter_values(source_types, "source_type", "bad_source_type"),
        kind="" if kind == "all" else kind,
        since=dates["since"],
        until=dates["until"],
    )
    profile = _text(profile).lower() or "general"
    if profile not in PROFILE_NAMES:
        raise ResearchError(
            f"profile must be one of {', '.join(PROFILE_NAMES)}.", code="bad_profile"
        )
    ranking = _text(ranking).lower() or settings.ranking
    if ranking not in RANKINGS:
        raise ResearchError("ranking must be 'bm25' or 'dbrain'.", code="bad_ranking")
    words = _listed(expand)
    if len(words) > MAX_EXPAND or not all(EXPAND_WORD.fullmatch(w) for w in words):
        raise ResearchError(
            f"expand takes up to {MAX_EXPAND} words of letters and digits, comma-separated.",
            code="bad_expand",
        )
    depth = _text(depth).lower() or QUICK
    if depth not in DEPTHS:
        raise ResearchError("depth must be 'quick' or 'deep'.", code="bad_depth")
    strategy = _text(strategy).lower() or AUTO
    if strategy not in STRATEGIES:
        raise ResearchError("strategy must be 'auto' or 'pro'.", code="bad_strategy")
    web_request = checked_web(settings, web)
    return ResearchRequest(
        ranking=ranking,
        question=question,
        limit=limit_n,
        syntax=syntax,
        filters=filters,
        web=web_request,
        profile=profile,
        answer=_flag("answer", answer, settings.answer.default),
        expand=words,
        depth=DEEP if strategy == PRO else depth,
        strategy=strategy,
    )


def run_params(pack: PackJSON) -> Params:
    """The parameters a saved run was researched with, as a request gives them: brain,
    filters, syntax, limit, profile, web mode and whether it answered (what a refined run
    takes from its parent, and a run without the web from the run it is compared with)."""
    plan = pack["query_plan"]
    params = {
        "database": [pack["database"]],
        "syntax": [plan["syntax"]],
        "limit": [str(plan["limit"])],
        "profile": [plan.get("profile", "general")],
        "external": [pack["external_search"]["mode"]],
        "answer": ["0" if pack.get("answer", {}).get("status", "disabled") == "disabled" else "1"],
    }
    if pack.get("research"):
        params["depth"] = [pack["research"]["depth"]]
        params["strategy"] = [pack["research"].get("strategy", AUTO)]
    for name, value in plan["filters"].items():
        params[name] = [str(v) for v in value] if isinstance(value, list) else [str(value)]
    return params


def checked_web(settings: Settings, given: WebFields) -> WebRequest:
    """The web part of a request, checked (``checked_request``)."""
    web = settings.web
    mode = web_mode(_text(given.mode)) or web.default_mode
    if mode not in MODES:
        raise ResearchError(
            "external must be 'never', 'on_weak' (or 'on-weak', 'on_weak_local_evidence') or "
            "'always'.",
            code="bad_external",
        )
    providers = _listed(given.providers)
    if ALL in providers:
        providers = (ALL,)
    freshness = _text(given.freshness) or web.freshness
    if freshness == "custom":  # the page's custom range: two date fields
        since, until = _text(given.freshness_since), _text(given.freshness_until)
        if not (since and until):
            raise ResearchError(
                "A custom freshness range needs both dates (freshness_since, freshness_until).",
                code="bad_freshness",
            )
        freshness = f"{since}to{until}"
    start, _, end = freshness.partition("to")
    if freshness and (
        not FRESHNESS_RE.match(freshness)
        or (end and not (is_date(start) and is_date(end) and start <= end))
    ):
        raise ResearchError(
            "freshness must be pd, pw, pm, py or a range of real dates like "
            "2026-01-01to2026-06-30.",
            code="bad_freshness",
        )
    count = _whole("external_count", given.count, web.count, web.max_count, "bad_external_count")
    return WebRequest(
        mode=mode,
        providers=providers,
        freshness=freshness,
        count=count,
        read=_whole("read", given.read, web.read, MAX_READ, "bad_read", low=0),
        sites=_sites(given.sites, "site"),
        not_sites=_sites(given.not_sites, "not_site"),
    )


MAX_SITES = 10
MAX_FILTER_VALUES = 20  # tags, or source types, one question may filter on


def _filter_values(given: Sequence[str], name: str, code: str) -> tuple[str, ...]:
    """``tag`` / ``source_type``: repeated or comma-separated, at most ``MAX_FILTER_VALUES``
    (each is a term of the brain query: thousands would only make SQLite refuse it)."""
    values = _listed(given)
    if len(values) > MAX_FILTER_VALUES:
        raise ResearchError(
            f"{name} takes up to {MAX_FILTER_VALUES} values; this request gives {len(values):,}.",
            code=code,
        )
    return values


def _sites(given: Sequence[str], name: str) -> tuple[str, ...]:
    """``site`` / ``not_site``: domains (or URLs, or ``site:example.com``), repeated or
    comma-separated, as web rows' domains are written."""
    values = _listed(given)
    domains = tuple(dict.fromkeys(site_domain(v) for v in values))
    if len(values) > MAX_SITES or not all(domains):
        bad = next((v for v in values if not site_domain(v)), "")
        raise ResearchError(
            f"{name} takes up to {MAX_SITES} domains such as example.com"
            + (f" ({bad[:60]!r} is not one)." if bad else "."),
            code="bad_site",
        )
    return domains
