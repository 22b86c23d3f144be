"""How a question becomes search terms: dbrain's own table first, then this plugin's extras.

The table is ported from darron/dbrain ``internal/ask/run_test.go`` at commit
0b789338243dc085ea1ac4f718d01f509a370a88 (``TestQueryTermsBuildTagAlias`` and
``TestChatRetrievalScaffoldingDoesNotPolluteQueryTerms``), which pin ``queryterms.Terms``
(``internal/queryterms``: ``queryterms.go`` @0b78933, ``normalize.go`` @9cdb6e3, ``stopwords.go``
and ``chat.go`` @c9fd9bc). Where dbrain asserts an exact list, so does the port; where it asserts
words present or absent, so does the port. ``TagQueries`` is not ported: this plugin has no
tag-alias lane.
"""

from __future__ import annotations

import sqlite3

import pytest

from datasette_dbrain_websearch.query_plan import plan_query
from datasette_dbrain_websearch.question_terms import (
    looks_like_source_key_fragment,
    read_terms,
    search_text,
)
from datasette_dbrain_websearch.word_lists import CANONICAL_TERMS

from ..helpers import add_item, make_datasette

TANKA_CHAT = """Current question: other alternatives like Tanka?

Recent user questions:
- Kubernetes Helm alternatives

Relevant prior evidence source keys:
- src:56b20d0e9e0c

Prior evidence metadata for query expansion:
- Grafana Tanka | github | jsonnet, configuration-management, yaml-alternative"""

# A Go raw string in dbrain's test: the \n are a backslash and an n, as a chat client sends them.
CALGARY_CHAT = (
    r"Current question: Father charged with killing young son, daughter who were found in "
    r"vehicle in Calgary\n\nRecent user questions:\n- Two young children found in an SUV in "
    r"Calgary.\n\nRelevant prior evidence source keys:\n- x:1886891289838526774\n- src:c2c2fb606ce8"
)

LITESTREAM_CHAT = """Current question: what about litestream?

Recent user questions:
- sqlite replication

Prior evidence titles for query focus:
- Marmot V2 - Distributed SQLite Replicator - Nextra | web
- maxpert/marmot | github
- colmi_r02_client API documentation | web
- maxpert/marmot | github_star
- colmi_r02_client API documentation | safari_tab"""

LITESTREAM_FLAT = (
    "Current question: what about litestream? Recent user questions: sqlite replication Prior "
    "evidence titles for query focus: Marmot V2 Distributed SQLite Replicator Nextra web "
    "colmi_r02_client API documentation safari_tab"
)

EXACT = [
    ("What do we know about Mark Carney from dbrain?", ["mark", "carney"]),
    (
        "Can you find the information about the Calgary man that killed his two kids?",
        ["calgary", "man", "kill", "two", "children"],
    ),
    (
        "Can you look in my brain and find the stories about the father who killed two children?",
        ["father", "kill", "two", "children"],
    ),
    (
        "What models should I use with Hermes agent? Are there favored models in my research?",
        ["model", "hermes", "agent"],
    ),
    (LITESTREAM_CHAT, ["litestream", "sqlite", "replication"]),
    (LITESTREAM_FLAT, ["litestream", "sqlite", "replication"]),
]

SCAFFOLD_WORDS = ["current", "question", "recent", "relevant", "prior", "evidence", "metadata"]
PRESENT_ABSENT = [
    (
        TANKA_CHAT,
        ["tanka", "kubernetes", "helm", "alternatives"],
        [*SCAFFOLD_WORDS, "query", "keys", "grafana", "jsonnet", "configuration", "management"],
    ),
    (
        CALGARY_CHAT,
        ["father", "charge", "kill", "young", "son", "daughter", "found", "vehicle", "calgary"],
        [
            "calgary\\n\\nrecent",
            "questions\\n",
            "keys\\n",
            "src",
            "x",
            "with",
            "were",
            "1886891289838526774",
            "c2c2fb606ce8",
        ],
    ),
    (
        LITESTREAM_CHAT,
        ["litestream", "sqlite", "replication"],
        ["marmot", "colmi", "client", "api", "documentation", "safari", "tab"],
    ),
]


@pytest.mark.parametrize(("question", "want"), EXACT, ids=[q[:40] for q, _ in EXACT])
def test_dbrain_question_to_terms_table(question, want):
    assert read_terms(question).terms == want


@pytest.mark.parametrize(
    ("question", "present", "absent"), PRESENT_ABSENT, ids=["tanka", "calgary", "litestream"]
)
def test_dbrain_chat_scaffolding_does_not_pollute_terms(question, present, absent):
    terms = read_terms(question).terms
    assert all("\\" not in t and ":" not in t for t in terms)
    assert [w for w in present if w not in terms] == []
    assert [w for w in absent if w in terms] == []


def test_dbrain_text_query_is_the_terms_joined():
    assert plan_query("What do we know about Mark Carney from dbrain?").text_query == "mark carney"


def test_search_text_keeps_only_the_current_and_recent_questions():
    assert search_text(LITESTREAM_FLAT) == "what about litestream? sqlite replication"
    assert search_text("  plain question  ") == "plain question"


@pytest.mark.parametrize(("variant", "canonical"), sorted(CANONICAL_TERMS.items()))
def test_variants_fold_onto_dbrain_canonical_terms(variant, canonical):
    assert read_terms(f"zebra {variant}").terms == ["zebra", canonical]


def test_hyphens_and_underscores_split_words():
    assert read_terms("sqlite-utils full_text search").terms == [
        "sqlite",
        "utils",
        "full",
        "text",
        "search",
    ]


def test_negations_drop_the_next_word_whatever_it_is_and_corrections_go():
    assert read_terms("rust runtimes not tokio")[:2] == (["rust", "runtimes"], ["tokio"])
    assert read_terms("wrong tokio exclude async-std")[:2] == (["std"], ["tokio", "async"])
    # dbrain drops the very next word, even a stop word: "tokio" stays.
    assert read_terms("runtimes without the tokio")[:2] == (["runtimes", "tokio"], [])
    assert read_terms("correction: the tokio scheduler instead").terms == ["tokio", "scheduler"]


def test_pasted_ids_are_not_terms():
    assert not looks_like_source_key_fragment("deadbeef")
    assert looks_like_source_key_fragment("20260815")
    assert looks_like_source_key_fragment("c2c2fb606ce8")
    assert read_terms("grinder 20260815 c2c2fb606ce8 deadbeef").terms == ["grinder", "deadbeef"]


# This plugin's extras. dbrain's table never contradicts them.


def test_current_state_words_are_not_local_terms_but_go_to_the_web():
    plan = plan_query("What are the current and latest sqlite releases today?")
    assert plan.query_terms == ("sqlite", "releases")
    # "current" is a dbrain stop word, "latest" and "today" dbrain would require: neither here.
    assert plan.web_terms == ("current", "latest", "sqlite", "releases", "today")


def test_a_possessive_goes_with_its_word():
    # dbrain reads "Carney's" as "carney" and "s".
    assert read_terms("Mark Carney's cabinet").terms == ["mark", "carney", "cabinet"]


def test_a_question_without_content_words_has_no_terms():
    # dbrain would search the raw words instead ("tell", "me", "about", "it").
    plan = plan_query("Tell me about it")
    assert plan.query_terms == () and not plan.searchable
    assert plan.common_words == ("tell", "me", "about", "it")


@pytest.fixture
def conversational_ds(brain):
    path, _ = brain
    conn = sqlite3.connect(path)
    with conn:
        add_item(
            conn,
            "x:calgary",
            "x",
            title="Calgary father charged",
            text="A Calgary man is charged after his two children were killed.",
        )
    conn.close()
    return make_datasette([str(path)])


@pytest.mark.parametrize(("question", "terms"), EXACT[1:3], ids=["kids", "stories"])
async def test_conversational_questions_find_the_row_with_every_term(
    conversational_ds, question, terms
):
    response = await conversational_ds.client.get("/-/research.json", params={"q": question})
    pack = response.json()
    assert pack["query_plan"]["query_terms"] == terms
    assert pack["query_plan"]["query_mode"] == "bm25"
    assert pack["evidence"][0]["source_key"] == "x:calgary"
    assert pack["evidence"][0]["retrieval"]["matched_terms"] == terms
    dbrain = await conversational_ds.client.get(
        "/-/research.json", params={"q": question, "ranking": "dbrain"}
    )
    assert dbrain.json()["query_plan"]["query_mode"] == "strict"
    assert [row["source_key"] for row in dbrain.json()["evidence"]] == ["x:calgary"]


async def test_a_question_of_fillers_only_is_no_evidence(ds):
    response = await ds.client.get("/-/research.json", params={"q": "Tell me about it"})
    pack = response.json()
    assert pack["evidence"] == []
    assert pack["judge"]["reason"] == "no_content_words"
