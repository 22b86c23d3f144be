"""The benchmark scripts still run end to end (on tiny brains and collections; they report,
never assert speed). Most runs happen in the background of the suite (``bench_runs``)."""

from __future__ import annotations

import gzip
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from ..bench_runs import BENCH


@pytest.mark.bench("research")
def test_bench_runs_and_prints_ratios(smoke):
    assert smoke.returncode == 0, smoke.stderr
    assert "research / floor" in smoke.stdout
    assert "built-in / research" in smoke.stdout
    assert "600 items + 300 sources; 4 questions" in smoke.stdout
    assert "under load: 4 clients" in smoke.stdout and "research p99 / p50" in smoke.stdout


@pytest.mark.bench("speed_collections")
def test_speed_bench_times_a_shared_collection_at_10_and_100_rows(smoke):
    assert smoke.returncode == 0, smoke.stderr
    assert "squad: 87 documents, 3 questions x 1 reps; semantic lane off" in smoke.stdout
    lines = smoke.stdout.splitlines()
    rows = [line.split() for line in lines if line.strip()[:3] in ("10 ", "100")]
    assert [r[0] for r in rows] == ["10", "100"]
    assert all(r[4].endswith("x") and float(r[4][:-1]) > 0 for r in rows)


@pytest.mark.bench("locks")
def test_locks_bench_checks_every_answer_while_a_database_is_locked(smoke):
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    for phase in ("plugin database locked", "brain written (WAL)", "brain locked (page)"):
        assert phase in smoke.stdout
    assert "200 trace_not_saved" in smoke.stdout and "503 brain_busy" in smoke.stdout
    assert "brain locked (page): 503 in" in smoke.stdout  # a time, printed, never a failure
    assert "every answer kept the rules" in smoke.stdout


@pytest.mark.bench("known_item")
def test_known_item_bench_prints_both_recalls_and_the_plugin_keeps_up(smoke):
    """A short run of the known-item benchmark. Recall is a correctness target (speed is not):
    the plugin finds known items at least as often as dbrain's own order."""
    assert smoke.returncode == 0, smoke.stderr
    recalls = re.findall(r"^(three|the three).*?(\d\.\d{3})\s+(\d\.\d{3})", smoke.stdout, re.M)
    assert len(recalls) == 2, smoke.stdout
    for _, plugin, dbrain in recalls:
        assert float(plugin) >= float(dbrain), smoke.stdout


@pytest.mark.bench("web")
def test_web_bench_runs_and_prints_ratios(smoke):
    assert smoke.returncode == 0, smoke.stderr
    assert "all / single" in smoke.stdout
    assert "plugin time on top" in smoke.stdout


@pytest.mark.bench("answer")
def test_answer_bench_runs_and_prints_what_answering_adds(smoke):
    assert smoke.returncode == 0, smoke.stderr
    assert "answering adds" in smoke.stdout and "answer stage (in the pack)" in smoke.stdout


@pytest.mark.bench("limits")
def test_limits_bench_runs_and_reports_time_over_the_limit(smoke):
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "alone (1 each)" in smoke.stdout and "under load (2 clients" in smoke.stdout
    assert "time to answer / limit: worst p50" in smoke.stdout
    assert re.search(r"501 words +\d+ .* 400 too_many_terms", smoke.stdout)


@pytest.mark.bench("fairness")
def test_fairness_bench_runs_and_reports_its_bound(smoke):
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert re.search(r"calm +\d+ +[\d.]+ +[\d.]+ +1\.00x", smoke.stdout)
    assert re.search(r"attack +\d+ ", smoke.stdout)
    assert "bound 3x of calm p50:" in smoke.stdout and "hostile statuses: {" in smoke.stdout
    assert re.search(r"ordinary questions answered under attack: \d+ of \d+", smoke.stdout)


@pytest.mark.bench("load")
def test_load_test_runs_clean_and_reports(smoke):
    """A short run of the load test: no errors, no duplicate or lost promotion (it exits
    non-zero on those), every hostile request refused, and the report printed."""
    assert smoke.returncode == 0, smoke.stdout + smoke.stderr
    assert "errors: 0" in smoke.stdout
    assert "duplicate rows: 0; lost: 0" in smoke.stdout
    assert "plain research p99 / p50" in smoke.stdout


def run_bench(script: Path, *args: str, timeout: int = 300, **options: Any) -> CompletedProcess:
    """One of bench/'s scripts, run as a user runs it (``options``: env, cwd)."""
    command = [sys.executable, str(script), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, **options)


@pytest.mark.bench("relevance")
def test_relevance_bench_scores_every_system_on_a_collection(smoke):
    """bench_ir.py on a six-document collection in BEIR's layout (tests/data/ir-tiny): every
    system in one run, each with nDCG@10, R@100 and p50, scored from the judgements."""
    assert smoke.returncode == 0, smoke.stderr
    assert "ir-tiny: 6 documents, 3 judged questions" in smoke.stdout
    rows = dict(
        (m[0].strip(), (float(m[1]), float(m[2])))
        for m in re.findall(
            r"^(plugin \w+|fts5 or|bm25s)\s+(\d\.\d{3})\s+(\d\.\d{3})", smoke.stdout, re.M
        )
    )
    assert {"plugin bm25", "plugin dbrain", "fts5 or"} <= set(rows)
    # Three questions, each with a judged document every system finds in its top 100.
    assert all(recall == 1.0 for _, recall in rows.values())
    assert rows["plugin bm25"][0] >= rows["fts5 or"][0]


def test_dbrain_ranking_is_the_dbrain_style_order_of_the_benchmark(tmp_path):
    """``ranking=dbrain`` lists exactly what bench_known_item.py computes as dbrain's
    ``Store.Search`` order in plain SQL (AND query: items then sources; else the relaxed OR
    query, sources then items, kept by matchesRelaxedTerms), for 40 known-item questions."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_known_item as known
    finally:
        sys.path.remove(str(BENCH))
    from datasette_dbrain_websearch.brain import Filters
    from datasette_dbrain_websearch.demo import build_demo_brain
    from datasette_dbrain_websearch.query_plan import plan_query
    from datasette_dbrain_websearch.retrieval import retrieve

    path = tmp_path / "brain.db"
    build_demo_brain(path, size=1500)
    known.share_words(path)
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    asked = known.questions(conn, 20, seed=5)
    assert len(asked) == 20
    modes = set()
    for _, three, four in asked:
        for question in (three, four):
            found = retrieve(conn, question, plan_query(question), Filters(), 10, "dbrain")
            keys = [hit.row["source_key"] for hit in found.hits]
            assert keys == known.dbrain_style(conn, question), question
            modes.add(found.mode)
    conn.close()
    assert modes == {"strict", "relaxed"}  # both of dbrain's paths were compared


CRAN_DOCS = """.I 1
.T
lift of a wing in a slipstream .
.A
someone,a.
.B
j. ae. scs. 25, 1958, 324.
.W
lift of a wing in a slipstream .
  the lift increase due to the slipstream was measured .
.I 2
.T
boundary layers on a flat plate .
.A
other,b.
.W
boundary layers on a flat plate .
  a plate in a stream of small viscosity .
"""
CRAN_QUERIES = """.I 001
.W
what is the lift of a wing
in a slipstream .
.I 008
.W
how thick are boundary layers .
"""


def test_cranfield_files_become_the_layout_the_relevance_bench_reads(tmp_path):
    """cranfield_to_beir.py: records parsed by their dot fields, the repeated title dropped
    from the text, questions numbered by position (as cranqrel counts them, not by ``.I``),
    codes 1..4 turned into gains 4..1 and -1 (no relevance) left out; bench_ir.py then scores
    the result."""
    source, out = tmp_path / "cran", tmp_path / "ir" / "cran-tiny"
    source.mkdir()
    (source / "cran.all.1400").write_text(CRAN_DOCS, encoding="latin-1")
    (source / "cran.qry").write_text(CRAN_QUERIES, encoding="latin-1")
    (source / "cranqrel").write_text("1 1 1\n1 2 -1\n2 2 3\n")
    converted = run_bench(BENCH / "cranfield_to_beir.py", str(source), str(out), timeout=60)
    assert converted.returncode == 0, converted.stderr
    assert "2 documents, 2 questions, 2 judgements" in converted.stdout
    with gzip.open(out / "corpus.jsonl.gz", "rt") as fh:
        docs = [json.loads(line) for line in fh]
    assert docs[0] == {
        "_id": "1",
        "title": "lift of a wing in a slipstream",
        "text": "the lift increase due to the slipstream was measured.",
    }
    queries = [json.loads(line) for line in (out / "queries.jsonl").open()]
    assert [q["_id"] for q in queries] == ["1", "2"]
    assert queries[0]["text"] == "what is the lift of a wing in a slipstream"
    qrels = (out / "qrels.tsv").read_text().splitlines()
    assert qrels == ["query-id\tcorpus-id\tscore", "1\t1\t4", "2\t2\t2"]
    scored = run_bench(
        BENCH / "bench_ir.py",
        "--collection",
        "cran-tiny",
        env={**os.environ, "DBRAIN_IR_DATA": str(out.parent)},
    )
    assert scored.returncode == 0, scored.stderr
    assert "cran-tiny: 2 documents, 2 judged questions" in scored.stdout


@pytest.mark.bench("answer_quality")
def test_answer_quality_bench_scores_the_answer_beside_its_baselines(smoke):
    """bench_answer_quality.py on a five-paragraph collection in SQuAD's layout, written for
    the test (tests/data/qa-tiny.json): unanswerable questions are left out; the answer and
    both baselines are scored against the gold sentences in one run."""
    assert smoke.returncode == 0, smoke.stderr
    assert "qa-tiny.json: 3 paragraphs, 4 answerable questions, lexical only" in smoke.stdout
    rows = {
        m[0].strip(): (float(m[1]), float(m[2]))
        for m in re.findall(
            r"^(extractive answer|lead sentences|best BM25 sentences|BM25 at answer's count)"
            r"\s+(\d\.\d{3})\s+(\d\.\d{3})",
            smoke.stdout,
            re.M,
        )
    }
    assert set(rows) == {
        "extractive answer",
        "lead sentences",
        "best BM25 sentences",
        "BM25 at answer's count",
    }
    # Every question's paragraph is the only one holding its words: the answer finds its gold.
    assert rows["extractive answer"][0] == 1.0
    assert re.search(r"^system\s+gold hit\s+gold first\s", smoke.stdout, re.M)


@pytest.mark.bench("feedback")
def test_feedback_bench_compares_the_original_the_reranked_and_the_expanded_run(smoke):
    """bench_feedback.py on tests/data/ir-tiny: marks the top rows as a person would, and
    reports the three runs and whether Expand ever returned fewer rows."""
    assert smoke.returncode == 0, smoke.stderr
    assert "ir-tiny: 6 documents, 3 judged questions, the top 5 marked" in smoke.stdout
    rows = {
        m[0]: (float(m[1]), float(m[2]))
        for m in re.findall(
            r"^(original|re-ranked|expanded)\s+(\d\.\d{3})\s+(\d\.\d{3})", smoke.stdout, re.M
        )
    }
    assert set(rows) == {"original", "re-ranked", "expanded"}
    assert rows["re-ranked"][0] >= rows["original"][0]
    assert "expanded runs with fewer rows than the original: 0 of 3" in smoke.stdout
    added, filler, share = re.search(
        r"^words Expand added: (\d+); filler (\d+) \((\d\.\d{3}), goal <= 0\.05\)",
        smoke.stdout,
        re.M,
    ).groups()
    assert int(added) > 0 and int(filler) == 0 and float(share) == 0.0


@pytest.mark.bench("verdict")
def test_verdict_bench_scores_the_verdict_as_a_classifier(smoke):
    """bench_verdict.py on two shared collections, 15 questions of each set: both rules for
    each brain, and nonsense always no evidence with no rows."""
    assert smoke.returncode == 0, smoke.stderr
    assert "verdict on 2 brains, semantic lane on (wordllama)" in smoke.stdout
    rows = {
        (m[0], m[1]): [float(x) for x in m[2:6]]
        for m in re.findall(
            r"^(squad|hotpotqa)\s+(plugin|dbrain)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)",
            smoke.stdout,
            re.M,
        )
    }
    assert set(rows) == {(b, r) for b in ("squad", "hotpotqa") for r in ("plugin", "dbrain")}
    for (brain, rule), (holds, _, nonsense, _) in rows.items():
        assert nonsense == 1.0, (brain, rule)
        if rule == "plugin":
            assert holds >= rows[(brain, "dbrain")][0]


@pytest.mark.bench("spelling")
def test_spelling_bench_gives_typos_their_word_back(smoke):
    """bench_spelling.py --smoke on the SQuAD brain: typos made from its questions' words are
    found, and the table says how often real words were wrongly corrected."""
    assert smoke.returncode == 0, smoke.stderr
    found = re.search(r"^squad\s+87\s+\d+\s+([\d.]+)", smoke.stdout, re.M)
    assert found and float(found[1]) >= 0.8, smoke.stdout


@pytest.mark.bench("deep")
def test_deep_bench_scores_both_variants_on_hotpotqa(smoke):
    """bench_deep.py --modes quick,deep on 3 questions: a row per variant and mode, deep
    within its budgets (3 rounds, 6 provider calls and 6 reads a question)."""
    assert smoke.returncode == 0, smoke.stderr
    assert "hotpotqa: 3 questions of two supporting paragraphs each" in smoke.stdout
    table, _, said = smoke.stdout.partition("deep runs, what they say of themselves")
    rows = {
        (line.split()[1], line.split()[-7]): line.split()
        for line in table.splitlines()
        if line.startswith("brain ")
    }
    assert sorted(rows) == [("+", "deep"), ("+", "quick"), ("only", "deep"), ("only", "quick")]
    # Deep runs scored on what they say of themselves: the stop reason, the confidence.
    scored = [line.split() for line in said.splitlines() if line.startswith("brain ")]
    assert [line[:2] for line in scored] == [["brain", "only"], ["brain", "+"]]
    assert all(0 <= int(line[-4]) <= 3 for line in scored)  # runs that stopped "answered"
    for row in rows.values():
        both, holds = float(row[-6]), float(row[-5])
        assert 0 <= both <= 1 and 0 <= holds <= 1
    # (rounds a question, web calls, pages read): quick is one pass that reads nothing, and
    # only the web variant searches the web.
    spent = {key: (float(r[-4]), int(r[-3]), int(r[-2])) for key, r in rows.items()}
    assert spent[("only", "quick")] == (1.0, 0, 0) and spent[("+", "quick")] == (1.0, 3, 0)
    assert spent[("only", "deep")][1:] == (0, 0)
    rounds, calls, reads = spent[("+", "deep")]
    assert 1 <= rounds <= 3 and 3 <= calls <= 18 and reads <= 18


@pytest.mark.bench("abstain")
def test_abstain_bench_scores_each_kind_of_question(smoke):
    """bench_abstain.py on six questions of each kind: a row per kind, each with the share of
    right answers (answerable questions only), of abstentions and of "enough" verdicts."""
    assert smoke.returncode == 0, smoke.stderr
    rows = {
        m[0]: m[1:]
        for m in re.findall(
            r"^(answerable|unanswerable|other topic)\s+(\d+)\s+(\S+)\s+(\d\.\d\d)\s+(\d\.\d\d)$",
            smoke.stdout,
            re.M,
        )
    }
    assert set(rows) == {"answerable", "unanswerable", "other topic"}
    assert all(n == "6" for n, *_ in rows.values())
    assert rows["unanswerable"][1] == "—" and rows["other topic"][1] == "—"
    assert 0 <= float(rows["answerable"][1]) <= 1
    # Questions about another topic: the SQuAD brain answers none of them.
    assert rows["other topic"][2] == "1.00" and rows["other topic"][3] == "0.00"
