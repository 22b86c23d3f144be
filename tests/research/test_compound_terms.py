"""Terms as people write them: ``g-2``, ``1:2``, ``c++``, ``node.js``, ``e5-large`` are one term
each, searched as the phrase of their parts, never as loose letters and digits (issue 30, 6).

Checked on the plan, on a plain FTS5 ``porter unicode61`` table (what the ranking query and the
matcher find), and through ``/-/research.json`` on a brain. ``ranking: dbrain`` keeps dbrain's
own term list for its MATCH strings.
"""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_dbrain_websearch import lexical
from datasette_dbrain_websearch.dbrain_order import matches_relaxed_terms, relaxed_terms
from datasette_dbrain_websearch.errors import ResearchError
from datasette_dbrain_websearch.excerpts import best_excerpt
from datasette_dbrain_websearch.query_plan import matched_terms, plan_query, quote_word
from datasette_dbrain_websearch.question_terms import SearchTerm, is_compound, read_terms
from datasette_dbrain_websearch.stemming import Form, TermMatcher, forms_of

from ..helpers import add_item, make_datasette

COMPOUNDS = [
    ("muon g-2 anomaly lattice", "g-2", ["muon", "g-2", "anomaly", "lattice"]),
    ("1:2 ratio", "1:2", ["1:2", "ratio"]),
    ("c++ templates", "c++", ["c++", "templates"]),
    ("node.js streams", "node.js", ["node.js", "streams"]),
    ("e5-large embeddings", "e5-large", ["e5-large", "embeddings"]),
    ("Node.js's streams", "node.js", ["node.js", "streams"]),
    ("What is C#?", "c#", ["c#"]),
    ("python 3.11 release", "3.11", ["python", "3.11", "release"]),
    ("an X-ray of the hand", "x-ray", ["x-ray", "hand"]),  # "x" is on dbrain's stop list
    ("c++17 modules", "c++", ["c++", "17", "modules"]),
]


@pytest.mark.parametrize(("question", "compound", "terms"), COMPOUNDS)
def test_a_compound_is_one_term_searched_as_a_phrase(question, compound, terms):
    plan = plan_query(question)
    assert list(plan.query_terms) == terms
    assert plan.web_terms == plan.query_terms  # the web receives it as typed
    term = next(t for t in plan.search_terms if t.name == compound)
    assert term == SearchTerm(compound, (compound,), required=True)
    # Each search word is one FTS5 string: the compound's is the phrase of its tokens.
    assert plan.match_query().split(" OR ") == [quote_word(t) for t in terms]
    assert plan.all_terms_query() in ("", " AND ".join(f"({quote_word(t)})" for t in terms))
    assert plan.text_query == " ".join(terms)


def test_ranking_dbrain_keeps_dbrains_own_terms():
    plan = plan_query("muon g-2 anomaly lattice")
    assert plan.dbrain_terms == ("muon", "g", "2", "anomaly", "lattice")
    assert plan.dbrain_terms == tuple(read_terms("muon g-2 anomaly lattice").terms)
    assert plan.fts_query == '"muon"* AND "g"* AND "2"* AND "anomaly"* AND "lattice"*'
    assert plan.relaxed_query == '"muon"* OR "g"* OR "2"* OR "anomaly"* OR "lattice"*'
    # dbrain's relaxed test reads a compound as dbrain's words in it.
    assert relaxed_terms(plan.query_terms) == relaxed_terms(plan.dbrain_terms)
    assert relaxed_terms(["e5-large", "x-ray", "data-2", "c++", "node.js"]) == [
        "large",
        "ray",
        "node",
    ]
    assert relaxed_terms(plan_query("c++ templates").query_terms) == ["templates"]
    assert matches_relaxed_terms(["e5-large", "muon"], ["large muon"])
    assert not matches_relaxed_terms(["e5-large", "muon"], ["e5-large"])


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("sqlite-utils full_text search", ["sqlite", "utils", "full", "text", "search"]),
        ("state-of-the-art heat-pump", ["state", "art", "heat", "pump"]),
        ("tcp/ip title:tokio", ["tcp", "ip", "title", "tokio"]),
        ("issue#30", ["issue", "30"]),
    ],
)
def test_joined_words_stay_dbrains_separate_words(question, terms):
    plan = plan_query(question)
    assert list(plan.query_terms) == terms == read_terms(question).terms
    assert [t.name for t in plan.search_terms] == terms


@pytest.mark.parametrize(
    ("token", "compound"),
    [
        ("g-2", True),
        ("1:2", True),
        ("node.js", True),
        ("e5-large", True),
        ("c++", True),
        ("notepad++", True),
        ("c#", True),
        ("a/b", True),
        ("utf-8", True),
        ("colmi_r02_client", True),
        ("2024-01-15", True),
        ("sqlite-utils", False),
        ("heat-pump", False),
        ("full_text", False),
        ("tcp/ip", False),
        ("issue#", False),
        ("fts5", False),
    ],
)
def test_which_joined_tokens_are_compounds(token, compound):
    assert is_compound(token) is compound


def test_a_negation_drops_the_whole_compound_and_pasted_ids_stay_out():
    plan = plan_query("muon not g-2")
    assert plan.query_terms == ("muon",)
    assert plan.excluded_terms == ("g-2",)
    assert plan.dbrain_terms == ("muon", "2")  # dbrain drops "g" and keeps "2"
    assert read_terms("g-2 x:1886891289838526774", compounds=True).terms == ["g-2"]


def test_a_phrase_word_is_matched_as_fts5_matches_it():
    # Only the last token of "node.js"* is a prefix, as in FTS5.
    assert forms_of("node.js", prefix=True) == (Form("node"), Form("js", prefix=True))
    assert forms_of("c++") == (Form("c", tail="++"),)
    assert forms_of("c#") == (Form("c", tail="#"),)
    matcher = TermMatcher([("node.js", [forms_of("node.js", prefix=True)])])
    assert matcher.found(["nodes jsx"]) == {"node.js"}
    assert matcher.found(["node and js"]) == set()
    assert matcher.found(["jsx nodes"]) == set()


def fts_table(rows: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("create virtual table t using fts5(body, tokenize='porter unicode61')")
    conn.executemany("insert into t values (?)", [(r,) for r in rows])
    return conn


def fts_rows(conn: sqlite3.Connection, match: str) -> list[str]:
    sql = "select body from t where t match ? order by rowid"
    return [r[0] for r in conn.execute(sql, [match])]


ROWS = [
    "Espresso ratios beyond 1:2",
    "the muon g-2 experiment at Fermilab",
    "G 2 is the second note, a muon elsewhere",
    "gauge theory of 2 muons",
    "C is a language; so is Go",
    "Templates in C++ are Turing complete",
    "vitamin c and other templates",
]


def test_fts5_finds_the_compound_as_its_adjacent_tokens():
    conn = fts_table(ROWS)
    plan = plan_query("muon g-2 anomaly lattice")
    g2 = quote_word("g-2")
    assert fts_rows(conn, g2) == [ROWS[1], ROWS[2]]  # g then 2: never "1:2", "gauge ... 2"
    assert ROWS[0] not in fts_rows(conn, plan.match_query())
    assert fts_rows(conn, quote_word("1:2")) == [ROWS[0]]
    # The ranking query's rows, and what each holds by the plan's matcher.
    held = {row: plan.matched_in([row]) for row in fts_rows(conn, plan.match_query())}
    assert held[ROWS[1]] == ["muon", "g-2"]
    assert held[ROWS[3]] == ["muon"]  # "gauge" and "2" are not g-2
    # Rows re-scored together: each holds its own terms, a phrase only where it is written.
    assert lexical.rows_signals(plan, [[ROWS[1]], [ROWS[3]], [], [ROWS[1]]]) == [
        ({"muon", "g-2"}, True),
        ({"muon"}, False),
        (set(), False),
        ({"muon", "g-2"}, True),
    ]
    # Two texts of one row are not one phrase: "g" ending one and "2" opening the next.
    assert lexical.rows_signals(plan, [["the muon g", "2 experiments"]]) == [({"muon"}, False)]


def test_cplusplus_is_held_only_where_a_row_writes_it():
    conn = fts_table(ROWS)
    plan = plan_query("c++ templates")
    # FTS5 cannot see "+": the search is the token c, every "C" row is a candidate...
    assert fts_rows(conn, quote_word("c++")) == [ROWS[4], ROWS[5], ROWS[6]]
    # ...but only the row that writes "C++" holds the term.
    assert plan.matched_in([ROWS[4]]) == []
    assert plan.matched_in([ROWS[5]]) == ["c++", "templates"]
    assert plan.matched_in([ROWS[6]]) == ["templates"]
    assert matched_terms(["c++", "c#"], ["C and C#"]) == ["c#"]
    excerpt = best_excerpt([("text", "raw_item_window", ROWS[5])], plan.matcher, 120)
    assert "<mark>C++</mark>" in excerpt.html
    assert excerpt.matched_terms == ("c++", "templates")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ag1 2-:./+_#'cx", max_size=40))
def test_compound_queries_are_never_fts5_syntax_errors(question):
    try:
        plan = plan_query(question)
    except ResearchError:
        return
    conn = fts_table(["a g-2 c++ 1:2 x_1"])
    for match in (plan.fts_query, plan.relaxed_query, plan.match_query(), plan.all_terms_query()):
        if match:
            conn.execute("select count(*) from t where t match ?", [match]).fetchone()
    if plan.search_words:  # every word a prefix: "g-2"* is the phrase g, 2*
        prefixed = set(plan.search_words)
        conn.execute("select count(*) from t where t match ?", [plan.match_query(prefixed)])
    for term in plan.query_terms:  # the matcher reads every term
        plan.matched_in([term, question])


@pytest.fixture
def compound_ds(brain):
    path, _ = brain
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, "manual:ratios", "manual", title="Espresso ratios beyond 1:2", text="2")
        add_item(
            conn,
            "manual:muon",
            "manual",
            title="The muon g-2 anomaly",
            text="A lattice calculation of the muon g-2.",
        )
        add_item(conn, "manual:c", "manual", title="C is a language", text="templates in C")
        add_item(conn, "manual:cpp", "manual", title="C++ templates", text="C++ templates")
    conn.close()
    return make_datasette([str(path)])


async def test_research_ranks_the_compound_not_its_letters(compound_ds):
    response = await compound_ds.client.get(
        "/-/research.json", params={"q": "muon g-2 anomaly lattice"}
    )
    pack = response.json()
    assert pack["query_plan"]["query_terms"] == ["muon", "g-2", "anomaly", "lattice"]
    keys = [row["source_key"] for row in pack["evidence"]]
    assert keys[0] == "manual:muon"
    assert "manual:ratios" not in keys
    assert pack["evidence"][0]["retrieval"]["matched_terms"] == pack["query_plan"]["query_terms"]


async def test_research_holds_cplusplus_only_where_it_is_written(compound_ds):
    response = await compound_ds.client.get("/-/research.json", params={"q": "c++ templates"})
    evidence = response.json()["evidence"]
    rows = {row["source_key"]: row["retrieval"]["matched_terms"] for row in evidence}
    assert evidence[0]["source_key"] == "manual:cpp"
    assert rows["manual:cpp"] == ["c++", "templates"]
    assert rows["manual:c"] == ["templates"]  # "C is a language": found by FTS5, not c++
