"""The few places Datasette 0.65 and 1.0a differ, detected by feature, never by version string.

- Permissions: 0.65 asks ``permission_allowed`` hooks; 1.0a has registered actions, resources and
  ``datasette.allowed``.
"""

from __future__ import annotations

from typing import Any

RESEARCH = "dbrain-research"

ACTIONS = {
    RESEARCH: "Search a dbrain brain and read its research page and JSON API",
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
        )
    ]


def research_default_sql(action: str) -> Any:
    """1.0a: allow research by default; ``also_requires`` keeps it behind view-database."""
    if action != RESEARCH:
        return None
    from datasette.permissions import PermissionSQL

    return PermissionSQL.allow(reason=f"{RESEARCH} follows view-database")


def legacy_permission(datasette: Any, actor: dict | None, action: str, resource: Any) -> Any:
    """0.65: research is allowed wherever the actor may view the instance and the database."""
    if action != RESEARCH:
        return None

    async def inner() -> bool:
        if not await datasette.permission_allowed(actor, "view-instance", default=True):
            return False
        return await datasette.permission_allowed(actor, "view-database", resource, default=True)

    return inner
