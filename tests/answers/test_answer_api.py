"""Grounded answers through the public surfaces: the JSON API, the page, the stream, the CLI,
the saved trace, with the extractive synthesizer and with fake ``llm`` models."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from click.testing import CliRunner
from datasette.cli import cli
from datasette.utils import StartupError

from datasette_dbrain_websearch.runs_db import LEDGER_TABLE

from ..fake_models import INVENTED, KEY_ENV, FakeKeyModelAsync, fake_models
from ..helpers import (
    DATASETTE_1,
    actor_cookies,
    add_item,
    add_lattice_rows,
    add_source,
    empty_brain,
    make_datasette,
    web_config,
)

QUESTION = "espresso grinder"
MODEL_SECRET = "sk-model-SECRET-9f8e7d"


async def datasette_for(brain, fake=None, answer=None, **extra):
    config = web_config(fake) if fake else {}
    if answer is not None:
        config["answer"] = answer
    ds = make_datasette([str(brain[0])], plugin_config=config, **extra)
    await ds.invoke_startup()
    return ds


async def ask(ds, actor="root", **params):
    cookies = actor_cookies(ds, actor) if actor else {}
    response = await ds.client.get("/-/research.json", params=params, cookies=cookies)
    assert MODEL_SECRET not in response.text
    return response.status_code, response.json()


async def get_as_root(ds, path, **params):
    """GET as root; a path that carries its own query string keeps it (no params given)."""
    return await ds.client.get(path, params=params or None, cookies=actor_cookies(ds, "root"))


def run_keys(pack):
    local = {r["source_key"] for r in pack["evidence"]}
    return local, {r["source_key"] for r in pack["external_evidence"]}


def assert_grounded(pack):
    """The invariant: every kept citation is a key this run retrieved, in the right list."""
    answer = pack["answer"]
    local, external = run_keys(pack)
    cited = [k for s in answer["sentences"] for k in s["citations"]]
    assert set(cited) <= local | external
    assert set(answer["citations"]["local"]) <= local
    assert set(answer["citations"]["external"]) <= external
    for rejected in answer["rejected_citations"]:
        assert rejected["key"] not in answer["text"]
        assert rejected["key"] not in local | external


# ---------------------------------------------------------------------------------------------
# Extractive answers


async def test_no_answer_unless_asked(brain):
    ds = await datasette_for(brain)
    status, pack = await ask(ds, q=QUESTION)
    assert status == 200
    assert pack["answer"]["status"] == "disabled"
    assert pack["answer"]["sentences"] == [] and "answer" not in pack["timings_ms"]


async def test_extractive_answer_is_fully_cited_deterministic_and_recorded(brain):
    ds = await datasette_for(brain)
    status, pack = await ask(ds, q=QUESTION, answer="1")
    assert status == 200
    answer = pack["answer"]
    assert answer["status"] == "ok" and answer["synthesizer"] == "extractive"
    assert answer["sentences"], answer
    assert all(s["supported"] and len(s["citations"]) == 1 for s in answer["sentences"])
    assert answer["rejected_citations"] == []
    assert answer["conflicts"] == {"status": "assessed", "items": [], "dropped": []}
    assert_grounded(pack)
    grinder = next(s for s in answer["sentences"] if "machine" in s["text"])
    assert grinder["text"] == "The grinder matters more than the machine."
    assert grinder["citations"] == ["apple-note:espresso-1"]
    assert "The grinder matters more than the machine. [apple-note:espresso-1]" in answer["text"]
    _, again = await ask(ds, q=QUESTION, answer="1")
    assert again["answer"]["text"] == answer["text"]
    assert pack["timings_ms"]["answer"] == answer["timings_ms"]["total"]
    trace = (await get_as_root(ds, pack["trace_url"] + ".json")).json()
    names = [e["name"] for e in trace["events"]]
    assert names[-3:] == ["answer_synthesized", "answer_verified", "evidence_selected"]
    verified = trace["events"][-2]["data"]
    assert verified["citations"] == answer["citations"] and verified["rejected_citations"] == []
    assert trace["metrics"]["answer"]["status"] == "ok"
    assert trace["pack"]["answer"] == answer


async def test_answer_default_from_config_and_answer_0_turns_it_off(brain):
    ds = await datasette_for(brain, answer={"default": True})
    assert (await ask(ds, q=QUESTION))[1]["answer"]["status"] == "ok"
    assert (await ask(ds, q=QUESTION, answer="0"))[1]["answer"]["status"] == "disabled"


@pytest.mark.parametrize("value", ["2", "maybe", "1' or 1=1"])
async def test_a_bad_answer_value_is_a_400(brain, value):
    ds = await datasette_for(brain)
    status, body = await ask(ds, q=QUESTION, answer=value)
    assert status == 400 and body["code"] == "bad_answer"


async def test_no_evidence_gives_no_answer_and_names_the_gaps(brain):
    ds = await datasette_for(brain)
    status, pack = await ask(ds, q="quantum chromodynamics", answer="1")
    assert status == 200
    answer = pack["answer"]
    assert answer["status"] == "no_evidence" and answer["sentences"] == []
    gaps = {g["code"]: g for g in answer["gaps"]}
    assert gaps["terms_not_covered"]["terms"] == ["quantum", "chromodynamics"]
    assert gaps["web_unavailable"]["reason"] == "mode_never"


async def test_answer_with_web_rows_splits_local_and_external_citations(brain, fake):
    ds = await datasette_for(brain, fake)
    status, pack = await ask(
        ds, q="espresso grinder", external="always", provider="all", answer="1"
    )
    assert status == 200 and pack["external_evidence"], pack["warnings"]
    answer = pack["answer"]
    assert_grounded(pack)
    assert answer["citations"]["local"] and answer["citations"]["external"]
    web = answer["web_contribution"]
    assert web["web_searched"] is True
    assert web["web_rows_kept"] == len(pack["external_evidence"])
    assert web["sentences_citing_web"] == [
        n
        for n, s in enumerate(answer["sentences"], start=1)
        if set(s["citations"]) & set(answer["citations"]["external"])
    ]
    assert web["verdict_before"] == pack["judge"]["verdict"]


# The answer's legend of citation labels (chips are links; the legend's labels are not).
LEGEND_BRAIN = '<span class="dbrain-cite dbrain-cite-local">[1]</span>'
LEGEND_WEB = '<span class="dbrain-cite dbrain-cite-external">[W1]</span>'


async def test_page_renders_the_answer_with_chips_that_jump_to_their_rows(brain, fake):
    ds = await datasette_for(brain, fake)
    response = await get_as_root(
        ds, "/-/research", q="espresso grinder", external="always", provider="all", answer="1"
    )
    assert response.status_code == 200
    html = response.text
    assert 'id="dbrain-answer"' in html
    assert html.index('id="dbrain-answer"') < html.index('id="dbrain-evidence"')
    pack = (
        await get_as_root(
            ds,
            "/-/research.json",
            q="espresso grinder",
            external="always",
            provider="all",
            answer="1",
        )
    ).json()
    positions, rows = {}, {}
    for n, entry in enumerate(pack["ranking"], start=1):
        row = pack[entry["list"]][entry["index"]]
        linked = (row.get("linked_source") or {}).get("source_key")
        for key in filter(None, [row["source_key"], linked]):  # a page cites its item's row
            positions[key], rows[key] = n, row["source_key"]
    for key in pack["answer"]["citations"]["local"]:
        assert f'class="dbrain-cite dbrain-cite-local" href="#evidence-{positions[key]}"' in html
        assert f'id="evidence-{positions[key]}" data-source-key="{rows[key]}"' in html
    for key in pack["answer"]["citations"]["external"]:
        assert f'class="dbrain-cite dbrain-cite-external" href="#evidence-{positions[key]}"' in html
    assert "dbrain-sentence-unsupported" not in html
    # The legend explains both labels, since the answer uses both.
    assert pack["answer"]["citations"]["local"] and pack["answer"]["citations"]["external"]
    assert f"{LEGEND_BRAIN} your brain" in html and f"{LEGEND_WEB} outside dbrain corpus" in html


# ---------------------------------------------------------------------------------------------
# Model answers (fake llm models, no network, no real key)


def llm_answer(model="dbrain-fake", **extra):
    """An answer block for a fake model; root may use it (1.0a grants nothing by default)."""
    return {"synthesizer": "llm", "model": model, "allow": {"id": "root"}, **extra}


@pytest.fixture
def models():
    with fake_models():
        yield


async def test_model_answer_is_verified_and_unsupported_sentences_are_removed(brain, fake, models):
    """Seed 003: sentences the cited rows do not support are taken out of the answer and
    listed as removed, with why; invented citations are removed too."""
    ds = await datasette_for(brain, fake, answer=llm_answer())
    status, pack = await ask(ds, q="espresso grinder", external="always", answer="1")
    assert status == 200
    answer = pack["answer"]
    assert answer["status"] == "ok" and answer["synthesizer"] == "llm:dbrain-fake"
    assert answer["via"] == ("datasette-llm" if DATASETTE_1 else "llm")
    assert_grounded(pack)
    assert answer["rejected_citations"] == [
        {"key": INVENTED, "reason": "not_in_run", "sentence": 3}
    ]
    assert INVENTED not in json.dumps(pack["evidence"]) and INVENTED not in answer["text"]
    first_local, first_web = answer["sentences"]
    assert first_local["supported"] and first_local["citations"] == answer["citations"]["local"]
    assert first_web["supported"] and first_web["citations"] == answer["citations"]["external"]
    invented, uncited, penguins = answer["removed_sentences"]
    assert (invented["supported"], invented["support"]["reason"]) == (False, "no_citation")
    assert (uncited["supported"], uncited["support"]["reason"]) == (False, "no_citation")
    assert (penguins["supported"], penguins["support"]["reason"]) == (False, "low_overlap")
    assert penguins["text"] not in answer["text"] and penguins["citations"]
    conflicts = answer["conflicts"]
    assert conflicts["status"] == "assessed"
    assert [c["citations"] for c in conflicts["items"]] == [
        [first_local["citations"][0], first_web["citations"][0]]
    ]
    assert conflicts["dropped"][0]["reason"] == "fewer_than_two_valid_citations"
    assert answer["evidence"]["admitted_source_keys"]
    assert "3 sentences the cited rows do not support removed" in answer["message"]
    assert "1 citation to keys this run did not retrieve removed" in answer["message"]


async def test_keep_unsupported_keeps_a_models_unsupported_sentences_marked(brain, fake, models):
    ds = await datasette_for(brain, fake, answer=llm_answer(keep_unsupported=True))
    _, pack = await ask(ds, q="espresso grinder", external="always", answer="1")
    answer = pack["answer"]
    assert answer["removed_sentences"] == []
    assert [s["supported"] for s in answer["sentences"]] == [True, True, False, False, False]
    assert "3 not supported by the rows it cites" in answer["message"]
    response = await get_as_root(
        ds, "/-/research", q="espresso grinder", external="always", answer="1"
    )
    assert response.text.count('class="dbrain-sentence dbrain-sentence-unsupported"') == 3


async def test_model_answer_page_lists_removed_sentences_and_rejected_keys(brain, fake, models):
    ds = await datasette_for(brain, fake, answer=llm_answer())
    response = await get_as_root(
        ds, "/-/research", q="espresso grinder", external="always", answer="1"
    )
    html = response.text
    assert response.status_code == 200
    assert "dbrain-sentence-unsupported" not in html
    removed = html.split('class="dbrain-removed"')[1].split("</details>")[0]
    assert "Removed: not supported by the rows it cited (3)" in removed
    assert removed.count("<del>") == 3 and "cites nothing this run found" in removed
    assert f"<del><code>{INVENTED}</code></del>" in html
    assert "Where the sources disagree" in html
    sentences = html.split('id="dbrain-answer"')[1].split('class="dbrain-rejected"')[0]
    assert INVENTED not in sentences  # shown only as removed, never as a chip or in the text


async def test_actor_without_the_model_permission_gets_an_extractive_answer(brain, models):
    ds = await datasette_for(brain, answer=llm_answer())
    status, pack = await ask(ds, actor="mallory", q=QUESTION, answer="1")
    assert status == 200
    assert pack["answer"]["synthesizer"] == "extractive" and pack["answer"]["status"] == "ok"
    assert "answer_model_not_permitted" in [w["code"] for w in pack["warnings"]]


async def test_answer_allow_block_grants_the_model(brain, models):
    ds = await datasette_for(brain, answer=llm_answer(allow={"id": "alice"}))
    _, pack = await ask(ds, actor="alice", q=QUESTION, answer="1")
    assert pack["answer"]["synthesizer"] == "llm:dbrain-fake"


@pytest.mark.parametrize(
    "model, extra, fragment",
    [
        ("dbrain-fake-error", {}, "the model failed (RuntimeError)"),
        ("dbrain-fake-slow", {"timeout": 1}, "did not finish within 1 s"),
        ("dbrain-fake-empty", {}, "empty reply"),
        ("no-such-model", {}, "unknown model"),
    ],
)
async def test_model_failures_keep_the_evidence(brain, models, monkeypatch, model, extra, fragment):
    monkeypatch.setenv(KEY_ENV, MODEL_SECRET)
    ds = await datasette_for(brain, answer=llm_answer(model, api_key={"$env": KEY_ENV}, **extra))
    _, plain = await ask(ds, q=QUESTION)
    status, pack = await ask(ds, q=QUESTION, answer="1")
    assert status == 200
    answer = pack["answer"]
    assert answer["status"] == "failed" and answer["sentences"] == []
    assert fragment in answer["message"]
    warning = next(w for w in pack["warnings"] if w["code"] == "answer_failed")
    assert fragment in warning["message"]
    assert [r["source_key"] for r in pack["evidence"]] == [
        r["source_key"] for r in plain["evidence"]
    ]
    assert MODEL_SECRET not in json.dumps(pack)


@pytest.mark.skipif(DATASETTE_1, reason="datasette-llm (installed on 1.0a) brings its own keys")
async def test_the_configured_key_reaches_the_model_and_nothing_else(brain, models, monkeypatch):
    monkeypatch.setenv(KEY_ENV, MODEL_SECRET)
    ds = await datasette_for(brain, answer=llm_answer("dbrain-fake-key", api_key={"$env": KEY_ENV}))
    status, pack = await ask(ds, q=QUESTION, answer="1")
    assert status == 200 and FakeKeyModelAsync.keys_seen == [MODEL_SECRET]
    assert pack["answer"]["status"] == "ok"
    assert MODEL_SECRET not in json.dumps(pack)  # the reply echoed it; the pack is scrubbed
    trace = await get_as_root(ds, pack["trace_url"] + ".json")
    assert MODEL_SECRET not in trace.text


@pytest.mark.skipif(not DATASETTE_1, reason="datasette-llm installs on Datasette 1.0a only")
async def test_datasette_llm_chooses_the_model_for_the_purpose(brain, models):
    ds = make_datasette(
        [str(brain[0])],
        plugin_config={"answer": {"synthesizer": "llm", "allow": {"id": "root"}}},
        other_plugins={
            "datasette-llm": {"purposes": {"dbrain-research-answer": {"model": "dbrain-fake"}}}
        },
    )
    await ds.invoke_startup()
    _, pack = await ask(ds, q=QUESTION, answer="1")
    assert pack["answer"]["synthesizer"] == "llm:dbrain-fake"
    assert pack["answer"]["via"] == "datasette-llm"


@pytest.mark.skipif(not DATASETTE_1, reason="datasette-llm installs on Datasette 1.0a only")
async def test_datasette_llm_allow_list_refuses_a_model(brain, models):
    ds = make_datasette(
        [str(brain[0])],
        plugin_config={"answer": llm_answer()},
        other_plugins={"datasette-llm": {"models": ["echo"]}},
    )
    await ds.invoke_startup()
    _, pack = await ask(ds, q=QUESTION, answer="1")
    assert pack["answer"]["status"] == "failed"
    assert "does not allow model 'dbrain-fake'" in pack["answer"]["message"]


async def test_stream_shows_the_model_writing_never_its_draft_then_the_verified_run(
    brain, fake, models
):
    """Seed 003: the raw draft is never shown as the answer. The stream says how far the model
    has got; the draft's invented citation appears only struck out on the run page."""
    ds = await datasette_for(brain, fake, answer=llm_answer())
    response = await get_as_root(
        ds, "/-/research/stream", q="espresso grinder", external="always", answer="1"
    )
    assert INVENTED not in response.text
    events = [json.loads(line) for line in response.text.splitlines()]
    answer_events = [e for e in events if e["stage"] == "answer"]
    assert answer_events[0]["status"] == "started"
    writing = [e for e in answer_events if e["status"] == "writing"]
    assert len(writing) > 1 and all("text" not in e for e in writing)
    assert [e["chars"] for e in writing] == sorted(e["chars"] for e in writing)
    assert "is writing" in writing[-1]["message"]
    assert answer_events[-1]["status"] == "done" and answer_events[-1]["answer_status"] == "ok"
    assert events[-1]["stage"] == "done"
    page = await get_as_root(ds, events[-1]["url"])
    assert 'id="dbrain-answer"' in page.text
    assert f"<del><code>{INVENTED}</code></del>" in page.text


# ---------------------------------------------------------------------------------------------
# Conflicts found offline

ACME_NOTE = "Acme Widgets was founded in 1911 by two brothers in Ohio."


def acme_brain(tmp_path, page_text):
    """A brain with a note on when Acme Widgets was founded and a saved page about it."""
    path = tmp_path / "acme.db"
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        add_item(conn, "apple-note:acme", "apple_note", title="Acme notes", text=ACME_NOTE)
        add_source(
            conn,
            "https://example.com/acme-history",
            title="The Acme Widgets story",
            extracted_text=page_text,
            extract_status="ok",
        )
    conn.close()
    return path, {}


async def test_two_rows_disagreeing_on_a_year_are_a_conflict_everywhere(tmp_path):
    brain = acme_brain(tmp_path, "Acme Widgets was founded in 1912 in a small garage.")
    ds = await datasette_for(brain)
    status, pack = await ask(ds, q="acme widgets founded", answer="1")
    assert status == 200
    answer = pack["answer"]
    assert answer["synthesizer"] == "extractive"
    local, _ = run_keys(pack)
    conflicts = answer["conflicts"]
    assert conflicts["status"] == "assessed" and conflicts["dropped"] == []
    (item,) = conflicts["items"]
    assert item["kind"] == "date" and len(item["citations"]) == 2
    assert set(item["citations"]) <= local and "apple-note:acme" in item["citations"]
    assert "1911" in item["text"] and "1912" in item["text"] and "(brain)" in item["text"]
    assert [q["key"] for q in item["quotes"]] == item["citations"]
    page = await get_as_root(ds, "/-/research", q="acme widgets founded", answer="1")
    assert "Where the sources disagree" in page.text
    shown = page.text.split('<ul class="dbrain-conflicts">')[1].split("</ul>")[0]
    assert "The year differs:" in shown and "1911" in shown and "1912" in shown
    assert shown.count('class="dbrain-cite dbrain-cite-local"') == 2
    markdown = (await get_as_root(ds, pack["trace_url"] + ".md")).text
    assert "*Where the sources disagree:*\n\n- The year differs:" in markdown


def test_the_cli_says_where_the_sources_disagree(tmp_path):
    brain = acme_brain(tmp_path, "Acme Widgets was founded in 1912 in a small garage.")
    result = CliRunner().invoke(
        cli, ["dbrain-research", str(brain[0]), "acme widgets founded", "--answer"]
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "Sources disagree" in x)
    assert line.startswith("  Sources disagree: The year differs:")
    cited = re.findall(r"\[(W?\d+)\]", line)  # by the labels the rows below carry
    assert len(cited) == 2 and not any(ref.startswith("W") for ref in cited)
    for ref in cited:
        assert re.search(rf"\n +\[{ref}\] \[(item|source)/", result.output)


@pytest.mark.parametrize(
    "page_text",
    [
        "Acme Widgets was founded in 1911 in a small garage.",  # agrees
        "The Ohio garage Acme Widgets rented was built in 1890 by a farmer.",  # another thing
    ],
)
async def test_rows_that_agree_or_speak_of_other_things_are_no_conflict(tmp_path, page_text):
    ds = await datasette_for(acme_brain(tmp_path, page_text))
    _, pack = await ask(ds, q="acme widgets founded", answer="1")
    assert pack["answer"]["status"] == "ok"
    assert pack["answer"]["conflicts"] == {"status": "assessed", "items": [], "dropped": []}
    page = await get_as_root(ds, "/-/research", q="acme widgets founded", answer="1")
    assert "Where the sources disagree" not in page.text


# ---------------------------------------------------------------------------------------------
# The command line


def test_cli_prints_the_answer_with_its_citations(brain):
    result = CliRunner().invoke(cli, ["dbrain-research", str(brain[0]), QUESTION, "--answer"])
    assert result.exit_code == 0, result.output
    assert "Answer (extractive; every citation checked against this run):" in result.output
    line = next(x for x in result.output.splitlines() if "grinder matters" in x)
    (ref,) = re.findall(r"\[(\d+)\]", line)  # the label of the row it cites, below
    row = result.output.split(f"  [{ref}] [item/apple_note] Espresso grinder notes\n", 1)[1]
    assert row.startswith("    apple-note:espresso-1")
    plain = CliRunner().invoke(cli, ["dbrain-research", str(brain[0]), QUESTION])
    assert "Answer (" not in plain.output


def test_cli_json_answer(brain):
    result = CliRunner().invoke(
        cli, ["dbrain-research", str(brain[0]), QUESTION, "--answer", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answer"]["status"] == "ok"


async def test_run_page_shows_the_answer_with_chips_to_its_rows(brain):
    ds = await datasette_for(brain)
    _, pack = await ask(ds, q=QUESTION, answer="1")
    page = await get_as_root(ds, pack["trace_url"])
    assert page.status_code == 200
    html = page.text
    assert 'id="dbrain-answer"' in html
    for n, entry in enumerate(pack["ranking"], start=1):
        if entry["source_key"] in pack["answer"]["citations"]["local"]:
            assert f'class="dbrain-cite dbrain-cite-local" href="#evidence-{n}"' in html
            assert f'id="evidence-{n}"' in html
    # No web row was cited (none was searched): the legend names the brain's labels only.
    assert pack["answer"]["citations"]["local"] and not pack["answer"]["citations"]["external"]
    assert f"{LEGEND_BRAIN} your brain" in html and LEGEND_WEB not in html


@pytest.mark.skipif(DATASETTE_1, reason="0.65 publishes raw metadata; 1.0 redacts api_key")
async def test_a_literal_model_key_stops_startup_on_0_65(brain):
    ds = make_datasette([str(brain[0])], plugin_config={"answer": llm_answer(api_key="sk-lit")})
    with pytest.raises(StartupError) as info:
        await ds.invoke_startup()
    assert "answer.api_key" in str(info.value)


async def test_what_the_model_is_sent_end_to_end_with_llm_echo(brain, fake):
    """llm-echo's ``echo`` model replies with its prompt: the stream shows what went out."""
    ds = await datasette_for(brain, fake, answer=llm_answer("echo"))
    response = await get_as_root(
        ds, "/-/research/stream", q="espresso grinder", external="always", answer="1"
    )
    assert response.status_code == 200 and '"status": "writing"' in response.text
    pack = (
        await get_as_root(
            ds, "/-/research.json", q="espresso grinder", external="always", answer="1"
        )
    ).json()
    # The stream never carries the draft; the pack (and so the run's trace) keeps it.
    sent = json.loads(pack["answer"]["draft"])
    assert "never cite anything else" in sent["system"].lower()
    prompt = sent["prompt"]
    for row in pack["evidence"]:
        assert f"[{row['source_key']}] FROM THE USER'S BRAIN" in prompt
    for row in pack["external_evidence"]:
        assert f"[{row['source_key']}] OUTSIDE THE USER'S BRAIN" in prompt
    assert prompt.index("FROM THE USER'S BRAIN") < prompt.index("OUTSIDE THE USER'S BRAIN")
    assert_grounded(pack)


async def test_a_mixed_answer_leads_with_the_sentence_that_answers(brain, fake):
    """Issue 33: the brain's general lattice sentences (a note of the person's among them)
    led an answer about the muon's g-2 anomaly; the web's muon sentence now leads, and the
    note's sentences, when kept, come on their merit after it."""
    add_lattice_rows(brain[0])
    ds = await datasette_for(brain, fake)
    status, pack = await ask(ds, q="muon g-2 anomaly lattice", external="always", answer="1")
    assert status == 200
    assert "apple-note:LATTICE" in {r["source_key"] for r in pack["evidence"]}
    first = pack["answer"]["sentences"][0]
    assert "muon" in first["text"].lower(), pack["answer"]["text"]
    (key,) = first["citations"]
    assert key in {r["source_key"] for r in pack["external_evidence"]}
    assert_grounded(pack)
    # The page and the Markdown lead with it too, under the web's own heading.
    page = (await get_as_root(ds, pack["trace_url"])).text
    shown = page.split('id="dbrain-answer"', 1)[1]
    assert shown.index("From the web") < shown.index(first["text"][:40])
    assert shown.index(first["text"][:40]) < shown.index('class="dbrain-sentence', 0) + 200
    markdown = (await get_as_root(ds, pack["trace_url"] + ".md")).text
    answer = markdown.split("## Answer\n\n", 1)[1]
    assert answer.startswith("*From the web (outside your brain):*\n\nWe present")


async def test_model_calls_are_in_the_ledger_and_capped_per_day(brain, fake, models):
    """Every model call is a ledger row (``/-/research/usage`` reads them); past
    ``answer.daily_calls`` for everyone today the model is not called and the answer says why,
    the evidence whole."""
    ds = await datasette_for(
        brain,
        fake,
        answer={**llm_answer(), "daily_calls": 1},
        permissions={"dbrain-view-usage": {"id": "root"}},  # 1.0a grants root nothing
    )
    params = {"q": "espresso grinder", "external": "always", "answer": "1"}
    status, first = await ask(ds, **params)
    assert status == 200 and first["answer"]["synthesizer"] == "llm:dbrain-fake"
    assert first["answer"]["status"] == "ok"
    status, second = await ask(ds, **params)
    assert status == 200 and second["answer"]["status"] == "failed"
    assert "reached its budget of 1 calls today (answer.daily_calls)" in second["answer"]["message"]
    assert second["evidence"] and second["external_evidence"]
    conn = sqlite3.connect(brain[0].parent / "research_runs.db")
    rows = conn.execute(
        f"select run_id, endpoint, status, error from {LEDGER_TABLE} where provider = 'model'"
    ).fetchall()
    conn.close()
    assert rows == [(first["run_id"], "dbrain-fake", 200, "")]  # no place left held
    usage = await ds.client.get("/-/research/usage.json", cookies=actor_cookies(ds, "root"))
    (model,) = [p for p in usage.json()["providers"] if p["provider"] == "model"]
    assert (model["label"], model["calls_today"], model["daily_calls_cap"]) == (
        "Language model",
        1,
        1,
    )
    assert model["over_budget"] is True
