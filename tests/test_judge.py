"""The judge's rules, in order, with the numbers that decided them."""

import pytest

from datasette_dbrain_websearch.config import JudgeThresholds
from datasette_dbrain_websearch.judge import judge

T = JudgeThresholds(min_evidence=2, min_term_coverage=0.75, top_k=3)
TERMS = ["espresso", "grinder", "burr"]


def test_no_rows_is_no_evidence():
    v = judge(0, 0, TERMS, [], T)
    assert (v.verdict, v.reason) == ("no_evidence", "no_rows")
    assert v.inputs["rows_found"] == 0


def test_exact_hit_is_enough_even_alone():
    v = judge(1, 1, ["src:abc"], [[]], T)
    assert (v.verdict, v.reason) == ("enough_evidence", "exact_match")


def test_too_few_rows_is_weak():
    v = judge(1, 0, TERMS, [TERMS], T)
    assert (v.verdict, v.reason) == ("weak_evidence", "too_few_rows")


def test_missing_terms_is_weak_and_lists_them():
    v = judge(5, 0, TERMS, [["espresso"], ["espresso", "grinder"], ["grinder"]], T)
    assert (v.verdict, v.reason) == ("weak_evidence", "missing_terms")
    assert v.inputs["top_row_term_coverage"] == pytest.approx(0.667)
    assert v.inputs["missing_terms_in_top_rows"] == ["burr"]
    assert "burr" in v.message


def test_only_top_k_rows_count():
    rows = [["espresso"], ["grinder"], ["burr"], TERMS]
    assert judge(4, 0, TERMS, rows, T).verdict == "weak_evidence"
    wider = JudgeThresholds(min_evidence=2, min_term_coverage=0.75, top_k=4)
    assert judge(4, 0, TERMS, rows, wider).verdict == "enough_evidence"


def test_enough_rows_covering_terms_is_enough():
    v = judge(4, 0, TERMS, [TERMS, ["espresso", "grinder"]], T)
    assert (v.verdict, v.reason) == ("enough_evidence", "enough_rows")


def test_thresholds_change_the_verdict():
    strict = JudgeThresholds(min_evidence=10, min_term_coverage=1.0, top_k=3)
    assert judge(4, 0, TERMS, [TERMS] * 4, strict).reason == "too_few_rows"
