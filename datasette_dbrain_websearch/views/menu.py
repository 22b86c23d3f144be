"""The research links Datasette shows on its own pages: "Research" (and "Web search usage")
in its menu, and "Research this brain" among a brain's database actions; a busy brain hides
them rather than break the page.
"""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..errors import ResearchError
from ..permissions import RESEARCH, USAGE
from ..service import brain_databases, may, researchable_brains
from .common import research_path


def research_menu_links(datasette: Any, actor: dict | None):
    """The "Research" link in Datasette's menu, for actors who may research some brain, and
    "Web search usage" for those allowed to see what the providers cost."""

    async def inner() -> list[dict[str, str]]:
        settings = Settings.from_datasette(datasette)
        try:
            if not await researchable_brains(datasette, actor, settings):
                return []
        except ResearchError:  # a busy brain must not break every Datasette page
            return []
        links = [{"href": research_path(datasette, None, False), "label": "Research"}]
        if settings.web.enabled and await may(datasette, actor, USAGE):
            links.append(
                {"href": datasette.urls.path("/-/research/usage"), "label": "Web search usage"}
            )
        return links

    return inner


def research_database_actions(datasette: Any, actor: dict | None, database: str):
    """A "Research this brain" action on a brain's database page."""

    async def inner() -> list[dict[str, str]]:
        settings = Settings.from_datasette(datasette)
        try:
            if database not in await brain_databases(datasette, settings):
                return []
        except ResearchError:  # a busy brain must not break its database page
            return []
        if not await may(datasette, actor, RESEARCH, database):
            return []
        return [
            {
                "href": research_path(datasette, database, False),
                "label": "Research this brain",
                "description": "Search items and sources, ranked and explained, with a verdict",
            }
        ]

    return inner
