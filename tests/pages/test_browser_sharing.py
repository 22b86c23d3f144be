"""Issue 33 in a real browser (headless Chromium, sync Playwright): one citation label on the page
and in the Markdown, and a visitor's run whole for the visitor while the same address, passed on,
shows only what the run shares (the research page's ``?run=`` and compare). At 1280 and 375 px,
with screenshots in ``screenshots/``. Keep async tests out of this module.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest

from ..browser import (
    no_horizontal_overflow,
    root_page,
    serve_with_fake_web,
    shot,
)
from ..helpers import build_fixture_brain

WIDTHS = [1280, 375]
QUESTION = "sqlite fts5 bm25"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The test brain, web search on the fake providers for everyone (visitors included)."""
    tmp = tmp_path_factory.mktemp("browser-sharing")
    brain = tmp / "brain.db"
    build_fixture_brain(brain)
    with serve_with_fake_web(brain, tmp, {"providers": ["brave", "exa"], "allow": True}) as running:
        yield running


def visitor(browser, width: int):
    """A page of a browser that is not signed in, recording script errors."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    return page


def ask(page, server) -> str:
    """The question asked through the page's form (its live stream); the address it lands on."""
    page.goto(server["url"] + "/-/research")
    page.fill("#dbrain-q", QUESTION)
    page.check('input[name="external"][value="always"]')
    page.check('input[type="checkbox"][name="answer"]')
    page.click("button[type=submit]:has-text('Research')")
    page.wait_for_url(re.compile(r"run=\d{8}T"))
    return page.url


def labels_by_key(page) -> dict[str, str]:
    return dict(
        page.locator(".dbrain-evidence > .dbrain-row").evaluate_all(
            "rows => rows.map(r => [r.dataset.sourceKey,"
            " r.querySelector('.dbrain-ref').textContent])"
        )
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_a_visitors_run_is_theirs_whole_and_a_passed_on_link_is_shared(browser, server, width):
    mine = visitor(browser, width)
    try:
        address = ask(mine, server)
        assert "claim=" not in address  # the claim never stays in an address one copies
        run_id = urllib.parse.parse_qs(urllib.parse.urlsplit(address).query)["run"][0]
        rows = labels_by_key(mine)
        assert any(label.startswith("[W") for label in rows.values())
        # Every chip reads as the row it jumps to, brain and web in their own colours.
        chips = mine.locator("#dbrain-answer .dbrain-answer-text a.dbrain-cite")
        assert chips.count() >= 2
        for n in range(chips.count()):
            chip = chips.nth(n)
            row = mine.locator(chip.get_attribute("href"))
            assert row.locator(".dbrain-ref").inner_text() == chip.inner_text()
            web = chip.inner_text().startswith("[W")
            assert ("dbrain-cite-external" in chip.get_attribute("class")) is web
            assert row.get_attribute("data-origin") == ("external" if web else "local")
        markdown = mine.context.request.get(f"{server['url']}/-/research/runs/{run_id}.md").text()
        answer = markdown.split("## Answer\n", 1)[1].split("\n## ", 1)[0]
        assert re.findall(r"\[W?\d+\]", answer) == [
            chips.nth(n).inner_text() for n in range(chips.count())
        ]
        no_horizontal_overflow(mine)
        shot(mine, f"labels-own-run-{width}.png", full_page=False)
        assert mine.errors == []
    finally:
        mine.context.close()

    other = visitor(browser, width)
    try:
        other.goto(address)  # the same link, in someone else's browser
        assert other.url.endswith(f"/-/research/runs/{run_id}")
        body = other.inner_text("body")
        assert "Shared view" in body
        shown = labels_by_key(other)
        assert shown and set(shown) < set(rows)  # the cited rows only, under the same labels
        assert all(rows[key] == label for key, label in shown.items())
        shot(other, f"shared-link-{width}.png", full_page=False)
        other.goto(f"{server['url']}/-/research/compare?a={run_id}&b={run_id}")
        assert "Not your run" in other.inner_text("body")
        no_horizontal_overflow(other)
        shot(other, f"shared-compare-{width}.png", full_page=False)
        assert other.errors == []
    finally:
        other.context.close()

    owner = root_page(browser, server, width=width)
    try:
        owner.goto(address)  # root sees every run whole
        assert labels_by_key(owner) == rows
    finally:
        owner.context.close()
