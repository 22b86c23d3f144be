"""What each tool call does, whichever framework makes it: research (its arguments as a
checked request, refused with the reason when it may not search the web), reading a source
and checking a promotion, each through the service as the page's requests go."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from .. import exports
from ..admission import requester_key
from ..config import Settings
from ..errors import ResearchError
from ..options import ResearchRequest, WebFields, checked_request
from ..permissions import PROMOTE, can
from ..promotion_request import chosen_rows, parse_request
from ..promotions import promotion_brain
from ..service import (
    RunOptions,
    access_for,
    actor_id_of,
    brain_row,
    choose_brain,
    owned_trace,
    research,
    researchable_brains,
    row_url_for,
)
from ..traces import TraceJSON
from .shapes import Link, compact_pack, same_path, source_row

MCP_SURFACE = "mcp"


AGENT_SURFACE = "agent"


@dataclass(frozen=True)
class ResearchQuery:
    """One research tool call's arguments, the same for MCP and the agent."""

    question: str
    limit: int | None = None
    kind: str = "all"
    tags: Sequence[str] = ()
    source_types: Sequence[str] = ()
    since: str = ""
    until: str = ""
    external: str = "never"
    providers: Sequence[str] = ()
    freshness: str = ""
    read: int | None = None
    sites: Sequence[str] = ()
    not_sites: Sequence[str] = ()
    answer: bool = False
    database: str | None = None
    export: str = "none"
    depth: str = "quick"
    strategy: str = "auto"

    @classmethod
    def from_call(cls, arguments: Mapping[str, Any]) -> ResearchQuery:
        """The query from a tool function's arguments (its ``locals()``): each tool declares
        the parameters in its own framework's way, and both build the query here. A list the
        caller left out (None) is empty."""
        names = [f.name for f in fields(cls)]
        given = {name: arguments[name] for name in names if name in arguments}
        for name in ("tags", "source_types", "providers", "sites", "not_sites"):
            given[name] = tuple(given.get(name) or ())
        return cls(**given)

    def request(self, settings: Settings) -> ResearchRequest:
        """The call's research request, checked as the page's is (``checked_request``).

        ``external`` and ``answer`` are always given, so the config's ``default_mode`` and
        ``answer.default`` never make a tool call search the web or write an answer unasked.
        """
        return checked_request(
            settings,
            question=self.question,
            limit=self.limit,
            kind=self.kind,
            tags=self.tags,
            source_types=self.source_types,
            since=self.since,
            until=self.until,
            depth=self.depth,
            strategy=self.strategy,
            answer=bool(self.answer),
            web=WebFields(
                mode=self.external,
                providers=self.providers,
                freshness=self.freshness,
                read=self.read,
                sites=self.sites,
                not_sites=self.not_sites,
            ),
        )


def web_refusal(settings: Settings, actor: dict | None) -> ResearchError:
    """Why this call may not search the web, and what to do instead."""
    instead = " Call again with external='never' to research the brain only."
    if not settings.web.enabled:
        return ResearchError(
            "Web search is turned off on this Datasette (external_search.enabled is false), "
            "so the web was not searched." + instead,
            403,
            "external_search_disabled",
        )
    why = (
        "You are not signed in, and searching the web needs an account allowed "
        "dbrain-external-search (root, or one named in external_search.allow)"
        if actor is None
        else f"Your account ({actor.get('id', '')}) is not allowed dbrain-external-search (root "
        "and the accounts named in external_search.allow are)"
    )
    return ResearchError(
        f"{why}, so the web was not searched." + instead,
        403,
        "external_search_not_permitted",
    )


async def tool_research(
    datasette: Any,
    actor: dict | None,
    query: ResearchQuery,
    surface: str,
    link: Link = same_path,
    requester: str | None = None,
    cross_site: bool = False,
) -> dict[str, Any]:
    """Run and save one research for a tool call; returns the compact pack agents read.

    ``requester`` is who a heavy question counts against (``admission``; the MCP request's
    actor or address); without one, a signed-in actor (the agent's). ``cross_site``: another
    site sent the MCP request with a cookie, so neither the web nor a model is used.

    Raises ResearchError for everything the caller can act on: no brain to research, a bad
    argument, a web search the call may not make, a busy brain, a costly question while the
    requester already has one running (429).
    """
    settings = Settings.from_datasette(datasette)
    access = await access_for(datasette, actor, settings, cross_site)
    database = await choose_brain(datasette, settings, access.brains, query.database)
    request = query.request(settings)
    web = access.web
    if request.web.mode != "never" and not (settings.web.enabled and web.permitted):
        raise web_refusal(settings, actor)
    if requester is None and actor_id_of(actor):
        requester = requester_key(actor_id_of(actor), None)
    run = RunOptions(actor, surface, settings, access, requester=requester)
    pack = await research(datasette, database, request, run)
    compact = compact_pack(pack, web.labels, link)
    if query.export == "markdown":
        compact["markdown"] = exports.markdown(
            pack, datetime.now(UTC).isoformat(), web.labels, link
        )
    return compact


async def get_source(
    datasette: Any, actor: dict | None, key: str, database: str | None, link: Link = same_path
) -> dict[str, Any]:
    """One row of a brain the actor may research, by key: the named brain, else the first
    that holds it."""
    key = key.strip()
    if key.startswith("ext:"):
        raise ResearchError(
            f"{key} is a web result of one research run, not a row of the brain: it lives only "
            "in that run (its trace_url) unless it is promoted.",
            404,
            "not_in_brain",
        )
    settings = Settings.from_datasette(datasette)
    allowed = await researchable_brains(datasette, actor, settings)
    chosen = await choose_brain(datasette, settings, allowed, database)
    searched = [chosen] if database else allowed
    for name in searched:
        hit = await brain_row(datasette, name, key)
        if hit is not None:
            return source_row(hit, row_url_for(datasette, name), name, link)
    raise ResearchError(f"No row with the key {key!r} in {', '.join(searched)}.", 404, "no_row")


async def checked_promotion(
    datasette: Any, actor: dict | None, run_id: str, keys: list[str], tags: Any, note: Any
) -> tuple[Any, TraceJSON, Any, list[dict[str, Any]]]:
    """The checks of ``POST /-/research/promote``, in its order (the request, permission, a run
    this actor owns, a brain that can take the rows, keys of that run's web rows): the
    promotion, the run, the brain and the rows, or the ResearchError that refuses it. A tool
    call has no browser, so an anonymous run's link makes no one its owner (``owns_run``):
    anyone else is answered as if the run did not exist, whatever keys they guess."""
    promotion = parse_request(
        {"run_id": run_id, "source_keys": keys, "tags": tags or [], "note": note or ""}
    )
    if not await can(datasette, actor, PROMOTE):
        raise ResearchError("You may not promote results (dbrain-promote).", 403, "forbidden")
    trace = await owned_trace(datasette, actor, promotion.run_id)
    brain = promotion_brain(datasette, trace)
    return promotion, trace, brain, chosen_rows(trace, promotion.source_keys)
