"""Deep research on the page, at 1280 and 375 px: the live panel shows each round's queries,
why each was asked and what it added (not the raw progress lines), and the saved run shows the
rounds, the stop reason and the confidence beside the answer.

Sync Playwright only: keep async tests out of this module.
"""

from __future__ import annotations

import json
import urllib.parse

import pytest

from ..browser import (
    no_horizontal_overflow,
    root_page,
    serve_with_fake_web,
    shot,
    small_targets,
)
from ..research.deep.film import PAGES, QUESTION, make_film_brain

ODUYA = "Marguerite Oduya"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The film brain (its row names the director) and a fake web that knows her."""
    tmp = tmp_path_factory.mktemp("deep")
    brain = make_film_brain(tmp / "brain.db")

    def web(fake) -> dict:
        return {
            "providers": ["brave"],
            "allow": {"id": "root"},
            "cache_ttl": 0,
            "read_via": f"{fake.url}/reader/",  # the fake web reads its own pages
            "read_unresolved": True,  # whose names resolve nowhere offline
            "count": 2,
        }

    plugin = {"semantic": {"model": ""}}
    with serve_with_fake_web(brain, tmp, web, plugin, pages=PAGES) as running:
        yield running


def stay_on_the_panel(page, finished: dict[str, str]) -> None:
    """Let the stream run to its end, but point its last line at the panel itself, so the
    page keeps the live panel to look at; ``finished["url"]`` is where it would have gone."""

    def handle(route):
        response = route.fetch()
        lines = []
        for line in response.text().splitlines():
            event = json.loads(line) if line.strip() else None
            if event and event.get("stage") == "done":
                finished["url"] = event["url"]
                line = json.dumps({**event, "url": "#dbrain-progress"})
            lines.append(line)
        route.fulfill(response=response, body="\n".join(lines) + "\n")

    page.route("**/-/research/stream*", handle)


@pytest.mark.parametrize("width", [1280, 375])
def test_the_rounds_are_shown_live_and_kept_beside_the_answer(browser, server, width):
    page = root_page(browser, server, width=width)
    try:
        page.goto(server["url"] + "/-/research")
        page.fill("#dbrain-q", QUESTION)
        page.check('input[name="external"][value="always"]')
        page.check('input[name="answer"][type="checkbox"]')
        page.check('input[name="depth"]')
        finished: dict[str, str] = {}
        stay_on_the_panel(page, finished)
        page.click(".dbrain-form button[type=submit]")
        panel = page.locator("#dbrain-progress")
        panel.get_by_text("Done: opening the results").wait_for()
        # Each round an item: its queries, why each was asked, what it added.
        rounds = panel.locator(".dbrain-step-round")
        assert rounds.count() == 2
        first, second = rounds.nth(0).inner_text(), rounds.nth(1).inner_text()
        assert first.startswith("Round 1") and QUESTION in first
        assert second.startswith("Round 2") and ODUYA in second
        assert "depends on" in second and "\u2192 1 new row" in second
        # A follow-up's own search is a note on its round, not lines of their own.
        after = rounds.nth(1).evaluate("el => el.nextElementSibling.textContent")
        assert after == "Writing an answer"
        assert "\u2026" not in first  # round 1's own lines are lines of the panel
        stopped = panel.locator(".dbrain-step-stopped").inner_text()
        assert "stopped after 2 rounds" in stopped and "confidence high" in stopped
        no_horizontal_overflow(page)
        shot(page, f"deep-progress-{width}.png", full_page=False)

        # The saved run: the stop reason and confidence beside the answer, the rounds kept.
        page.unroute("**/-/research/stream*")
        page.goto(urllib.parse.urljoin(server["url"], finished["url"]))
        record = page.locator(".dbrain-deep")
        stop = record.locator(".dbrain-research-stop").inner_text()
        assert "Deep research: 2 rounds; stopped: answered" in stop
        assert "confidence high" in stop and "whether a sentence answers" in stop
        answer = page.locator("#dbrain-answer").bounding_box()
        assert 0 <= answer["y"] - record.bounding_box()["y"] < 400  # right above the answer
        record.locator("summary").click()
        kept = record.locator(".dbrain-rounds li[data-round='2']").inner_text()
        assert ODUYA in kept and "1 new row" in kept and "the web searched" in kept
        assert "A sentence now answers the question" in kept
        assert small_targets(page) == []
        no_horizontal_overflow(page)
        record.evaluate("el => el.scrollIntoView()")
        shot(page, f"deep-run-{width}.png", full_page=False)
        assert page.console_errors == []
    finally:
        page.context.close()
