"""The plugin's permissions: its actions, who is granted them by default, and asking Datasette.

0.65 asks ``permission_allowed`` hooks; 1.0a has registered actions, resources and
``datasette.allowed``; both are detected by feature, never by version string.
"""

from __future__ import annotations

from typing import Any

from datasette.utils import actor_matches_allow

from . import runs_db
from .config import Settings

RESEARCH = "dbrain-research"


WEB_SEARCH = "dbrain-external-search"


PROMOTE = "dbrain-promote"


LLM_ANSWER = "dbrain-llm-answer"


USAGE = "dbrain-view-usage"


ACTIONS = {
    RESEARCH: "Search a dbrain brain and read its research page and JSON API",
    WEB_SEARCH: "Let a research run call web search providers (Brave, Exa, SearXNG, ...)",
    PROMOTE: "Write chosen web results into a brain as dbrain sources",
    LLM_ANSWER: "Let a research run send its evidence to a language model to write the answer",
    USAGE: "See the web search providers' calls, errors and estimated spend",
}


async def can(datasette: Any, actor: dict | None, action: str, database: str | None = None) -> bool:
    """Is the actor allowed the action (on the database, for database-scoped actions)?"""
    if hasattr(datasette, "allowed"):
        from datasette.resources import DatabaseResource

        resource = DatabaseResource(database) if database else None
        return await datasette.allowed(action=action, resource=resource, actor=actor)
    return await datasette.permission_allowed(actor, action, resource=database, default=False)


def actions() -> list[Any]:
    """1.0a: the plugin's actions (imported lazily: these modules do not exist on 0.65)."""
    from datasette.permissions import Action
    from datasette.resources import DatabaseResource

    return [
        Action(
            name=RESEARCH,
            description=ACTIONS[RESEARCH],
            resource_class=DatabaseResource,
            also_requires="view-database",
        ),
        Action(name=WEB_SEARCH, description=ACTIONS[WEB_SEARCH]),
        Action(name=PROMOTE, description=ACTIONS[PROMOTE]),
        Action(name=LLM_ANSWER, description=ACTIONS[LLM_ANSWER]),
        Action(name=USAGE, description=ACTIONS[USAGE]),
    ]


def web_granted(datasette: Any, actor: dict | None) -> bool:
    """The plugin config's ``external_search.allow`` block matches this actor."""
    allow = Settings.from_datasette(datasette).web.allow
    return allow is not None and bool(actor_matches_allow(actor, allow))


def llm_answer_granted(datasette: Any, actor: dict | None) -> bool:
    """The plugin config's ``answer.allow`` block matches this actor."""
    allow = Settings.from_datasette(datasette).answer.allow
    return allow is not None and bool(actor_matches_allow(actor, allow))


GRANTS = {WEB_SEARCH: web_granted, LLM_ANSWER: llm_answer_granted}


PLUGIN_DB_ACTIONS = ("view-database", "view-table", "view-query", "execute-sql")


def may_view_plugin_database(actor: dict | None) -> bool:
    """The plugin database holds everyone's questions (runs are private to their actor) and
    paid web results: root only, like the runs list's view of everyone's runs."""
    return (actor or {}).get("id") == "root"


def plugin_database_name(datasette: Any) -> str | None:
    database = runs_db.plugin_database(datasette)
    return database.name if database is not None else None


def permission_sql(datasette: Any, actor: dict | None, action: str) -> Any:
    """1.0a: research is allowed by default (``also_requires`` keeps it behind view-database);
    web search and model answers only for actors the plugin's ``external_search.allow`` and
    ``answer.allow`` blocks name (root with ``--root`` and Datasette's own ``permissions:``
    grants work without them)."""
    if action == RESEARCH:
        from datasette.permissions import PermissionSQL

        return PermissionSQL.allow(reason=f"{RESEARCH} follows view-database")
    if action in GRANTS and GRANTS[action](datasette, actor):
        from datasette.permissions import PermissionSQL

        block = "external_search" if action == WEB_SEARCH else "answer"
        return PermissionSQL.allow(reason=f"{block}.allow in plugin config")
    name = plugin_database_name(datasette)
    if action in PLUGIN_DB_ACTIONS and name and not may_view_plugin_database(actor):
        from datasette.permissions import PermissionSQL

        return PermissionSQL(
            sql="SELECT :dbrain_db AS parent, NULL AS child, 0 AS allow, "
            "'the plugin database is private' AS reason",
            params={"dbrain_db": name},
        )
    return None


def legacy_permission(datasette: Any, actor: dict | None, action: str, resource: Any) -> Any:
    """0.65: research wherever the actor may view the database; web search and model answers
    for root and for actors the plugin's ``external_search.allow`` / ``answer.allow`` blocks
    name; promotion and the usage page for root."""
    if action in GRANTS:
        if (actor or {}).get("id") == "root" or GRANTS[action](datasette, actor):
            return True
        return None
    if action in (PROMOTE, USAGE):
        return True if (actor or {}).get("id") == "root" else None
    name = plugin_database_name(datasette)
    if action in PLUGIN_DB_ACTIONS and name:
        database = resource[0] if isinstance(resource, tuple) else resource
        if database == name and not may_view_plugin_database(actor):
            return False
    if action != RESEARCH:
        return None

    async def inner() -> bool:
        if not await datasette.permission_allowed(actor, "view-instance", default=True):
            return False
        return await datasette.permission_allowed(actor, "view-database", resource, default=True)

    return inner
