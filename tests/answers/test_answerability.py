"""The answer check (``answer/answerability``): does a sentence answer the question? Each rule
on the smallest sentences that show it, and what the check says when nothing answers."""

from __future__ import annotations

import pytest

from datasette_dbrain_websearch.answer.answerability import (
    NO_CONDITION,
    NO_NAME,
    NO_SPAN,
    NOT_CLOSEST,
    NOT_NEGATED,
    OPPOSITE,
    TURNED,
    Claim,
    answers,
    assess,
    explain,
    read_question,
)


def judged(question: str, sentence: str, title: str = ""):
    return answers(read_question(question), sentence, title=title)


@pytest.mark.parametrize(
    ("question", "kind", "expects"),
    [
        ("Where did she train as a baker?", "where", "place"),
        ("When was the Duchy of Normandy founded?", "when", "time"),
        ("What year did the storm hit Richard's fleet?", "what", "time"),
        ("Who led Richard's troops?", "who", "person"),
        ("How many men did Robert's army have?", "how many", "number"),
        ("Is sourdough older than yeast bread?", "yes/no", "statement"),
        ("sourdough starter hydration", "topic", "topic"),
    ],
)
def test_the_question_says_what_kind_of_span_it_wants(question, kind, expects):
    asked = read_question(question)
    assert (asked.kind, asked.expects) == (kind, expects)


def test_a_sentence_giving_a_new_span_of_the_asked_type_answers():
    found = judged(
        "Where did Ingrid Halvorsen train as a baker?",
        "Ingrid Halvorsen trained for six years at bakeries in Copenhagen and Lyon.",
    )
    assert found.answers and found.span == "Copenhagen and Lyon"


def test_repeating_the_question_answers_nothing():
    found = judged("When was the Duchy of Normandy founded?", "The Duchy of Normandy was founded.")
    assert not found.answers and found.problem == NO_SPAN


def test_a_place_is_any_new_name_where_no_preposition_sets_it():
    # "earl of Hereford", "the river Deabolis": no "in", "at" or "from" before the place.
    found = judged(
        "Where was Ralph earl of?", "Edward set up Ralph as earl of Hereford and the Marches."
    )
    assert found.answers and found.span == "Hereford"


def test_a_name_the_question_gives_must_be_given():
    found = judged(
        "Who led Richard's troops in Cyprus?",
        "In Sicily, Richard's troops were led by Guy de Lusignan.",
    )
    assert (found.answers, found.problem, found.detail) == (False, NO_NAME, "Cyprus")


def test_a_not_the_question_asks_must_be_said():
    asked = "What machines are not equally powerful in principle?"
    found = judged(asked, "All Turing machines are equally powerful in principle.")
    assert (found.answers, found.problem) == (False, NOT_NEGATED)
    said = judged(asked, "Quantum machines are not equally powerful in principle.")
    assert said.answers


@pytest.mark.parametrize(
    "question, sentence",
    [
        ("What is the least critical resource of a machine?", "Time is the critical resource."),
        ("What is the worst case complexity?", "The best case complexity is often used."),
        ("Which class holds the fewest problems?", "The class P holds many problems."),
    ],
)
def test_a_superlative_the_question_asks_must_be_said(question, sentence):
    found = judged(question, sentence)
    assert (found.answers, found.problem) == (False, NO_CONDITION)


def test_a_bound_is_not_the_superlative_asked():
    """ "at least as difficult" bounds something; it does not say what is least."""
    bound = judged(
        "What is the least used type of reduction?",
        "A reduction is at least as difficult as the problem it reduces, and of many types.",
    )
    assert (bound.answers, bound.problem) == (False, NO_CONDITION)
    said = judged(
        "What is the least used type of reduction?",
        "The least used type of reduction is the truth-table reduction.",
    )
    assert said.problem != NO_CONDITION


def test_a_word_swapped_between_the_same_words_is_not_what_is_asked():
    # SQuAD 2.0 writes unanswerable questions by changing one word of the paragraph.
    asked = "What is often seen as a scientific abstraction of tasks?"
    found = judged(asked, "The class P is often seen as a mathematical abstraction of tasks.")
    assert (found.answers, found.problem, found.detail) == (
        False,
        OPPOSITE,
        "mathematical|scientific",
    )
    # Frames of function words alone ("of _ the") prove nothing.
    loose = judged("What was the storm of the year?", "The storm of rain in the year 1191.")
    assert loose.problem != OPPOSITE


@pytest.mark.parametrize(
    ("question", "sentence", "turned"),
    [
        # asks for the doer: the name it gives is done to, and the sentence has it doing
        (
            "Who replaced the Normans as the ruling class?",
            "The invading Normans replaced the Anglo-Saxons as the ruling class of England.",
            "Normans",
        ),
        # asks for the done-to: the name it gives does it, and the sentence has it done to
        (
            "Who did Edgar marry?",
            "King Malcolm III of Scotland married Edgar's sister Margaret in 1070.",
            "Edgar",
        ),
        # a passive question about a passive sentence
        (
            "What was absorbed into the Anglo-Norman language?",
            "The Anglo-Norman language was eventually absorbed into the Anglo-Saxon language.",
            "Anglo-Norman",
        ),
    ],
)
def test_a_sentence_that_says_it_the_other_way_round_does_not_answer(question, sentence, turned):
    found = judged(question, sentence)
    assert (found.answers, found.problem, found.detail) == (False, TURNED, turned)


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        ("Who replaced the Anglo-Saxons?", "The Normans replaced the Anglo-Saxons in England."),
        ("Who did Emma marry?", "Emma married Ethelred, king of the English, in 1002."),
        ("Who betrayed Dyrrachium?", "Dyrrachium was betrayed by the Venetian merchants."),
        (
            "What culture did the Normans bring to England?",
            "Normans brought Romanesque to England.",
        ),
    ],
)
def test_the_same_roles_answer(question, sentence):
    assert judged(question, sentence).answers


STORM = "When did the storm hit Richard's fleet near Crete?"
SAILED = Claim("src:b", "", "Richard's fleet sailed from Crete in 1190.")


def test_a_passing_sentence_far_less_close_than_a_contradicting_one_does_not_answer():
    # The question is about the storm that hit the fleet: the sentence saying so names
    # another island; a year in a sentence about something else does not answer it.
    rhodes = Claim("src:a", "", "A storm hit Richard's fleet near Rhodes in April 1191.")
    found = assess(read_question(STORM), [rhodes, SAILED])
    assert not found.answered
    assert [(f.key, f.problem) for f in found.findings] == [
        ("src:a", NO_NAME),
        ("src:b", NOT_CLOSEST),
    ]


def test_nothing_answering_is_said_in_plain_words_with_the_rows_label():
    asked = read_question("What is the capital of Mongolia?")
    found = assess(asked, [Claim("src:a", "", "FTS5 treats AND as an operator in capitals.")])
    assert not found.answered
    assert explain(found, lambda key: "[2]") == "No sentence mentions “Mongolia”."
    founded = assess(
        read_question("When was the Duchy of Normandy founded?"),
        [Claim("src:a", "", "The Duchy of Normandy was founded by treaty.")],
    )
    assert explain(founded, lambda key: "[3]") == (
        "Nothing says when: the closest sentence, [3], gives no date or time."
    )
    said = assess(
        read_question("Who replaced the Normans?"),
        [Claim("src:a", "", "The Normans replaced the Anglo-Saxons.")],
    )
    assert explain(said, lambda key: "[1]") == (
        "Nothing says who: the closest sentence, [1], says it the other way round, of “Normans”."
    )
