"""Every control on every page is a target of at least 24 x 24 CSS px (WCAG 2.2, 2.5.8), at
1280 and at 375 px, signed in as root (who sees every control: web search, promotion, usage).

Sync Playwright only: keep async tests out of this module.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from ..browser import root_page, small_targets

PAGES = (
    "/-/research",
    "/-/research?q=sqlite+fts5",
    "/-/research?q=lattice+qcd&external=always&answer=1",
    "/-/research/runs",
    "/-/research/usage",
    "/-/research/compare?q=lattice+qcd",
)


@pytest.fixture(scope="module")
def saved_run(server):
    """A saved run's page (its trace), from a research run answered with the web."""
    url = server["url"] + "/-/research.json?q=lattice+qcd&answer=1"
    with urllib.request.urlopen(url) as response:
        return json.load(response)["trace_url"]


def test_every_control_is_at_least_24px(browser, server, saved_run):
    """Each page is loaded once and measured at both widths (the layout follows the window)."""
    page = root_page(browser, server, width=1280)
    try:
        small = {}
        for path in (*PAGES, saved_run):
            page.goto(server["url"] + path)
            page.wait_for_load_state("networkidle")
            for width in (1280, 375):
                page.set_viewport_size({"width": width, "height": 900})
                if found := small_targets(page):
                    small[f"{path} at {width} px"] = found
        assert not small, f"targets under 24 x 24 px: {small}"
    finally:
        page.context.close()
