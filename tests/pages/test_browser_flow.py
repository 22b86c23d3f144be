"""The whole flow in a real browser: headless Chromium (Debian) driven by Playwright.

A real ``datasette serve`` (the ``server`` fixture in ``conftest.py``) runs the plugin over the
test brain, with web search pointed at the fake provider server on loopback. Sync Playwright
only: keep async tests out of this module.
Screenshots go to ``screenshots/`` (git-ignored) for people to look at.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time

import pytest

from ..browser import no_horizontal_overflow, shot


def saved_runs(server, page) -> int:
    """How many runs the server has saved (the plugin database next to the brain), once the
    run on the page is among them: a run is saved in the background after its answer is sent,
    so counting at once could miss it and find it later as a "new" run."""
    run_id = page.input_value('input[name="run_id"]')
    conn = sqlite3.connect(server["brain"].parent / "research_runs.db")
    try:
        for _ in range(600):  # a guard against a hang, not a bound on the save's time
            found = conn.execute(
                "select count(*) from dbrain_websearch_runs where run_id = ?", [run_id]
            ).fetchone()[0]
            if found:
                return conn.execute("select count(*) from dbrain_websearch_runs").fetchone()[0]
            time.sleep(0.05)
        raise AssertionError(f"run {run_id} was never saved")
    finally:
        conn.close()


def scroll_to(locator) -> float:
    """Bring a row to the middle of the screen; returns where its top is on the screen."""
    locator.evaluate("el => el.scrollIntoView({block: 'center'})")
    return screen_top(locator)


def screen_top(locator) -> float:
    return locator.evaluate("el => el.getBoundingClientRect().top")


def test_web_search_promote_in_place_and_find_it_locally(page, server):
    page.goto(server["url"] + "/-/research")
    assert not page.is_visible("#dbrain-progress")  # only shown while a run is in flight
    page.fill("#dbrain-q", "lattice qcd")
    page.check('input[name="external"][value="always"]')
    page.click("button[type=submit]:has-text('Research')")
    # The script streams the stages, then opens the saved run (?run=...).
    page.wait_for_url(re.compile(r"run=\d{8}T"))
    body = page.inner_text("body")
    assert not page.is_visible("#dbrain-progress")
    assert "Outside dbrain corpus / Brave / ephemeral" in body
    assert re.search(r"Brain: \d+ · Web: \d+ \(Brave\)", body)
    shot(page, "research-web-1280.png")
    url, runs = page.url, saved_runs(server, page)
    first = page.locator(".dbrain-row-external").first
    title = first.locator(".dbrain-title").inner_text()
    top = scroll_to(first)
    first.locator(".dbrain-promote").click()
    done = first.locator(".dbrain-promoted")
    done.wait_for()
    key = done.locator("code").inner_text()
    assert re.fullmatch(r"src:[0-9a-f]{12}", key)
    assert f"Added “{title}” as {key}." in page.inner_text(".dbrain-status")
    # A brain row now, in place: the ephemeral badge is gone.
    assert first.locator(".dbrain-badge").first.inner_text() == "Saved to your brain"
    assert "ephemeral" not in first.inner_text()
    # In place: same page, the row where it was on the screen, no second search saved.
    assert page.url == url and abs(screen_top(first) - top) <= 1
    assert saved_runs(server, page) == runs
    shot(page, "promoted-in-place-1280.png", full_page=False)
    # Ask again: the promoted page is now a local dbrain source, found by local search.
    page.goto(server["url"] + "/-/research?q=lattice+qcd&external=always")
    local = page.locator(f".dbrain-row-source[data-source-key='{key}']")
    assert local.count() == 1
    assert local.locator(".dbrain-title").inner_text() == title
    assert "dbrain source" in local.inner_text()
    assert page.console_errors == []


def row_keys(page) -> list[str]:
    return page.eval_on_selector_all(".dbrain-row", "rows => rows.map(r => r.dataset.sourceKey)")


@pytest.mark.parametrize("width", [1280, 375])
def test_marks_change_the_row_in_place(page, server, width):
    """👍 lifts the row where the person looks, as the saved run ranks it; the address then
    names the run, so a reload shows the same rows and marks without a new search."""
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always&provider=all")
    runs = saved_runs(server, page)
    local = page.locator('.dbrain-row[data-origin="local"]')
    key, above = (local.nth(i).get_attribute("data-source-key") for i in (-1, -2))
    before = row_keys(page)
    taking = page.locator(f'.dbrain-row[data-source-key="{before[before.index(key) + 1]}"]')
    row = page.locator(f'.dbrain-row[data-source-key="{key}"]')
    top = scroll_to(row)
    thumbs_up = row.locator('.dbrain-mark[data-value="relevant"]')
    thumbs_up.click()
    page.wait_for_function(
        "el => el.getAttribute('aria-pressed') === 'true'", arg=thumbs_up.element_handle()
    )
    lifted = row_keys(page)
    assert lifted.index(key) < lifted.index(above) and lifted.index(key) < before.index(key)
    assert "Saved your mark. The row moved up to" in page.inner_text(".dbrain-status")
    assert re.search(r"[?&]run=", page.url)  # named before the mark's reply was shown
    # As for 👎: the screen keeps still, the row that takes its place is the one the reader is
    # on now.
    assert abs(screen_top(taking) - top) <= 1
    assert taking.evaluate("el => el.contains(document.activeElement)")
    assert page.locator(".dbrain-status").is_visible()  # the toast, wherever the row is
    shot(page, f"marked-lifted-{width}.png", full_page=False)
    page.reload()
    assert row_keys(page) == lifted
    assert thumbs_up.get_attribute("aria-pressed") == "true"
    row.locator(".dbrain-more-marks summary").click()
    row.locator('.dbrain-mark[data-value="less"]').click()
    page.wait_for_function(
        "el => el.getAttribute('aria-pressed') === 'true'",
        arg=row.locator('.dbrain-mark[data-value="less"]').element_handle(),
    )
    assert thumbs_up.get_attribute("aria-pressed") == "false"
    assert page.locator(".dbrain-refine").is_visible()
    assert saved_runs(server, page) == runs
    assert page.console_errors == []


def test_thumbs_down_drops_the_row_in_place_and_the_saved_run_agrees(page, server):
    """Issue 19: a 👎 row goes below every row not so marked, on the page at once (the row that
    takes its place stays where it was on the screen) and in the saved run."""
    page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25")
    local = page.locator('.dbrain-evidence > .dbrain-row[data-origin="local"]')
    keys = [r.get_attribute("data-source-key") for r in local.all()]
    assert len(keys) >= 2
    page.set_viewport_size({"width": 1280, "height": 420})  # room to keep the screen still
    first = local.nth(0)
    top = scroll_to(first)
    first.locator('.dbrain-mark[data-value="irrelevant"]').click()
    page.wait_for_function(
        "key => document.querySelector('.dbrain-evidence > .dbrain-row:last-of-type')"
        ".dataset.sourceKey === key || [...document.querySelectorAll("
        "'.dbrain-evidence > .dbrain-row[data-origin=local]')].pop().dataset.sourceKey === key",
        arg=keys[0],
    )
    after = [r.get_attribute("data-source-key") for r in local.all()]
    assert after == keys[1:] + keys[:1]
    assert abs(screen_top(local.nth(0)) - top) <= 1  # the next row took its place
    saved_run = page.locator('#dbrain-feedback input[name="next"]').get_attribute("value")
    page.goto(server["url"] + saved_run)  # the saved run (?run=) is ranked so by the server
    saved = [r.get_attribute("data-source-key") for r in local.all()]
    assert saved[-1] == keys[0] and set(saved) == set(keys)
    assert page.console_errors == []


def test_rows_are_triaged_by_keyboard_alone_and_focus_stays_on_the_row(page, server):
    """Issue 19: j / k move, y / n / u mark, ? lists the keys; after every mark the focus is
    on a row (never dropped to the page), so the next j goes on from there."""
    page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always&provider=all")
    keys = page.locator("#dbrain-keys")
    assert keys.is_hidden()
    page.keyboard.press("?")
    assert keys.is_visible() and "not relevant" in keys.inner_text()
    page.keyboard.press("?")
    rows = page.locator(".dbrain-evidence > .dbrain-row")
    assert rows.count() >= 5

    def focused_row() -> str:
        return page.evaluate(
            "() => (document.activeElement.closest('.dbrain-row') || {dataset: {}})"
            ".dataset.sourceKey || ''"
        )

    def pressed(key: str, value: str) -> None:
        button = page.locator(
            f'.dbrain-row[data-source-key="{key}"] .dbrain-mark[data-value="{value}"]'
        )
        page.wait_for_function(
            "el => el.getAttribute('aria-pressed') === 'true'", arg=button.element_handle()
        )

    marked = []
    for step, (key, value) in enumerate([("y", "relevant"), ("u", "unsure"), ("n", "irrelevant")]):
        page.keyboard.press("j")
        row = focused_row()
        assert row and row not in marked, step
        page.keyboard.press(key)
        pressed(row, value)
        marked.append(row)
    # The third (a web row, not the last) dropped to the end; the row that took its place is
    # the one the reader is on now.
    fourth = focused_row()
    assert fourth and fourth not in marked
    page.keyboard.press("y")
    pressed(fourth, "relevant")
    # Focus stays on a row: the marked one, or, when 👍 lifted it (as 👎 drops one), the row
    # that took its place, so the triage goes on down the list.
    after = focused_row()
    assert after == fourth or (after and after not in marked)
    if after == fourth:
        page.keyboard.press("j")
    fifth = focused_row()
    page.keyboard.press("y")
    pressed(fifth, "relevant")
    assert focused_row()
    first, second, third = marked
    assert len({first, second, third, fourth, fifth}) == 5
    assert page.console_errors == []


def test_expand_widens_and_its_words_are_removable_chips(page, server):
    """Issue 19: after a 👍, Expand ORs the row's words into the search of the brain: no row
    is lost, the question stays, and each added word is a chip that takes it away."""
    page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always&provider=all")
    before = page.locator(".dbrain-evidence > .dbrain-row").count()
    row = page.locator(".dbrain-row-external").first
    thumbs_up = row.locator('.dbrain-mark[data-value="relevant"]')
    thumbs_up.click()
    page.wait_for_function(
        "el => el.getAttribute('aria-pressed') === 'true'", arg=thumbs_up.element_handle()
    )
    added = page.inner_text(".dbrain-refined-terms")
    assert added and added != "no new words yet"
    page.click("text=Expand: search again with these words too")
    page.wait_for_selector(".dbrain-expansion")
    assert page.input_value("#dbrain-q") == "sqlite fts5 bm25"
    chips = page.locator(".dbrain-chip-term")
    words = [c.inner_text().split()[0] for c in chips.all()]
    assert words and set(words) <= set(added.split(", "))
    assert page.locator(".dbrain-evidence > .dbrain-row").count() >= before
    # The address names the run Expand made: a reload shows it again, no new search.
    page.wait_for_function("() => /[?&]run=/.test(location.search)")
    assert "refine_from" not in page.url
    expanded, runs = row_keys(page), saved_runs(server, page)
    page.reload()
    assert row_keys(page) == expanded and saved_runs(server, page) == runs
    assert [c.inner_text().split()[0] for c in chips.all()] == words
    chips.first.click()
    page.wait_for_load_state()
    left = [c.inner_text().split()[0] for c in page.locator(".dbrain-chip-term").all()]
    assert left == words[1:]
    assert page.console_errors == []


def test_at_375_titles_are_whole_and_the_marks_menu_stays_in_its_row(page, server):
    """Issue 19: at 375 px titles were cut to "What is lattice QCD, and why does i…" and the
    "…" menu covered the next row."""
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always&provider=all")
    for title in page.locator(".dbrain-evidence .dbrain-title").all():
        assert title.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), title.inner_text()
    rows = page.locator(".dbrain-evidence > .dbrain-row")
    first, second = rows.nth(0), rows.nth(1)
    first.locator(".dbrain-more-marks summary").click()
    menu = first.locator(".dbrain-mark-menu")
    assert menu.is_visible()
    menu_box, next_box = menu.bounding_box(), second.bounding_box()
    assert menu_box["y"] + menu_box["height"] <= next_box["y"]
    no_horizontal_overflow(page)
    assert page.console_errors == []


def test_did_you_mean_fixes_a_typo_in_one_click(page, server):
    page.goto(server["url"] + "/-/research?q=sourdugh+startr")
    offer = page.locator(".dbrain-did-you-mean")
    assert offer.is_visible() and "sourdough starter" in offer.inner_text()
    # The fix comes first; the web stays one click away beside it (issue 30).
    web = page.locator(".dbrain-web-offer a.dbrain-button")
    assert web.is_visible()
    assert offer.bounding_box()["y"] < web.bounding_box()["y"]
    offer.locator("a").click()
    page.wait_for_url(re.compile(r"q=sourdough\+starter"))
    assert page.input_value("#dbrain-q") == "sourdough starter"
    assert page.locator(".dbrain-did-you-mean").count() == 0
    first = page.locator(".dbrain-evidence > .dbrain-row").first
    assert first.get_attribute("data-source-key") == "apple-note:sourdough"
    assert page.console_errors == []


def test_web_tab_in_the_first_viewport_filters_the_list(page, server):
    for width, height in ((1280, 900), (375, 800)):
        page.set_viewport_size({"width": width, "height": height})
        page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always&provider=all")
        tab = page.locator('.dbrain-tabs a[data-show="external"]')
        box = tab.bounding_box()
        assert box and box["y"] + box["height"] <= height, (width, box)
        shot(page, f"research-tabs-{width}.png", full_page=False)
        tab.click()
        assert page.locator(".dbrain-row-external").first.is_visible()
        assert not page.locator(".dbrain-row-source").first.is_visible()
        page.locator('.dbrain-tabs a[data-show="local"]').click()
        assert not page.locator(".dbrain-row-external").first.is_visible()
    assert page.console_errors == []


def test_search_the_web_in_one_click(page, server):
    page.set_viewport_size({"width": 375, "height": 800})
    # Not "lattice qcd": an earlier test promoted a page about it, so the brain holds it now.
    page.goto(server["url"] + "/-/research?q=kubernetes+network+policies")
    button = page.locator(".dbrain-web-offer a.dbrain-button")
    box = button.bounding_box()
    assert box and box["y"] + box["height"] <= 800  # the way out is on the first screen
    shot(page, "no-evidence-375.png", full_page=False)
    page.set_viewport_size({"width": 1280, "height": 900})
    shot(page, "no-evidence-1280.png", full_page=False)
    assert button.inner_text() == "Search the web"
    button.click()
    page.wait_for_load_state()
    assert "external=always" in page.url
    assert page.locator(".dbrain-row-external").count() >= 1
    assert page.console_errors == []


def test_progress_panel_shows_stages(page, server):
    page.goto(server["url"] + "/-/research")
    # Keep (across the coming navigation) what the progress panel showed while it was visible.
    page.evaluate(
        """() => {
            const panel = document.getElementById("dbrain-progress");
            new MutationObserver(() => {
                if (panel.hidden) return;
                const steps = [...panel.querySelectorAll("li")].map(li => li.textContent);
                sessionStorage.setItem("progress", JSON.stringify(steps));
            }).observe(panel, {attributes: true, childList: true, subtree: true});
        }"""
    )
    page.fill("#dbrain-q", "sqlite fts5 bm25")
    page.check('input[name="external"][value="always"]')
    page.select_option("#dbrain-provider", "all")
    page.click("button[type=submit]:has-text('Research')")
    page.wait_for_url(re.compile(r"run=\d{8}T"))
    steps = json.loads(page.evaluate("sessionStorage.getItem('progress')") or "[]")
    assert steps[0] == "Searching your brain"
    assert any(step.startswith("Local dbrain evidence:") for step in steps)
    assert any(step.startswith("Brave:") for step in steps)
    assert any(step.startswith("Exa:") for step in steps)
    assert any(step.startswith("Outside dbrain corpus:") for step in steps)
    assert "also found by Brave" in page.inner_text("body")
    assert page.console_errors == []


def test_layout_at_375px_and_keyboard(page, server):
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always&provider=all")
    no_horizontal_overflow(page)
    shot(page, "research-web-375.png")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "dbrain-q"
    page.locator("#dbrain-q").evaluate("el => el.blur()")
    page.keyboard.press("j")
    first_title = page.locator(".dbrain-row .dbrain-title").first.inner_text()
    assert page.evaluate("document.activeElement.textContent") == first_title
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert page.evaluate("document.activeElement.textContent") == first_title
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(server["url"] + "/-/research/runs")
    shot(page, "runs-1280.png", full_page=False)
    page.set_viewport_size({"width": 375, "height": 800})
    page.reload()
    no_horizontal_overflow(page)
    cell = page.locator('.dbrain-runs td[data-label="Verdict"]').first
    label = cell.evaluate("el => getComputedStyle(el, '::before').content")
    assert label == '"Verdict"'  # each cell says what it is on a phone
    shot(page, "runs-375.png")
    page.select_option("#runs-web", "yes")
    page.click(".dbrain-run-filters button")
    page.wait_for_url(re.compile(r"web=yes"))
    webbed = page.locator('.dbrain-runs td[data-label="Web rows"]').all_inner_texts()
    assert webbed and "–" not in webbed  # only runs that searched the web
    page.locator(".dbrain-runs a").first.click()
    assert "research_trace.v1 JSON" in page.inner_text("body")
    evidence = page.locator("#dbrain-evidence").bounding_box()
    raw = page.locator(".dbrain-raw").bounding_box()
    assert evidence["y"] < raw["y"]  # the run's evidence comes before its raw JSON
    assert not page.locator(".dbrain-raw pre").is_visible()
    no_horizontal_overflow(page)
    shot(page, "run-375.png")
    assert page.console_errors == []


def test_usage_page_shows_calls_and_caps_at_both_widths(page, server):
    page.goto(server["url"] + "/-/research?q=sqlite+fts5+bm25&external=always&provider=all")
    assert "Outside dbrain corpus" in page.inner_text("body")
    page.click("nav .nav-menu summary, details.nav-menu summary")
    page.click("text=Web search usage")
    page.wait_for_url(re.compile(r"/-/research/usage$"))
    body = page.inner_text("body")
    assert "Web search usage" in body and "/llm/context" in body and "$5.00" in body
    shot(page, "usage-1280.png", full_page=False)
    page.set_viewport_size({"width": 375, "height": 800})
    page.reload()
    no_horizontal_overflow(page)
    cell = page.locator('.dbrain-usage td[data-label="Calls"]').first
    assert cell.evaluate("el => getComputedStyle(el, '::before').content") == '"Calls"'
    shot(page, "usage-375.png")
    assert page.console_errors == []


def test_anonymous_visitor_is_told_how_to_search_the_web(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(server["url"] + "/-/research?q=kubernetes+network+policies")
        offer = page.locator(".dbrain-web-offer")
        assert "Sign in to search the web too" in offer.inner_text()
        assert page.inner_text("body").count("Sign in to search the web too") == 1  # not twice
        assert page.locator(".dbrain-web-offer a.dbrain-button").count() == 0
        assert page.locator('input[name="external"]').count() == 0  # no choice it may not make
        shot(page, "anonymous-1280.png", full_page=False)
    finally:
        context.close()
