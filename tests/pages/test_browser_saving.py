"""Saving web rows to the brain, found as people look for it, at 1280 and 375 px: a row's own
Tags and Note beside its button, reached by keyboard; and, for a visitor, a disabled "Save to
brain" that says how to sign in (the p key says it too).

Sync Playwright only: keep async tests out of this module.
"""

from __future__ import annotations

import sqlite3

import pytest

from ..browser import root_page, serve_with_fake_web, shot
from ..helpers import build_fixture_brain

QUESTION = "/-/research?q=lattice+qcd&external=always"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Anyone may search the web here (so a visitor sees web rows); root alone may save."""
    tmp = tmp_path_factory.mktemp("saving")
    brain = tmp / "brain.db"
    build_fixture_brain(brain)
    web = {"providers": ["brave"], "allow": True}
    grants = {"dbrain-promote": {"id": "root"}}
    with serve_with_fake_web(brain, tmp, web, permissions=grants) as running:
        yield running


@pytest.mark.parametrize("width", [1280, 375])
def test_a_row_is_saved_with_its_own_tags_by_keyboard(browser, server, width):
    page = root_page(browser, server, width=width)
    try:
        page.goto(server["url"] + QUESTION)
        row = page.locator(".dbrain-row-external").nth(1)
        key = row.get_attribute("data-source-key")
        more = row.locator(".dbrain-promote-more summary")
        more.focus()
        page.keyboard.press("Enter")  # opens beside the row's own button
        tags = row.locator(f'input[name="tags:{key}"]')
        assert tags.is_visible()
        button = row.locator(".dbrain-promote").bounding_box()
        field = tags.bounding_box()
        assert field["y"] - (button["y"] + button["height"]) < 60  # beside it, not at the end
        page.keyboard.press("Tab")
        page.keyboard.type(f"kept-at-{width}")
        shot(page, f"save-row-tags-{width}.png", full_page=False)
        row.locator(".dbrain-promote").click()
        row.locator(".dbrain-promoted").wait_for()
        conn = sqlite3.connect(server["brain"])
        try:
            tagged = conn.execute(
                "select count(*) from sources where user_tags = ?", [f"kept-at-{width}"]
            ).fetchone()[0]
        finally:
            conn.close()
        assert tagged == 1
        assert page.console_errors == []
    finally:
        page.context.close()


@pytest.mark.parametrize("width", [1280, 375])
def test_a_visitor_is_told_how_to_sign_in_to_save(browser, server, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(server["url"] + QUESTION)
        row = page.locator(".dbrain-row-external").first
        assert row.locator(".dbrain-promote-off").is_disabled()
        assert "sign in to save" in row.inner_text()
        assert "/-/auth-token" in page.locator("#dbrain-promote-why").inner_text()
        row.locator(".dbrain-title").focus()
        page.keyboard.press("p")
        assert "/-/auth-token" in page.locator(".dbrain-status").inner_text()
        shot(page, f"save-signed-out-{width}.png", full_page=False)
    finally:
        context.close()
