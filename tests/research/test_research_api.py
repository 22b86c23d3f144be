"""The JSON API: retrieval paths, filters, fusion, excerpts, errors, detection."""

from __future__ import annotations

import asyncio
import json
import math
import re
import sqlite3

import pytest

from datasette_dbrain_websearch import traces

from ..helpers import actor_cookies, add_item, empty_brain, make_datasette


async def get(ds, path, **params):
    response = await ds.client.get(path, params=params)
    return response.status_code, response.json()


def keys(pack):
    return [row["source_key"] for row in pack["evidence"]]


async def test_pack_shape(ds):
    status, pack = await get(ds, "/-/research.json", q="espresso grinder")
    assert status == 200
    assert pack["ok"] is True
    assert pack["schema_version"] == "research_pack.v1"
    assert pack["database"] == "brain"
    assert pack["question"] == "espresso grinder"
    assert set(pack) >= {
        "run_id",
        "query_plan",
        "judge",
        "coverage",
        "evidence",
        "warnings",
        "timings_ms",
    }
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{9}Z-[0-9a-f]{24}", pack["run_id"])
    plan = pack["query_plan"]
    assert plan["fts_query"] == '"espresso"* AND "grinder"*'
    assert plan["query_terms"] == ["espresso", "grinder"]
    assert plan["syntax"] == "simple" and plan["query_mode"] == "bm25"
    assert plan["match_query"] == '"espresso" OR "grinder"'
    assert plan["ranking"] == "bm25"
    assert pack["coverage"]["local_evidence_count"] == len(pack["evidence"])
    assert {"local", "total"} <= set(pack["timings_ms"])
    row = pack["evidence"][0]
    assert set(row) >= {
        "source_key",
        "kind",
        "title",
        "url",
        "excerpt",
        "source_type",
        "user_tags",
        "published_at",
        "saved_at",
        "note_path",
        "row_url",
        "retrieval",
    }
    assert set(row["retrieval"]) >= {"score", "lanes", "signals", "matched_terms", "missing_terms"}


async def test_rows_holding_every_keyword_come_first_then_the_others(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso grinder")
    assert set(keys(pack)[:2]) == {"apple-note:espresso-1", ids["src_espresso_key"]}
    for row in pack["evidence"][:2]:
        assert row["retrieval"]["matched_terms"] == ["espresso", "grinder"]
        (lane,) = row["retrieval"]["lanes"]
        assert lane["name"] == "lexical" and lane["rank"] == 1 and lane["query"] == "bm25"
    for row in pack["evidence"][2:]:  # BM25 tops up with rows holding one of the words
        assert len(row["retrieval"]["matched_terms"]) == 1


async def test_dbrain_ranking_returns_only_rows_with_every_term(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso grinder", ranking="dbrain")
    assert pack["query_plan"]["ranking"] == "dbrain"
    assert pack["query_plan"]["match_query"] == '"espresso"* AND "grinder"*'
    # dbrain lists items first, then sources.
    assert keys(pack) == ["apple-note:espresso-1", ids["src_espresso_key"]]
    for row in pack["evidence"]:
        assert row["retrieval"]["matched_terms"] == ["espresso", "grinder"]
        assert row["retrieval"]["missing_terms"] == []
        (lane,) = row["retrieval"]["lanes"]
        assert lane["name"] == "lexical" and lane["rank"] == 1 and lane["query"] == "strict"
    assert pack["coverage"]["item_text_matches"] == 1
    assert pack["coverage"]["source_text_matches"] == 1


async def test_lanes_are_fused_and_weighted_by_how_selective_the_question_is(ds, brain):
    _, ids = brain
    path, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso grinder")
    # A lane weighs the summed idf of the question's words in its table (FTS5's bm25 idf):
    # the words are rarer among the items, so the items lane weighs more.
    conn = sqlite3.connect(path)
    selectivity = {}
    for table in ("items", "sources"):
        rows = conn.execute(f"select max(rowid) from {table}").fetchone()[0]
        selectivity[table] = 0.0
        for word in ("espresso", "grinder"):
            sql = f"select count(*) from {table}_fts where {table}_fts match ?"
            n = conn.execute(sql, [word]).fetchone()[0]
            selectivity[table] += max(1e-6, math.log((rows - n + 0.5) / (n + 0.5)))
    conn.close()
    source_weight = selectivity["sources"] / selectivity["items"]
    assert source_weight < 1
    lexical = pack["query_plan"]["retrieval_lanes"][1]
    assert lexical["weights"] == {"items_fts": 1.0, "sources_fts": round(source_weight, 4)}
    assert keys(pack)[:2] == ["apple-note:espresso-1", ids["src_espresso_key"]]
    scores = [row["retrieval"]["score"] for row in pack["evidence"][:2]]
    assert scores == [pytest.approx(1 / 61, abs=1e-6), pytest.approx(source_weight / 61, abs=1e-6)]
    lanes = [row["retrieval"]["lanes"][0] for row in pack["evidence"][:2]]
    assert [(lane["table"], lane["weight"]) for lane in lanes] == [
        ("items_fts", 1.0),
        ("sources_fts", round(source_weight, 4)),
    ]


async def test_dbrains_relaxed_fallback_lists_sources_before_items(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso burr zebra", ranking="dbrain")
    assert keys(pack) == [ids["src_espresso_key"], "apple-note:espresso-1"]
    scores = [row["retrieval"]["score"] for row in pack["evidence"]]
    assert scores[0] > scores[1]


async def test_a_word_no_row_holds_does_not_hide_the_rows_holding_the_others(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso burr zebra")
    assert pack["query_plan"]["query_mode"] == "bm25"
    assert set(keys(pack)[:2]) == {ids["src_espresso_key"], "apple-note:espresso-1"}
    assert pack["evidence"][0]["retrieval"]["missing_terms"] == ["zebra"]
    assert pack["judge"]["verdict"] == "weak_evidence"


async def test_prefix_and_stemming_match(ds):
    _, pack = await get(ds, "/-/research.json", q="tokenizer stems")
    assert keys(pack)[0].startswith("src:")
    assert pack["evidence"][0]["title"] == "SQLite FTS5 Extension"


async def test_exact_source_key_is_a_protected_floor(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q=ids["src_fts5_key"])
    assert keys(pack)[0] == ids["src_fts5_key"]
    row = pack["evidence"][0]
    assert row["retrieval"]["lanes"][0]["name"] == "exact_lookup"
    assert row["retrieval"]["signals"][0]["name"] == "exact_source_key"
    assert pack["judge"]["verdict"] == "enough_evidence"
    assert pack["judge"]["reason"] == "exact_match"
    assert pack["coverage"]["exact_matches"] == 1


async def test_exact_url_is_normalized_the_dbrain_way(ds, brain):
    _, ids = brain
    messy = "http://WWW.example.com/espresso-guide/?utm_source=feed#top"
    _, pack = await get(ds, "/-/research.json", q=messy)
    assert keys(pack)[0] == ids["src_espresso_key"]
    assert pack["evidence"][0]["retrieval"]["signals"][0]["name"].startswith("exact_")


async def test_exact_url_finds_a_source_without_fts_row(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="https://example.org/pending-article")
    assert keys(pack)[0] == ids["src_pending_key"]
    assert pack["evidence"][0]["retrieval"]["lanes"][0]["name"] == "exact_lookup"


async def test_exact_item_external_id_and_note_path(ds):
    _, pack = await get(ds, "/-/research.json", q="1790000000000000001")
    assert keys(pack)[0] == "x:1790000000000000001"
    assert pack["evidence"][0]["retrieval"]["signals"][0]["name"] == "exact_external_id"
    _, pack = await get(ds, "/-/research.json", q="notes/espresso-grinder-notes.md")
    assert keys(pack)[0] == "apple-note:espresso-1"


async def test_exact_hit_outranks_better_lexical_rows(ds, brain):
    """A source wins the lexical tie-break, but the exact external_id hit stays first."""
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="simonw/datasette")
    assert keys(pack) == ["gh-star:simonw/datasette", ids["src_plugins_key"]]
    exact, lexical = pack["evidence"]
    assert [lane["name"] for lane in exact["retrieval"]["lanes"]] == ["exact_lookup", "lexical"]
    assert exact["retrieval"]["lanes"][1]["rank"] == 1
    assert lexical["retrieval"]["lanes"][0]["rank"] == 1
    assert exact["retrieval"]["score"] > 1 > lexical["retrieval"]["score"]


async def test_relaxed_or_fallback_requires_two_terms(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso burr zebra", ranking="dbrain")
    assert pack["query_plan"]["query_mode"] == "relaxed"
    assert pack["query_plan"]["match_query"] == '"espresso"* OR "burr"* OR "zebra"*'
    assert {w["code"] for w in pack["warnings"]} == {"relaxed_query"}
    assert pack["coverage"]["item_text_matches"] == 1
    assert pack["coverage"]["source_text_matches"] == 1
    assert "relaxed matches (some terms): items=1 sources=1" in pack["coverage"]["recall_note"]
    assert set(keys(pack)) == {"apple-note:espresso-1", ids["src_espresso_key"]}
    for row in pack["evidence"]:
        assert row["retrieval"]["missing_terms"] == ["zebra"]
        assert "relaxed_match" in [s["name"] for s in row["retrieval"]["signals"]]
    assert pack["judge"]["verdict"] == "weak_evidence"
    assert pack["judge"]["reason"] == "missing_terms"


async def test_relaxed_drops_rows_matching_one_term_only(ds):
    _, pack = await get(ds, "/-/research.json", q="tokio zebra giraffe", ranking="dbrain")
    assert pack["evidence"] == []
    assert pack["judge"]["verdict"] == "no_evidence"


async def test_summary_only_in_enrichments_is_found_and_excerpted(ds):
    _, pack = await get(ds, "/-/research.json", q="sourdough hydration")
    assert keys(pack) == ["apple-note:sourdough"]
    row = pack["evidence"][0]
    assert row["evidence_role"] == "derived_summary"
    assert "<mark>Sourdough</mark>" in row["excerpt_html"]


async def test_excerpt_window_and_marks(ds, brain):
    _, pack = await get(ds, "/-/research.json", q="burr grinders")
    row = next(r for r in pack["evidence"] if r["kind"] == "source")
    assert row["evidence_role"] == "raw_extract_window"
    assert "<mark>Burr</mark> <mark>grinders</mark>" in row["excerpt_html"]
    assert row["excerpt"].endswith("...")
    assert "<mark>" not in row["excerpt"]


async def test_tags_come_back_as_lists_and_filter_exactly(ds):
    _, pack = await get(ds, "/-/research.json", q="espresso", tag="coffee")
    assert keys(pack) == ["apple-note:espresso-1"]
    assert pack["evidence"][0]["user_tags"] == ["espresso", "coffee"]
    _, pack = await get(ds, "/-/research.json", q="espresso", tag="coff")
    assert pack["evidence"] == []
    _, pack = await get(ds, "/-/research.json", q="tokio", tag="async")
    assert keys(pack) == ["x:1790000000000000001"]
    assert pack["query_plan"]["filters"] == {"tag": ["async"]}


async def test_kind_and_source_type_filters(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso", kind="source")
    assert {r["kind"] for r in pack["evidence"]} == {"source"}
    assert pack["query_plan"]["retrieval_lanes"][1]["tables"] == ["sources_fts"]
    _, pack = await get(ds, "/-/research.json", q="espresso", kind="item")
    assert keys(pack) == ["apple-note:espresso-1"]
    _, pack = await get(ds, "/-/research.json", q="sqlite", source_type="github_star")
    assert keys(pack) == ["gh-star:simonw/datasette"]
    response = await ds.client.get(
        "/-/research.json?q=sqlite&source_type=github_star&source_type=web"
    )
    assert set(keys(response.json())) == {"gh-star:simonw/datasette", ids["src_fts5_key"]}


async def test_date_range_filter(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso", since="2026-04-01")
    assert keys(pack) == [ids["src_espresso_key"]]
    _, pack = await get(ds, "/-/research.json", q="espresso", until="2026-04-01")
    assert keys(pack) == ["apple-note:espresso-1"]
    _, pack = await get(
        ds, "/-/research.json", q="espresso", since="2026-03-01", until="2026-03-01"
    )
    assert keys(pack) == ["apple-note:espresso-1"]


async def test_limit(ds):
    _, pack = await get(ds, "/-/research.json", q="sqlite", limit="1")
    assert len(pack["evidence"]) == 1
    assert pack["coverage"]["displayed_limit"] == 1


async def test_raw_syntax_passes_fts5_through(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="title:espresso NOT guide", syntax="raw")
    assert keys(pack) == ["apple-note:espresso-1"]
    assert pack["query_plan"]["fts_query"] == "title:espresso NOT guide"
    assert pack["query_plan"]["retrieval_lanes"][0]["status"] == "disabled"
    # The answer check reads what the query asks for, not the word it excludes.
    _, pack = await get(ds, "/-/research.json", q="espresso NOT guide", syntax="raw", answer="1")
    assert pack["answer"]["message"] == "No answer in your brain. No sentence mentions “espresso”."
    _, pack = await get(ds, "/-/research.json", q="NEAR(bm25 ranks, 3)", syntax="raw")
    assert keys(pack) == [ids["src_fts5_key"]]


async def test_raw_column_of_one_table_warns_and_searches_the_other(ds, brain):
    _, ids = brain
    status, pack = await get(ds, "/-/research.json", q="extracted_text:bm25", syntax="raw")
    assert status == 200
    assert keys(pack) == [ids["src_fts5_key"]]
    (warning,) = pack["warnings"]
    assert warning["code"] == "fts_query_error" and "items_fts" in warning["message"]


@pytest.mark.parametrize(
    "query, sqlite_message",
    [
        ("espresso AND (", 'fts5: syntax error near ""'),
        ('"unclosed', "unterminated string"),
        ("NEAR(", 'fts5: syntax error near ""'),
        ("a OR OR b", 'fts5: syntax error near "OR"'),
        ("*", "unknown special query"),
    ],
)
async def test_raw_syntax_errors_are_400_with_sqlite_message(ds, query, sqlite_message):
    status, body = await get(ds, "/-/research.json", q=query, syntax="raw")
    assert status == 400
    assert body["ok"] is False and body["status"] == 400
    assert body["error"].startswith("FTS5 query error: ")
    assert sqlite_message in body["error"]


@pytest.mark.parametrize(
    "params, code",
    [
        ({}, "missing_q"),
        ({"q": "   "}, "missing_q"),
        ({"q": "?!?"}, "nothing_searchable"),
        ({"q": "x", "limit": "abc"}, "bad_limit"),
        ({"q": "x", "limit": "0"}, "bad_limit"),
        ({"q": "x", "limit": "51"}, "bad_limit"),
        ({"q": "x", "kind": "notes"}, "bad_kind"),
        ({"q": "x", "syntax": "regex"}, "bad_syntax"),
        ({"q": "x", "since": "yesterday"}, "bad_date"),
        ({"q": "x", "since": "2026-02-30"}, "bad_date"),
        ({"q": "x", "until": "2026-13-01"}, "bad_date"),
        ({"q": "x", "since": "2026-03-01", "until": "2026-02-01"}, "bad_date"),
        ({"q": "x", "freshness": "2026-02-30to2026-03-01"}, "bad_freshness"),
        ({"q": "x", "freshness": "2026-03-01to2026-02-01"}, "bad_freshness"),
        ({"q": "x" * 20_001}, "question_too_long"),
    ],
)
async def test_bad_parameters_are_400_json(ds, params, code):
    status, body = await get(ds, "/-/research.json", **params)
    assert status == 400
    assert body == {
        "ok": False,
        "error": body["error"],
        "errors": [body["error"]],
        "status": 400,
        "code": code,
    }
    assert body["error"]


@pytest.mark.parametrize(
    "question",
    [
        'he said "hello',
        "((espresso)",
        "espresso AND OR NOT grinder",
        "NEAR(espresso grinder)",
        "espr*sso ^start",
        "title:espresso",
        "col:value:other",
        "naïve café — 東京 🙂",
        "espresso\x00grinder",
        "espresso " * 2000,
        "-espresso +grinder",
        "'; drop table items; --",
    ],
)
async def test_hostile_simple_questions_never_fail(ds, question):
    response = await ds.client.get("/-/research.json", params={"q": question})
    assert response.status_code in (200, 400)
    body = response.json()
    if response.status_code == 200:
        assert body["schema_version"] == "research_pack.v1"
    else:
        assert body["ok"] is False


async def test_operators_are_plain_words_in_simple_syntax(ds):
    _, pack = await get(ds, "/-/research.json", q="espresso AND (grinder")
    assert pack["query_plan"]["fts_query"] == '"espresso"* AND "grinder"*'


async def test_title_markup_is_escaped_in_excerpt_html(ds):
    _, pack = await get(ds, "/-/research.json", q="malicious payload")
    row = pack["evidence"][0]
    assert row["title"] == "<script>alert('owned')</script> payload notes"
    assert "<b>" not in row["excerpt_html"] and "&lt;b&gt;" in row["excerpt_html"]


async def test_row_urls_point_at_datasette_row_pages(ds, brain):
    _, ids = brain
    _, pack = await get(ds, "/-/research.json", q="espresso grinder")
    urls = {row["kind"]: row["row_url"] for row in pack["evidence"]}
    assert urls["source"] == f"/brain/sources/{ids['src_espresso']}"
    assert urls["item"] == f"/brain/items/{ids['note_espresso']}"
    assert (await ds.client.get(urls["source"])).status_code == 200


async def test_per_database_route(ds):
    status, pack = await get(ds, "/brain/-/research.json", q="sqlite")
    assert status == 200 and pack["database"] == "brain"
    status, _ = await get(ds, "/nope/-/research.json", q="sqlite")
    assert status == 404


async def test_detection_ignores_non_brain_databases(brain, tmp_path):
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("create table items (id integer primary key)").close()
    ds = make_datasette([str(other), str(brain[0])])
    status, pack = await get(ds, "/-/research.json", q="sqlite")
    assert status == 200 and pack["database"] == "brain"
    status, body = await get(ds, "/other/-/research.json", q="sqlite")
    assert status == 404 and body["code"] == "not_a_brain"
    status, body = await get(ds, "/-/research.json", q="sqlite", database="other")
    assert status == 404 and body["code"] == "unknown_brain"


async def test_sources_only_brain_is_a_brain(tmp_path):
    path = tmp_path / "sources_only.db"
    conn = sqlite3.connect(path)
    conn.execute("create table sources (id integer primary key, source_key text, title text)")
    conn.execute("create virtual table sources_fts using fts5(source_key unindexed, title)")
    conn.execute("insert into sources values (1, 'src:000000000001', 'Heat pumps in winter')")
    conn.execute(
        "insert into sources_fts(rowid, source_key, title) values (1, 'src:1', "
        "'Heat pumps in winter')"
    )
    conn.commit()
    conn.close()
    ds = make_datasette([str(path)])
    status, pack = await get(ds, "/-/research.json", q="heat pumps")
    assert status == 200
    assert keys(pack) == ["src:000000000001"]
    assert pack["query_plan"]["retrieval_lanes"][1]["tables"] == ["sources_fts"]


async def test_databases_config_overrides_detection(brain, tmp_path):
    ds = make_datasette([str(brain[0])], plugin_config={"databases": []})
    status, body = await get(ds, "/-/research.json", q="sqlite")
    assert status == 404 and body["code"] == "no_brain"


async def test_immutable_brain_is_searchable(brain):
    ds = make_datasette([], immutables=[str(brain[0])])
    status, pack = await get(ds, "/-/research.json", q="espresso grinder")
    assert status == 200 and len(pack["evidence"]) == 2


async def test_read_only_file_is_searchable(brain):
    path = brain[0]
    path.chmod(0o444)
    try:
        ds = make_datasette([str(path)])
        status, pack = await get(ds, "/-/research.json", q="tokio")
        assert status == 200 and keys(pack) == ["x:1790000000000000001"]
    finally:
        path.chmod(0o644)


async def test_judge_thresholds_come_from_config(brain):
    plain = make_datasette([str(brain[0])])
    _, pack = await get(plain, "/-/research.json", q="espresso grinder")
    assert pack["judge"]["verdict"] == "enough_evidence"
    assert pack["judge"]["inputs"]["mode"] == "calibrated"
    strict = make_datasette([str(brain[0])], plugin_config={"judge": {"min_score": 0.999}})
    _, pack = await get(strict, "/-/research.json", q="espresso grinder")
    assert (pack["judge"]["verdict"], pack["judge"]["reason"]) == ("weak_evidence", "weak_match")
    assert pack["judge"]["inputs"]["min_score"] == 0.999
    dbrain = make_datasette(
        [str(brain[0])], plugin_config={"judge": {"mode": "dbrain", "min_evidence": 5}}
    )
    _, pack = await get(dbrain, "/-/research.json", q="espresso grinder")
    assert pack["judge"]["verdict"] == "weak_evidence"
    assert pack["judge"]["inputs"]["min_evidence"] == 5


@pytest.mark.parametrize("question", ["the and of", "AND OR", "what is new?"])
async def test_a_question_of_common_words_is_no_evidence_not_enough(ds, question):
    status, pack = await get(ds, "/-/research.json", q=question)
    assert status == 200
    assert pack["evidence"] == []
    assert pack["judge"]["verdict"] == "no_evidence"
    assert pack["judge"]["reason"] == "no_content_words"
    assert "only common words" in pack["judge"]["message"]


async def test_current_state_words_are_not_required_of_local_rows(ds):
    _, plain = await get(ds, "/-/research.json", q="espresso")
    _, latest = await get(ds, "/-/research.json", q="latest espresso news today")
    assert latest["query_plan"]["query_terms"] == ["espresso", "news"]
    _, current = await get(ds, "/-/research.json", q="latest espresso")
    assert keys(current) == keys(plain) and keys(plain)
    assert current["external_search"]["current_state_question"] is True
    assert current["judge"]["verdict"] == plain["judge"]["verdict"]


async def test_the_answer_is_sent_before_its_trace_is_written(ds, monkeypatch):
    """The trace is written beside the answer, not before it; a read of the run in the meantime
    waits for the write, and the request ends only once the run is saved."""
    written, release = asyncio.Event(), asyncio.Event()
    write = traces._write

    async def slow_write(*args, **kwargs):
        await release.wait()  # held until the test has seen the answer and a read waiting
        await write(*args, **kwargs)
        written.set()

    monkeypatch.setattr(traces, "_write", slow_write)
    read_waiting, settle, reads = asyncio.Event(), traces.settle, []

    async def watched_settle(db, run_id=None):
        if reads and run_id and not written.is_set():  # the read's wait, not the answer's
            read_waiting.set()
        await settle(db, run_id)

    monkeypatch.setattr(traces, "settle", watched_settle)
    body_sent = asyncio.Event()
    chunks: list[bytes] = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                assert not written.is_set()  # the answer went out first
                body_sent.set()

    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/-/research.json",
        "raw_path": b"/-/research.json",
        "query_string": b"q=espresso",
        "root_path": "",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 5000),
        "server": ("localhost", 80),
    }
    request = asyncio.ensure_future(ds.app()(scope, receive, send))
    await asyncio.wait_for(body_sent.wait(), 10)
    pack = json.loads(b"".join(chunks))
    root = actor_cookies(ds, "root")  # an anonymous run: root reads it whole
    reads.append(pack["trace_url"])
    reading = asyncio.ensure_future(ds.client.get(pack["trace_url"] + ".json", cookies=root))
    await asyncio.wait_for(read_waiting.wait(), 10)  # the read waits for the write
    assert not reading.done() and not request.done()
    release.set()
    trace = await reading
    assert written.is_set() and trace.status_code == 200
    assert trace.json()["pack"] == pack
    await request


async def test_per_database_stream_searches_that_brain(brain, tmp_path, fake):
    from ..helpers import build_fixture_brain

    other = tmp_path / "other.db"
    build_fixture_brain(other)
    conn = sqlite3.connect(other)
    conn.execute("delete from items_fts")
    conn.execute("delete from sources_fts")
    conn.commit()
    conn.close()
    ds = make_datasette([str(brain[0]), str(other)])
    response = await ds.client.get("/other/-/research/stream", params={"q": "espresso"})
    events = [json.loads(line) for line in response.text.splitlines() if line]
    local = next(e for e in events if e["stage"] == "local" and e["status"] == "done")
    assert local["count"] == 0
    assert events[-1]["url"].startswith("/other/-/research?")
    page = await ds.client.get("/other/-/research")
    assert 'data-stream-url="/other/-/research/stream"' in page.text


async def test_a_row_holding_broken_utf8_is_shown_as_datasette_shows_it(tmp_path):
    """The plugin reads text with sqlite3's own decoder (fast); a row whose bytes are not UTF-8
    makes it read again as Datasette does, replacing what cannot be decoded."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, "apple-note:beans", "apple_note", title="Espresso beans", text="fine")
        add_item(conn, "apple-note:grind", "apple_note", title="Espresso grind", text="fine")
        conn.execute(
            "update items set text = cast(x'457370726573736f20ff20726f617374' as text) "
            "where source_key = 'apple-note:beans'"
        )
    conn.close()
    response = await make_datasette([str(path)]).client.get(
        "/-/research.json", params={"q": "espresso"}
    )
    assert response.status_code == 200
    rows = {r["source_key"]: r for r in response.json()["evidence"]}
    assert set(rows) == {"apple-note:beans", "apple-note:grind"}
    assert rows["apple-note:beans"]["excerpt"] == "Espresso \ufffd roast"
