"""Eval cases: the JSON fields a case may have, and reading them (unknown fields are errors)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..config_keys import MODES
from ..judge import VERDICTS
from ..providers.replay import ReplayError, ReplayProvider
from ..urls import UnsupportedURL, normalize_url

EXPECT_VALUES = ("relevant", "more")


FORBID_VALUES = ("irrelevant", "less")


ANSWER_STATUSES = ("ok", "not_answered", "no_evidence", "failed")


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
            expected_answer_terms, expect_answer_status (ok|not_answered|no_evidence|failed)
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
    web_mode = _string(raw, "external") or "never"
    if web_mode not in MODES:
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
    params: dict[str, list[str]] = {"q": [question], "external": [web_mode]}
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
