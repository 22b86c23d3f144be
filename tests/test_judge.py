"""The judge's rules, in order, with the numbers that decided them."""

import pytest

from datasette_dbrain_websearch.config import JudgeThresholds
from datasette_dbrain_websearch.judge import combined, judge, web_part

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


def test_the_webs_part_is_its_rows_judged_alone_in_a_few_words():
    thresholds = T
    terms = ("lattice", "qcd")
    assert web_part(terms, [], False, thresholds)["summary"] == "not searched"
    assert web_part(terms, [], True, thresholds)["summary"] == "nothing found"
    every = web_part(terms, [["lattice", "qcd"], ["qcd"]], True, thresholds)
    assert (every["verdict"], every["summary"]) == ("enough_evidence", "2 rows cover every term")
    partial = web_part(terms, [["lattice"]], True, thresholds)
    assert partial["verdict"] == "weak_evidence"
    assert partial["summary"] == "1 row; none mentions qcd" and partial["missing_terms"] == ["qcd"]


def test_the_combined_verdict_is_the_brains_unless_the_web_was_searched():
    thresholds = T
    brain = judge(0, 0, ("lattice", "qcd"), [], thresholds)
    quiet = combined(brain, web_part(("lattice",), [], False, thresholds))
    assert quiet == {"verdict": "no_evidence", "reason": "no_rows", "message": brain.message}
    web = web_part(("lattice", "qcd"), [["lattice", "qcd"]] * 2, True, thresholds)
    both = combined(brain, web)
    assert (both["verdict"], both["reason"]) == ("enough_evidence", "web:enough_rows")
    assert both["message"] == "Your brain: no evidence \u00b7 Web: 2 rows cover every term"
    strong = judge(5, 0, ("lattice",), [["lattice"]] * 5, thresholds)
    weak_web = web_part(("lattice",), [["lattice"]], True, thresholds)
    assert combined(strong, weak_web)["reason"] == "brain:enough_rows"
