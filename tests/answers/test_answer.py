"""The answer's pure parts: the citation verifier, the extractive synthesizer, gaps, the web's
contribution and the model prompt."""

from __future__ import annotations

from datasette_dbrain_websearch.answer.extractive import Passage, extract
from datasette_dbrain_websearch.answer.gaps import find_gaps, web_contribution
from datasette_dbrain_websearch.answer.model import Labelled, allot, build_prompt, split_reply
from datasette_dbrain_websearch.answer.stage import choose_rows
from datasette_dbrain_websearch.answer.text import split_sentences
from datasette_dbrain_websearch.answer.verify import RunKeys, verify
from datasette_dbrain_websearch.judge import RunVerdict, Verdict
from datasette_dbrain_websearch.pack import WebSearch

from ..helpers import typed_brain_row, typed_web_row

LOCAL = "src:0123456789ab"
NOTE = "apple-note:espresso-1"
WEB = "ext:brave:a1b2c3d4e5f6"
KEYS = RunKeys(
    brain=(LOCAL, NOTE),
    web=(WEB,),
    passages={
        LOCAL: "Heat pumps\nCold climate heat pumps keep working at minus 25 degrees.",
        NOTE: "Espresso notes\nThe grinder matters more than the machine.",
        WEB: "Rebates\nThe 2026 federal rebate covers 30 percent of a heat pump install.",
    },
)


def check(draft: str, conflicts: list[str] | None = None):
    return verify(draft, KEYS, 0.4, conflicts)


# ---------------------------------------------------------------------------------------------
# The verifier


def test_invented_key_is_removed_from_the_text_and_reported():
    out = check(f"Cold climate heat pumps keep working [src:ffffffffffff] [{LOCAL}].")
    assert out.rejected == [{"key": "src:ffffffffffff", "reason": "not_in_run", "sentence": 1}]
    assert "ffffffffffff" not in out.text
    assert out.sentences[0]["citations"] == [LOCAL]
    assert out.sentences[0]["supported"] is True


def test_a_sentence_whose_only_citation_is_invented_is_unsupported():
    out = check("Cold climate heat pumps keep working [src:ffffffffffff].")
    assert out.sentences[0]["citations"] == []
    assert out.sentences[0]["supported"] is False
    assert out.sentences[0]["support"]["reason"] == "no_citation"
    assert out.brain == [] and out.web == []


def test_local_and_external_citations_are_split():
    out = check(
        f"Cold climate heat pumps keep working at minus 25 degrees [{LOCAL}]. "
        f"A federal rebate covers 30 percent of the install [{WEB}]. "
        f"The grinder matters more than the machine [{NOTE}]."
    )
    assert out.brain == [LOCAL, NOTE]
    assert out.web == [WEB]
    assert [s["citations"] for s in out.sentences] == [[LOCAL], [WEB], [NOTE]]
    assert all(s["supported"] for s in out.sentences)


def test_a_sentence_without_citation_is_unsupported():
    out = check(f"Heat pumps work in the cold [{LOCAL}]. The moon is made of cheese.")
    second = out.sentences[1]
    assert second["text"] == "The moon is made of cheese."
    assert (second["supported"], second["support"]["reason"]) == (False, "no_citation")


def test_a_sentence_its_citation_barely_covers_is_unsupported_with_the_overlap():
    out = check(f"Penguins migrate across volcanic glaciers every winter [{LOCAL}].")
    sentence = out.sentences[0]
    assert sentence["supported"] is False
    assert sentence["support"]["reason"] == "low_overlap"
    assert sentence["support"]["overlap"] < 0.4
    assert "penguin" in sentence["support"]["unmatched_words"]
    assert sentence["citations"] == [LOCAL]  # the citation is valid; the claim is not backed


def test_support_counts_words_not_attribution():
    """ "According to your notes" is framing, not a claim the row has to hold."""
    out = check(f"According to your notes, the grinder matters more than the machine [{NOTE}].")
    assert out.sentences[0]["support"]["overlap"] == 1.0


def test_citations_after_the_full_stop_belong_to_the_sentence_before():
    out = check(f"Heat pumps keep working in the cold. [{LOCAL}] The grinder matters. [{NOTE}]")
    assert [s["citations"] for s in out.sentences] == [[LOCAL], [NOTE]]
    assert [s["text"] for s in out.sentences] == [
        "Heat pumps keep working in the cold.",
        "The grinder matters.",
    ]


def test_grouped_and_numbered_markers():
    out = check(f"Heat pumps work in the cold and the grinder matters [{LOCAL}, {NOTE}; 3].")
    assert out.sentences[0]["citations"] == [LOCAL, NOTE]
    assert out.rejected == [{"key": "3", "reason": "not_a_key", "sentence": 1}]


def test_brackets_that_are_not_citations_stay_text():
    out = check(f"The grinder [sic] matters, see [the docs](https://example.com) [{NOTE}].")
    assert (
        out.sentences[0]["text"]
        == "The grinder [sic] matters, see [the docs](https://example.com)."
    )
    assert out.rejected == []


def test_the_answer_text_carries_only_valid_keys():
    out = check(f"Heat pumps keep working [{LOCAL}] [x:999]. Rebates exist [{WEB}].")
    assert out.text == f"Heat pumps keep working. [{LOCAL}] Rebates exist. [{WEB}]"


def test_conflicts_need_two_valid_keys():
    out = check(
        f"Heat pumps keep working [{LOCAL}].",
        [
            f"The brain says minus 25, the web says nothing of it [{LOCAL}] [{WEB}]",
            f"One source only [{LOCAL}]",
            f"One real and one invented [{LOCAL}] [src:ffffffffffff]",
        ],
    )
    assert out.conflicts == [
        {"text": "The brain says minus 25, the web says nothing of it", "citations": [LOCAL, WEB]}
    ]
    assert [d["text"] for d in out.dropped_conflicts] == [
        "One source only",
        "One real and one invented",
    ]
    assert {"key": "src:ffffffffffff", "reason": "not_in_run", "conflict": True} in out.rejected


def test_sentences_split_on_abbreviations_and_lists_correctly():
    text = (
        "FTS5 ranks rows, e.g. with bm25. The U.S. team agreed. Use CREATE TABLE ... USING it.\n"
        "- bm25 is negative. Lower is better.\n## Notes"
    )
    assert split_sentences(text) == [
        "FTS5 ranks rows, e.g. with bm25.",
        "The U.S. team agreed.",
        "Use CREATE TABLE ... USING it.",
        "bm25 is negative.",
        "Lower is better.",
    ]


# ---------------------------------------------------------------------------------------------
# The extractive synthesizer

PASSAGES = [
    Passage(
        LOCAL,
        "local",
        "Cold climate heat pumps keep working at minus 25 degrees. "
        "What is a heat pump? "
        "Good write-up: https://example.com/cold-climate-heat-pump-guide "
        "Cold climate heat pumps keep working at minus 25 degrees outside. "
        "Defrost cycles cost a little energy in cold climate installs.",
        "Heat pumps in the cold",
    ),
    Passage(
        WEB, "external", "A cold climate heat pump rebate covers 30 percent of the cost.", "Rebate"
    ),
    Passage(
        NOTE, "local", "Heat pump brands differ in cold climate warranties and service.", "Notes"
    ),
]
TERMS = ("cold", "climate", "heat", "pump")


def test_extractive_answer_is_deterministic_and_every_sentence_cites_its_row():
    first = extract(TERMS, PASSAGES, 6)
    assert first == extract(TERMS, PASSAGES, 6)
    out = verify(first, RunKeys((LOCAL, NOTE), (WEB,), {p.key: p.text for p in PASSAGES}), 0.4)
    assert out.sentences and all(s["supported"] for s in out.sentences)
    by_key = {p.key: p.text for p in PASSAGES}
    for sentence in out.sentences:
        assert len(sentence["citations"]) == 1
        assert sentence["text"] in by_key[sentence["citations"][0]]
    assert out.rejected == []


def test_extractive_answer_puts_brain_rows_first_and_skips_near_duplicates_and_non_claims():
    lines = extract(TERMS, PASSAGES, 6).splitlines()
    keys = [line.rsplit("[", 1)[1].rstrip("]") for line in lines]
    assert keys.index(WEB) == len(keys) - 1  # the web row's sentence comes after the brain's
    text = "\n".join(lines)
    assert "What is a heat pump?" not in text  # a question is not a claim
    assert "Good write-up" not in text  # a link is not a claim
    assert text.count("keep working at minus 25 degrees") == 1  # near-duplicate skipped
    # Brain sentences first, each side best first. Every candidate holds "cold climate", so it
    # weighs little; the defrost sentence lacks "heat pump" and ranks last of the brain's (its
    # row's title, "Heat pumps in the cold", keeps it on topic).
    assert lines == [
        f"Cold climate heat pumps keep working at minus 25 degrees. [{LOCAL}]",
        f"Heat pump brands differ in cold climate warranties and service. [{NOTE}]",
        f"Defrost cycles cost a little energy in cold climate installs. [{LOCAL}]",
        f"A cold climate heat pump rebate covers 30 percent of the cost. [{WEB}]",
    ]


def test_extractive_answer_respects_max_sentences_and_needs_question_words():
    assert len(extract(TERMS, PASSAGES, 2).splitlines()) == 2
    assert extract(("quantum", "chromodynamics"), PASSAGES, 6) == ""


def test_extractive_answer_skips_a_sentence_that_repeats_the_title():
    passages = [
        Passage(
            LOCAL,
            "local",
            "Heat pumps in the cold climate. Heat pumps work in cold climate homes too.",
            "Heat pumps in the cold climate",
        )
    ]
    assert extract(TERMS, passages, 6) == f"Heat pumps work in cold climate homes too. [{LOCAL}]"


def test_web_rows_keep_a_third_of_the_answer_evidence():
    brain = [typed_brain_row(f"l{i}") for i in range(20)]
    web = [typed_web_row(f"w{i}") for i in range(5)]
    chosen = [r.source_key for r in choose_rows(brain + web, 12)]
    assert chosen == [f"l{i}" for i in range(8)] + [f"w{i}" for i in range(4)]
    assert [r.source_key for r in choose_rows(brain[:3] + web, 12)] == ["l0", "l1", "l2"] + [
        f"w{i}" for i in range(5)
    ]


# ---------------------------------------------------------------------------------------------
# Gaps and what the web added (hand-checked)


def searched(ran=False, skipped_reason="", providers=(), current_state=False) -> WebSearch:
    return WebSearch(
        mode="always" if ran else "never",
        current_state_question=current_state,
        sites=[],
        not_sites=[],
        skipped_reason=skipped_reason,
        ran=ran,
        providers=list(providers),
    )


def verdicts(before: str, after: str) -> RunVerdict:
    return RunVerdict(Verdict(before, "", "", {}), {}, {"verdict": after})


def test_gaps_name_uncovered_terms_the_brains_date_and_a_failed_web_lane():
    brain = [
        typed_brain_row("l1", ["heat", "pump"], published_at="2025-11-02T08:00:00Z"),
        typed_brain_row("l2", ["heat"], saved_at="2026-03-15T10:00:00Z"),
    ]
    web = searched(ran=True, current_state=True)
    gaps = find_gaps(
        ("latest", "heat", "pump", "rebate"), brain, [], web, "weak_evidence", ["l1"], []
    )
    assert [g["code"] for g in gaps] == [
        "terms_not_covered",
        "local_evidence_dated",
        "web_unavailable",
    ]
    assert gaps[0]["terms"] == ["latest", "rebate"]
    assert gaps[1]["message"] == "Your brain's newest evidence on this is from 2026-03-15."
    assert gaps[2]["reason"] == "failed"


def test_web_skipped_is_a_gap_only_when_the_brain_is_not_enough():
    web = searched(skipped_reason="mode_never")
    brain = [typed_brain_row("l1", ["heat"])]
    assert find_gaps(("heat",), brain, [], web, "enough_evidence", ["l1"], []) == []
    weak = find_gaps(("heat",), brain, [], web, "weak_evidence", ["l1"], [])
    assert [(g["code"], g["reason"]) for g in weak] == [("web_unavailable", "mode_never")]
    denied = searched(skipped_reason="not_permitted")
    assert find_gaps(("heat",), brain, [], denied, "enough_evidence", ["l1"], [])[0]["reason"] == (
        "not_permitted"
    )
    enough = searched(skipped_reason="local_evidence_enough")
    assert find_gaps(("heat",), brain, [], enough, "enough_evidence", ["l1"], []) == []


def test_a_row_the_question_names_exactly_covers_its_terms():
    exact = typed_brain_row("src:1", exact=True)
    terms = ("https://sqlite.org/fts5.html",)
    assert find_gaps(terms, [exact], [], searched(), "enough_evidence", ["src:1"], []) == []


def test_extractive_answer_of_an_exact_lookup_takes_the_rows_leading_claims():
    named = Passage(
        LOCAL,
        "local",
        "FTS5 is a virtual table module. It ranks rows with the bm25 function.",
        "",
        True,
    )
    assert extract(("https://sqlite.org/fts5.html",), [named], 6).splitlines() == [
        f"FTS5 is a virtual table module. [{LOCAL}]",
        f"It ranks rows with the bm25 function. [{LOCAL}]",
    ]


def test_an_answer_resting_on_web_rows_alone_says_so():
    web_rows = [typed_web_row("w1", ["lattice"])]
    web = searched(ran=True, providers=["brave"])
    gaps = find_gaps(("lattice",), [], web_rows, web, "no_evidence", [], ["w1"])
    assert [g["code"] for g in gaps] == ["external_only"]


def test_web_contribution_compares_local_only_with_merged():
    ranked = [
        typed_brain_row("l1", ["heat"]),
        typed_web_row("w1", ["heat", "rebate"]),
        typed_web_row("w2", ["rebate"]),
    ]
    sentences = [{"citations": ["l1"]}, {"citations": ["w1", "l1"]}, {"citations": []}]
    out = web_contribution(
        ("heat", "rebate"),
        ranked,
        verdicts("weak_evidence", "enough_evidence"),
        searched(ran=True),
        sentences,
        ["w1", "w2"],
    )
    assert out == {
        "web_searched": True,
        "verdict_before": "weak_evidence",
        "verdict_after": "enough_evidence",
        "terms_newly_covered": ["rebate"],
        "web_rows_kept": 2,
        "local_rows_also_found_on_web": 0,
        "sentences_citing_web": [2],
    }


# ---------------------------------------------------------------------------------------------
# The model prompt


def test_prompt_labels_every_row_with_its_key_and_origin_within_the_budget():
    passages = [
        Labelled(LOCAL, "local", "a" * 5000, "Heat", label="FROM THE USER'S BRAIN; source"),
        Labelled(
            WEB, "external", "b" * 100, "Rebate", label="OUTSIDE THE USER'S BRAIN; web result"
        ),
    ]
    system, prompt, budget = build_prompt("heat pumps?", passages, 1100, 4)
    assert f"[{LOCAL}] FROM THE USER'S BRAIN" in prompt
    assert f"[{WEB}] OUTSIDE THE USER'S BRAIN" in prompt
    assert prompt.index("Evidence FROM THE USER'S BRAIN") < prompt.index("Evidence OUTSIDE")
    assert "at most 4 short sentences" in system and "CONFLICTS:" in system
    assert budget.used_chars == 1100 and budget.trimmed == (LOCAL,) and budget.dropped == ()
    assert "a" * 1001 not in prompt and "b" * 100 in prompt


def test_budget_sharing_gives_short_texts_all_they_need():
    assert allot([100, 5000, 5000], 3100) == [100, 1500, 1500]
    assert allot([10, 20], 1000) == [10, 20]


def test_model_reply_is_split_into_answer_and_conflicts():
    answer, conflicts = split_reply("One [a].\nTwo [b].\n\n**CONFLICTS:**\n- X vs Y [a] [b]\n")
    assert answer == "One [a].\nTwo [b]."
    assert conflicts == ["X vs Y [a] [b]"]
    assert split_reply("One [a].\nCONFLICTS: none") == ("One [a].", [])


def test_extractive_answer_keeps_to_the_questions_rare_word():
    """ "how often should I backflush my espresso machine": among rows about espresso machines
    the word that sets the question apart weighs most, so the sentence that says "backflush"
    answers, first, and sentences with only "espresso machine" score too far below it."""
    machines = [
        "Tablet app for the Decent espresso machine with shot graphs.",
        "A mod adding pressure profiling to a classic espresso machine.",
        "This espresso machine heats up in under a minute.",
        "A dual boiler espresso machine steams while it brews.",
    ]
    passages = [
        Passage(f"g:{n}", "local", text, "", rank=n) for n, text in enumerate(machines, start=2)
    ]
    passages.append(
        Passage(
            "x:1",
            "local",
            "Backflush the group head with detergent weekly and replace the gasket when shots "
            "start to leak. Good write-up: https://example.com/burrs?utm_source=twitter",
            "Backflush the group head",
            rank=1,
        )
    )
    lines = extract(("backflush", "espresso", "machine"), passages, 6).splitlines()
    assert lines == [
        "Backflush the group head with detergent weekly and replace the gasket when shots "
        "start to leak. [x:1]"
    ]


def test_extractive_answer_skips_headings_capture_metadata_and_link_intros():
    safari = Passage(
        "safari-tab:1",
        "local",
        "Safari tab captured from iCloud Tabs.\n\nDevice: Demo MacBook\n"
        "Title: Heat pump sizing guide\nURL: https://example.com/sizing",
        "Heat pump sizing guide",
    )
    note = Passage(
        "n:2",
        "local",
        "Heat pump sizing\nGood write-up: https://example.com/a Size a heat pump from a "
        "room-by-room heat load calculation.",
        "Notes",
        rank=1,
    )
    assert extract(("heat", "pump", "sizing"), [safari, note], 6).splitlines() == [
        "Size a heat pump from a room-by-room heat load calculation. [n:2]"
    ]


def test_extractive_answer_trims_a_long_sentence_to_the_clauses_that_answer():
    long = (
        "The manual covers installation, wiring diagrams, warranty registration, error codes "
        "and the remote control pairing steps in great detail across many pages, "
        "while the appendix says a cold climate heat pump keeps its full capacity at minus 15 "
        "degrees, and the index lists every part number for the outdoor unit and its brackets."
    )
    line = extract(("cold", "climate"), [Passage("src:m", "local", long, "Manual")], 6)
    sentence = line.rsplit(" [", 1)[0]
    assert sentence.startswith("\u2026 ") and sentence.endswith(" \u2026")
    assert "cold climate heat pump keeps its full capacity at minus 15 degrees" in sentence
    assert "wiring diagrams" not in sentence and len(sentence) < len(long)


def test_a_sentence_several_rows_repeat_is_picked_once_from_the_best_row():
    same = "Backflush the group head with detergent weekly to keep shots clean."
    passages = [
        Passage("x:2", "local", same, "", rank=1),
        Passage("x:1", "local", same, "", rank=0),
    ]
    assert extract(("backflush",), passages, 6) == f"{same} [x:1]"


def test_items_of_a_rows_list_stay_a_list_in_the_answer():
    """Two picked sentences from one row's list enumerate: the draft keeps their bullets and
    the verifier marks them as items; a lone item reads as a plain sentence."""
    note = Passage(
        "n:3",
        "local",
        "Espresso dialing checklist\n"
        "- Grind finer when the espresso shot runs fast and sour.\n"
        "- Grind coarser when the espresso shot runs slow and bitter.\n"
        "- Keep the dose fixed while you change the grind.",
        "Checklist",
    )
    draft = extract(("espresso", "shot"), [note], 6)
    assert draft.splitlines() == [
        "- Grind finer when the espresso shot runs fast and sour. [n:3]",
        "- Grind coarser when the espresso shot runs slow and bitter. [n:3]",
    ]
    out = verify(draft, RunKeys(("n:3",), (), {"n:3": note.text}), 0.4)
    assert [(s["text"], s["item"]) for s in out.sentences] == [
        ("Grind finer when the espresso shot runs fast and sour.", True),
        ("Grind coarser when the espresso shot runs slow and bitter.", True),
    ]
    single = extract(("dose",), [note], 6)
    assert single == "Keep the dose fixed while you change the grind. [n:3]"


def test_the_answer_leads_with_the_sentence_that_answers_whatever_its_origin():
    """Issue 33: for "muon g-2 anomaly lattice" the muon sentence came fourth, after general
    lattice sentences and the person's own note, because every brain row ranked ahead of the
    web's. A row weighs by its place among its own origin's rows, and the best pick leads."""
    note = Passage(
        "apple-note:lattice",
        "local",
        "Lattice QCD puts quarks and gluons on a grid of points in space and time. A finer "
        "lattice spacing costs far more computing time.",
        "Lattice QCD",
        rank=0,
    )
    source = Passage(
        "src:lattice",
        "local",
        "The lattice spacing is taken to zero at the end of every lattice calculation.",
        "Why lattice gauge theory",
        rank=1,
    )
    muon = Passage(
        "ext:brave:muon",
        "external",
        "We present a lattice calculation of the hadronic contribution to the muon g-2 "
        "anomaly, with six lattice spacings.",
        "Hadronic vacuum polarization",
        rank=2,
    )
    proton = Passage(
        "ext:brave:proton",
        "external",
        "A record lattice calculation splits the proton's mass between quarks and gluons.",
        "Proton mass",
        rank=3,
    )
    lines = extract(("muon", "g-2", "anomaly", "lattice"), [note, source, muon, proton], 5)
    first, *rest = lines.splitlines()
    assert first.endswith("[ext:brave:muon]"), lines
    # The rest keep the brain's first, then the web's.
    origins = ["ext:" in line for line in rest]
    assert origins == sorted(origins)


def test_the_part_that_holds_the_answers_point_comes_first():
    """The page and the exports show the brain's and the web's sentences apart; the part that
    holds the first sentence (the answer's point) leads, whichever it is."""
    from datasette_dbrain_websearch.display import answer_parts

    brain = {"text": "Lattice spacing costs time.", "citations": [LOCAL]}
    web = {"text": "The muon g-2 anomaly shrinks.", "citations": [WEB]}
    citations = {"local": [LOCAL], "external": [WEB]}
    led_by_web = {"sentences": [web, brain], "citations": citations}
    assert answer_parts(led_by_web) == [("web", [web]), ("brain", [brain])]
    led_by_brain = {"sentences": [brain, web], "citations": citations}
    assert answer_parts(led_by_brain) == [("brain", [brain]), ("web", [web])]
    assert answer_parts({"sentences": [web], "citations": citations}) == [("web", [web])]


def test_the_answering_rows_next_answering_sentence_follows_it_and_no_other_rows():
    """After the first pick, another sentence of its row that answers the question is kept
    however few of the question's words it repeats (it often holds the rest of the answer);
    another row's answering sentence gets no such turn (on SQuAD those were mostly about
    something else)."""
    from datasette_dbrain_websearch.answer.extractive import Candidate, pick

    def said(key: str, n: int, text: str) -> Candidate:
        return Candidate(0, n, key, True, text, {"x": 1}, 8, frozenset(text.split()))

    lead = said("src:a", 0, "rollo led the vikings who settled normandy")
    rest = said("src:a", 1, "he swore fealty to charles iii in 911")
    other = said("src:b", 0, "the normans spoke a dialect of french")
    elsewhere = said("src:b", 1, "william crossed the channel in 1066")
    pool = [lead, rest, other, elsewhere]
    answering = frozenset({lead.sentence, rest.sentence, elsewhere.sentence})
    chosen = pick(pool, [1.0, 0.1, 0.5, 0.1], 5, leads=answering)
    assert chosen == [lead, other, rest]
    assert pick(pool, [1.0, 0.1, 0.5, 0.1], 5) == [lead, other]  # nothing answers: cut as ever
