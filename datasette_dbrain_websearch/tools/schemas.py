"""The tools' argument schemas and descriptions: what an agent reads before it calls
``dbrain_research``, ``dbrain_get_source`` or ``dbrain_promote``, the same for MCP and the
agent, and when the research tool may reach the web (its description and MCP's hint)."""

from __future__ import annotations

from typing import Any

from ..config import Settings
from ..config_keys import ConfigError
from ..providers import registered_providers
from .shapes import SOURCE_TEXT_CHARS

PARAMETERS: dict[str, dict[str, Any]] = {
    "question": {"type": "string", "description": "What to research, in plain words."},
    "limit": {
        "type": "integer",
        "minimum": 1,
        "description": "Rows from the brain to return (default 10; the config caps it).",
    },
    "kind": {
        "type": "string",
        "enum": ["all", "item", "source"],
        "default": "all",
        "description": "item: saved posts, notes, stars; source: saved web pages; all: both.",
    },
    "tags": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Only rows with every one of these user tags.",
    },
    "source_types": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Only rows of these source types (web, github, apple_note, x, ...).",
    },
    "since": {"type": "string", "description": "Only rows dated on or after YYYY-MM-DD."},
    "until": {"type": "string", "description": "Only rows dated on or before YYYY-MM-DD."},
    "external": {
        "type": "string",
        "enum": ["never", "on_weak", "always"],
        "default": "never",
        "description": "Web search: never (the brain only), on_weak (only when the brain's "
        "evidence is weak) or always. Needs the dbrain-external-search permission; a call "
        "that may not search the web fails and says why.",
    },
    "providers": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Web providers to ask, by name, in fallback order, or ['all'] to ask "
        "every one at once (default: the config's external_search.providers, named in this "
        "tool's description). A provider this Datasette does not offer is refused. Only matters "
        "when the web is searched.",
    },
    "freshness": {
        "type": "string",
        "description": "Only web results from the past day, week, month or year (pd, pw, pm, "
        "py) or from a date range like 2026-01-01to2026-06-30 (default: the config's "
        "external_search.freshness). Only matters when the web is searched.",
    },
    "read": {
        "type": "integer",
        "minimum": 0,
        "maximum": 10,
        "description": "Read the pages of the top N web results before answering, so web rows "
        "and the answer rest on the pages' own text (depth 'page'), not the providers' snippets "
        "(default: the config's external_search.read).",
    },
    "sites": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Web results only from these sites (domains such as sqlite.org; "
        "subdomains count). Only matters when the web is searched.",
    },
    "not_sites": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Never web results from these sites.",
    },
    "export": {
        "type": "string",
        "enum": ["none", "markdown"],
        "default": "none",
        "description": "markdown: also return the run as a Markdown document (the verified "
        "answer with numbered references, brain rows [1], [2]…, web rows [W1]…, each with its "
        "origin and URL), ready to save or show the person.",
    },
    "depth": {
        "type": "string",
        "enum": ["quick", "deep"],
        "default": "quick",
        "description": "quick: one pass. deep: follow-up rounds (names the rows give that the "
        "question depends on, parts no evidence covers yet), reading web pages before citing "
        "them, until the question is covered or a budget (rounds, web searches, page reads, "
        "time) runs out; research says why it stopped and how confident it is. Searches the "
        "web only as external allows.",
    },
    "strategy": {
        "type": "string",
        "enum": ["auto", "pro"],
        "default": "auto",
        "description": "pro: a deep run whose rounds the answer's language model proposes "
        "(search, read a result, or stop), each checked against the budgets and the known "
        "results, its answer written as claims bound to row keys; needs the permission to "
        "send evidence to a model, else the deterministic rounds run (a warning says so).",
    },
    "answer": {
        "type": "boolean",
        "default": False,
        "description": "Also write a short answer whose [key] citations are checked against "
        "this run's rows.",
    },
    "database": {
        "type": "string",
        "description": "Which brain, when Datasette serves several (default: the first).",
    },
}


RESEARCH_SCHEMA = {"type": "object", "properties": PARAMETERS, "required": ["question"]}


KEY_DESCRIPTION = (
    "A row's key as research returns it: src:... for a saved page, or an item key such as "
    "x:..., apple-note:..., gh-star:... (ext: keys are web results, not rows of the brain)."
)


SOURCE_SCHEMA = {
    "type": "object",
    "properties": {
        "key": {"type": "string", "description": KEY_DESCRIPTION},
        "database": PARAMETERS["database"],
    },
    "required": ["key"],
}


SOURCE_DESCRIPTION = (
    "Read one row of the user's dbrain brain by its key (from dbrain_research): title, URL, "
    f"dates, tags and its text (summary first, at most {SOURCE_TEXT_CHARS:,} characters; "
    "truncated says when there is more, at row_url). Reads the brain only, never the web."
)


PROMOTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "run_id": {"type": "string", "description": "The run_id dbrain_research returned."},
        "keys": {
            "type": "array",
            "items": {"type": "string"},
            "description": "ext: keys of that run's web rows to keep in the brain.",
        },
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Tags for the kept pages (written as dbrain writes tags: lower case, "
            "hyphenated), so later research by tag finds them.",
        },
        "note": {
            "type": "string",
            "description": "Why the person keeps them, in their words: saved as a note in the "
            "brain, linked to each page, with the question and run that found it.",
        },
    },
    "required": ["run_id", "keys"],
}


PROMOTE_DESCRIPTION = (
    "Keep web results of a dbrain_research run in the user's brain: each ext: key becomes an "
    "ordinary dbrain source (src: key), found by later research. The person is shown the pages "
    "and asked to approve first; nothing is written unless they say yes. If they decline, do not "
    "retry unless they ask. Only web rows (origin outside_dbrain_corpus) of a run of this person "
    "can be promoted."
)


MCP_PROMOTE_DESCRIPTION = (
    "Keep web results of a dbrain_research run in the user's brain, with tags and a note if the "
    "person gives them: each ext: key becomes an ordinary dbrain source (src: key), found by "
    "later research. Call it only when the person asked to keep those pages; it writes to their "
    "brain. Only web rows (origin outside_dbrain_corpus) of a run of this person can be kept, "
    "and only by an account allowed dbrain-promote; keeping a page twice adds tags, never a "
    "second row."
)


def research_description(datasette: Any) -> str:
    """What the research tool does, and when it may reach the web and through which providers
    (the design's rule: an agent must never trigger a web search by accident)."""
    settings = readable_settings(datasette)
    if settings is not None and not settings.web.enabled:
        web = "Web search is turned off on this Datasette: external other than never fails."
    else:
        web = (
            "external='on_weak' searches the web only when the brain's evidence is weak, "
            "'always' searches it as well"
        )
        if settings is not None:
            labels = provider_labels(datasette)
            names = settings.web.providers
            web += " (through " + " → ".join(labels.get(n, n) for n in names) + "; providers "
            web += "chooses among " + ", ".join(repr(n) for n in names) + " or 'all')"
        web += (
            "; both need the dbrain-external-search permission, and a call that may not search "
            "the web fails with the reason."
        )
    return (
        "Research the user's dbrain brain (their saved notes, posts, stars and web pages): "
        "full-text search, ranked, with a verdict on whether the brain holds enough evidence. "
        "With the default external='never' it reads only the brain and never touches the web. "
        f"{web} Rows come in two lists: brain_rows (origin 'dbrain_corpus') are the user's own "
        "brain; web_rows (origin 'outside_dbrain_corpus', store 'ephemeral', with their "
        "provider) are web results that are NOT in the brain: never present one as the user's "
        "own note. answer=true adds a short answer whose [key] citations are verified against "
        "this run's rows. Each call is saved as a run (run_id, trace_url)."
    )


def provider_labels(datasette: Any) -> dict[str, str]:
    """Each provider's name as people read it (``brave`` -> ``Brave``)."""
    return {name: p.label for name, p in registered_providers(datasette).items()}


def readable_settings(datasette: Any) -> Settings | None:
    """The plugin's settings, or None while the config is invalid: datasette-mcp builds its
    tools when Datasette builds its routes, which may come before the startup check that
    stops Datasette with the config error."""
    try:
        return Settings.from_datasette(datasette)
    except ConfigError:
        return None


def may_reach_web(datasette: Any) -> bool:
    """MCP's ``openWorldHint`` for the research tool: annotations are fixed per tool when the
    server is built (not per call or actor), and the hint means "may reach an open world", so
    it is true whenever some call could search the web: when the config enables web search
    (and, while the config cannot be read, to be safe)."""
    settings = readable_settings(datasette)
    return settings is None or settings.web.enabled
