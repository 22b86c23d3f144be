"""FTS5 query building: terms, quoting, relaxed coverage, raw terms, matching."""

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_dbrain_websearch.dbrain_order import (
    matches_relaxed_terms,
    min_relaxed_coverage,
    relaxed_terms,
)
from datasette_dbrain_websearch.errors import ResearchError
from datasette_dbrain_websearch.query_plan import build_match, matched_terms, plan_query
from datasette_dbrain_websearch.question_terms import (
    MAX_TERMS,
    raw_terms,
    read_terms,
    trim_token,
    wanted_raw_terms,
)

from ..helpers import add_item, make_datasette


def test_trim_token_strips_only_the_ends():
    assert trim_token("(fts5),") == "fts5"
    assert trim_token("node.js") == "node.js"
    assert trim_token("c++") == "c"
    assert trim_token("¿qué?") == "qué"
    assert trim_token("...") == ""


def test_read_terms_lowercases_drops_stop_words_and_dedupes():
    terms, excluded, _ = read_terms("How does SQLite's FTS5 rank the results? sqlite")
    assert terms == ["sqlite", "fts5", "rank", "results"]
    assert excluded == []


def test_negation_drops_the_next_word():
    terms, excluded, _ = read_terms("rust runtimes not tokio")
    assert terms == ["rust", "runtimes"]
    assert excluded == ["tokio"]


def test_a_question_of_common_words_only_has_nothing_to_search():
    for question in ("the and of", "AND OR", "what is new?"):
        plan = plan_query(question)
        assert plan.query_terms == () and not plan.searchable
        assert plan.common_words, question
    assert plan_query("the and of").common_words == ("the", "and", "of")


def test_current_state_words_are_not_required_locally_but_go_to_the_web():
    plan = plan_query("What is the latest SQLite release today?")
    assert plan.query_terms == ("sqlite", "release")
    assert plan.web_terms == ("latest", "sqlite", "release", "today")
    assert plan.fts_query == '"sqlite"* AND "release"*'


def test_conversational_filler_is_not_a_term():
    assert read_terms("What do we know about Mark Carney from dbrain?").terms == [
        "mark",
        "carney",
    ]


def test_build_match_quotes_prefix_terms():
    assert build_match(["sqlite", "fts5"]) == '"sqlite"* AND "fts5"*'
    assert build_match(["a", "b"], "OR") == '"a"* OR "b"*'
    assert build_match(['say"hi']) == '"say""hi"*'
    assert build_match([]) == '""'


def test_plan_query_simple_and_relaxed():
    plan = plan_query("espresso grinder burrs")
    assert plan.fts_query == '"espresso"* AND "grinder"* AND "burrs"*'
    assert plan.relaxed_query == '"espresso"* OR "grinder"* OR "burrs"*'
    assert plan.query_terms == ("espresso", "grinder", "burrs")
    assert plan_query("espresso").relaxed_query == ""


def test_plan_query_caps_terms():
    words = " ".join(f"word{i}" for i in range(MAX_TERMS + 5))
    plan = plan_query(words)
    assert len(plan.query_terms) == MAX_TERMS
    assert plan.truncated_terms == 5


@pytest.mark.parametrize("question", ["", "   ", "?!...", "🙂🙂", "— – …"])
def test_plan_query_rejects_unsearchable(question):
    with pytest.raises(ResearchError) as info:
        plan_query(question)
    assert info.value.status == 400


def test_raw_plan_passes_query_through():
    plan = plan_query('title:espresso NEAR(grinder burr, 5) OR "flat white"', "raw")
    assert plan.fts_query == 'title:espresso NEAR(grinder burr, 5) OR "flat white"'
    assert plan.syntax == "raw"
    assert list(plan.query_terms) == ["espresso", "grinder", "burr", "flat", "white"]


def test_raw_terms_skip_operators_and_columns():
    assert raw_terms("title:tokio AND NOT runtime*") == ["tokio", "runtime"]


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("title:tokio NOT runtime*", ["tokio"]),
        ('espresso NOT "milk foam" grinder', ["espresso", "grinder"]),
        ("heat NOT (pump OR boiler) NEAR(coil valve)", ["heat", "coil", "valve"]),
        ("tokio OR scheduler", ["tokio", "scheduler"]),
    ],
)
def test_what_a_raw_query_asks_for_is_not_what_it_excludes(query, wanted):
    assert wanted_raw_terms(query) == wanted


def test_min_relaxed_coverage_follows_dbrain():
    assert min_relaxed_coverage(["sqlite", "fts5", "bm25"]) == 2
    assert min_relaxed_coverage(["sqlite", "of", "go"]) == 1
    assert min_relaxed_coverage(["sqlite"]) == 1


def test_relaxed_terms_are_dbrains_3_byte_terms():
    # Go's len counts UTF-8 bytes: "né" is 3 of them.
    assert relaxed_terms(["ai", "ml", "né", "sqlite", "sqlite"]) == ["né", "sqlite"]
    assert min_relaxed_coverage(["ai", "ml"]) == 1


def test_relaxed_match_is_dbrains_substring_test():
    texts = ["x:1", "Weeknotes", "", "", "", "simonwillison.net", "", "", "a sqlite release"]
    assert matches_relaxed_terms(["willison", "sqlite"], texts)  # substring, as in dbrain
    assert not matches_relaxed_terms(["grinders", "burrs"], ["", "Burr grinder"])  # as dbrain
    assert not matches_relaxed_terms(["tokio", "zebra", "giraffe"], ["tokio runtime"])
    assert matches_relaxed_terms(["tokio", "go"], ["tokio runtime"])  # one 3+ byte term: 1
    assert matches_relaxed_terms(["ai", "ml"], ["nothing here"])  # no 3+ byte term: all kept


def test_matching_follows_fts5s_porter_stems():
    assert matched_terms(["grinders", "espresso", "tea"], ["A burr grinder for Espresso."]) == [
        "grinders",
        "espresso",
    ]
    assert matched_terms(["node.js"], ["I like Node.js a lot"]) == ["node.js"]
    assert matched_terms(["sql"], ["nosql databases"]) == []
    assert matched_terms(["policies", "studies"], ["a policy study"]) == ["policies", "studies"]
    assert matched_terms(["cafe"], ["Café culture"]) == ["cafe"]
    assert matched_terms(["fan"], ["fantasy novels"]) == []  # whole words, not prefixes


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_simple_queries_are_never_fts5_syntax_errors(question):
    """Whatever the user types, the simple-syntax MATCH string is valid FTS5."""
    try:
        plan = plan_query(question.replace("\x00", ""))
    except ResearchError:
        return
    conn = sqlite3.connect(":memory:")
    conn.execute("create virtual table t using fts5(body, tokenize='porter unicode61')")
    conn.execute("insert into t values ('some text')")
    conn.execute("select count(*) from t where t match ?", [plan.fts_query]).fetchone()
    if plan.relaxed_query:
        conn.execute("select count(*) from t where t match ?", [plan.relaxed_query]).fetchone()


@pytest.fixture
def people_ds(brain):
    """The fixture brain plus rows whose only trace of a term is where dbrain's relaxed test
    looks beyond the title and snippet: author, domain, note path."""
    path, _ = brain
    conn = sqlite3.connect(path)
    with conn:
        add_item(
            conn,
            "x:author",
            "x",
            title="Datasette plugin notes",
            text="Thoughts on writing plugins for datasette.",
            author_handle="simonw",
            author_name="Simon Willison",
        )
        add_item(
            conn,
            "rss:weeknotes",
            "rss",
            title="Weeknotes",
            text="Shipped a sqlite release this week.",
            primary_domain="simonwillison.net",
        )
        add_item(
            conn,
            "apple-note:talk",
            "apple_note",
            title="Weekly log",
            text="Worked on sqlite query plans.",
            note_path="people/simon-willison.md",
        )
        add_item(conn, "apple-note:ai", "apple_note", title="AI", text="ai alignment reading")
        add_item(conn, "apple-note:ml", "apple_note", title="ML", text="ml feature stores")
    conn.close()
    return make_datasette([str(path)])


async def relaxed_keys(datasette, question):
    response = await datasette.client.get(
        "/-/research.json", params={"q": question, "ranking": "dbrain"}
    )
    pack = response.json()
    assert pack["query_plan"]["query_mode"] == "relaxed", pack["query_plan"]
    return {row["source_key"] for row in pack["evidence"]}


async def test_relaxed_reads_author_domain_and_note_path_as_dbrain_does(people_ds, brain):
    found = await relaxed_keys(people_ds, "simon willison sqlite")
    assert {"x:author", "rss:weeknotes", "apple-note:talk"} <= found
    assert brain[1]["src_fts5_key"] not in found  # "sqlite" alone: one term of three


async def test_relaxed_counts_a_term_inside_a_word_as_dbrain_does(people_ds):
    # "willison" is only inside "simonwillison.net": dbrain's substring test counts it.
    assert "rss:weeknotes" in await relaxed_keys(people_ds, "willison sqlite")


async def test_relaxed_keeps_every_or_hit_when_no_term_has_3_letters(people_ds):
    assert {"apple-note:ai", "apple-note:ml"} <= await relaxed_keys(people_ds, "ai ml")


def test_a_pasted_address_is_searched_as_the_words_of_its_host_and_path():
    """Issue 32: "https quarkmatter.blog/what-is-lattice-qcd" matched every row saying https,
    and the phrase of the whole address no text writes; dbrain's own reading is unchanged."""
    plan = plan_query("https://quarkmatter.blog/what-is-lattice-qcd?utm_source=x#top")
    assert plan.query_terms == ("quarkmatter", "lattice", "qcd")
    assert "https" in plan.dbrain_terms
    mixed = plan_query("see https://www.sqlite.org/fts5.html for bm25")
    assert mixed.query_terms == ("see", "sqlite", "fts5", "bm25")
    assert plan_query("http caching headers").query_terms == ("http", "caching", "headers")
