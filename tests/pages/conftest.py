"""The browser modules' default ``server``: a real ``datasette serve`` over the test brain, web
search on the fake providers for root, promotion and the usage page granted to root (one per
module; a module that needs another brain or config defines its own ``server``)."""

from __future__ import annotations

import pytest

from ..browser import serve_with_fake_web
from ..helpers import build_fixture_brain


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    brain = tmp / "brain.db"
    build_fixture_brain(brain)
    web = {
        "providers": ["brave", "exa"],
        "allow": {"id": "root"},
        "budgets": {"brave": {"daily_calls": 1000, "monthly_usd": 5}},
    }
    grants = {"dbrain-promote": {"id": "root"}, "dbrain-view-usage": {"id": "root"}}
    with serve_with_fake_web(brain, tmp, web, permissions=grants) as running:
        yield running
