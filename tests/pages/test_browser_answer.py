"""The answer in a real browser: the model's draft streams in, then the verified answer sits
above the evidence with citation chips that jump to their rows, badged like them, and the
unsupported sentences and removed citations visibly marked. At 1280 px and 375 px.

A real ``datasette serve`` with the fake provider server and a fake ``llm`` model (registered
by a plugin file in ``--plugins-dir``). Sync Playwright only.
"""

from __future__ import annotations

import re

import pytest

from ..browser import no_horizontal_overflow, serve_with_fake_web, shot
from ..fake_models import INVENTED
from ..helpers import REPO, build_fixture_brain

FAKE_MODEL_PLUGIN = f"""
import sys
sys.path.insert(0, {str(REPO)!r})
import llm
from tests.fake_models import FakeModels

llm.plugins.pm.register(FakeModels(), name="dbrain-fake-models")
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser-answer")
    brain = tmp / "brain.db"
    build_fixture_brain(brain)
    plugins = tmp / "plugins"
    plugins.mkdir()
    (plugins / "fake_llm_models.py").write_text(FAKE_MODEL_PLUGIN)
    web = {"providers": ["brave"], "allow": {"id": "root"}}
    answer = {"synthesizer": "llm", "model": "dbrain-fake", "allow": {"id": "root"}}
    env = {"LLM_USER_PATH": str(tmp / "llm")}
    with serve_with_fake_web(
        brain, tmp, web, {"answer": answer}, env=env, plugins_dir=plugins
    ) as running:
        yield running


def ask_with_answer(page, server) -> None:
    page.goto(server["url"] + "/-/research")
    page.evaluate(
        """() => {
            const panel = document.getElementById("dbrain-progress");
            new MutationObserver(() => {
                const seen = JSON.parse(sessionStorage.getItem("seen") || "[]");
                seen.push(panel.textContent);
                sessionStorage.setItem("seen", JSON.stringify(seen));
            }).observe(panel, {childList: true, subtree: true, characterData: true});
        }"""
    )
    page.fill("#dbrain-q", "espresso grinder")
    page.check('input[name="external"][value="always"]')
    page.check('input[type="checkbox"][name="answer"]')
    page.click("button[type=submit]:has-text('Research')")
    page.wait_for_url(re.compile(r"run=\d{8}T"))


def test_answer_chips_jump_to_their_rows_and_marks_show(page, server):
    ask_with_answer(page, server)
    seen = page.evaluate("JSON.parse(sessionStorage.getItem('seen') || '[]')")
    # The progress panel said the model was writing, and never showed its draft (seed 003).
    assert any("is writing" in text for text in seen)
    assert not any(INVENTED in text or "penguin" in text.lower() for text in seen)
    answer = page.locator("#dbrain-answer")
    assert answer.is_visible()
    assert answer.bounding_box()["y"] < page.locator(".dbrain-evidence").bounding_box()["y"]
    local_chip = answer.locator(".dbrain-answer-text .dbrain-cite-local").first
    web_chip = answer.locator(".dbrain-answer-text .dbrain-cite-external").first
    # One label everywhere: [3] for a brain row, [W2] for a web row, as the exports cite them.
    assert re.fullmatch(r"\[\d+\]", local_chip.inner_text())
    assert re.fullmatch(r"\[W\d+\]", web_chip.inner_text())
    colours = [
        chip.evaluate("el => getComputedStyle(el).backgroundColor")
        for chip in (local_chip, web_chip)
    ]
    assert colours[0] != colours[1]
    assert answer.locator(".dbrain-sentence-unsupported").count() == 0
    removed = answer.locator(".dbrain-removed")
    assert "Removed: not supported by the rows it cited (3)" in removed.inner_text()
    assert removed.locator("del").count() == 3
    assert INVENTED in answer.locator(".dbrain-rejected del").inner_text()
    assert not any(INVENTED in t for t in answer.locator(".dbrain-answer-text").all_inner_texts())
    # A sentence citing only web rows sits under "From the web".
    assert answer.locator(".dbrain-answer-web-heading").inner_text().startswith("From the web")
    assert answer.locator(".dbrain-answer-web .dbrain-cite-local").count() == 0
    # A chip shows the sentence it cites on keyboard focus, and the row shows it marked.
    quote = local_chip.locator(".dbrain-cite-quote")
    assert not quote.is_visible()
    local_chip.focus()
    assert quote.is_visible() and "\u201c" in quote.inner_text()
    cited = page.locator(local_chip.get_attribute("href") + " .dbrain-cited mark").first
    assert cited.inner_text() in quote.inner_text()
    shot(page, "answer-1280.png", full_page=False)

    target = web_chip.get_attribute("href")
    web_chip.click()
    assert page.evaluate("location.hash") == target
    row = page.locator(target)
    assert "dbrain-row-external" in row.get_attribute("class")
    assert "Outside dbrain corpus" in row.inner_text()
    assert row.locator(".dbrain-ref-external").inner_text() == web_chip.inner_text()
    assert row.evaluate("el => el.matches(':target')")
    box, height = row.bounding_box(), page.viewport_size["height"]
    assert -2 <= box["y"] < height  # scrolled to it (sub-pixel above the top is fine)

    target = local_chip.get_attribute("href")
    local_chip.click()
    row = page.locator(target)
    assert "dbrain-row-external" not in row.get_attribute("class")
    assert "dbrain " in row.locator(".dbrain-badge-local").inner_text()
    assert row.locator(".dbrain-ref-local").inner_text() == local_chip.inner_text()
    assert page.console_errors == []


def test_answer_at_375px(page, server):
    page.set_viewport_size({"width": 375, "height": 800})
    ask_with_answer(page, server)
    no_horizontal_overflow(page)
    answer = page.locator("#dbrain-answer")
    assert answer.is_visible()
    assert answer.locator(".dbrain-cite").count() >= 2
    answer.evaluate("el => el.scrollIntoView()")
    shot(page, "answer-375.png", full_page=False)
    assert page.console_errors == []


@pytest.mark.parametrize("width, height", [(1280, 900), (375, 812)])
def test_the_answer_and_verdict_come_first_and_the_web_is_a_screen_away(
    page, server, width, height
):
    """Issue 18: after a run the web options fold to one line, so the verdict and the answer's
    first sentence are on the first screen; on a run with both kinds of rows the first web row
    is there too at 1280 (a column beside the brain's), and at 375 the Web tab that jumps to
    them is."""
    page.set_viewport_size({"width": width, "height": height})
    ask_with_answer(page, server)

    def top(selector: str) -> float:
        return page.locator(selector).first.evaluate("el => el.getBoundingClientRect().top")

    shot(page, f"answer-first-{width}.png", full_page=False)
    assert page.locator(".dbrain-external").is_hidden()  # folded: one line says what applied
    assert "Always" in page.locator(".dbrain-web-options summary").inner_text()
    assert top(".dbrain-verdict") < height
    assert top("#dbrain-answer .dbrain-sentence") < height
    if width >= 1100:
        web_row = page.locator(".dbrain-row-external").first
        brain_row = page.locator(".dbrain-evidence > .dbrain-row").first
        assert web_row.bounding_box()["x"] > brain_row.bounding_box()["x"] + width / 3
        assert top(".dbrain-row-external") < height
    else:
        web_tab = page.locator('.dbrain-tabs a[data-show="external"]')
        assert web_tab.bounding_box()["y"] + web_tab.bounding_box()["height"] <= height
    no_horizontal_overflow(page)
    page.locator(".dbrain-web-options summary").click()
    assert page.locator(".dbrain-external").is_visible()  # the options open in place
    assert page.console_errors == []
