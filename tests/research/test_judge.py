"""The judge's rules, in order, with the numbers that decided them."""

import pytest

from datasette_dbrain_websearch.config import JudgeThresholds
from datasette_dbrain_websearch.judge import (
    Answered,
    Evidence,
    Rule,
    assess,
    combined,
    judge,
    term_weights,
    web_part,
)

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


def ev(*rows, cosine=None):
    return [Evidence(frozenset(r), cosine) for r in rows]


DBRAIN_RULE = Rule(T, "dbrain")


def test_the_webs_part_counts_only_the_rows_that_hold_the_words():
    terms = ("lattice", "qcd")
    assert web_part(DBRAIN_RULE, terms, [], False)["summary"] == "not searched"
    assert web_part(DBRAIN_RULE, terms, [], True)["summary"] == "nothing found"
    every = web_part(DBRAIN_RULE, terms, ev(["lattice", "qcd"], ["lattice", "qcd"]), True)
    assert (every["verdict"], every["summary"]) == ("enough_evidence", "2 rows cover every term")
    # Issue 30: one of two rows holds every word; the other holds one of them.
    mixed = web_part(DBRAIN_RULE, terms, ev(["lattice", "qcd"], ["qcd"]), True)
    assert mixed["summary"] == "1 of 2 rows covers every term"
    partial = web_part(DBRAIN_RULE, terms, ev(["lattice"]), True)
    assert partial["verdict"] == "weak_evidence"
    assert partial["summary"] == "1 row; none mentions qcd" and partial["missing_terms"] == ["qcd"]
    nothing = web_part(DBRAIN_RULE, terms, ev([], []), True)
    assert (nothing["verdict"], nothing["reason"]) == ("no_evidence", "no_match")
    assert nothing["summary"] == "2 rows; none mentions lattice, qcd"


def test_rows_that_match_nothing_do_not_make_the_web_enough():
    """Two rows, one holding every word: dbrain's min_evidence of 2 is not met by the other."""
    found = web_part(DBRAIN_RULE, ("lattice", "qcd"), ev(["lattice", "qcd"], []), True)
    assert (found["verdict"], found["reason"]) == ("weak_evidence", "too_few_rows")


def test_the_combined_verdict_is_the_brains_unless_the_web_was_searched():
    brain = judge(0, 0, ("lattice", "qcd"), [], T)
    quiet = combined(brain, web_part(DBRAIN_RULE, ("lattice",), [], False))
    assert quiet == {"verdict": "no_evidence", "reason": "no_rows", "message": brain.message}
    web = web_part(
        DBRAIN_RULE, ("lattice", "qcd"), ev(["lattice", "qcd"], ["lattice", "qcd"]), True
    )
    both = combined(brain, web)
    assert (both["verdict"], both["reason"]) == ("enough_evidence", "web:enough_rows")
    assert both["message"] == "Your brain: no evidence \u00b7 Web: 2 rows cover every term"
    strong = judge(5, 0, ("lattice",), [["lattice"]] * 5, T)
    weak_web = web_part(DBRAIN_RULE, ("lattice",), ev(["lattice"]), True)
    assert combined(strong, weak_web)["reason"] == "brain:enough_rows"


# The calibrated rule: a brain of 1,000 rows, the question's words of these frequencies.
WEIGHTS = term_weights(
    1000, {"lattice": 3, "qcd": 2, "results": 400}, ["lattice", "qcd", "results", "gluon"]
)


def calibrated(
    *rows, cosine=None, exact=0, terms=("lattice", "qcd", "results", "gluon"), answered=None
):
    evidence = [
        r if isinstance(r, Evidence) else Evidence(frozenset(r), cosine, label=str(n))
        for n, r in enumerate(rows, start=1)
    ]
    return assess(
        evidence, exact, terms, WEIGHTS, 1000, T, keywords=len(terms) <= 3, answered=answered
    )


def test_a_word_no_row_holds_weighs_the_most():
    assert WEIGHTS["gluon"] > WEIGHTS["qcd"] > WEIGHTS["lattice"] > WEIGHTS["results"]


def test_holding_the_rare_words_and_reading_close_is_enough():
    v = calibrated(["lattice", "qcd", "results"], cosine=0.6)
    assert (v.verdict, v.reason) == ("enough_evidence", "strong_match")
    assert v.inputs["best_row"]["rank"] == 1 and v.inputs["best_row"]["score"] >= T.min_score
    # Words for people; the numbers stay in the inputs.
    assert v.message == (
        "The closest row, [1], holds “lattice”, “qcd” and “results” but not “gluon”."
    )
    assert v.inputs["best_row"]["cosine"] == 0.6 and "0." not in v.message


HOLDS_NOT_ANSWERS = Answered(
    False, "Nothing says when: the closest sentence, [1], gives no date.", {}
)


def test_holding_the_topic_without_an_answering_sentence_is_weak():
    v = calibrated(["lattice", "qcd", "results"], cosine=0.6, answered=HOLDS_NOT_ANSWERS)
    assert (v.verdict, v.reason) == ("weak_evidence", "not_answered")
    assert v.message == HOLDS_NOT_ANSWERS.says


def test_an_answering_sentence_in_strong_rows_is_enough():
    says = Answered(True, "[1] says “2019”.", {"answered": True})
    v = calibrated(["lattice", "qcd", "results"], cosine=0.6, answered=says)
    assert (v.verdict, v.reason) == ("enough_evidence", "answered")
    assert v.message == "Your brain answers it: [1] says “2019”."
    assert v.inputs["answer_check"] == {"answered": True}
    # An answering sentence does not lift rows that hold little of the question.
    thin = calibrated(["results"], cosine=0.6, answered=says)
    assert (thin.verdict, thin.reason) == ("weak_evidence", "weak_match")


def test_holding_only_the_common_word_is_weak_however_close():
    v = calibrated(["results"], ["results"], cosine=0.6)
    assert (v.verdict, v.reason) == ("weak_evidence", "weak_match")
    assert v.inputs["missing_terms_in_top_rows"] == ["lattice", "qcd", "gluon"]
    assert (
        v.message == "The closest row, [1], holds “results” but not “lattice”, “qcd” and “gluon”."
    )


def test_closeness_moves_the_score():
    far = calibrated(["lattice", "qcd"], cosine=0.1).inputs["best_row"]["score"]
    near = calibrated(["lattice", "qcd"], cosine=0.7).inputs["best_row"]["score"]
    assert near > far


def test_rows_found_by_meaning_alone_never_count():
    meaning = Evidence(frozenset(), 0.9, meaning_only=True)
    v = calibrated(meaning, meaning)
    assert (v.verdict, v.reason) == ("no_evidence", "meaning_only")
    assert v.inputs["meaning_only_rows"] == 2 and v.inputs["rows_found"] == 0
    beside = calibrated(meaning, Evidence(frozenset(["results"]), 0.2))
    assert beside.verdict == "weak_evidence" and beside.inputs["best_row"]["rank"] == 1


def test_a_keyword_question_needs_every_keyword_in_one_row():
    keywords = ("lattice", "qcd")
    v = calibrated(["lattice"], ["qcd"], cosine=0.9, terms=keywords)
    assert (v.verdict, v.reason) == ("weak_evidence", "missing_keyword")
    assert v.message == (
        "No row holds every keyword: the closest row, [2], holds “qcd” but not “lattice”."
    )
    both = calibrated(["lattice"], ["lattice", "qcd"], cosine=0.6, terms=keywords)
    assert both.verdict == "enough_evidence" and both.inputs["best_row"]["rank"] == 2


def test_an_exact_hit_is_enough_and_nothing_is_no_evidence():
    assert calibrated([], exact=1).reason == "exact_match"
    assert calibrated().reason == "no_rows"


def test_the_calibrated_rule_judges_the_web_rows_too():
    rule = Rule(T, "calibrated", WEIGHTS, 1000)
    strong = web_part(
        rule,
        ("lattice", "qcd", "results", "gluon"),
        ev(["lattice", "qcd", "results"], cosine=0.6),
        True,
    )
    assert strong["verdict"] == "enough_evidence"
    weak = web_part(rule, ("lattice", "qcd", "results", "gluon"), ev(["results"], cosine=0.6), True)
    assert weak["verdict"] == "weak_evidence"


@pytest.mark.parametrize(
    ("question", "keywords"),
    [
        ("analog synthesizer calibration", True),
        ("heat pump", True),
        ("When did the church reform begin?", False),
        ("hw to calibrate my synth", False),
        ("muon g-2 anomaly lattice", False),  # four terms: a question in words
    ],
)
def test_a_keyword_list_is_the_question_typed_as_keywords(question, keywords):
    from datasette_dbrain_websearch.query_plan import plan_query
    from datasette_dbrain_websearch.question_terms import is_keyword_list

    assert is_keyword_list(question, plan_query(question).query_terms) is keywords
