"""One citation label everywhere (issue 33): brain rows ``[1]``, ``[2]``…, web rows ``[W1]``…,
the same on the page (the answer's chips and each row's own label), in the Markdown and CSV
exports, in the CLI's text and the agent tools' rows, and unchanged when a mark moves a row."""

from __future__ import annotations

import csv
import io
import re

from datasette_dbrain_websearch import citations, exports
from datasette_dbrain_websearch.cli.render import render_text
from datasette_dbrain_websearch.tools.shapes import compact_pack

from ..helpers import actor_cookies, csrf, web_datasette, web_pack

QUESTION = "sqlite fts5 bm25"


def row(key: str, **more: object) -> dict:
    return {"source_key": key, **more}


def test_brain_rows_are_numbered_and_web_rows_are_w_numbered_by_their_own_list():
    pack = {
        "evidence": [row("a"), row("b", linked_source=row("src:page"))],
        "external_evidence": [row("ext:1"), row("ext:2")],
        # A mark moved the second web row first: its label stays W2.
        "ranking": [
            {"list": "external_evidence", "index": 1},
            {"list": "evidence", "index": 1},
            {"list": "evidence", "index": 0},
            {"list": "external_evidence", "index": 0},
        ],
    }
    assert citations.labels(pack) == {
        "a": "1",
        "b": "2",
        "src:page": "2",  # an item's linked page is cited by the item's label
        "ext:1": "W1",
        "ext:2": "W2",
    }
    assert [ref for ref, _ in citations.labelled_rows(pack)] == ["1", "2", "W1", "W2"]
    assert citations.cite("W2") == "[W2]"


def test_a_shared_run_keeps_each_rows_full_run_label():
    pack = {
        "run_id": "r",
        "question": "q",
        "database": "brain",
        "evidence": [row("a", title="A"), row("b", title="B")],
        "external_evidence": [row("ext:1", title="W"), row("ext:2", title="X")],
        "ranking": [
            {"list": "evidence", "index": 0, "source_key": "a"},
            {"list": "evidence", "index": 1, "source_key": "b"},
            {"list": "external_evidence", "index": 0, "source_key": "ext:1"},
            {"list": "external_evidence", "index": 1, "source_key": "ext:2"},
        ],
        "answer": {
            "sentences": [{"text": "t", "citations": ["b", "ext:2"]}],
            "conflicts": {"status": "not_assessed", "items": []},
        },
    }
    shared = exports.shared(pack)
    assert [r["source_key"] for r in shared["evidence"]] == ["b"]
    assert citations.labels(shared) == {"b": "2", "ext:2": "W2"}


def page_labels(html: str) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """The page's row labels by key, its answer's chip labels in order, and each chip's label by
    the key of the row it jumps to."""
    rows = re.findall(
        r'<li class="dbrain-row[^"]*" id="(evidence-\d+)" data-source-key="([^"]+)" '
        r'data-origin="(local|external)">\s*<div class="dbrain-row-head">\s*'
        r'<span class="dbrain-ref dbrain-ref-(local|external)"[^>]*>\[(W?\d+)\]</span>',
        html,
    )
    assert rows and all(origin == ref_origin for _, _, origin, ref_origin, _ in rows)
    by_key = {key: label for _, key, _, _, label in rows}
    by_anchor = {anchor: key for anchor, key, _, _, _ in rows}
    answer = html.split('id="dbrain-answer"', 1)[1].split("</section>", 1)[0]
    chips = re.findall(
        r'<a class="dbrain-cite dbrain-cite-(local|external)" href="#(evidence-\d+)"[^>]*>'
        r"\[(W?\d+)\]",
        answer,
    )
    for origin, _, label in chips:  # brain and web chips never look alike
        assert (origin == "external") == label.startswith("W")
    return by_key, [label for _, _, label in chips], {by_anchor[a]: lab for _, a, lab in chips}


def markdown_labels(text: str) -> tuple[list[str], list[str]]:
    """The Markdown's answer citations in order, and its rows' labels in order."""
    answer = text.split("## Answer\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"\[(W?\d+)\]", answer), re.findall(r"^\[(W?\d+)\] \*\*", text, re.M)


def cli_labels(text: str) -> dict[str, str]:
    """The CLI's row labels by key (the key is on the line under each row's label)."""
    return dict(
        (key, label) for label, key in re.findall(r"^ *\[(W?\d+)\] \[.*\n +(\S+)", text, re.M)
    )


async def test_one_runs_labels_are_the_same_on_the_page_the_exports_and_the_cli(brain, fake):
    ds = await web_datasette(brain, fake)
    pack = await web_pack(ds, QUESTION, answer="1")
    assert pack["answer"]["citations"]["external"] and pack["answer"]["citations"]["local"]
    root = actor_cookies(ds, "root")
    # 👍 on the last web row lifts it on the page: it keeps its label.
    last_web = pack["external_evidence"][-1]["source_key"]
    cookies, headers, _ = await csrf(ds, root)
    marked = await ds.client.post(
        f"/-/research/runs/{pack['run_id']}/feedback",
        json={"feedback": [{"key": last_web, "value": "relevant"}]},
        cookies=cookies,
        headers=headers,
    )
    assert marked.status_code == 200, marked.text
    order = [e["source_key"] for e in marked.json()["ranking"]]
    before = [e["source_key"] for e in pack["ranking"]]
    assert order.index(last_web) < before.index(last_web)

    page = await ds.client.get(
        "/-/research", params={"q": QUESTION, "run": pack["run_id"]}, cookies=root
    )
    assert page.status_code == 200
    rows, chips, chip_rows = page_labels(page.text)
    expected = {
        **{r["source_key"]: str(n) for n, r in enumerate(pack["evidence"], start=1)},
        **{r["source_key"]: f"W{n}" for n, r in enumerate(pack["external_evidence"], start=1)},
    }
    assert rows == expected
    assert rows[last_web] == f"W{len(pack['external_evidence'])}"
    # Each chip jumps to the row showing the same label.
    assert chip_rows and all(rows[key] == label for key, label in chip_rows.items())

    markdown = (await ds.client.get(pack["trace_url"] + ".md", cookies=root)).text
    answer_refs, row_refs = markdown_labels(markdown)
    assert answer_refs == chips
    assert row_refs == list(expected.values())

    table = (await ds.client.get(pack["trace_url"] + ".csv", cookies=root)).text
    assert {r["key"]: r["ref"] for r in csv.DictReader(io.StringIO(table))} == expected

    text = render_text(pack)
    assert cli_labels(text) == expected
    said = text.split("Answer (", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"\[(W?\d+)\]", said) == chips

    agent = compact_pack(pack, {}, str)  # what the MCP and agent tools return
    assert {r["key"]: r["ref"] for r in agent["brain_rows"] + agent["web_rows"]} == expected

    compared = await ds.client.get(
        "/-/research/compare.json", params={"a": pack["run_id"], "b": pack["run_id"]}, cookies=root
    )
    sides = compared.json()["a"]["answer"]
    for sentence, side in zip(pack["answer"]["sentences"], sides, strict=True):
        assert side["refs"] == [expected[k] for k in sentence["citations"]]
