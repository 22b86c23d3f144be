"""Research evals: dbrain-style cases run against a brain, with the web replayed offline.

``datasette dbrain-websearch eval CASES.json BRAIN.db`` runs each case through the same
``parse_options`` and ``research`` the CLI uses, in-process. Web search goes to a
``ReplayProvider`` per provider, answering from the case's ``fixtures`` (recorded provider
responses), so an eval never needs a key or the network and gives the same answer every time.
``eval propose --run RUN_ID`` turns a saved run, and the feedback given on it, into a case.

A case is one JSON object in an array. dbrain's fields: ``name``, ``question``, ``limit``,
``min_evidence``, ``expect_any_source_keys``, ``expect_top_source_keys``, ``forbid_source_keys``,
``expect_text``, ``max_latency_ms``. Web fields: ``external`` (never | on_weak | always,
default never), ``providers`` (the configured providers, in fallback order; default the
``fixtures`` keys), ``fixtures`` (``{"brave": [{"url", "title", "snippet", "text",
"published_at", "rank"}, ...]}``, or ``{"brave": {"error": "provider_failed", "message": ...}}``
to replay a failure), ``expect_external_urls``, ``expect_providers``, ``forbid_provider_calls``,
``expect_warnings``, ``expect_verdict``. Answer fields: ``answer`` (true to write one; implied
by the others), ``expected_citations`` and ``forbidden_citations`` (keys, or URLs of web rows),
``expected_answer_terms`` (words the answer's text must say, matched as the index matches
them: "backflushing" says "backflush"), ``expect_answer_status``. Request fields, as the JSON
API takes them: ``tag``, ``source_type``, ``kind``, ``syntax``, ``since``, ``until``,
``profile``, ``provider`` (``all`` = in parallel), ``freshness``, ``external_count``. Any other
field is an error: a check that cannot run must not pass silently.

Checks follow dbrain's wording. ``min_evidence`` counts the ranked rows (local and web);
``expect_top_source_keys`` holds the keys the first ranked row may have (as dbrain checks its
first evidence row); ``expect_any_source_keys`` needs one of its keys anywhere in the ranking;
``expect_text`` is matched case-insensitively against the ranked rows' titles, URLs, excerpts and
web texts; ``max_latency_ms`` bounds the research call; ``expect_external_urls`` must be web rows
(a page the brain holds collapses onto its local row instead); ``expect_providers`` is the exact
set of providers called, and ``forbid_provider_calls`` fails a case that called any.

Metrics (per case, then averaged over the cases that have expectations):

- expected = ``expect_any_source_keys`` + ``expect_top_source_keys`` + ``expect_external_urls``
  (canonicalized as dbrain does); a row of ``pack["ranking"]`` matches an expected key by its
  ``source_key`` (or, for an item shown with the page it links to, the page's key) and, for a
  web row, an expected URL by its ``canonical_url``;
- rank = the 1-based position in ``pack["ranking"]`` of the first row matching anything
  expected; RR = 1/rank, or 0 when nothing expected is ranked;
- recall@k = |expected found in the top k rows| / |expected|, with k = the case's ``limit``
  (the configured ``default_limit``, 10, when the case has none);
- MRR = the mean RR; recall@k overall = the mean per-case recall@k.

Answer metrics (over the cases that asked for an answer, summed before dividing):

- citation precision = valid cited keys / cited keys (valid + rejected by the verifier);
- supported-sentence rate = supported sentences / sentences;
- invented keys rejected = citations the verifier removed because the run never retrieved them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from .answer import AnswerAccess
from .config import MODES, PLUGIN_NAME, ConfigError, Settings
from .display import terminal_safe
from .errors import ResearchError
from .fts import matched_terms
from .judge import VERDICTS
from .pack import row_keys
from .providers.replay import ERROR_CODES, ReplayError, ReplayProvider
from .research import Options, WebAccess, parse_options, research
from .store import DEFAULT_FILENAME, FEEDBACK_TABLE, RUNS_TABLE
from .urls import UnsupportedURL, normalize_url, try_normalize_url

EXPECT_VALUES = ("relevant", "more")
FORBID_VALUES = ("irrelevant", "less")
ANSWER_STATUSES = ("ok", "no_evidence", "failed")
PROPOSE_TOP = 3  # rows a proposal without feedback takes from the run's top evidence
KEY_LISTS = (
    "expect_any_source_keys",
    "expect_top_source_keys",
    "forbid_source_keys",
    "expect_text",
    "expect_external_urls",
    "expect_providers",
    "expect_warnings",
    "providers",
    "expected_citations",
    "forbidden_citations",
    "expected_answer_terms",
)
REQUEST_STRINGS = ("kind", "syntax", "since", "until", "freshness", "profile")
REQUEST_LISTS = ("tag", "source_type", "provider")
CASE_FIELDS = frozenset(
    {
        "name",
        "question",
        "limit",
        "min_evidence",
        "max_latency_ms",
        "external",
        "external_count",
        "fixtures",
        "forbid_provider_calls",
        "expect_verdict",
        "answer",
        "expect_answer_status",
        *KEY_LISTS,
        *REQUEST_STRINGS,
        *REQUEST_LISTS,
    }
)
HELP = """Run dbrain-style research eval cases from CASES.json against BRAIN.db.

\b
  datasette dbrain-websearch eval CASES.json BRAIN.db [--json] [-m metadata.yml]
  datasette dbrain-websearch eval propose --run RUN_ID [--database research_runs.db] [BRAIN.db]

Web search is replayed from each case's recorded "fixtures": no keys, no network. Exit status:
0 when every case passes, 1 when any fails, 2 when CASES.json (or the config) is unusable.

\b
CASES.json is an array of objects with these fields (any other is refused):
  dbrain's  name, question, limit, min_evidence, expect_any_source_keys,
            expect_top_source_keys, forbid_source_keys, expect_text, max_latency_ms
  web       external (never|on_weak|always), providers, expect_external_urls,
            expect_providers, forbid_provider_calls, expect_warnings, expect_verdict,
            fixtures {"brave": [{"url", "title", "snippet", "text", "published_at", "rank"}],
                      "exa": {"error": "provider_failed", "message": "..."}}
  answer    answer (true), expected_citations, forbidden_citations (keys or web URLs),
            expected_answer_terms, expect_answer_status (ok|no_evidence|failed)
  request   tag, source_type, kind, syntax, since, until, profile, provider, freshness,
            external_count

\b
Metrics, per case and averaged over the cases with expectations:
  expected  = expect_any_source_keys + expect_top_source_keys + expect_external_urls
              (a web row matches an expected URL by its canonical_url)
  rank      = 1-based position in pack["ranking"] of the first expected row
  RR        = 1/rank, 0 when no expected row is ranked; MRR = mean RR
  recall@k  = |expected in the top k rows| / |expected|, k = the case's limit (default 10)
  citation precision = valid cited keys / cited keys; supported = supported sentences /
  sentences; rejected = invented keys the verifier removed (cases with an answer, summed)
"""


class EvalInputError(click.ClickException):
    """CASES.json, the brain or the config cannot be used: exit status 2, never a traceback."""

    exit_code = 2


@dataclass(frozen=True)
class Case:
    """One validated eval case."""

    name: str
    question: str
    params: dict[str, list[str]]
    providers: tuple[str, ...]
    fixtures: dict[str, Any]
    min_evidence: int = 0
    max_latency_ms: float | None = None
    expect_any_source_keys: tuple[str, ...] = ()
    expect_top_source_keys: tuple[str, ...] = ()
    forbid_source_keys: tuple[str, ...] = ()
    expect_text: tuple[str, ...] = ()
    expect_external_urls: tuple[str, ...] = ()
    expect_providers: tuple[str, ...] | None = None
    forbid_provider_calls: bool = False
    expect_warnings: tuple[str, ...] = ()
    expect_verdict: str = ""
    expected_citations: tuple[str, ...] = ()
    expected_answer_terms: tuple[str, ...] = ()
    forbidden_citations: tuple[str, ...] = ()
    expect_answer_status: str = ""

    @property
    def expected(self) -> frozenset[str]:
        """What the metrics look for: expected source keys and canonical web URLs."""
        return frozenset(
            (*self.expect_any_source_keys, *self.expect_top_source_keys, *self.expect_external_urls)
        )


@dataclass(frozen=True)
class Score:
    """Where the expected rows landed in one ranking."""

    rank: int | None
    reciprocal_rank: float
    recall_at_k: float


@dataclass(frozen=True)
class CitationCounts:
    """What the verifier made of one case's answer."""

    valid: int
    rejected: int
    sentences: int
    supported: int

    @classmethod
    def of(cls, answer: Mapping[str, Any]) -> CitationCounts:
        """Counted over every sentence the synthesizer wrote, those the verifier removed as
        unsupported included: the eval measures the synthesizer, not what was shown."""
        sentences = [*answer["sentences"], *answer.get("removed_sentences", [])]
        return cls(
            valid=sum(len(s["citations"]) for s in sentences)
            + sum(len(c["citations"]) for c in answer["conflicts"]["items"]),
            rejected=len(answer["rejected_citations"]),
            sentences=len(sentences),
            supported=sum(1 for s in sentences if s["supported"]),
        )

    @property
    def precision(self) -> float | None:
        cited = self.valid + self.rejected
        return round(self.valid / cited, 4) if cited else None


@dataclass
class CaseResult:
    """The outcome of one case, as the table and ``--json`` report it."""

    name: str
    question: str
    reasons: list[str]
    latency_ms: float
    k: int
    score: Score | None
    verdict: str = ""
    providers_called: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    top: list[str] = field(default_factory=list)
    citations: CitationCounts | None = None
    answer_status: str = ""

    @property
    def passed(self) -> bool:
        return not self.reasons

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "question": self.question,
            "passed": self.passed,
            "reasons": self.reasons,
            "latency_ms": self.latency_ms,
            "verdict": self.verdict,
            "k": self.k,
            "rank": self.score.rank if self.score else None,
            "reciprocal_rank": self.score.reciprocal_rank if self.score else None,
            "recall_at_k": self.score.recall_at_k if self.score else None,
            "providers_called": self.providers_called,
            "warnings": self.warnings,
            "top": self.top,
            "answer_status": self.answer_status,
            "citation_precision": self.citations.precision if self.citations else None,
            "sentences": self.citations.sentences if self.citations else None,
            "supported_sentences": self.citations.supported if self.citations else None,
            "rejected_citations": self.citations.rejected if self.citations else None,
        }


def score_ranking(ranking: Sequence[AbstractSet[str]], expected: AbstractSet[str], k: int) -> Score:
    """Rank, RR and recall@k of ``expected`` in a ranking whose rows each carry a set of ids
    (a local row its source_key; a web row its ext: key and canonical URL)."""
    rank = next((n for n, ids in enumerate(ranking, start=1) if ids & expected), None)
    found = set().union(*ranking[:k]) & expected if ranking[:k] else set()
    return Score(
        rank=rank,
        reciprocal_rank=1 / rank if rank else 0.0,
        recall_at_k=len(found) / len(expected) if expected else 0.0,
    )


def ranked_ids(pack: Mapping[str, Any]) -> list[frozenset[str]]:
    """Each ranked row's ids: its keys (an item's and its linked page's), plus its canonical URL
    for a web row."""
    ids = []
    for entry in pack["ranking"]:
        row = pack[entry["list"]][entry["index"]]
        if entry["list"] == "external_evidence":
            ids.append(frozenset((entry["source_key"], row["canonical_url"])))
        else:
            ids.append(frozenset(row_keys(row)))
    return ids


def summarize(results: Sequence[CaseResult]) -> dict[str, Any]:
    """Overall metrics: means over the cases with expectations, and the pass/fail counts."""
    scored = [r.score for r in results if r.score is not None]
    answered = [r.citations for r in results if r.citations is not None]
    valid = sum(c.valid for c in answered)
    cited = valid + sum(c.rejected for c in answered)
    sentences = sum(c.sentences for c in answered)
    return {
        "recall_at_k": _mean([s.recall_at_k for s in scored]),
        "mrr": _mean([s.reciprocal_rank for s in scored]),
        "passed": sum(1 for r in results if r.passed),
        "failed": sum(1 for r in results if not r.passed),
        "scored": len(scored),
        "answered": len(answered),
        "citation_precision": round(valid / cited, 4) if cited else None,
        "supported_sentence_rate": (
            round(sum(c.supported for c in answered) / sentences, 4) if sentences else None
        ),
        "invented_keys_rejected": sum(c.rejected for c in answered),
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


# ---------------------------------------------------------------------------------------------
# Reading CASES.json


def load_cases(path: Path) -> list[Case]:
    """Read and validate every case, so a bad file fails before any case runs."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalInputError(f"{path}: cannot read it ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise EvalInputError(f"{path}: not valid JSON ({exc})") from exc
    if not isinstance(raw, list):
        raise EvalInputError(f"{path}: must hold a JSON array of cases")
    if not raw:
        raise EvalInputError(f"{path}: contains no cases")
    cases: list[Case] = []
    for position, value in enumerate(raw, start=1):
        where = f"{path}: case {position}"
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            where += f" ({value['name']!r})"
        try:
            cases.append(parse_case(value))
        except ValueError as exc:
            raise EvalInputError(f"{where}: {exc}") from exc
    names = [c.name for c in cases]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise EvalInputError(f"{path}: case names must be unique; repeated: {duplicates}")
    return cases


def parse_case(raw: Any) -> Case:
    """One case object; raises ValueError naming the offending field."""
    if not isinstance(raw, dict):
        raise ValueError("must be a JSON object")
    unknown = sorted(set(raw) - CASE_FIELDS)
    if unknown:
        supported = ", ".join(sorted(CASE_FIELDS))
        raise ValueError(f"unsupported field(s) {', '.join(unknown)}; supported: {supported}")
    name = _string(raw, "name", required=True)
    question = _string(raw, "question", required=True)
    lists = {key: _strings(raw, key) for key in KEY_LISTS}
    external = _string(raw, "external") or "never"
    if external not in MODES:
        raise ValueError(f"'external' must be one of {', '.join(MODES)}")
    verdict = _string(raw, "expect_verdict")
    if verdict and verdict not in VERDICTS:
        raise ValueError(f"'expect_verdict' must be one of {', '.join(VERDICTS)}")
    fixtures = raw.get("fixtures", {})
    if not isinstance(fixtures, dict):
        raise ValueError("'fixtures' must map provider names to recorded responses")
    providers = lists["providers"] or tuple(fixtures) or ("brave",)
    stray = [p for p in fixtures if p not in providers]
    if stray:
        raise ValueError(f"fixtures for {', '.join(stray)}, which 'providers' does not list")
    for provider, fixture in fixtures.items():
        try:
            ReplayProvider.from_fixture(provider, fixture)
        except ReplayError as exc:
            raise ValueError(f"fixtures.{provider}: {exc}") from exc
    params: dict[str, list[str]] = {"q": [question], "external": [external]}
    for key in ("limit", "external_count"):
        if key in raw:
            params[key] = [str(_integer(raw, key, 1))]
    for key in REQUEST_STRINGS:
        if key in raw:
            params[key] = [_string(raw, key)]
    for key in REQUEST_LISTS:
        if key in raw:
            params[key] = list(_strings(raw, key, one_allowed=True))
    forbid_calls = raw.get("forbid_provider_calls", False)
    if not isinstance(forbid_calls, bool):
        raise ValueError("'forbid_provider_calls' must be true or false")
    answer_status = _string(raw, "expect_answer_status")
    if answer_status and answer_status not in ANSWER_STATUSES:
        raise ValueError(f"'expect_answer_status' must be one of {', '.join(ANSWER_STATUSES)}")
    answer = raw.get("answer")
    if answer is not None and not isinstance(answer, bool):
        raise ValueError("'answer' must be true or false")
    if answer is None:
        answer = bool(
            answer_status
            or lists["expected_citations"]
            or lists["forbidden_citations"]
            or lists["expected_answer_terms"]
        )
    params["answer"] = ["1" if answer else "0"]
    latency = raw.get("max_latency_ms")
    if latency is not None and (
        isinstance(latency, bool) or not isinstance(latency, int | float) or latency <= 0
    ):
        raise ValueError("'max_latency_ms' must be a positive number")
    return Case(
        name=name,
        question=question,
        params=params,
        providers=providers,
        fixtures=fixtures,
        min_evidence=_integer(raw, "min_evidence", 0) if "min_evidence" in raw else 0,
        max_latency_ms=latency,
        expect_any_source_keys=lists["expect_any_source_keys"],
        expect_top_source_keys=lists["expect_top_source_keys"],
        forbid_source_keys=lists["forbid_source_keys"],
        expect_text=lists["expect_text"],
        expect_external_urls=tuple(_canonical(u) for u in lists["expect_external_urls"]),
        expect_providers=lists["expect_providers"] if "expect_providers" in raw else None,
        forbid_provider_calls=forbid_calls,
        expect_warnings=lists["expect_warnings"],
        expect_verdict=verdict,
        expected_citations=tuple(_citation(c) for c in lists["expected_citations"]),
        forbidden_citations=tuple(_citation(c) for c in lists["forbidden_citations"]),
        expected_answer_terms=lists["expected_answer_terms"],
        expect_answer_status=answer_status,
    )


def _string(raw: Mapping[str, Any], key: str, required: bool = False) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ValueError(f"'{key}' must be a{' non-empty' if required else ''} string")
    return value.strip()


def _strings(raw: Mapping[str, Any], key: str, one_allowed: bool = False) -> tuple[str, ...]:
    value = raw.get(key, [])
    if one_allowed and isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"'{key}' must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _integer(raw: Mapping[str, Any], key: str, least: int) -> int:
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"'{key}' must be a whole number from {least}")
    return value


def _citation(value: str) -> str:
    """A cited key as given, or a web row's URL canonicalized the way its row records it."""
    if value.lower().startswith(("http://", "https://")):
        return _canonical(value)
    return value


def _canonical(url: str) -> str:
    try:
        return normalize_url(url).canonical_url
    except UnsupportedURL as exc:
        raise ValueError(f"expect_external_urls: {url!r} is not a URL dbrain accepts") from exc


# ---------------------------------------------------------------------------------------------
# Running cases


@dataclass
class _Prepared:
    """A case with its settings and options, checked before any case runs."""

    case: Case
    settings: Settings
    options: Options


def case_settings(base: Mapping[str, Any], case: Case) -> Settings:
    """The plugin config with web search on, the case's providers, and no cache."""
    external = dict(base.get("external_search") or {})
    external.update(enabled=True, providers=list(case.providers), cache_ttl=0, default_mode="never")
    return Settings.from_config({**base, "external_search": external})


def replay_providers(case: Case) -> dict[str, ReplayProvider]:
    """A fresh replay provider for every configured provider (no fixture = no results)."""
    from .providers import builtin_providers

    labels = {p.name: p.label for p in builtin_providers()}
    return {
        name: ReplayProvider.from_fixture(name, case.fixtures.get(name, []), labels.get(name, ""))
        for name in case.providers
    }


def check_brain(path: Path) -> None:
    """BRAIN must be SQLite with dbrain's searchable tables, or every case would fail alike."""
    from .brain import brain_shape

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            kinds = brain_shape(conn).searchable_kinds()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise EvalInputError(f"{path}: not a readable SQLite database ({exc})") from exc
    if not kinds:
        raise EvalInputError(
            f"{path}: not a dbrain brain (no items/items_fts or sources/sources_fts tables)"
        )


async def run_cases(
    brain: Path, cases: Sequence[Case], metadata: Mapping[str, Any] | None = None
) -> list[CaseResult]:
    """Every case through an in-process Datasette, as ``dbrain-research`` runs a question.

    Startup is not invoked: it would create ``research_runs.db`` next to the brain, and an eval
    saves no runs.
    """
    from datasette.app import Datasette

    from .service import row_url_for

    datasette = Datasette([str(brain)], metadata=dict(metadata or {}))
    base = datasette.plugin_config(PLUGIN_NAME) or {}
    database = brain.stem
    prepared = []
    for case in cases:
        try:
            settings = case_settings(base, case)
            prepared.append(_Prepared(case, settings, parse_options(case.params, settings)))
        except (ConfigError, ResearchError) as exc:
            message = exc.message if isinstance(exc, ResearchError) else str(exc)
            raise EvalInputError(f"case {case.name!r}: {message}") from exc
    db = datasette.get_database(database)
    row_url = row_url_for(datasette, database)
    return [await _run_one(item, db.execute_fn, database, row_url) for item in prepared]


async def _run_one(item: _Prepared, execute_fn: Any, database: str, row_url: Any) -> CaseResult:
    """One case: research with replayed providers, then its checks and its score."""
    case = item.case
    providers = replay_providers(case)
    web = WebAccess(permitted=True, providers=providers, cache_db=None)
    k = item.options.limit
    started = time.perf_counter()
    try:
        pack = await research(
            execute_fn,
            database,
            item.options,
            item.settings,
            row_url,
            web,
            answering=AnswerAccess(model_permitted=True),
        )
    except ResearchError as exc:
        latency = round((time.perf_counter() - started) * 1000, 1)
        reason = f"research failed ({exc.code}): {exc.message}"
        score = Score(None, 0.0, 0.0) if case.expected else None
        return CaseResult(case.name, case.question, [reason], latency, k, score)
    latency = round((time.perf_counter() - started) * 1000, 1)
    called = [name for name, p in providers.items() if p.calls]
    return CaseResult(
        name=case.name,
        question=case.question,
        reasons=check_case(case, pack, called, latency),
        latency_ms=latency,
        k=k,
        score=score_ranking(ranked_ids(pack), case.expected, k) if case.expected else None,
        verdict=pack["judge"]["verdict"],
        providers_called=called,
        warnings=[w["code"] for w in pack["warnings"]],
        top=[e["source_key"] for e in pack["ranking"][:k]],
        citations=CitationCounts.of(pack["answer"]) if item.options.answer else None,
        answer_status=pack["answer"]["status"],
    )


def check_case(
    case: Case, pack: Mapping[str, Any], called: Sequence[str], latency_ms: float
) -> list[str]:
    """Every failed expectation, worded like dbrain's eval failures; empty when it passes."""
    reasons: list[str] = []
    ranking = pack["ranking"]
    rows = [pack[e["list"]][e["index"]] for e in ranking]
    keys = {key for row in rows for key in row_keys(row)}
    if len(ranking) < case.min_evidence:
        reasons.append(
            f"evidence_count={len(ranking)} below min_evidence={case.min_evidence} "
            "(local and web rows)"
        )
    if case.expect_any_source_keys and not keys & set(case.expect_any_source_keys):
        reasons.append(
            "missing any expected source_key from " + ", ".join(case.expect_any_source_keys)
        )
    if case.expect_top_source_keys:
        if not ranking:
            reasons.append("missing top evidence for expected top source_key check")
        elif not set(row_keys(rows[0])) & set(case.expect_top_source_keys):
            reasons.append(
                f"top source_key {ranking[0]['source_key']} not in expected set "
                + ", ".join(case.expect_top_source_keys)
            )
    reasons += [f"forbidden source_key returned {k}" for k in case.forbid_source_keys if k in keys]
    text = "\n".join(
        str(row.get(name) or "") for row in rows for name in ("title", "url", "excerpt", "text")
    ).lower()
    reasons += [f"missing expected text {t!r}" for t in case.expect_text if t.lower() not in text]
    if case.max_latency_ms is not None and latency_ms > case.max_latency_ms:
        reasons.append(f"duration_ms={latency_ms:g} above max_latency_ms={case.max_latency_ms:g}")
    web_urls = {row["canonical_url"] for row in pack["external_evidence"]}
    reasons += [
        f"missing expected external URL {url}"
        for url in case.expect_external_urls
        if url not in web_urls
    ]
    if case.expect_providers is not None and set(called) != set(case.expect_providers):
        reasons.append(
            f"providers called [{', '.join(called)}], expected [{', '.join(case.expect_providers)}]"
        )
    if case.forbid_provider_calls and called:
        reasons.append(f"provider calls are forbidden, but {', '.join(called)} was called")
    codes = [w["code"] for w in pack["warnings"]]
    reasons += [
        f"missing expected warning {code} (got: {', '.join(codes) or 'none'})"
        for code in case.expect_warnings
        if code not in codes
    ]
    verdict = pack["judge"]["verdict"]
    if case.expect_verdict and verdict != case.expect_verdict:
        reasons.append(f"verdict={verdict}, want {case.expect_verdict}")
    return reasons + check_answer(case, pack)


def cited_ids(pack: Mapping[str, Any]) -> set[str]:
    """The valid citations of a pack's answer: keys (a cited item shown with its linked page
    cites the page too), plus the canonical URL of a cited web row."""
    citations = pack["answer"]["citations"]
    urls = {row["source_key"]: row["canonical_url"] for row in pack["external_evidence"]}
    local = set(citations["local"])
    local |= {k for row in pack["evidence"] if row["source_key"] in local for k in row_keys(row)}
    return local | {
        value for key in citations["external"] for value in (key, urls.get(key, ""))
    } - {""}


def check_answer(case: Case, pack: Mapping[str, Any]) -> list[str]:
    """The answer's expectations: status, keys it must or must not cite, words it must say."""
    answer = pack["answer"]
    reasons: list[str] = []
    if case.expect_answer_status and answer["status"] != case.expect_answer_status:
        reasons.append(f"answer_status={answer['status']}, want {case.expect_answer_status}")
    cited = cited_ids(pack)
    reasons += [f"missing expected citation {c}" for c in case.expected_citations if c not in cited]
    reasons += [f"forbidden citation cited {c}" for c in case.forbidden_citations if c in cited]
    said = set(matched_terms(case.expected_answer_terms, [answer["text"]]))
    reasons += [f"answer does not say {t!r}" for t in case.expected_answer_terms if t not in said]
    return reasons


def render_table(results: Sequence[CaseResult]) -> str:
    """The readable report: one line per case, its reasons under it, then the totals."""

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    width = min(48, max(len("case"), *(len(r.name) for r in results)))
    header = f"{'case':<{width}}  {'result':<6}  {'ms':>7}  {'k':>3}  {'recall@k':>8}  {'RR':>5}"
    lines = [header, "-" * len(header)]
    for r in results:
        name = r.name if len(r.name) <= width else r.name[: width - 1] + "…"
        lines.append(
            f"{name:<{width}}  {'PASS' if r.passed else 'FAIL':<6}  {r.latency_ms:>7.1f}  "
            f"{r.k:>3}  {number(r.score.recall_at_k if r.score else None):>8}  "
            f"{number(r.score.reciprocal_rank if r.score else None):>5}"
        )
        lines += [f"    - {reason}" for reason in r.reasons]
    totals = summarize(results)
    lines.append("")
    lines.append(
        f"{totals['passed']} passed, {totals['failed']} failed; "
        f"recall@k {number(totals['recall_at_k'])}, MRR {number(totals['mrr'])} "
        f"(over {totals['scored']} case(s) with expected keys)"
    )
    if totals["answered"]:
        lines.append(
            f"answers: citation precision {number(totals['citation_precision'])}, "
            f"supported sentences {number(totals['supported_sentence_rate'])}, "
            f"{totals['invented_keys_rejected']} invented key(s) rejected "
            f"(over {totals['answered']} case(s) with an answer)"
        )
    return terminal_safe("\n".join(lines))


# ---------------------------------------------------------------------------------------------
# Proposing a case from a saved run


def plugin_database_path(database: str | None, brain: str | None) -> Path:
    """``--database``, else ``research_runs.db`` next to BRAIN, else in the working directory."""
    if database:
        candidates = [Path(database)]
    else:
        candidates = [Path(brain).resolve().parent / DEFAULT_FILENAME] if brain else []
        candidates.append(Path.cwd() / DEFAULT_FILENAME)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise EvalInputError(f"no plugin database found (tried {tried}); pass --database PATH")


def load_run(path: Path, run_id: str) -> tuple[dict[str, Any], dict[str, str] | None]:
    """The saved trace and its feedback (key -> last value given), None without a table."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise EvalInputError(f"{path}: cannot open it ({exc})") from exc
    try:
        tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
        if RUNS_TABLE not in tables:
            raise EvalInputError(f"{path} is not the plugin database (no {RUNS_TABLE} table)")
        row = conn.execute(
            f"select trace_json from {RUNS_TABLE} where run_id = ?", [run_id]
        ).fetchone()
        if row is None:
            raise EvalInputError(f"no run {run_id} in {path}")
        feedback = None
        if FEEDBACK_TABLE in tables:
            # Oldest first, so a changed mind wins.
            rows = conn.execute(
                f"select key, value from {FEEDBACK_TABLE} where run_id = ? order by id",
                [run_id],
            )
            feedback = {str(key): str(value).strip().lower() for key, value in rows}
    except sqlite3.DatabaseError as exc:
        raise EvalInputError(f"{path}: cannot read it ({exc})") from exc
    finally:
        conn.close()
    return json.loads(row[0]), feedback


def propose_case(
    trace: Mapping[str, Any], feedback: Mapping[str, str] | None
) -> tuple[dict[str, Any], str]:
    """A case that replays the run offline and checks what the feedback marked; also returns
    a note on where the expectations came from."""
    pack = trace["pack"]
    plan = pack["query_plan"]
    web = pack["external_search"]
    case: dict[str, Any] = {
        "name": f"run {pack['run_id']}: {pack['question'][:60]}",
        "question": pack["question"],
        "limit": plan["limit"],
        **plan["filters"],
    }
    for key, default in (("syntax", "simple"), ("profile", "general")):
        if plan.get(key, default) != default:
            case[key] = plan[key]
    case["external"] = web["mode"]
    if web["ran"]:
        case.update(_recorded_web(pack))
    answer_status = pack.get("answer", {}).get("status", "disabled")
    if answer_status != "disabled":
        case.update(answer=True, expect_answer_status=answer_status)
    urls = {row["source_key"]: row["canonical_url"] for row in pack["external_evidence"]}
    marked = {k: v for k, v in (feedback or {}).items() if v in EXPECT_VALUES + FORBID_VALUES}
    if marked:
        expected = [k for k, v in marked.items() if v in EXPECT_VALUES]
        forbidden = [k for k, v in marked.items() if v in FORBID_VALUES]
        note = (
            f"expectations from feedback: {len(expected)} key(s) marked relevant/more, "
            f"{len(forbidden)} marked irrelevant/less"
        )
    else:
        expected = [e["source_key"] for e in pack["ranking"][:PROPOSE_TOP]]
        forbidden = []
        case["expect_verdict"] = pack["judge"]["verdict"]
        why = (
            f"the plugin database has no {FEEDBACK_TABLE} table"
            if feedback is None
            else "this run has no relevant/irrelevant/more/less feedback"
        )
        note = (
            f"{why}: expectations taken from the run's top {len(expected)} evidence row(s) "
            "and its verdict; review them before adding the case"
        )
    web_expected = [urls[k] for k in expected if k in urls]
    case["expect_any_source_keys"] = [k for k in expected if k not in urls]
    if web_expected:
        case["expect_external_urls"] = web_expected
    if forbidden:
        case["forbid_source_keys"] = forbidden
    return {k: v for k, v in case.items() if v != []}, note


def _recorded_web(pack: Mapping[str, Any]) -> dict[str, Any]:
    """providers, provider and fixtures that make the replay ask and answer as the run did.

    The trace keeps each provider's first 10 results (URL, title, rank); texts come from the
    web rows the pack kept. Failed providers are replayed as recorded failures.
    """
    answered = [q["provider"] for q in pack["query_plan"]["external_queries"] if not q.get("error")]
    failed: dict[str, dict[str, str]] = {}
    for warning in pack["warnings"]:
        provider = warning.get("provider")
        if provider and warning["code"] in ERROR_CODES and provider not in answered:
            failed.setdefault(provider, {"error": warning["code"], "message": warning["message"]})
    rows = {row["canonical_url"]: row for row in pack["external_evidence"]}
    fixtures: dict[str, Any] = {name: [] for name in answered}
    for hit in pack["external_search"].get("returned", []):
        if hit["provider"] not in fixtures:
            continue
        recorded: dict[str, Any] = {"url": hit["url"], "title": hit["title"], "rank": hit["rank"]}
        normalized = try_normalize_url(hit["url"])
        row = rows.get(normalized.canonical_url) if normalized else None
        if row is not None:
            recorded.update(snippet=row["excerpt"], text=row["text"])
            if row["published_at"]:
                recorded["published_at"] = row["published_at"]
        fixtures[hit["provider"]].append(recorded)
    fixtures.update(failed)
    result: dict[str, Any] = {"fixtures": fixtures}
    if len(answered) > 1:  # only provider=all gets answers from more than one provider
        result["providers"] = answered + list(failed)
        result["provider"] = "all"
    else:
        result["providers"] = list(failed) + answered
    queries = [q for q in pack["query_plan"]["external_queries"] if not q.get("error")]
    if queries:
        params = queries[0]["params"]
        result["external_count"] = params["count"]
        if params.get("freshness"):
            result["freshness"] = params["freshness"]
    return result
