"""Relevance feedback: Rocchio re-ranking and query refinement over hand-built packs."""

from __future__ import annotations

import copy

import pytest

from datasette_dbrain_websearch.expansion import MAX_ADDED_TERMS, filler_kind, refine_query
from datasette_dbrain_websearch.feedback import (
    FEEDBACK_VALUES,
    RocchioWeights,
    apply_feedback,
    validate_marks,
)

LOCAL, WEB = "dbrain_corpus", "outside_dbrain_corpus"


def row(key: str, title: str, excerpt: str = "", *, web: bool = False, exact: bool = False):
    lanes = [{"name": "exact_lookup", "status": "used"}] if exact else []
    lanes.append({"name": "external_search" if web else "lexical", "status": "used"})
    url = f"https://example.com/{key}"
    return {
        "source_key": key,
        "kind": "external" if web else "source",
        "origin": WEB if web else LOCAL,
        "title": title,
        "url": url + "?utm_source=x" if web else url,
        **({"canonical_url": url, "providers": ["brave"]} if web else {}),
        "excerpt": excerpt,
        "retrieval": {
            "score": 0.01,
            "lanes": lanes,
            "signals": [{"name": "bm25_rank", "detail": "…", "weight": 0.01}],
            "matched_terms": [],
            "missing_terms": [],
        },
    }


def make_pack(question: str, terms: list[str], local: list, web: list, **plan) -> dict:
    ranking = [
        {"source_key": r["source_key"], "origin": r["origin"], "list": name, "index": i}
        for name, rows in (("evidence", local), ("external_evidence", web))
        for i, r in enumerate(rows)
    ]
    return {
        "question": question,
        "query_plan": {"query_terms": terms, "syntax": "simple", **plan},
        "evidence": local,
        "external_evidence": web,
        "ranking": ranking,
    }


def rust_pack() -> dict:
    """Local rows first, then web rows, as the pack's reading order has them."""
    return make_pack(
        "rust async",
        ["rust", "async"],
        [
            row("L0", "Rust async book", "async await in rust with futures"),
            row("L1", "Rust async runtimes compared", "tokio and smol schedulers for async rust"),
            row("L2", "Async rust ergonomics", "pinning and async traits in rust"),
            row("L3", "Rust game engines", "bevy ecs for rust games"),
        ],
        [
            row(
                "W0",
                "Tokio scheduler internals",
                "how the tokio scheduler steals work for async rust tasks",
                web=True,
            ),
            row(
                "W1",
                "Async rust on embedded",
                "embassy runs async rust on microcontrollers",
                web=True,
            ),
        ],
    )


def order(pack: dict) -> list[str]:
    return [entry["source_key"] for entry in pack["ranking"]]


def marks(**values: str) -> list[dict[str, str]]:
    return [{"key": key, "value": value} for key, value in values.items()]


def move(pack: dict, key: str) -> dict:
    return next(m for m in pack["feedback"]["moves"] if m["source_key"] == key)


def feedback_signals(pack: dict, key: str) -> list[dict]:
    rows = pack["evidence"] + pack["external_evidence"]
    found = next(r for r in rows if r["source_key"] == key)
    return [s for s in found["retrieval"]["signals"] if s["name"] == "feedback"]


BASE = ["L0", "L1", "L2", "L3", "W0", "W1"]


def test_no_marks_and_unsure_marks_keep_the_order_exactly():
    pack = rust_pack()
    assert order(apply_feedback(pack, [])) == BASE
    assert apply_feedback(pack, [])["feedback"]["moves"] == []
    unsure = apply_feedback(pack, marks(W0="unsure", L0="unsure"))
    assert unsure["ranking"] == pack["ranking"]
    assert {m["source_key"]: m["rank_after"] for m in unsure["feedback"]["moves"]} == {
        "L0": 1,
        "W0": 5,
    }
    assert feedback_signals(unsure, "W0")[0]["detail"].startswith("marked unsure (no effect)")
    assert feedback_signals(unsure, "W0")[0]["weight"] == 0.0


def test_relevant_moves_the_row_and_similar_rows_up():
    out = apply_feedback(rust_pack(), marks(W0="relevant"))
    assert order(out)[0] == "W0"
    assert (move(out, "W0")["rank_before"], move(out, "W0")["rank_after"]) == (5, 1)
    # L1 shares "tokio" and "schedulers" with W0: it overtakes L0, which shares neither.
    assert order(out).index("L1") < order(out).index("L0")
    signal = feedback_signals(out, "W0")[0]
    assert signal["detail"] == "marked relevant; moved up 4 (similarity 0.22 -> 0.70)"
    assert signal["weight"] == pytest.approx(0.703364 - 0.216113, abs=1e-6)


def test_more_moves_up_but_weighs_half_a_relevant():
    more = apply_feedback(rust_pack(), marks(W0="more"))
    relevant = apply_feedback(rust_pack(), marks(W0="relevant"))
    assert move(more, "W0")["rank_after"] < move(more, "W0")["rank_before"]
    assert order(more)[0] == "L1"
    assert move(more, "W0")["similarity_after"] < move(relevant, "W0")["similarity_after"]


def test_less_moves_the_row_down_by_similarity():
    out = apply_feedback(rust_pack(), marks(L0="less"))
    assert order(out)[:3] == ["L1", "L2", "L0"]
    assert move(out, "L0")["similarity_after"] < move(out, "L0")["similarity_before"]
    assert feedback_signals(out, "L0")[0]["detail"].startswith("marked less; moved down 2")


def test_irrelevant_drops_the_row_below_every_unmarked_row():
    """Issue 19: a 👎 row stays row 1 no more; it goes below every row not marked 👎, however
    similar it is to the question."""
    out = apply_feedback(rust_pack(), marks(L0="irrelevant"))
    assert order(out)[-1] == "L0" and sorted(order(out)) == sorted(BASE)
    assert order(out)[:-1] == [k for k in order(apply_feedback(rust_pack(), [])) if k != "L0"]
    places = len(BASE) - 1
    detail = feedback_signals(out, "L0")[0]["detail"]
    assert detail.startswith(f"marked irrelevant; moved down {places}")


def test_irrelevant_pushes_harder_than_less():
    less = move(apply_feedback(rust_pack(), marks(L0="less")), "L0")
    irrelevant = move(apply_feedback(rust_pack(), marks(L0="irrelevant")), "L0")
    assert irrelevant["similarity_after"] < less["similarity_after"]


def test_zero_gamma_makes_negative_marks_inert_and_zero_beta_positive_ones():
    """Except the drop of an irrelevant row, which is no weight but the person's word."""
    pack = rust_pack()
    negative, positive = marks(L0="less", L1="less"), marks(W0="relevant", W1="more")
    assert order(apply_feedback(pack, negative)) != BASE
    assert order(apply_feedback(pack, positive)) != BASE
    assert order(apply_feedback(pack, negative, RocchioWeights(gamma=0))) == BASE
    dropped = order(apply_feedback(pack, marks(L0="irrelevant"), RocchioWeights(gamma=0)))
    assert dropped == [k for k in BASE if k != "L0"] + ["L0"]
    assert order(apply_feedback(pack, positive, RocchioWeights(beta=0))) == BASE
    weights = apply_feedback(pack, positive, RocchioWeights(beta=0))["feedback"]["weights"]
    assert weights == {"alpha": 1.0, "beta": 0, "gamma": 0.15}


def test_hand_checked_tf_idf_and_cosines():
    # Four rows, query "apple". N = 4; df: apple 2, banana 2, cherry 2, durian 1.
    # idf = ln((1 + N) / (1 + df)) + 1: a = ln(5/3) + 1 = 1.510826, b = ln(5/2) + 1 = 1.916291.
    # d1 = apple banana          -> (apple a, banana a) / (a*sqrt 2) = 0.707107 each
    # d2 = apple cherry          -> apple 0.707107, cherry 0.707107
    # d3 = cherry cherry durian  -> (cherry 2a, durian b) / sqrt(4a^2 + b^2) = sqrt(12.802546)
    #                               = 3.578065 -> cherry 0.844493, durian 0.535566
    # d4 = banana                -> banana 1
    # q = apple (unit). Before: d1 0.707107, d2 0.707107, d3 0, d4 0.
    # d3 relevant, d4 irrelevant: q' = apple + 0.75 d3 - 0.15 banana; the three parts are
    # orthogonal, so |q'| = sqrt(1 + 0.5625 + 0.0225) = sqrt(1.585) = 1.258968.
    # After: d1 = 0.707107 * (1 - 0.15) / 1.258968 = 0.477408
    #        d2 = 0.707107 * (1 + 0.75 * 0.844493) / 1.258968 = 0.917392
    #        d3 = 0.75 / 1.258968 = 0.595726;  d4 = -0.15 / 1.258968 = -0.119145
    pack = make_pack(
        "apple",
        ["apple"],
        [
            row("d1", "apple banana"),
            row("d2", "apple", "cherry"),
            row("d3", "cherry cherry durian"),
            row("d4", "banana"),
        ],
        [],
    )
    out = apply_feedback(pack, marks(d3="relevant", d4="irrelevant"))
    expected = {
        "d1": (0.707107, 0.477408, 1, 3),
        "d2": (0.707107, 0.917392, 2, 1),
        "d3": (0.0, 0.595726, 3, 2),
        "d4": (0.0, -0.119145, 4, 4),
    }
    for key, (before, after, rank_before, rank_after) in expected.items():
        got = move(out, key)
        assert got["similarity_before"] == pytest.approx(before, abs=1e-6)
        assert got["similarity_after"] == pytest.approx(after, abs=1e-6)
        assert (got["rank_before"], got["rank_after"]) == (rank_before, rank_after)
    assert order(out) == ["d2", "d3", "d1", "d4"]
    refined = refine_query(pack, marks(d3="relevant"))
    assert refined["added_terms"] == ["cherry", "durian"]
    weights = {c["term"]: c["positive_weight"] for c in refined["candidates"]}
    assert weights == pytest.approx({"cherry": 0.844493, "durian": 0.535566}, abs=1e-6)


def test_exact_hits_stay_first_whatever_the_marks():
    pack = rust_pack()
    pack["evidence"][3] = row("L3", "Rust game engines", "bevy ecs for rust games", exact=True)
    pack["ranking"].insert(0, pack["ranking"].pop(3))
    out = apply_feedback(pack, marks(L3="irrelevant", W0="relevant", W1="relevant"))
    assert order(out)[0] == "L3"
    assert feedback_signals(out, "L3")[0]["detail"].startswith(
        "marked irrelevant; exact hit, kept ahead of the rest"
    )


def test_rows_keep_their_list_origin_and_fields():
    pack = rust_pack()
    out = apply_feedback(pack, marks(W0="relevant", L0="irrelevant"))
    assert sorted(map(str, out["ranking"])) == sorted(map(str, pack["ranking"]))
    for entry in out["ranking"]:
        target = out[entry["list"]][entry["index"]]
        assert (target["source_key"], target["origin"]) == (entry["source_key"], entry["origin"])
    for name in ("evidence", "external_evidence"):
        for old, new in zip(pack[name], out[name], strict=True):
            kept = len(old["retrieval"]["signals"])
            assert all(s["name"] == "feedback" for s in new["retrieval"]["signals"][kept:])
            new["retrieval"]["signals"] = new["retrieval"]["signals"][:kept]
            assert new == old


def test_input_is_not_mutated_and_output_is_deterministic():
    pack = rust_pack()
    snapshot = copy.deepcopy(pack)
    chosen = marks(W0="relevant", L2="less", L3="unsure")
    first = apply_feedback(pack, chosen)
    assert pack == snapshot
    assert apply_feedback(pack, chosen) == first
    assert refine_query(pack, chosen) == refine_query(pack, chosen)
    assert pack == snapshot


def test_a_web_row_can_be_marked_by_url_or_canonical_url():
    pack = rust_pack()
    by_key = apply_feedback(pack, marks(W0="relevant"))
    for url in ("https://example.com/W0?utm_source=x", "https://example.com/W0"):
        by_url = apply_feedback(pack, [{"key": url, "value": "relevant"}])
        assert by_url["ranking"] == by_key["ranking"]
        assert by_url["feedback"]["marks"] == [
            {"key": url, "value": "relevant", "source_keys": ["W0"]}
        ]
    unknown = apply_feedback(pack, [{"key": "https://nowhere.example/", "value": "relevant"}])
    assert unknown["ranking"] == pack["ranking"]
    assert unknown["feedback"]["marks"][0]["source_keys"] == []


def test_a_ranking_entry_pointing_nowhere_is_an_error():
    pack = rust_pack()
    pack["ranking"][0]["index"] = 99
    with pytest.raises(ValueError, match="does not point at a row"):
        apply_feedback(pack, [])


def test_validate_marks_normalizes_and_dedupes_last_wins():
    got = validate_marks(
        [
            {"key": " L0 ", "value": "More"},
            {"key": "W0", "value": "irrelevant"},
            {"key": "L0", "value": "less"},
        ]
    )
    assert got == [{"key": "L0", "value": "less"}, {"key": "W0", "value": "irrelevant"}]
    assert [m["value"] for m in validate_marks(marks(**{v: v for v in FEEDBACK_VALUES}))] == list(
        FEEDBACK_VALUES
    )


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"key": "L0", "value": "more"}, "must be a list"),
        ("L0=more", "must be a list"),
        (["L0"], "Mark 1 must be an object"),
        ([{"key": "L0"}], "exactly the fields 'key' and 'value'"),
        ([{"key": "L0", "value": "more", "weight": 2}], "exactly the fields"),
        ([{"key": "", "value": "more"}], "'key' must be a source key or URL"),
        ([{"key": 7, "value": "more"}], "'key' must be a source key or URL"),
        ([{"key": "L0", "value": "love"}], "'value' must be one of more, less, relevant"),
        ([{"key": "L0", "value": None}], "'value' must be one of"),
        ([{"key": f"k{i}", "value": "more"} for i in range(201)], "Too many marks"),
    ],
)
def test_validate_marks_rejects_bad_shapes(bad, message):
    with pytest.raises(ValueError, match=message):
        validate_marks(bad)


def test_rocchio_weights_must_be_non_negative_numbers():
    with pytest.raises(ValueError, match="gamma"):
        RocchioWeights(gamma=-0.1)
    with pytest.raises(ValueError, match="alpha"):
        RocchioWeights(alpha=float("nan"))


def tokenizer_pack(**plan) -> dict:
    return make_pack(
        "fts5 tokenizer",
        ["fts5", "tokenizer"],
        [
            row(
                "R0",
                "FTS5 tokenizers",
                "the unicode61 tokenizer folds diacritics; the porter tokenizer ranks stemming",
            ),
            row(
                "R1",
                "Custom FTS5 tokenizers",
                "trigram tokenizers allow substring search and segmentation; porter wraps "
                "unicode61",
            ),
            row("R2", "FTS5 tokenizer for Chinese", "jieba segmentation, segmentation rules"),
            row("R3", "SQLite json functions", "json_extract and json_each"),
        ],
        [],
        **plan,
    )


def test_refine_adds_terms_from_relevant_rows_only():
    out = refine_query(tokenizer_pack(), marks(R0="relevant", R1="more"))
    assert out["original_query"] == "fts5 tokenizer"
    # porter and unicode61 tie (same score, same rarity): the one the marked rows say first.
    assert out["added_terms"][:2] == ["unicode61", "porter"]
    assert len(out["added_terms"]) == MAX_ADDED_TERMS
    assert out["refined_query"] == "fts5 tokenizer " + " ".join(out["added_terms"])
    terms = {c["term"]: c for c in out["candidates"]}
    assert not {"the", "and", "json"} & set(terms)
    assert terms["porter"]["sources"] == [
        {"source_key": "R0", "mark": "relevant"},
        {"source_key": "R1", "mark": "more"},
    ]
    assert terms["porter"]["reason"] == "added: from 2 rows marked more/relevant"
    left = [c for c in out["candidates"] if not c["suppressed"]][MAX_ADDED_TERMS:]
    assert left
    assert all(c["reason"] == "not added: below the best 4" for c in left)


def test_refine_never_re_adds_query_terms_or_their_stems():
    out = refine_query(tokenizer_pack(), marks(R0="relevant", R1="relevant"))
    terms = {c["term"]: c for c in out["candidates"]}
    assert "tokenizers" not in out["added_terms"]
    assert terms["tokenizers"]["suppressed"]
    assert terms["tokenizers"]["reason"] == "already in the query as 'tokenizer'"
    assert terms["fts5"]["suppressed"]
    # A simple query's "token"* already finds "tokenizers" (a prefix match, not a shared stem).
    prefix = tokenizer_pack()
    prefix["query_plan"]["query_terms"] = ["fts5", "token"]
    out = refine_query(prefix, marks(R0="relevant", R1="relevant"))
    tokenizers = next(c for c in out["candidates"] if c["term"] == "tokenizers")
    assert tokenizers["reason"] == "already in the query as 'token'"
    # Raw FTS5 queries do not prefix-match, but the stem still catches the plural; "ranking"
    # and "ranks" share the stem "rank" without either being a prefix of the other.
    raw = tokenizer_pack(syntax="raw")
    raw["query_plan"]["query_terms"] = ["tokenizer", "ranking"]
    out = refine_query(raw, marks(R0="relevant", R1="relevant"))
    assert not {"tokenizers", "ranks"} & set(out["added_terms"])
    reasons = {c["term"]: c["reason"] for c in out["candidates"]}
    assert reasons["ranks"] == "already in the query as 'ranking'"
    assert reasons["tokenizers"] == "already in the query as 'tokenizer'"
    assert out["refined_query"] == "(fts5 tokenizer) " + " ".join(out["added_terms"])


def test_refine_skips_excluded_terms():
    pack = tokenizer_pack(excluded_terms=["porter"])
    out = refine_query(pack, marks(R0="relevant", R1="relevant"))
    assert "porter" not in out["added_terms"]
    porter = next(c for c in out["candidates"] if c["term"] == "porter")
    assert porter["reason"] == "excluded by the question ('porter')"


def test_refine_suppresses_terms_mainly_from_irrelevant_rows():
    pack = tokenizer_pack()
    kept = refine_query(pack, marks(R1="relevant"), max_terms=MAX_ADDED_TERMS)
    assert "segmentation" in [c["term"] for c in kept["candidates"] if not c["suppressed"]]
    out = refine_query(pack, marks(R1="relevant", R2="irrelevant"))
    segmentation = next(c for c in out["candidates"] if c["term"] == "segmentation")
    assert segmentation["suppressed"]
    assert segmentation["negative_weight"] > segmentation["positive_weight"] > 0
    assert segmentation["score"] < 0
    assert segmentation["reason"].startswith("mainly from rows marked less/irrelevant")
    assert "segmentation" not in out["added_terms"]
    assert len(out["added_terms"]) == MAX_ADDED_TERMS


def test_refine_honours_max_terms():
    pack = tokenizer_pack()
    chosen = marks(R0="relevant", R1="relevant")
    assert refine_query(pack, chosen, max_terms=2)["added_terms"] == ["unicode61", "porter"]
    assert refine_query(pack, chosen, max_terms=0)["refined_query"] == "fts5 tokenizer"
    for bad in (-1, MAX_ADDED_TERMS + 1, 2.0, True):
        with pytest.raises(ValueError, match="max_terms"):
            refine_query(pack, chosen, max_terms=bad)


@pytest.mark.parametrize("chosen", [[], marks(R2="irrelevant", R3="less"), marks(R0="unsure")])
def test_refine_without_positive_marks_adds_nothing(chosen):
    out = refine_query(tokenizer_pack(), chosen)
    assert out["added_terms"] == []
    assert out["candidates"] == []
    assert out["refined_query"] == out["original_query"] == "fts5 tokenizer"


def test_refine_drops_a_trailing_negation_that_would_swallow_the_first_term():
    pack = tokenizer_pack()
    pack["question"] = "fts5 tokenizer without"
    out = refine_query(pack, marks(R0="relevant", R1="relevant"), max_terms=2)
    assert out["original_query"] == "fts5 tokenizer without"
    assert out["refined_query"] == "fts5 tokenizer unicode61 porter"


def test_refine_never_takes_capture_metadata_and_breaks_ties_by_what_is_said_first():
    """Words of capture metadata ("Safari tab captured from iCloud Tabs", "Device: ...") are
    never candidates; equally weighted words go in the order the marked row says them, not the
    alphabet's."""
    pack = make_pack(
        "espresso",
        ["espresso"],
        [
            row("A", "Espresso", "Zeta alpha. Device: MacBook"),
            row("B", "Espresso notes", "Safari tab captured from iCloud Tabs."),
            row("C", "Kettles", "Gooseneck kettles pour slowly."),
        ],
        [],
    )
    out = refine_query(pack, marks(A="relevant", B="relevant"))
    terms = [c["term"] for c in out["candidates"]]
    assert not {"safari", "icloud", "captured", "device", "macbook", "tabs"} & set(terms)
    scores = {c["term"]: c["score"] for c in out["candidates"]}
    assert scores["zeta"] == scores["alpha"]
    added = out["added_terms"]
    assert added.index("zeta") < added.index("alpha")


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        ("ten", "a number"),
        ("2026", "a number"),
        ("41st", "a number"),
        ("7d3f4dcd", "a number"),
        ("makes", "a generic verb"),
        ("returns", "a generic verb"),
        ("allowed", "a generic verb"),
        ("following", "a generic verb"),
        ("given", "a generic verb"),
        ("https", "filler"),
        ("however", "filler"),
        ("the", "a stop word"),
        ("inverter", ""),
        ("fts5", ""),
        ("h264", ""),
        ("stepless", ""),
        ("virtual", ""),
    ],
)
def test_filler_kind_tells_content_words_from_the_rest(word, kind):
    assert filler_kind(word) == kind


def test_refine_adds_content_words_only():
    """Issue 33: "ten, virtual, create, table", "pressure, runs, stepless, allow", `makes`:
    stop words, numbers, generic verbs and the filler list are candidates, never added."""
    pack = make_pack(
        "cold climate heat pump",
        ["cold", "climate", "heat", "pump"],
        [
            row(
                "A",
                "What makes a heat pump cold climate?",
                "It runs ten stepless inverter stages and allows vapour injection. "
                "Also see https://example.org, however good.",
            ),
            row("B", "Heat pump rebates", "Tax credits in 2026."),
        ],
        [],
    )
    out = refine_query(pack, marks(A="relevant"))
    assert set(out["added_terms"]) == {"stepless", "inverter", "stages", "vapour"}
    reasons = {c["term"]: c["reason"] for c in out["candidates"]}
    assert reasons["makes"] == "not a content word: a generic verb"
    assert reasons["ten"] == "not a content word: a number"
    assert reasons["https"] == "not a content word: filler"
    assert all(not filler_kind(t) for t in out["added_terms"])


def test_refine_breaks_ties_by_rarity_in_the_brain():
    """Equal scores go to the word the fewest of the brain's rows hold; only without the
    brain's counts to the one said first."""
    pack = make_pack(
        "espresso",
        ["espresso"],
        [row("A", "Espresso", "infusion preheat video channel wets"), row("B", "Tea", "")],
        [],
    )
    held = {"infus": 40, "preheat": 90, "channel": 70, "wet": 2}
    asked: list[list[str]] = []

    def brain_rows(stems):
        asked.append(list(stems))
        return {s: held.get(s, 0) for s in stems}

    plain = refine_query(pack, marks(A="relevant"), max_terms=2)
    assert plain["added_terms"] == ["infusion", "preheat"]
    out = refine_query(pack, marks(A="relevant"), max_terms=2, brain_rows=brain_rows)
    assert out["added_terms"] == ["wets", "infusion"]
    assert "video" not in asked[0]  # filler is never looked up
