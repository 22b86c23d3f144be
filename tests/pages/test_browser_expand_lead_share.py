"""Expand, the answer's lead and a shared run in a real browser (issue 33; headless Chromium,
sync Playwright): Expand keeps a 👎 row below the rest and the Filters drawer as it was; a mixed
answer leads with the sentence that answers; a shared run's page holds the question, the answer
and the rows it cites. At 1280 and 375 px, with screenshots in ``screenshots/`` for people to
look at. Keep async tests out of this module.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from ..browser import (
    no_horizontal_overflow,
    root_page,
    serve_with_fake_web,
    shot,
)
from ..helpers import add_lattice_rows, build_fixture_brain

WIDTHS = [1280, 375]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The test brain with two general lattice rows (one a note of the person's), web search
    on the fake providers for everyone (so a visitor's run has web rows to share)."""
    tmp = tmp_path_factory.mktemp("browser-issue33")
    brain = tmp / "brain.db"
    build_fixture_brain(brain)
    add_lattice_rows(brain)
    web = {"providers": ["brave", "exa"], "allow": True}
    grants = {"dbrain-promote": {"id": "root"}}
    with serve_with_fake_web(brain, tmp, web, permissions=grants) as running:
        yield running


def row_keys(page) -> list[str]:
    return page.locator(".dbrain-evidence > .dbrain-row").evaluate_all(
        "rows => rows.map(r => r.dataset.sourceKey)"
    )


def drawer_open(page) -> bool:
    return page.locator("details.dbrain-filters").evaluate("el => el.open")


def press(row, value: str) -> None:
    button = row.locator(f'.dbrain-mark[data-value="{value}"]')
    button.click()
    button.page.wait_for_function(
        "el => el.getAttribute('aria-pressed') === 'true'", arg=button.element_handle()
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_expand_keeps_a_thumbs_down_row_below_and_the_drawer_shut(browser, server, width):
    page = root_page(browser, server, width=width)
    try:
        page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always")
        assert not drawer_open(page)
        dropped = row_keys(page)[0]
        press(page.locator(f'.dbrain-row[data-source-key="{dropped}"]'), "irrelevant")
        press(page.locator(".dbrain-row-external").first, "relevant")
        page.click("text=Expand: search again with these words too")
        page.wait_for_selector(".dbrain-expansion")
        page.wait_for_load_state("networkidle")
        assert not drawer_open(page)  # it opened by itself before (issue 33)
        keys = row_keys(page)
        assert dropped in keys and keys[-1] == dropped, keys
        carried = page.locator(
            f'.dbrain-row[data-source-key="{dropped}"] .dbrain-mark[data-value="irrelevant"]'
        )
        assert carried.get_attribute("aria-pressed") == "true"
        no_horizontal_overflow(page)
        shot(page, f"expand-thumbs-down-{width}.png", full_page=False)
        page.locator(f'.dbrain-row[data-source-key="{dropped}"]').scroll_into_view_if_needed()
        shot(page, f"expand-thumbs-down-row-{width}.png", full_page=False)
        assert page.console_errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_mixed_answer_leads_with_the_sentence_that_answers(browser, server, width):
    page = root_page(browser, server, width=width)
    try:
        page.goto(server["url"] + "/-/research?q=muon+g-2+anomaly+lattice&external=always&answer=1")
        first = page.locator("#dbrain-answer .dbrain-sentence").first
        assert "muon" in first.inner_text().lower()
        assert first.locator(".dbrain-cite-external").count() == 1
        assert "apple-note:LATTICE" in row_keys(page)  # the note was there to lead, and did not
        page.locator("#dbrain-answer").scroll_into_view_if_needed()
        no_horizontal_overflow(page)
        shot(page, f"answer-leads-{width}.png", full_page=False)
        assert page.console_errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_a_shared_run_shows_the_question_the_answer_and_the_cited_rows(browser, server, width):
    query = urllib.parse.urlencode({"q": "sqlite fts5 bm25", "external": "always", "answer": 1})
    with urllib.request.urlopen(f"{server['url']}/-/research.json?{query}") as response:
        pack = json.load(response)  # a visitor's run: not signed in
    cited = {k for s in pack["answer"]["sentences"] for k in s["citations"]}
    everyone = [*pack["evidence"], *pack["external_evidence"]]
    uncited = [r for r in everyone if r["source_key"] not in cited]
    assert cited and uncited
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(server["url"] + pack["trace_url"])
        body = page.inner_text("body")
        assert "Shared view" in body and "sqlite fts5 bm25" in body
        assert page.locator("#dbrain-answer .dbrain-sentence").count() == len(
            pack["answer"]["sentences"]
        )
        assert set(row_keys(page)) == cited
        for row in uncited:
            assert row["title"] not in body
        hidden = ".dbrain-timeline, .dbrain-raw, .dbrain-why, .dbrain-needs-extraction"
        assert page.locator(hidden).count() == 0
        no_horizontal_overflow(page)
        shot(page, f"shared-run-{width}.png")
        assert errors == []
    finally:
        context.close()
    owner = root_page(browser, server, width=width)
    try:
        owner.goto(server["url"] + pack["trace_url"])
        assert owner.locator(".dbrain-timeline").count() == 1
        assert set(row_keys(owner)) == {r["source_key"] for r in everyone}
    finally:
        owner.context.close()
