"""The research page on a phone (375 x 812, an iPhone 13 mini): the verdict, the answer's first
sentence and the Brain / Web switch on the first screen, and the switch one tap away all down
the list.

Sync Playwright only: keep async tests out of this module.
"""

from __future__ import annotations

from ..browser import no_horizontal_overflow, root_page, shot

WIDTH, HEIGHT = 375, 812
QUESTION = "/-/research?q=sqlite+fts5+bm25&external=always&provider=all&answer=1"


def bottom(page, selector: str) -> float:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} not shown"
    return box["y"] + box["height"]


def test_first_screen_holds_verdict_answer_and_switch(browser, server):
    page = root_page(browser, server, width=WIDTH, height=HEIGHT)
    try:
        page.goto(server["url"] + QUESTION)
        no_horizontal_overflow(page)
        shot(page, "research-phone-first-screen.png", full_page=False)
        for part in (".dbrain-verdict", ".dbrain-tabs", ".dbrain-answer-text > span"):
            assert bottom(page, part) <= HEIGHT, f"{part} is below the first screen"
        assert page.console_errors == []
    finally:
        page.context.close()


def test_switch_stays_on_screen_down_the_list(browser, server):
    page = root_page(browser, server, width=WIDTH, height=HEIGHT)
    try:
        page.goto(server["url"] + QUESTION)
        last = page.locator("#dbrain-evidence > li.dbrain-row").last
        last.scroll_into_view_if_needed()
        tabs = page.locator(".dbrain-tabs").bounding_box()
        assert tabs is not None and tabs["y"] >= 0 and tabs["y"] + tabs["height"] <= HEIGHT
        shot(page, "research-phone-down-the-list.png", full_page=False)
        page.locator('.dbrain-tabs a[data-show="external"]').click()
        first_web = page.locator(".dbrain-row-external").first
        box = first_web.bounding_box()
        assert box is not None and 0 <= box["y"] < HEIGHT  # the web rows, from their first
        assert not page.locator(".dbrain-row-source").first.is_visible()
        assert page.console_errors == []
    finally:
        page.context.close()
