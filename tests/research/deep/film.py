"""The film brain and its web, shared by the deep research tests (and the browser's): a
two-part question whose second part is only on the fake web, found through the name the brain's
row gives. Its fixtures are in this folder's ``conftest.py``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from datasette_dbrain_websearch.demo.corpus import Page
from datasette_dbrain_websearch.demo.fakeweb import FakeWeb

from ...helpers import add_source, empty_brain, make_datasette
from ...helpers import web_config as base_web_config

QUESTION = "Where was the director of Lighthouse Keepers born?"
FILM_URL = "https://films.example.org/lighthouse-keepers"
ODUYA_URL = "https://people.example.net/marguerite-oduya"
# The second part of the question is only on the web, and only a search for the name the
# brain's row gives finds it: pages that share more of the question's words rank above it.
PAGES = (
    Page(
        ODUYA_URL,
        "Marguerite Oduya",
        "Marguerite Oduya is a Kenyan film director, born in Mombasa on the Kenyan coast. She "
        "studied cinema in Nairobi before she moved to Paris.",
        "article",
    ),
    Page(
        "https://coast.example.com/island-keepers",
        "Lighthouse keepers born on the islands",
        "Many lighthouse keepers were born on the islands they served, and their children "
        "often became keepers too.",
        "article",
    ),
    Page(
        "https://history.example.com/keepers-of-the-light",
        "Keepers of the light",
        "Lighthouse keepers born in the nineteenth century kept a log of every storm.",
        "article",
    ),
    Page(
        "https://maine.example.org/keepers",
        "Maine's lighthouse keepers",
        "Maine's lighthouse keepers, most of them born nearby, tended the lamps for two centuries.",
        "article",
    ),
)
CROSS_SITE = {"sec-fetch-site": "cross-site"}


def make_film_brain(path: Path) -> Path:
    """A brain that holds the film, whose row names its director, and nothing about her."""
    empty_brain(path)
    conn = sqlite3.connect(path)
    with conn:
        add_source(
            conn,
            FILM_URL,
            title="Lighthouse Keepers (film)",
            extracted_text="Lighthouse Keepers is a 2019 drama film written and directed by "
            "Marguerite Oduya. The film follows two brothers who tend a lighthouse on a "
            "storm-battered island.",
            extract_status="ok",
        )
    conn.close()
    return path


def web_config(fake: FakeWeb, deep_budgets: dict[str, int] | None = None, **external: Any):
    config = base_web_config(
        fake, read_via=f"{fake.url}/reader/", read_unresolved=True, count=2, **external
    )
    if deep_budgets:
        config["deep"] = deep_budgets
    return config


async def film_ds(brain: Path, fake: FakeWeb, **config: Any):
    ds = make_datasette([str(brain)], plugin_config=web_config(fake, **config))
    await ds.invoke_startup()
    return ds


def searches(fake: FakeWeb) -> list[Any]:
    return [r for r in fake.requests if r.provider != "reader"]


def reads(fake: FakeWeb) -> list[Any]:
    return [r for r in fake.requests if r.provider == "reader"]


def web_row(pack: dict[str, Any], url: str) -> dict[str, Any] | None:
    return next((r for r in pack["external_evidence"] if r["url"] == url), None)
