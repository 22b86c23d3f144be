"""datasette-dbrain-websearch: Datasette hook implementations only.

Each hook is a few lines that call into the module that owns the behaviour.
"""

from __future__ import annotations

from typing import Any

from datasette import hookimpl

from . import compat, permissions


@hookimpl
def startup(datasette: Any) -> Any:
    from .startup import check_and_prepare

    return check_and_prepare(datasette)


@hookimpl
def register_routes(datasette: Any) -> list:
    from .views.actions import feedback_view, promote_view
    from .views.compare import compare_view
    from .views.research import research_view, stream_view
    from .views.runs import run_view, runs_view
    from .views.usage import usage_view

    return [
        (r"^/-/research(?P<format>\.json)?$", research_view),
        (r"^/-/research/promote$", promote_view),
        (r"^/-/research/compare(?P<format>\.json)?$", compare_view),
        (r"^/-/research/stream$", stream_view),
        (r"^/-/research/runs/(?P<run_id>[0-9T.Z]+-[0-9a-f]{12,64})/feedback$", feedback_view),
        (r"^/-/research/runs(?P<format>\.json)?$", runs_view),
        (r"^/-/research/usage(?P<format>\.json)?$", usage_view),
        (
            r"^/-/research/runs/(?P<run_id>[0-9T.Z]+-[0-9a-f]{12,64})(?P<format>\.json|\.md|\.csv)?$",
            run_view,
        ),
        (r"^/(?P<database>[^/]+)/-/research(?P<format>\.json)?$", research_view),
        (r"^/(?P<database>[^/]+)/-/research/stream$", stream_view),
    ]


@hookimpl
def actor_from_request(datasette: Any, request: Any) -> Any:
    """Scripts' tokens (``datasette dbrain-websearch token``), on the plugin's routes only."""
    from .tokens import actor_for_token

    return actor_for_token(datasette, request.headers.get("authorization", ""), request.path)


@hookimpl
def register_commands(cli: Any) -> None:
    from .cli.commands import register

    register(cli)


@hookimpl
def register_actions(datasette: Any) -> list:
    return permissions.actions()


@hookimpl
def register_secrets(datasette: Any) -> list:
    """datasette-secrets (when installed): the providers' keys it may hold."""
    return compat.stored_secrets()


@hookimpl
def register_events(datasette: Any) -> list:
    return compat.event_classes()


@hookimpl
def permission_resources_sql(datasette: Any, actor: Any, action: str) -> Any:
    return permissions.permission_sql(datasette, actor, action)


@hookimpl
def permission_allowed(datasette: Any, actor: Any, action: str, resource: Any) -> Any:
    return permissions.legacy_permission(datasette, actor, action, resource)


@hookimpl(tryfirst=True)
def menu_links(datasette: Any, actor: Any, request: Any) -> Any:
    from .views.menu import research_menu_links

    return research_menu_links(datasette, actor)


@hookimpl
def database_actions(datasette: Any, actor: Any, database: str, request: Any) -> Any:
    from .views.menu import research_database_actions

    return research_database_actions(datasette, actor, database)


@hookimpl
def register_llm_purposes(datasette: Any) -> list:
    """datasette-llm (when installed): the purpose answers are written for, so its config can
    choose and restrict the model (``purposes.dbrain-research-answer``)."""
    from .answer.model import llm_purposes

    return llm_purposes()


@hookimpl
def register_mcp_tools(datasette: Any, mcp: Any) -> None:
    """datasette-mcp (when installed): ``dbrain_research`` and ``dbrain_get_source`` at
    ``/-/mcp``, checked against the calling actor on every call."""
    from .tools.mcp import register_mcp

    register_mcp(datasette, mcp)


@hookimpl
def register_agent_tools(datasette: Any) -> list:
    """datasette-agent (when installed, Datasette 1.0a): research, reading a row, and
    promotion after the person approves it in the chat."""
    from .tools.agent import agent_tools

    return agent_tools(datasette)


@hookimpl
def render_cell(value: Any, column: str, table: str, database: str, datasette: Any) -> Any:
    """A promoted source's key links the research run that found it."""
    from .views.provenance import promoted_source_cell

    return promoted_source_cell(datasette, database, table, column, value)


@hookimpl
def asgi_wrapper(datasette: Any) -> Any:
    """Bodies over the cap refused before anyone reads them (outermost), shed requesters'
    questions refused before Datasette routes them, unreadable forms answered as 400s, and
    signing in returning to research."""
    from .views.guards import capped_bodies, forms_never_500, shed_at_the_door
    from .views.sign_in import return_after_sign_in

    return lambda app: capped_bodies(
        shed_at_the_door(forms_never_500(return_after_sign_in(app)), datasette)
    )
