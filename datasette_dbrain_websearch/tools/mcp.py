"""The MCP tools (datasette-mcp): research, read a source, promote.

No ``from __future__ import annotations`` here: the MCP SDK finds a tool's ``Context``
parameter and its argument schema by resolving the annotations against the module's globals,
where the lazily imported types are not."""

from functools import partial
from typing import Annotated, Any, Literal

from ..config import Settings
from ..errors import ResearchError
from ..promotions import write_promotion
from ..requesters import cross_site_with_cookie, requester_of
from .calls import (
    MCP_SURFACE,
    ResearchQuery,
    checked_promotion,
    get_source,
    tool_research,
)
from .schemas import (
    KEY_DESCRIPTION,
    MCP_PROMOTE_DESCRIPTION,
    PARAMETERS,
    PROMOTE_SCHEMA,
    SOURCE_DESCRIPTION,
    may_reach_web,
    research_description,
)
from .shapes import Link, promotion_reply, same_path


def register_mcp(datasette: Any, mcp: Any) -> None:
    """datasette-mcp's ``register_mcp_tools``: ``dbrain_research``, ``dbrain_get_source`` and
    ``dbrain_promote``.

    The actor is the MCP HTTP request's (cookie or token, as for any Datasette request) and is
    checked on every call; a refusal is a ``ToolError``, which MCP clients see as ``isError``
    with the reason.
    """
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field

    def described(name: str) -> Any:
        return Field(description=PARAMETERS[name]["description"])

    @mcp.tool(
        name="dbrain_research",
        title="Research the dbrain brain",
        description=research_description(datasette),
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=may_reach_web(datasette)),
    )
    async def dbrain_research(
        ctx: Context,
        question: Annotated[str, described("question")],
        limit: Annotated[
            int | None, Field(ge=1, description=PARAMETERS["limit"]["description"])
        ] = None,
        kind: Annotated[Literal["all", "item", "source"], described("kind")] = "all",
        tags: Annotated[list[str] | None, described("tags")] = None,
        source_types: Annotated[list[str] | None, described("source_types")] = None,
        since: Annotated[str, described("since")] = "",
        until: Annotated[str, described("until")] = "",
        external: Annotated[Literal["never", "on_weak", "always"], described("external")] = "never",
        providers: Annotated[list[str] | None, described("providers")] = None,
        freshness: Annotated[str, described("freshness")] = "",
        read: Annotated[
            int | None, Field(ge=0, le=10, description=PARAMETERS["read"]["description"])
        ] = None,
        sites: Annotated[list[str] | None, described("sites")] = None,
        not_sites: Annotated[list[str] | None, described("not_sites")] = None,
        answer: Annotated[bool, described("answer")] = False,
        database: Annotated[str | None, described("database")] = None,
        export: Annotated[Literal["none", "markdown"], described("export")] = "none",
        depth: Annotated[Literal["quick", "deep"], described("depth")] = "quick",
        strategy: Annotated[Literal["auto", "pro"], described("strategy")] = "auto",
    ) -> dict[str, Any]:
        query = ResearchQuery.from_call(locals())
        actor, link = mcp_caller(datasette, ctx)
        request = mcp_request(ctx)
        settings = Settings.from_datasette(datasette)
        try:
            return await tool_research(
                datasette,
                actor,
                query,
                MCP_SURFACE,
                link,
                # The heavy-question limit per person, and no spending for another site, as
                # for the JSON API.
                requester=requester_of(request, settings.trust_forwarded_for) if request else None,
                cross_site=cross_site_with_cookie(request, settings.same_site_spends)
                if request
                else False,
            )
        except ResearchError as exc:
            raise ToolError(refusal_text(exc)) from None

    @mcp.tool(
        name="dbrain_get_source",
        title="Read one row of the dbrain brain",
        description=SOURCE_DESCRIPTION,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    async def dbrain_get_source(
        ctx: Context,
        key: Annotated[str, Field(description=KEY_DESCRIPTION)],
        database: Annotated[str | None, described("database")] = None,
    ) -> dict[str, Any]:
        actor, link = mcp_caller(datasette, ctx)
        try:
            return await get_source(datasette, actor, key, database, link)
        except ResearchError as exc:
            raise ToolError(refusal_text(exc)) from None

    def promoting(name: str) -> Any:
        return Field(description=PROMOTE_SCHEMA["properties"][name]["description"])

    @mcp.tool(
        name="dbrain_promote",
        title="Keep web results in the dbrain brain",
        description=MCP_PROMOTE_DESCRIPTION,
        annotations=ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )
    async def dbrain_promote(
        ctx: Context,
        run_id: Annotated[str, promoting("run_id")],
        keys: Annotated[list[str], promoting("keys")],
        tags: Annotated[list[str] | None, promoting("tags")] = None,
        note: Annotated[str, promoting("note")] = "",
    ) -> dict[str, Any]:
        actor, link = mcp_caller(datasette, ctx)
        try:
            promotion, trace, brain, _ = await checked_promotion(
                datasette, actor, run_id, keys, tags, note
            )
            results = await write_promotion(datasette, actor, trace, promotion, brain)
        except ResearchError as exc:
            raise ToolError(refusal_text(exc)) from None
        return promotion_reply(datasette, trace, results, link)


def mcp_request(ctx: Any) -> Any:
    """The MCP call's HTTP request as Datasette's ``Request`` (None: not over HTTP)."""
    from datasette.utils.asgi import Request

    scope = getattr(ctx.request_context.request, "scope", None)
    return Request(scope, None) if isinstance(scope, dict) else None


def mcp_caller(datasette: Any, ctx: Any) -> tuple[dict | None, Link]:
    """The actor of an MCP call (Datasette put it on the HTTP request's scope) and absolute
    links for it: an MCP client is not on this site, so a bare path would mean nothing to it."""
    request = mcp_request(ctx)
    if request is None:
        return None, same_path
    actor = request.scope.get("actor")
    return (actor if isinstance(actor, dict) else None), partial(datasette.absolute_url, request)


def refusal_text(error: ResearchError) -> str:
    return f"{error.message} ({error.code})"
