"""The semantic lane: its index (built, refreshed by hash, kept fresh by promotion), its effect
on ranking, and every way it can be missing (a warning, never an error)."""

from __future__ import annotations

import socket
import sqlite3
import struct
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch import embeddings, semantic, semantic_vectors
from datasette_dbrain_websearch.lexical import Remembered
from datasette_dbrain_websearch.triggers import create_retrieval_triggers

from ..helpers import (
    GRANT_PROMOTE,
    add_item,
    add_source,
    db_rows,
    empty_brain,
    make_datasette,
    post_json,
    web_config,
    web_run,
)

pytest.importorskip("wordllama", reason="the [semantic] extra is not installed")

GRINDER = "apple-note:grinder"
MARTINI = "apple-note:martini"


def index(path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["dbrain-websearch", "index", str(path), *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def coffee_brain(tmp_path: Path) -> Path:
    """A grinder note that never says "mill", a cocktail note bm25 prefers for "espresso"
    (short, the word twice), and other notes."""
    path = tmp_path / "brain.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        add_item(
            conn,
            GRINDER,
            "apple_note",
            title="Burr grinder notes",
            text="Conical burrs grind coffee beans evenly; retention matters for espresso "
            "dialing, and a stepless grinder makes small adjustments easy.",
        )
        add_item(
            conn,
            MARTINI,
            "apple_note",
            title="Espresso martini",
            text="Espresso martini: vodka, coffee liqueur and a shot of espresso.",
        )
        for n, topic in enumerate(["tokio scheduler", "sourdough starter", "heat pump sizing"]):
            add_item(conn, f"apple-note:other{n}", "apple_note", title=topic, text=topic * 3)
        add_source(
            conn,
            "https://example.com/hand-mills",
            title="Choosing a hand coffee mill",
            extracted_text="A hand mill with steel burrs is the cheapest way to even grounds.",
            extract_status="ok",
        )
    conn.close()
    return path


async def research(path: Path, config: dict | None = None, **params) -> dict:
    ds = make_datasette([str(path)], plugin_config=config)
    response = await ds.client.get("/-/research.json", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def lane(pack: dict) -> dict:
    return next(x for x in pack["query_plan"]["retrieval_lanes"] if x["name"] == "semantic")


def codes(pack: dict) -> list[str]:
    return [w["code"] for w in pack["warnings"]]


def test_index_embeds_every_row_once_then_only_what_changed(coffee_brain):
    first = index(coffee_brain)
    assert "Indexed 6 rows of brain.db with wordllama" in first
    assert "6 embedded, 0 unchanged, 0 removed" in first
    plugin_db = coffee_brain.parent / "research_runs.db"
    rows = db_rows(plugin_db, "select * from dbrain_websearch_embeddings order by kind, row_id")
    assert len(rows) == 6 and {r["model"] for r in rows} == {"wordllama"}
    assert {r["dims"] for r in rows} == {256} and all(len(r["vector"]) == 512 for r in rows)
    assert "0 embedded, 6 unchanged, 0 removed" in index(coffee_brain)
    conn = sqlite3.connect(coffee_brain)
    with conn:
        conn.execute("update items set text = 'A new text' where source_key = ?", [MARTINI])
        conn.execute("delete from items where source_key = 'apple-note:other0'")
    conn.close()
    assert "1 embedded, 4 unchanged, 1 removed" in index(coffee_brain)
    # dbrain's own tables are never written
    assert not db_rows(coffee_brain, "select name from sqlite_master where name like 'dbrain%'")


def test_index_refuses_an_unknown_model_before_writing_anything(coffee_brain):
    result = CliRunner().invoke(
        cli, ["dbrain-websearch", "index", str(coffee_brain), "--model", "no-such-model"]
    )
    assert result.exit_code != 0 and "'no-such-model' is not installed" in result.output
    assert not (coffee_brain.parent / "research_runs.db").exists()


async def test_a_question_finds_a_note_by_meaning_when_no_word_matches(coffee_brain):
    index(coffee_brain)
    pack = await research(
        coffee_brain, {"semantic": {"min_cosine": 0}}, q="coffee mill", kind="item"
    )
    assert lane(pack)["status"] == "used" and lane(pack)["model"] == "wordllama"
    assert lane(pack)["dense_added"] >= 1
    keys = [r["source_key"] for r in pack["evidence"]]
    assert GRINDER in keys  # it says "coffee" but not "mill": a lexical match for one word
    grinder = pack["evidence"][keys.index(GRINDER)]
    names = [s["name"] for s in grinder["retrieval"]["signals"]]
    assert "semantic_cosine" in names
    assert codes(pack) == []
    meaning = [r for r in pack["evidence"] if not r["retrieval"]["matched_terms"]]
    assert meaning and all(
        any(lane.get("dense_only") for lane in r["retrieval"]["lanes"]) for r in meaning
    )
    # Found by meaning alone, they never make the verdict (issue 30).
    assert pack["judge"]["inputs"]["meaning_only_rows"] == len(meaning)


async def test_a_row_with_no_word_in_common_is_shown_only_when_close(coffee_brain):
    """semantic.min_cosine (0.45): the rows nearest "coffee mill" that share no word with it
    read further than that from it, so none is shown by default."""
    index(coffee_brain)
    pack = await research(coffee_brain, q="coffee mill", kind="item")
    assert lane(pack)["dense_added"] == 0
    assert all(r["retrieval"]["matched_terms"] for r in pack["evidence"])
    loose = await research(
        coffee_brain, {"semantic": {"min_cosine": 0}}, q="coffee mill", kind="item"
    )
    cosines = [
        lane["raw_score"]
        for r in loose["evidence"]
        for lane in r["retrieval"]["lanes"]
        if lane.get("dense_only")
    ]
    assert cosines and max(cosines) < 0.45


async def test_nonsense_gets_no_rows_and_no_evidence(coffee_brain):
    index(coffee_brain)
    for config in (None, {"semantic": {"min_cosine": 0}}):
        pack = await research(coffee_brain, config, q="qwxzzy plorfendish")
        assert pack["evidence"] == [] and pack["judge"]["verdict"] == "no_evidence"


async def test_rows_carry_their_cosine_with_the_question(coffee_brain):
    index(coffee_brain)
    lexical_only = await research(coffee_brain, {"semantic": {"model": ""}}, q="espresso burrs")
    hybrid = await research(coffee_brain, q="espresso burrs")
    assert lane(lexical_only) == {
        "name": "semantic",
        "status": "disabled",
        "reason": "not_configured",
    }
    top = [r["source_key"] for r in hybrid["evidence"][:2]]
    assert top[0] == GRINDER
    cosines = {
        r["source_key"]: next(
            s["weight"] for s in r["retrieval"]["signals"] if s["name"] == "semantic_cosine"
        )
        for r in hybrid["evidence"]
        if r["source_key"] in (GRINDER, MARTINI)
    }
    assert cosines[GRINDER] > cosines[MARTINI]


async def test_without_an_index_the_answer_is_lexical_with_one_warning(coffee_brain):
    pack = await research(coffee_brain, q="espresso")
    assert pack["evidence"] and codes(pack) == ["semantic_index_missing"]
    assert lane(pack) == {"name": "semantic", "status": "disabled", "reason": "index_missing"}
    assert "datasette dbrain-websearch index" in pack["warnings"][0]["message"]


async def test_rows_added_after_the_index_make_it_stale(coffee_brain):
    index(coffee_brain)
    conn = sqlite3.connect(coffee_brain)
    with conn:
        add_item(conn, "apple-note:new", "apple_note", title="Espresso tamper", text="Tamp.")
    conn.close()
    pack = await research(coffee_brain, q="espresso")
    assert codes(pack) == ["semantic_index_stale"]
    assert lane(pack)["status"] == "used" and lane(pack)["stale_tables"] == ["items"]


async def test_an_unknown_model_is_a_warning(coffee_brain):
    pack = await research(coffee_brain, {"semantic": {"model": "no-such-model"}}, q="espresso")
    assert pack["evidence"] and codes(pack) == ["semantic_model_unavailable"]
    assert lane(pack)["reason"] == "model_unavailable"


async def test_without_the_semantic_extra_the_lane_says_so(coffee_brain, monkeypatch):
    """wordllama not importable (the extra not installed): lexical only, one warning."""
    index(coffee_brain)
    monkeypatch.setitem(sys.modules, "wordllama", None)
    monkeypatch.setattr(embeddings, "_MODELS", Remembered(most=16))  # a process that never had it
    pack = await research(coffee_brain, q="espresso")
    assert pack["evidence"] and codes(pack) == ["semantic_model_unavailable"]
    assert "[semantic]" in pack["warnings"][0]["message"]


async def test_dbrains_ranking_has_no_semantic_lane(coffee_brain):
    index(coffee_brain)
    pack = await research(coffee_brain, q="espresso", ranking="dbrain")
    assert lane(pack)["reason"] == "dbrain_ranking" and codes(pack) == []


def test_the_offline_model_loads_without_any_network(monkeypatch):
    from datasette_dbrain_websearch.wordllama_model import WordLlamaEmbedding

    def refuse(*args, **kwargs):
        raise AssertionError("network used")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(WordLlamaEmbedding, "_model", None)
    vectors = list(WordLlamaEmbedding().embed_batch(["coffee mill", "burr grinder", ""]))
    assert [len(v) for v in vectors] == [256, 256, 256]
    assert vectors[2] == [0.0] * 256  # an empty text is zeros, not NaN


async def test_promoted_sources_are_indexed_when_written(brain, fake):
    path = brain[0]
    index(path)
    plugin_db = path.parent / "research_runs.db"
    before = db_rows(plugin_db, "select count(*) as n from dbrain_websearch_embeddings")[0]["n"]
    config = {**web_config(fake), "semantic": {"model": "wordllama"}}
    ds = make_datasette([str(path)], plugin_config=config, permissions=GRANT_PROMOTE)
    await ds.invoke_startup()
    pack = await web_run(ds)
    row = pack["external_evidence"][0]
    response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
    (result,) = response.json()["results"]
    assert result["status"] == "created" and "warning" not in result
    (vector,) = db_rows(
        plugin_db,
        "select * from dbrain_websearch_embeddings where kind = 'source' and row_id = ?",
        [int(result["row_url"].rsplit("/", 1)[1])],
    )
    assert vector["source_key"] == result["local_source_key"]
    after = db_rows(plugin_db, "select count(*) as n from dbrain_websearch_embeddings")[0]["n"]
    assert after == before + 1


async def promote_with_a_note(path: Path, fake) -> tuple[dict, dict]:
    """A web run on the indexed brain, its first row promoted with a note: (ds, result)."""
    config = {**web_config(fake), "semantic": {"model": "wordllama"}}
    ds = make_datasette([str(path)], plugin_config=config, permissions=GRANT_PROMOTE)
    await ds.invoke_startup()
    pack = await web_run(ds)
    key = pack["external_evidence"][0]["source_key"]
    body = {"run_id": pack["run_id"], "source_keys": [key], "note": "For the reading group."}
    response = await post_json(ds, body)
    (result,) = response.json()["results"]
    assert result["status"] == "created" and "warning" not in result
    return ds, result


async def test_a_promotion_with_a_note_leaves_the_index_fresh(brain, fake):
    path = brain[0]
    index(path)
    ds, result = await promote_with_a_note(path, fake)
    (note,) = db_rows(path, "select id from items where source_key = ?", [result["note_key"]])
    plugin_db = path.parent / "research_runs.db"
    embedded = "select source_key from dbrain_websearch_embeddings where kind = ? and row_id = ?"
    assert db_rows(plugin_db, embedded, ["item", note["id"]]) == [
        {"source_key": result["note_key"]}
    ]
    pack = (await ds.client.get("/-/research.json", params={"q": "lattice"})).json()
    assert "semantic_index_stale" not in codes(pack)


async def test_rows_dbrain_added_stay_stale_after_a_promotion(brain, fake):
    """dbrain adds a row, then a promotion embeds newer rows: the index still lacks dbrain's."""
    path = brain[0]
    index(path)
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, "apple-note:later", "apple_note", title="Lattice notes", text="Later.")
    conn.close()
    ds, _ = await promote_with_a_note(path, fake)
    pack = (await ds.client.get("/-/research.json", params={"q": "lattice"})).json()
    assert "semantic_index_stale" in codes(pack)
    assert lane(pack)["stale_tables"] == ["items"]


def add_dbrain_vector(conn, kind: str, key: str, vector: list[float], n: int) -> None:
    """One chunk of a row and its vector, as dbrain's retrieval tables store them (dense_f32,
    little-endian)."""
    now = "2026-01-01T00:00:00Z"
    conn.execute(
        "insert into retrieval_chunks (chunk_id, parent_kind, parent_source_key, evidence_role, "
        "ordinal, start_char, end_char, chunker_version, input_content_hash, chunk_text_hash, "
        "text, created_at, updated_at) "
        "values (?, ?, ?, 'raw', 0, 0, 10, 'v3', 'h', 'h', 't', ?, ?)",
        [f"chunk-{n}", kind, key, now, now],
    )
    conn.execute(
        "insert into retrieval_embeddings (chunk_id, profile_id, provider, model, dimensions, "
        "representation, normalization, vector_bytes, chunk_text_hash, status, updated_at) "
        "values (?, 'embedding-profile-v1:abc', 'ollama', 'wordllama:latest', ?, 'dense_f32', "
        "'l2', ?, 'h', 'ready', ?)",
        [f"chunk-{n}", len(vector), struct.pack(f"<{len(vector)}f", *vector), now],
    )


async def test_dbrains_own_vectors_are_used_when_its_model_is_the_lanes(coffee_brain):
    """dbrain embedded the rows with the same model: its vectors serve the lane, no index of
    the plugin's needed. The martini's vector is deliberately the question's own, so only
    dbrain's vectors can put it first."""
    from datasette_dbrain_websearch.wordllama_model import WordLlamaEmbedding

    question, other = list(WordLlamaEmbedding().embed_batch(["coffee mill", "tokio scheduler"]))
    conn = sqlite3.connect(coffee_brain)
    create_retrieval_triggers(conn, database_id="test")
    with conn:
        add_dbrain_vector(conn, "item", MARTINI, question, 1)
        add_dbrain_vector(conn, "item", GRINDER, other, 2)
    conn.close()
    pack = await research(coffee_brain, q="coffee mill", kind="item")
    assert codes(pack) == []
    assert lane(pack)["store"] == "dbrain_retrieval_embeddings"
    assert lane(pack)["profile"] == "embedding-profile-v1:abc"
    martini = next(r for r in pack["evidence"] if r["source_key"] == MARTINI)
    cosine = next(s for s in martini["retrieval"]["signals"] if s["name"] == "semantic_cosine")
    assert cosine["weight"] == pytest.approx(1.0, abs=1e-3)
    assert not (coffee_brain.parent / "research_runs.db").exists() or not db_rows(
        coffee_brain.parent / "research_runs.db", "select * from dbrain_websearch_embeddings"
    )


async def test_the_page_says_a_row_was_found_by_meaning(coffee_brain):
    index(coffee_brain)
    ds = make_datasette([str(coffee_brain)])
    html = (await ds.client.get("/-/research", params={"q": "coffee mill", "kind": "item"})).text
    assert "close in meaning to the question (cosine 0." in html


async def test_a_locked_index_is_said_not_taken_for_a_missing_one(coffee_brain):
    """Issue 31: another program holding the plugin's database in exclusive locking mode made
    the lane say "index missing" (build it!). It now says the index could not be read, and the
    question is answered by its words; once the lock goes, the lane is back."""
    index(coffee_brain)
    ds = make_datasette([str(coffee_brain)])
    await ds.invoke_startup()
    holder = sqlite3.connect(coffee_brain.parent / "research_runs.db", isolation_level=None)
    try:
        holder.execute("pragma locking_mode = exclusive")
        holder.execute("begin exclusive")
        holder.execute("delete from dbrain_websearch_embeddings where row_id = -1")
        pack = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    finally:
        holder.execute("rollback")
        holder.close()
    assert pack["evidence"] and "semantic_index_unreadable" in codes(pack)
    assert "semantic_index_missing" not in codes(pack)
    assert lane(pack) == {"name": "semantic", "status": "disabled", "reason": "index_unreadable"}
    assert "could not be read" in pack["warnings"][0]["message"]
    again = (await ds.client.get("/-/research.json", params={"q": "espresso"})).json()
    assert codes(again) == [] and lane(again)["status"] == "used"


async def test_saved_runs_leave_the_index_as_read_and_its_writes_renew_it(coffee_brain):
    """Runs are saved in the file the index lives in: a question must not make the next one
    read every vector again (on a large brain, that is most of its time), while every write of
    vectors (a build, a promotion) must."""
    index(coffee_brain)
    plugin_db = str(coffee_brain.parent / "research_runs.db")

    def version() -> tuple | None:
        return semantic_vectors.index_version(plugin_db, "brain", "wordllama", ["item", "source"])

    before = version()
    assert before is not None
    ds = make_datasette([str(coffee_brain)])
    pack = (await ds.client.get("/-/research.json", params={"q": "coffee mill"})).json()
    assert lane(pack)["status"] == "used"
    assert (await ds.client.get(pack["trace_url"] + ".json")).status_code == 200  # saved
    assert db_rows(plugin_db, "select run_id from dbrain_websearch_runs") == [
        {"run_id": pack["run_id"]}
    ]
    assert version() == before
    conn = sqlite3.connect(coffee_brain)
    with conn:
        conn.execute("update items set text = 'A new text' where source_key = ?", [MARTINI])
    conn.close()
    assert "1 embedded" in index(coffee_brain)
    assert version() not in (None, before)


def test_a_question_asked_again_is_not_embedded_again(monkeypatch):
    """A reload, the compare page or another person asking the same question reuses its
    vector (a hosted model would bill each embedding); the shared vector cannot be changed."""
    embedded: list[list[str]] = []
    real = embeddings.embed
    monkeypatch.setattr(embeddings, "_QUESTIONS", Remembered(most=4))
    monkeypatch.setattr(
        embeddings, "embed", lambda model, texts: embedded.append(list(texts)) or real(model, texts)
    )
    first = embeddings.question_vector("wordllama", "coffee mill")
    again = embeddings.question_vector("wordllama", "coffee mill")
    assert again is first and embedded == [["coffee mill"]] and not first.flags.writeable
    embeddings.question_vector("wordllama", "burr grinder")
    assert embedded == [["coffee mill"], ["burr grinder"]]


def test_rows_are_scored_in_float32_batch_by_batch(monkeypatch):
    """The matrix is kept as float16 but scored as float32 (numpy sums float16 in float16,
    off by hundredths on a large brain), in batches between the run's checkpoints."""
    np = embeddings.numpy()
    monkeypatch.setattr(semantic, "SCORE_BATCH", 64)
    rng = np.random.default_rng(7)
    matrix = rng.standard_normal((150, 32)).astype(np.float16)
    query = rng.standard_normal(32).astype(np.float32)
    checked: list[None] = []
    scores = semantic._scores(matrix, query, lambda: checked.append(None))
    assert scores.dtype == np.float32 and scores.shape == (150,)
    assert np.allclose(scores, matrix.astype(np.float32) @ query, rtol=0, atol=1e-5)
    assert len(checked) >= 3  # 64 + 64 + 22 rows, a checkpoint between batches


def test_rows_are_rescored_from_the_matrix_once_it_is_in_memory(coffee_brain, monkeypatch):
    """Re-scoring a lane's rows reads their vectors from SQLite until nearest-row search has
    loaded the table's matrix, then from the matrix, with the same cosines; it never loads the
    matrix itself (on an 8x brain it is hundreds of megabytes)."""
    index(coffee_brain)
    monkeypatch.setattr(semantic, "_MATRICES", {})
    brain = sqlite3.connect(coffee_brain)
    plugin_db = str(coffee_brain.parent / "research_runs.db")
    lane = semantic.SemanticLane(plugin_db, "brain", "wordllama", "coffee mill", 0.3, brain)
    ids = [3, 1, 999, 2]  # 999: a row the index does not hold
    from_sqlite = lane.cosines(brain, "item", ids)
    assert semantic._MATRICES == {}  # not loaded by re-scoring
    assert lane.nearest(brain, "item", 1, set())  # loads the matrix
    monkeypatch.setattr(
        semantic_vectors.PluginIndex, "vectors", lambda *a: pytest.fail("read from SQLite")
    )
    from_matrix = lane.cosines(brain, "item", ids)
    assert from_sqlite is not None and from_matrix is not None
    assert from_matrix[2] == from_sqlite[2] == 0.0
    assert from_matrix == pytest.approx(from_sqlite, abs=1e-6)
    assert len({round(c, 3) for c in from_matrix}) == 4  # four different rows
    assert lane.cosines(brain, "item", [999]) is None  # no vector for any of them
