"""``datasette dbrain-websearch eval``: cases, replayed providers, metrics, proposals."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path

import click
import httpx
import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch.cli.eval_commands import eval_group
from datasette_dbrain_websearch.demo import build_demo_brain
from datasette_dbrain_websearch.evals import (
    CaseResult,
    CitationCounts,
    Score,
    propose_case,
    score_ranking,
    summarize,
)
from datasette_dbrain_websearch.providers.base import SearchRequest
from datasette_dbrain_websearch.providers.replay import ReplayError, ReplayProvider

from ..fake_models import fake_models
from ..helpers import REPO, actor_cookies, ask, csrf, web_ds

SHIPPED = REPO / "evals" / "demo.json"
LATTICE = "https://en.wikipedia.org/wiki/Lattice_QCD"
ARXIV = "https://arxiv.org/abs/2611.01234"

SEMANTIC_WARNING = (
    "semantic_index_missing"
    if importlib.util.find_spec("wordllama")
    else "semantic_model_unavailable"
)


@pytest.fixture
def group() -> click.Group:
    """A stand-in for the ``dbrain-websearch`` group, with ``eval`` registered on it."""

    @click.group()
    def root() -> None:
        """dbrain-websearch."""

    root.add_command(eval_group)
    return root


@pytest.fixture
def offline(monkeypatch):
    """Any real HTTP request fails the test: replays must never reach the network."""

    async def refuse(self, request, **kwargs):
        raise AssertionError(f"network request during an eval: {request.url}")

    monkeypatch.setattr(httpx.AsyncClient, "send", refuse)


@pytest.fixture(scope="module")
def demo_brain(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "brain.db"
    build_demo_brain(path)
    return path


def run_eval(group, tmp_path, brain, cases, *args) -> tuple[int, dict]:
    """Run cases through the CLI with --json; returns the exit code and the report."""
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    result = CliRunner().invoke(group, ["eval", str(path), str(brain), "--json", *args])
    assert result.exit_code in (0, 1) and not isinstance(result.exception, Exception), result.output
    return result.exit_code, json.loads(result.stdout)


def by_name(report: dict) -> dict[str, dict]:
    return {case["name"]: case for case in report["cases"]}


# ---------------------------------------------------------------------------------------------
# Metrics


def test_recall_and_reciprocal_rank_hand_checked():
    ranking = [{"a"}, {"b"}, {"c"}, {"d"}]
    assert score_ranking(ranking, {"a", "c"}, 2) == Score(
        rank=1, reciprocal_rank=1.0, recall_at_k=0.5
    )
    assert score_ranking(ranking, {"a", "c"}, 3) == Score(1, 1.0, 1.0)
    first_hit_third = score_ranking([{"x"}, {"y"}, {"a"}, {"b"}], {"a"}, 2)
    assert first_hit_third == Score(rank=3, reciprocal_rank=1 / 3, recall_at_k=0.0)
    assert score_ranking([{"x"}, {"y"}], {"a", "b"}, 10) == Score(None, 0.0, 0.0)
    assert score_ranking([], {"a"}, 10) == Score(None, 0.0, 0.0)
    # A web row carries its ext: key and its canonical URL; either matches.
    web = [{"src:1"}, {"ext:brave:abc", "https://example.com/page"}]
    assert score_ranking(web, {"https://example.com/page", "src:9"}, 2) == Score(2, 0.5, 0.5)


def test_overall_metrics_average_only_scored_cases():
    results = [
        CaseResult("a", "q", [], 1.0, 10, Score(1, 1.0, 0.5)),
        CaseResult("b", "q", ["failed"], 1.0, 10, Score(3, 1 / 3, 1.0)),
        CaseResult("c", "q", [], 1.0, 10, None),
    ]
    assert summarize(results) == {
        "recall_at_k": 0.75,
        "mrr": 0.6667,
        "passed": 2,
        "failed": 1,
        "scored": 2,
        "answered": 0,
        "citation_precision": None,
        "supported_sentence_rate": None,
        "invented_keys_rejected": 0,
    }


def test_answer_metrics_sum_over_answered_cases_hand_checked():
    results = [
        CaseResult("a", "q", [], 1.0, 10, None, citations=CitationCounts(3, 1, 4, 3)),
        CaseResult("b", "q", [], 1.0, 10, None, citations=CitationCounts(1, 0, 2, 1)),
        CaseResult("c", "q", [], 1.0, 10, None),
    ]
    totals = summarize(results)
    assert totals["answered"] == 2
    assert totals["citation_precision"] == 0.8  # (3 + 1) valid of (4 + 1) cited
    assert totals["supported_sentence_rate"] == 0.6667  # (3 + 1) of (4 + 2)
    assert totals["invented_keys_rejected"] == 1
    assert results[0].as_dict()["citation_precision"] == 0.75


def test_a_passing_and_a_failing_case_with_exact_metrics(group, tmp_path, brain):
    path, ids = brain
    espresso = ids["src_espresso_key"]
    # The fixture brain ranks "espresso grinder" as [espresso note, espresso guide source]: the
    # question is more selective among its items than among its sources.
    cases = [
        {
            "name": "passes",
            "question": "espresso grinder",
            "min_evidence": 2,
            "expect_top_source_keys": ["apple-note:espresso-1"],
            "expect_any_source_keys": [espresso],
            "expect_text": ["burr"],
            "expect_verdict": "enough_evidence",
            "max_latency_ms": 5000,
        },
        {
            "name": "fails",
            "question": "espresso grinder",
            "limit": 2,
            "expect_top_source_keys": [espresso],
            "forbid_source_keys": ["apple-note:espresso-1"],
            "expect_text": ["no such words"],
            "expect_verdict": "no_evidence",
            "min_evidence": 3,
        },
    ]
    code, report = run_eval(group, tmp_path, path, cases)
    assert code == 1 and report["ok"] is False
    passes, fails = by_name(report)["passes"], by_name(report)["fails"]
    assert passes["passed"] is True and passes["reasons"] == []
    assert passes["top"] == ["apple-note:espresso-1", espresso]
    assert (passes["rank"], passes["reciprocal_rank"], passes["recall_at_k"]) == (1, 1.0, 1.0)
    assert fails["passed"] is False
    assert fails["reasons"] == [
        "evidence_count=2 below min_evidence=3 (local and web rows)",
        f"top source_key apple-note:espresso-1 not in expected set {espresso}",
        "forbidden source_key returned apple-note:espresso-1",
        "missing expected text 'no such words'",
        "verdict=enough_evidence, want no_evidence",
    ]
    assert (fails["k"], fails["rank"], fails["reciprocal_rank"], fails["recall_at_k"]) == (
        2,
        2,
        0.5,
        1.0,
    )
    assert report["metrics"] == {
        "recall_at_k": 1.0,
        "mrr": 0.75,
        "passed": 1,
        "failed": 1,
        "scored": 2,
        "answered": 0,
        "citation_precision": None,
        "supported_sentence_rate": None,
        "invented_keys_rejected": 0,
    }


def test_table_output_names_each_case_and_its_reasons(group, tmp_path, brain):
    path, _ = brain
    cases = [
        {
            "name": "ok case",
            "question": "espresso",
            "expect_any_source_keys": ["apple-note:espresso-1"],
        },
        {"name": "bad case", "question": "espresso", "expect_verdict": "no_evidence"},
    ]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    result = CliRunner().invoke(group, ["eval", str(tmp_path / "cases.json"), str(path)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].split() == ["case", "result", "ms", "k", "recall@k", "RR"]
    assert any(line.startswith("ok case") and " PASS " in line for line in lines)
    assert any(line.startswith("bad case") and " FAIL " in line for line in lines)
    assert "    - verdict=enough_evidence, want no_evidence" in lines
    assert lines[-1].startswith("1 passed, 1 failed; recall@k 1.00, MRR")


# ---------------------------------------------------------------------------------------------
# Replayed providers


async def test_replay_provider_returns_the_recording_and_counts_calls():
    provider = ReplayProvider("brave", [{"url": LATTICE, "title": "Lattice QCD"}, {"url": ARXIV}])
    results = await provider.search(SearchRequest("lattice"), ctx=None)
    assert [(r.url, r.rank, r.title) for r in results] == [
        (LATTICE, 1, "Lattice QCD"),
        (ARXIV, 2, ""),
    ]
    assert [c.query for c in provider.calls] == ["lattice"]
    with pytest.raises(ReplayError, match="unknown field"):
        ReplayProvider("brave", [{"url": LATTICE, "body": "x"}])
    with pytest.raises(ReplayError, match="no url"):
        ReplayProvider("brave", [{"title": "x"}])


def test_fixtures_become_external_rows_without_network(group, tmp_path, brain, offline):
    path, _ = brain
    cases = [
        {
            "name": "web",
            "question": "lattice qcd",
            "external": "always",
            "fixtures": {
                "brave": [
                    {"url": LATTICE, "title": "Lattice QCD", "snippet": "Quarks on a lattice."},
                    {"url": ARXIV, "title": "Muon g-2", "text": "Hadronic vacuum polarization."},
                ]
            },
            "expect_external_urls": [ARXIV, LATTICE.replace("https://", "http://")],
            "expect_providers": ["brave"],
            "expect_text": ["quarks on a lattice", "vacuum polarization"],
            "expect_verdict": "no_evidence",
        }
    ]
    code, report = run_eval(group, tmp_path, path, cases)
    case = by_name(report)["web"]
    assert code == 0, case["reasons"]
    assert case["providers_called"] == ["brave"]
    assert [k.split(":")[:2] for k in case["top"]] == [["ext", "brave"], ["ext", "brave"]]
    assert (case["rank"], case["recall_at_k"]) == (1, 1.0)


def test_forbid_provider_calls_catches_a_call(group, tmp_path, brain, offline):
    path, _ = brain
    fixture = {"brave": [{"url": LATTICE, "title": "Lattice QCD"}]}
    cases = [
        {
            "name": "always reaches brave",
            "question": "espresso grinder",
            "external": "always",
            "fixtures": fixture,
            "forbid_provider_calls": True,
        },
        {
            "name": "on_weak with enough evidence stays local",
            "question": "espresso grinder",
            "external": "on_weak",
            "fixtures": fixture,
            "forbid_provider_calls": True,
            "expect_verdict": "enough_evidence",
        },
        {
            "name": "on_weak with weak evidence reaches brave",
            "question": "sourdough baguette",
            "external": "on_weak",
            "fixtures": fixture,
            "forbid_provider_calls": True,
        },
    ]
    code, report = run_eval(group, tmp_path, path, cases)
    results = by_name(report)
    assert code == 1
    assert results["always reaches brave"]["reasons"] == [
        "provider calls are forbidden, but brave was called"
    ]
    assert results["on_weak with enough evidence stays local"]["passed"] is True
    assert results["on_weak with enough evidence stays local"]["providers_called"] == []
    assert results["on_weak with weak evidence reaches brave"]["reasons"] == [
        "provider calls are forbidden, but brave was called"
    ]


def test_expect_warnings_and_a_replayed_failure(group, tmp_path, brain, offline):
    path, _ = brain
    fallback = {
        "providers": ["brave", "exa"],
        "fixtures": {
            "brave": {"error": "provider_rate_limited", "message": "Brave rate limit (HTTP 429)."},
            "exa": [{"url": ARXIV, "title": "Muon g-2"}, {"url": "javascript:alert(1)"}],
        },
    }
    cases = [
        {
            "name": "warned",
            "question": "muon g-2",
            "external": "always",
            **fallback,
            "expect_warnings": [
                "provider_rate_limited",
                "provider_fallback",
                "external_url_rejected",
            ],
            "expect_providers": ["exa", "brave"],
            "expect_external_urls": [ARXIV],
        },
        {
            "name": "expected another warning",
            "question": "muon g-2",
            "external": "always",
            **fallback,
            "expect_warnings": ["provider_timeout"],
            "expect_providers": ["exa"],
        },
    ]
    code, report = run_eval(group, tmp_path, path, cases)
    results = by_name(report)
    assert code == 1
    assert results["warned"]["passed"] is True, results["warned"]["reasons"]
    assert results["warned"]["providers_called"] == ["brave", "exa"]
    assert results["expected another warning"]["reasons"] == [
        "providers called [brave, exa], expected [exa]",
        # The test brain has no semantic index (nor, without the [semantic] extra, a model): the
        # pack says so, first.
        f"missing expected warning provider_timeout (got: {SEMANTIC_WARNING}, "
        "provider_rate_limited, provider_fallback, external_url_rejected)",
    ]


# ---------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ("{}", "must hold a JSON array of cases"),
        ("[]", "contains no cases"),
        ('[{"question": "x"}]', "case 1: 'name' must be a non-empty string"),
        ('[{"name": "a"}]', "case 1 ('a'): 'question' must be a non-empty string"),
        (
            '[{"name": "a", "question": "x", "expect_any_source_key": ["k"]}]',
            "unsupported field(s) expect_any_source_key",
        ),
        ('[{"name": "a", "question": "x", "external": "sometimes"}]', "'external' must be one of"),
        ('[{"name": "a", "question": "x", "limit": 0}]', "'limit' must be a whole number from 1"),
        ('[{"name": "a", "question": "x", "limit": 5000}]', "limit must be a whole number"),
        ('[{"name": "a", "question": "x", "kind": "tweet"}]', "kind must be"),
        ('[{"name": "a", "question": "x", "expect_verdict": "good"}]', "'expect_verdict' must"),
        ('[{"name": "a", "question": "x", "expect_text": "one"}]', "'expect_text' must be a list"),
        (
            '[{"name": "a", "question": "x", "fixtures": {"brave": [{"title": "t"}]}}]',
            "fixtures.brave: result 1 has no url",
        ),
        (
            '[{"name": "a", "question": "x", "fixtures": {"brave": {"error": "oops"}}}]',
            "fixtures.brave: a recorded failure's 'error' must be one of",
        ),
        (
            '[{"name": "a", "question": "x", "providers": ["brave"], "fixtures": {"exa": []}}]',
            "fixtures for exa, which 'providers' does not list",
        ),
        (
            '[{"name": "a", "question": "x", "expect_external_urls": ["javascript:x"]}]',
            "is not a URL dbrain accepts",
        ),
        (
            '[{"name": "a", "question": "x"}, {"name": "a", "question": "y"}]',
            "case names must be unique",
        ),
    ],
)
def test_bad_cases_file_exits_2_with_a_clear_message(group, tmp_path, brain, content, message):
    path = tmp_path / "cases.json"
    path.write_text(content)
    result = CliRunner().invoke(group, ["eval", str(path), str(brain[0])])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)


def test_bad_brain_or_missing_file_exits_2(group, tmp_path, brain):
    cases = tmp_path / "cases.json"
    cases.write_text('[{"name": "a", "question": "x"}]')
    not_sqlite = tmp_path / "notes.db"
    not_sqlite.write_text("hello")
    result = CliRunner().invoke(group, ["eval", str(cases), str(not_sqlite)])
    assert result.exit_code == 2 and "not a readable SQLite database" in result.output
    result = CliRunner().invoke(group, ["eval", str(tmp_path / "missing.json"), str(brain[0])])
    assert result.exit_code == 2 and "cannot read it" in result.output


def test_help_documents_the_metrics(group):
    result = CliRunner().invoke(group, ["eval", "--help"])
    assert result.exit_code == 0
    for text in (
        "recall@k",
        "1/rank",
        "MRR",
        "CASES.json BRAIN.db",
        "propose --run RUN_ID",
        "expected_citations",
        "citation precision",
    ):
        assert text in result.output


# ---------------------------------------------------------------------------------------------
# Answers: expected and forbidden citations, and the citation metrics


def test_expected_and_forbidden_citations_with_an_extractive_answer(group, tmp_path, brain):
    path, ids = brain
    espresso = ids["src_espresso_key"]
    cases = [
        {
            "name": "cites the note and the guide",
            "question": "espresso grinder",
            "expected_citations": ["apple-note:espresso-1", espresso],
            "forbidden_citations": ["gh-star:simonw/datasette"],
            "expect_answer_status": "ok",
        },
        {
            "name": "wrong expectations",
            "question": "espresso grinder",
            "expected_citations": ["gh-star:simonw/datasette"],
            "forbidden_citations": [espresso],
            "expect_answer_status": "no_evidence",
        },
    ]
    code, report = run_eval(group, tmp_path, path, cases)
    assert code == 1
    good, bad = (
        by_name(report)["cites the note and the guide"],
        by_name(report)["wrong expectations"],
    )
    assert good["passed"] is True and good["answer_status"] == "ok"
    assert (good["citation_precision"], good["rejected_citations"]) == (1.0, 0)
    assert good["sentences"] == good["supported_sentences"] >= 2
    assert bad["reasons"] == [
        "answer_status=ok, want no_evidence",
        "missing expected citation gh-star:simonw/datasette",
        f"forbidden citation cited {espresso}",
    ]
    metrics = report["metrics"]
    assert (metrics["answered"], metrics["citation_precision"]) == (2, 1.0)
    assert (metrics["supported_sentence_rate"], metrics["invented_keys_rejected"]) == (1.0, 0)


def test_expected_answer_terms_are_matched_as_the_index_matches_them(group, tmp_path, brain):
    path, _ = brain
    cases = [
        {"name": "says it", "question": "espresso grinder", "expected_answer_terms": ["grinders"]},
        {"name": "does not", "question": "espresso grinder", "expected_answer_terms": ["kettle"]},
    ]
    code, report = run_eval(group, tmp_path, path, cases)
    assert code == 1
    says, does_not = by_name(report)["says it"], by_name(report)["does not"]
    assert says["passed"] is True and says["answer_status"] == "ok"  # "grinder" says "grinders"
    assert does_not["reasons"] == ["answer does not say 'kettle'"]


def test_citation_metrics_of_a_model_answer_hand_checked(group, tmp_path, demo_brain, offline):
    """The fake model cites the first brain row twice (one claim its row holds, one it does
    not), invents a key, writes a sentence without a citation and a conflict with one key:
    2 valid of 3 cited keys, 1 of 4 sentences supported, 1 invented key rejected."""
    metadata = tmp_path / "metadata.json"
    metadata.write_text(
        json.dumps(
            {
                "plugins": {
                    "datasette-dbrain-websearch": {
                        "answer": {"synthesizer": "llm", "model": "dbrain-fake"}
                    }
                }
            }
        )
    )
    cases = [{"name": "model", "question": "cold climate heat pump", "answer": True}]
    with fake_models():
        code, report = run_eval(group, tmp_path, demo_brain, cases, "-m", str(metadata))
    (case,) = report["cases"]
    assert code == 0 and case["answer_status"] == "ok"
    assert (case["citation_precision"], case["sentences"], case["supported_sentences"]) == (
        0.6667,
        4,
        1,
    )
    metrics = report["metrics"]
    assert metrics["citation_precision"] == 0.6667
    assert metrics["supported_sentence_rate"] == 0.25
    assert metrics["invented_keys_rejected"] == 1
    text = CliRunner().invoke(group, ["eval", str(tmp_path / "cases.json"), str(demo_brain)])
    assert "answers: citation precision" in text.output


# ---------------------------------------------------------------------------------------------
# The shipped eval set


def test_shipped_eval_set_passes_on_a_fresh_demo_brain(group, tmp_path, demo_brain, offline):
    cases = json.loads(SHIPPED.read_text())
    assert 8 <= len(cases) <= 15  # small enough to read, and one case per behaviour
    assert any("fixtures" in case for case in cases)
    result = CliRunner().invoke(group, ["eval", str(SHIPPED), str(demo_brain), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["metrics"]["passed"] == len(cases) and report["metrics"]["failed"] == 0
    assert any(case["providers_called"] for case in report["cases"])
    text = CliRunner().invoke(group, ["eval", str(SHIPPED), str(demo_brain)])
    assert text.exit_code == 0 and f"{len(cases)} passed, 0 failed" in text.output


def test_shipped_eval_set_through_datasette_cli(demo_brain, offline):
    websearch = cli.commands.get("dbrain-websearch")
    if not isinstance(websearch, click.Group) or "eval" not in websearch.commands:
        pytest.skip("the CLI does not register `dbrain-websearch eval` yet")
    result = CliRunner().invoke(cli, ["dbrain-websearch", "eval", str(SHIPPED), str(demo_brain)])
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------------------------------
# Proposing cases from saved runs


async def mark(ds, run_id: str, marks: list[dict[str, str]]) -> None:
    cookies, headers, _ = await csrf(ds, actor_cookies(ds, "root"))
    response = await ds.client.post(
        f"/-/research/runs/{run_id}/feedback",
        json={"feedback": marks},
        cookies=cookies,
        headers=headers,
    )
    assert response.status_code == 200, response.text


def propose(group, *args) -> tuple[click.testing.Result, dict]:
    result = CliRunner().invoke(group, ["eval", "propose", *args])
    assert result.exit_code == 0, result.output
    return result, json.loads(result.stdout)


async def test_propose_from_feedback_and_replay_it(group, tmp_path, brain, fake, monkeypatch):
    path, ids = brain
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    fake.set_mode("brave", "server_error")  # recorded as a failure, replayed as one
    _, pack = await ask(ds, q="sqlite fts5 bm25", external="always")
    assert [w["code"] for w in pack["warnings"]][:2] == ["provider_failed", "provider_fallback"]
    run_id = pack["run_id"]
    local = ids["src_fts5_key"]
    liked, disliked, unsure = (row["source_key"] for row in pack["external_evidence"][:3])
    liked_url = pack["external_evidence"][0]["canonical_url"]
    assert local in {e["source_key"] for e in pack["ranking"]}

    # No marks yet: the run's top evidence and verdict, and a note saying so.
    result, case = propose(group, "--run", run_id, str(path))
    assert "top 3 evidence row(s)" in result.stderr and "review them" in result.stderr
    assert case["expect_verdict"] == pack["judge"]["verdict"]
    top = [e["source_key"] for e in pack["ranking"][:3]]
    assert case["expect_any_source_keys"] == [k for k in top if not k.startswith("ext:")]

    await mark(
        ds,
        run_id,
        [
            {"key": local, "value": "relevant"},
            {"key": liked, "value": "more"},
            {"key": disliked, "value": "irrelevant"},
            {"key": unsure, "value": "unsure"},
        ],
    )
    database = str(path.parent / "research_runs.db")
    result, case = propose(group, "--run", run_id, "--database", database)
    assert "from feedback: 2 key(s) marked relevant/more, 1 marked irrelevant/less" in result.stderr
    assert case["question"] == "sqlite fts5 bm25" and case["external"] == "always"
    assert case["expect_any_source_keys"] == [local]
    assert case["expect_external_urls"] == [liked_url]
    assert case["forbid_source_keys"] == [disliked]
    assert "expect_verdict" not in case
    assert case["providers"] == ["brave", "exa"]
    assert case["fixtures"]["brave"]["error"] == "provider_failed"
    assert [r["url"] for r in case["fixtures"]["exa"]] == [
        r["url"] for r in pack["external_search"]["returned"] if r["provider"] == "exa"
    ]

    # The proposal replays offline with the same calls and warnings, and fails on exactly
    # what the feedback complained about: the row marked irrelevant is still returned.
    monkeypatch.setattr(httpx.AsyncClient, "send", _refuse)
    case["expect_providers"] = ["brave", "exa"]
    case["expect_warnings"] = ["provider_failed", "provider_fallback"]
    # The CLI runs its own event loop, so it cannot run on this test's.
    code, report = await asyncio.to_thread(run_eval, group, tmp_path, path, [case])
    assert code == 1
    assert report["cases"][0]["reasons"] == [f"forbidden source_key returned {disliked}"]
    assert report["cases"][0]["top"] == [e["source_key"] for e in pack["ranking"]][:10]


async def _refuse(self, request, **kwargs):
    raise AssertionError(f"network request during an eval: {request.url}")


def test_propose_without_a_feedback_table_says_so():
    pack = {
        "run_id": "20261130T093000.123456789Z-0a1b2c3d4e5f",
        "question": "espresso",
        "query_plan": {"limit": 5, "filters": {"tag": ["coffee"]}, "syntax": "simple"},
        "external_search": {"mode": "never", "ran": False},
        "external_evidence": [],
        "ranking": [{"source_key": "src:1"}, {"source_key": "x:2"}],
        "judge": {"verdict": "enough_evidence"},
        "warnings": [],
    }
    case, note = propose_case({"pack": pack}, None)
    assert note.startswith("the plugin database has no dbrain_websearch_feedback table")
    assert case == {
        "name": "run 20261130T093000.123456789Z-0a1b2c3d4e5f: espresso",
        "question": "espresso",
        "limit": 5,
        "tag": ["coffee"],
        "external": "never",
        "expect_verdict": "enough_evidence",
        "expect_any_source_keys": ["src:1", "x:2"],
    }


def test_propose_errors_exit_2(group, tmp_path, brain):
    path, _ = brain
    result = CliRunner().invoke(group, ["eval", "propose", "--run", "nope", str(path)])
    assert result.exit_code == 2 and "no plugin database found" in result.output
    CliRunner().invoke(cli, ["dbrain-research", str(path), "espresso"])  # creates the database
    result = CliRunner().invoke(group, ["eval", "propose", "--run", "nope", str(path)])
    assert result.exit_code == 2 and "no run nope in" in result.output
    result = CliRunner().invoke(
        group, ["eval", "propose", "--run", "nope", "--database", str(path)]
    )
    assert result.exit_code == 2 and "is not the plugin database" in result.output
