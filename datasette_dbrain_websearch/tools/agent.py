"""The datasette-agent tools: research, read a source, promote (with the approval card)."""

import html
import json
from collections.abc import Sequence
from typing import Any

from ..errors import ResearchError
from ..permissions import PROMOTE, RESEARCH
from ..promotions import write_promotion
from .calls import (
    AGENT_SURFACE,
    ResearchQuery,
    checked_promotion,
    get_source,
    tool_research,
)
from .schemas import (
    PROMOTE_DESCRIPTION,
    PROMOTE_SCHEMA,
    RESEARCH_SCHEMA,
    SOURCE_DESCRIPTION,
    SOURCE_SCHEMA,
    provider_labels,
    research_description,
)
from .shapes import promotion_reply


def agent_tools(datasette: Any) -> list[Any]:
    """datasette-agent's ``register_agent_tools``: research and reading a row for actors who
    may research, and promotion for actors allowed ``dbrain-promote`` (the agent offers a tool
    only to actors holding its ``required_permission``)."""
    from datasette_agent.tools import AgentTool

    return [
        AgentTool(
            name="dbrain_research",
            description=research_description(datasette),
            input_schema=RESEARCH_SCHEMA,
            fn=agent_research,
            required_permission=RESEARCH,
        ),
        AgentTool(
            name="dbrain_get_source",
            description=SOURCE_DESCRIPTION,
            input_schema=SOURCE_SCHEMA,
            fn=agent_get_source,
            required_permission=RESEARCH,
        ),
        AgentTool(
            name="dbrain_promote",
            description=PROMOTE_DESCRIPTION,
            input_schema=PROMOTE_SCHEMA,
            fn=agent_promote,
            required_permission=PROMOTE,
        ),
    ]


def agent_error(error: ResearchError) -> str:
    """A refusal as the agent's tools report one: JSON the model reads."""
    return json.dumps({"ok": False, "error": error.message, "code": error.code})


async def agent_research(
    datasette: Any,
    actor: dict | None,
    question: str,
    limit: int | None = None,
    kind: str = "all",
    tags: Sequence[str] = (),
    source_types: Sequence[str] = (),
    since: str = "",
    until: str = "",
    external: str = "never",
    providers: Sequence[str] = (),
    freshness: str = "",
    read: int | None = None,
    sites: Sequence[str] = (),
    not_sites: Sequence[str] = (),
    answer: bool = False,
    database: str | None = None,
    export: str = "none",
    depth: str = "quick",
    strategy: str = "auto",
) -> str:
    query = ResearchQuery.from_call(locals())
    try:
        return json.dumps(await tool_research(datasette, actor, query, AGENT_SURFACE))
    except ResearchError as exc:
        return agent_error(exc)


async def agent_get_source(
    datasette: Any, actor: dict | None, key: str, database: str | None = None
) -> str:
    try:
        return json.dumps(await get_source(datasette, actor, key, database))
    except ResearchError as exc:
        return agent_error(exc)


async def agent_promote(
    datasette: Any,
    actor: dict | None,
    context: Any,
    run_id: str,
    keys: list[str],
    tags: list[str] | None = None,
    note: str = "",
) -> str:
    """Promote web rows of a run after the person approves them in the chat.

    The checks come first, so nobody is asked to approve what would fail. The agent re-runs
    this function from the top once the person answers, so nothing is written before
    ``ask_user`` returns.
    """
    try:
        promotion, trace, brain, rows = await checked_promotion(
            datasette, actor, run_id, keys, tags, note
        )
    except ResearchError as exc:
        return agent_error(exc)
    approved = await context.ask_user(
        f"Add {len(rows)} web result{'s' if len(rows) != 1 else ''} to your brain "
        f"'{trace['database']}' as dbrain sources"
        + (f", tagged {', '.join(promotion.tags)}" if promotion.tags else "")
        + (f", with your note: “{promotion.note}”" if promotion.note else "")
        + "?",
        html=approval_html(rows, provider_labels(datasette)),
        text="\n".join(f"- {row['title']} <{row['url']}>" for row in rows),
    )
    if not approved:
        return json.dumps(
            {
                "ok": False,
                "declined": True,
                "error": "The person declined: nothing was written. Do not retry unless they ask.",
            }
        )
    try:
        results = await write_promotion(datasette, actor, trace, promotion, brain)
    except ResearchError as exc:
        return agent_error(exc)
    return json.dumps(promotion_reply(datasette, trace, results))


def approval_html(rows: list[dict[str, Any]], labels: dict[str, str]) -> str:
    """What the person approves: each web page's title, address and provider (escaped)."""
    items = "".join(
        "<li><strong>{}</strong><br><code>{}</code> (web result from {})</li>".format(
            html.escape(row["title"] or row["domain"]),
            html.escape(row["url"]),
            html.escape(" + ".join(labels.get(p, p) for p in row["providers"])),
        )
        for row in rows
    )
    return f"<ul>{items}</ul>"
