"""Exports of a saved run: Markdown with the verified answer and numbered references, CSV of
the rows; both follow the run's privacy. Over HTTP, a web run against the fake providers."""

from __future__ import annotations

import csv
import io
import re

from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch import exports

from ..helpers import actor_cookies, web_datasette, web_pack

QUESTION = "espresso extraction"


async def web_run(brain, fake):
    ds = await web_datasette(brain, fake)
    return ds, await web_pack(ds, QUESTION, answer="1")


async def test_the_markdown_export_holds_the_answer_references_and_origins(brain, fake):
    ds, pack = await web_run(brain, fake)
    response = await ds.client.get(pack["trace_url"] + ".md", cookies=actor_cookies(ds, "root"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/markdown; charset=utf-8"
    assert "attachment" in response.headers["content-disposition"]
    text = response.text
    assert text.startswith(f"# {QUESTION}\n")
    assert f"http://localhost{pack['trace_url']}" in text  # links work where the file goes
    verdict = pack["judge"]["combined"]
    said = verdict["message"].replace("[", "\\[").replace("]", "\\]")  # "[W2]" as Markdown
    assert f"**{verdict['verdict'].replace('_', ' ').capitalize()}.** {said}" in text
    # The verified answer, each citation a numbered reference: web rows are W1, W2…
    answer = text.split("## Answer\n", 1)[1].split("\n## ", 1)[0]
    cited = set(re.findall(r"\[(W?\d+)\]", answer))
    web = pack["external_evidence"]
    assert pack["answer"]["citations"]["external"] and web and pack["evidence"]
    refs = {row["source_key"]: f"W{n}" for n, row in enumerate(web, start=1)}
    assert {refs[k] for k in pack["answer"]["citations"]["external"]} <= cited
    assert "From the web (outside your brain)" in answer
    shown = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", answer)  # as written, once rendered
    for sentence in pack["answer"]["sentences"]:
        assert sentence["text"] in shown
    assert "[ext:" not in answer  # keys became references
    # Every web row, under its own heading, with its origin, URL and depth.
    web_part = text.split("## From the web\n", 1)[1]
    for n, row in enumerate(web, start=1):
        entry = web_part.split(f"\n[W{n}] ", 1)[1].split("\n\n", 1)[0]
        assert "Outside dbrain corpus / Brave / ephemeral · provider snippet" in entry
        assert f"<{row['url']}>" in entry
    brain_part = text.split("## In your brain\n", 1)[1].split("## From the web", 1)[0]
    assert "Outside dbrain corpus" not in brain_part and "Your dbrain brain" in brain_part
    for n in range(1, len(pack["evidence"]) + 1):
        assert f"\n[{n}] **" in brain_part


async def test_the_csv_export_has_one_row_a_line_with_its_origin(brain, fake):
    ds, pack = await web_run(brain, fake)
    response = await ds.client.get(pack["trace_url"] + ".csv", cookies=actor_cookies(ds, "root"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == len(pack["evidence"]) + len(pack["external_evidence"])
    brain_rows = [r for r in rows if r["origin"] == "dbrain_corpus"]
    web_rows = [r for r in rows if r["origin"] == "outside_dbrain_corpus"]
    assert [r["key"] for r in brain_rows] == [e["source_key"] for e in pack["evidence"]]
    assert [r["ref"] for r in web_rows] == [f"W{n}" for n in range(1, len(web_rows) + 1)]
    assert {r["badge"] for r in web_rows} == {"Outside dbrain corpus / Brave / ephemeral"}
    assert {r["depth"] for r in web_rows} == {"provider snippet"}
    assert {r["cited_by_answer"] for r in rows} == {"yes", ""}
    assert all(r["row_url"].startswith("http://localhost/") for r in brain_rows)


async def test_exports_follow_the_runs_privacy(ds):
    response = await ds.client.get(
        "/-/research.json", params={"q": "espresso"}, cookies=actor_cookies(ds, "alice")
    )
    trace_url = response.json()["trace_url"]
    for suffix in (".md", ".csv"):
        mine = await ds.client.get(trace_url + suffix, cookies=actor_cookies(ds, "alice"))
        assert mine.status_code == 200 and "espresso" in mine.text.lower()
        for cookies in (actor_cookies(ds, "bob"), {}):
            other = await ds.client.get(trace_url + suffix, cookies=cookies)
            assert other.status_code == 404
            assert "espresso" not in other.text.lower()


def test_spreadsheet_formulas_in_web_text_stay_text():
    pack = {
        "evidence": [],
        "external_evidence": [
            {
                "source_key": "ext:brave:1",
                "origin": "outside_dbrain_corpus",
                "providers": ["brave"],
                "kind": "external",
                "title": '=HYPERLINK("https://evil.example","click")',
                "url": "https://evil.example/",
                "excerpt": "@SUM(1+1)",
            }
        ],
        "answer": {
            "status": "not_requested",
            "message": "",
            "sentences": [],
            "conflicts": {"status": "not_assessed", "items": []},
        },
    }
    (row,) = csv.DictReader(io.StringIO(exports.csv_text(pack, {"brave": "Brave"}, str)))
    assert row["title"] == '\'=HYPERLINK("https://evil.example","click")'
    assert row["excerpt"] == "'@SUM(1+1)"


def test_markdown_in_a_title_is_shown_not_applied():
    pack = {
        "question": "what is [x](javascript:alert(1))",
        "database": "brain",
        "run_id": "r",
        "judge": {
            "verdict": "no_evidence",
            "message": "Nothing in the top rows mentions x.",
            "combined": {},
        },
        "evidence": [],
        "external_evidence": [
            {
                "source_key": "ext:brave:1",
                "origin": "outside_dbrain_corpus",
                "providers": ["brave"],
                "kind": "external",
                "title": "**bold** [link](https://evil.example) <script>",
                "url": "https://example.com/page",
                "excerpt": "",
            }
        ],
        "answer": {
            "status": "not_requested",
            "message": "",
            "sentences": [],
            "conflicts": {"status": "not_assessed", "items": []},
        },
    }
    text = exports.markdown(pack, "2026-12-02T10:00:00", {}, str)
    assert not re.search(r"(?<!\\)\]\(", text)  # no link syntax left unescaped
    assert "<script>" not in text and "\\*\\*bold\\*\\*" in text


def test_the_cli_prints_a_run_as_markdown_or_csv(brain):
    markdown = CliRunner().invoke(cli, ["dbrain-research", str(brain[0]), "espresso", "--markdown"])
    assert markdown.exit_code == 0, markdown.output
    assert markdown.output.startswith("# espresso\n") and "## In your brain" in markdown.output
    table = CliRunner().invoke(cli, ["dbrain-research", str(brain[0]), "espresso", "--csv"])
    assert table.exit_code == 0, table.output
    rows = list(csv.DictReader(io.StringIO(table.output)))
    assert rows and rows[0]["ref"] == "1" and {r["origin"] for r in rows} == {"dbrain_corpus"}
