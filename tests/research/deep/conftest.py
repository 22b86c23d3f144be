"""The deep research tests' fixtures: the film's fake web (one per module), reset for each
test, and the film brain (``film.py`` holds the rest)."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.providers.brave import clear_plan_memo

from ...helpers import BRAVE_KEY, EXA_KEY
from .film import PAGES, make_film_brain


@pytest.fixture(scope="module")
def film_web():
    with FakeWeb(brave_keys=(BRAVE_KEY,), exa_keys=(EXA_KEY,), pages=PAGES) as server:
        yield server


@pytest.fixture
def web(film_web, monkeypatch):
    monkeypatch.setenv("TEST_BRAVE_KEY", BRAVE_KEY)
    monkeypatch.setenv("TEST_EXA_KEY", EXA_KEY)
    film_web.reset()
    clear_plan_memo()
    yield film_web
    film_web.reset()


@pytest.fixture
def film_brain(tmp_path: Path) -> Path:
    return make_film_brain(tmp_path / "brain.db")
