"""Issue 41 on the page, at 1280 and 375 px, over the demo brain and its fake web: a question
the brain holds words of but no answer to says "No answer in your brain" in plain words and
writes nothing; deep research that reads the page saying where the author trained leads its
answer with it and stops answered; with the web off it says it found no answer, at a low
confidence; and "If weak" with an answer in the brain says the web was skipped, and why.

Sync Playwright only: keep async tests out of this module.
"""

from __future__ import annotations

import urllib.parse

import pytest

from datasette_dbrain_websearch.demo import build_demo_brain

from ..browser import no_horizontal_overflow, root_page, serve_with_fake_web, shot, small_targets

MONGOLIA = "What is the capital of Mongolia?"
TRAINED = "Where did the author of The Slow Loaf train as a baker?"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("no-answer")
    brain = tmp / "brain.db"
    build_demo_brain(brain)

    def web(fake) -> dict:
        return {
            "providers": ["brave"],
            "allow": {"id": "root"},
            "cache_ttl": 0,
            "read_via": f"{fake.url}/reader/",
            "read_unresolved": True,
            "count": 5,
            "read": 2,
        }

    with serve_with_fake_web(brain, tmp, web, {"semantic": {"model": ""}}) as running:
        yield running


def research(browser, server, width: int, **params: str):
    page = root_page(browser, server, width=width)
    page.goto(server["url"] + "/-/research?" + urllib.parse.urlencode(params))
    return page


@pytest.mark.parametrize("width", [1280, 375])
def test_a_question_the_brain_cannot_answer_says_so_and_writes_nothing(browser, server, width):
    page = research(browser, server, width, q=MONGOLIA, answer="1")
    try:
        answer = page.locator("#dbrain-answer")
        none = answer.locator(".dbrain-answer-none")
        assert none.locator("strong").inner_text() == "No answer in your brain"
        assert "Mongolia" in none.inner_text()
        assert answer.locator(".dbrain-sentence").count() == 0
        # The evidence stays below the answer box, and the verdict above says the same.
        rows = page.locator(".dbrain-evidence")
        assert rows.locator("li.dbrain-row").count() > 0
        assert answer.bounding_box()["y"] < rows.bounding_box()["y"]
        verdict = page.locator(".dbrain-verdict").inner_text()
        assert verdict.startswith("Weak evidence") and "mongolia" in verdict.lower()
        assert verdict.lower().count("mongolia") == 1  # said once
        # Words for people: the verdict's numbers are under the page's details.
        assert "evidence score" not in verdict and "cosine" not in verdict
        assert small_targets(page) == []
        no_horizontal_overflow(page)
        shot(page, f"no-answer-{width}.png", full_page=False)
        assert page.console_errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize("width", [1280, 375])
def test_deep_research_answers_from_the_page_it_read_and_says_it(browser, server, width):
    page = research(browser, server, width, q=TRAINED, external="always", depth="deep", answer="1")
    try:
        stop = page.locator(".dbrain-research-stop").inner_text()
        assert "stopped: answered" in stop and "confidence high" in stop
        first = page.locator("#dbrain-answer .dbrain-sentence").first
        assert "Copenhagen and Lyon" in first.inner_text()
        assert first.locator(".dbrain-cite-external").inner_text() == "[W1]"
        verdict = page.locator(".dbrain-verdict")
        assert verdict.inner_text().startswith("Enough evidence")
        assert "The web answers it: [W1] says “Copenhagen and Lyon”." in verdict.inner_text()
        # The round it stopped on says the question is answered, not what is "still missing".
        page.locator(".dbrain-rounds summary").click()
        last = page.locator(".dbrain-rounds li[data-round]").last.inner_text()
        assert "A sentence now answers the question" in last and "Still missing" not in last
        no_horizontal_overflow(page)
        page.locator(".dbrain-deep").evaluate("el => el.scrollIntoView()")
        shot(page, f"deep-answered-{width}.png", full_page=False)
        assert page.console_errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize("width", [1280, 375])
def test_without_the_web_deep_research_finds_no_answer_and_is_not_confident(browser, server, width):
    page = research(browser, server, width, q=TRAINED, external="never", depth="deep", answer="1")
    try:
        stop = page.locator(".dbrain-research-stop").inner_text()
        assert "stopped: answered" not in stop and "confidence low" in stop
        none = page.locator("#dbrain-answer .dbrain-answer-none")
        assert none.locator("strong").inner_text() == "No answer in your brain"
        assert "Nothing says where" in none.inner_text()
        assert page.locator("#dbrain-answer .dbrain-sentence").count() == 0
        assert page.locator(".dbrain-verdict").inner_text().startswith("Weak evidence")
        no_horizontal_overflow(page)
        shot(page, f"deep-no-answer-{width}.png", full_page=False)
        assert page.console_errors == []
    finally:
        page.context.close()


def test_if_weak_with_an_answer_in_the_brain_says_the_web_was_skipped(browser, server):
    page = research(browser, server, 1280, q="cold climate heat pump", external="on_weak")
    try:
        verdict = page.locator(".dbrain-verdict").inner_text()
        assert verdict.startswith("Enough evidence")
        assert "Web search skipped: your brain holds the answer." in verdict
        assert page.console_errors == []
    finally:
        page.context.close()
