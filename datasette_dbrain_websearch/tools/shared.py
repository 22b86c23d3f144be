"""What the MCP and agent tools share: the argument schemas, one research call and its
compact shape, reading a source, and checking a promotion."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Any

from .. import citations, display, exports, traces
from ..admission import requester_key
from ..brain import Hit, excerpt_fields, row_facts
from ..config import Settings
from ..config_keys import ConfigError
from ..errors import ResearchError
from ..options import ResearchRequest, WebFields, checked_request
from ..pack_json import LOCAL_ORIGIN, AnswerJSON, PackJSON, ranked_row
from ..permissions import PROMOTE, can
from ..promote import chosen_rows, parse_request
from ..promotions import promotion_brain, promotion_message
from ..providers import registered_providers
from ..service import (
    RunOptions,
    access_for,
    actor_id_of,
    brain_row,
    choose_brain,
    research,
    row_url_for,
    visible_run,
)
from ..traces import TraceJSON

MCP_SURFACE = "mcp"


AGENT_SURFACE = "agent"


SOURCE_TEXT_CHARS = 8000  # what dbrain_get_source returns of a row's text (about 2k tokens)


Link = Callable[[str], str]


def same_path(path: str) -> str:
    """Links for callers on this site (the agent's chat page): paths as they are."""
    return path


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
    database, _ = await choose_brain(datasette, actor, settings, query.database)
    request = query.request(settings)
    access = await access_for(datasette, actor, cross_site)
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


def compact_pack(pack: PackJSON, labels: dict[str, str], link: Link) -> dict[str, Any]:
    """What an agent needs of a pack: the verdict, what the web did, the rows, the verified
    answer (when asked for), warnings and the run.

    Brain rows and web rows come in two lists, as the pack's ``evidence`` and
    ``external_evidence`` do, so no row can pass for the other kind even when a caller cuts a
    long reply short; ``n`` is a row's place in the run's reading order (``ranking``), ``ref``
    its label (``citations``: ``3``, ``W2``), as the page and the Markdown cite it.
    """
    web = pack["external_search"]
    refs = citations.labels(pack)
    rows: dict[str, list[dict[str, Any]]] = {"evidence": [], "external_evidence": []}
    for n, entry in enumerate(pack["ranking"], start=1):
        row = ranked_row(pack, entry)
        rows[entry["list"]].append(
            {"ref": refs[row["source_key"]], **compact_row(n, row, labels, link)}
        )
    compact: dict[str, Any] = {
        "ok": True,
        "run_id": pack["run_id"],
        "question": pack["question"],
        "database": pack["database"],
        # The run's verdict over everything it found; the brain's alone beside it.
        "verdict": {
            **pack["judge"]["combined"],
            "brain": {k: pack["judge"][k] for k in ("verdict", "reason", "message")},
        },
        "web": {
            "mode": web["mode"],
            "searched": web["ran"],
            "providers": [labels.get(p, p) for p in web["providers"]],
            "skipped_reason": web["skipped_reason"],
        },
        "counts": {"brain": len(pack["evidence"]), "web": len(pack["external_evidence"])},
        "brain_rows": rows["evidence"],
        "web_rows": rows["external_evidence"],
        "warnings": [{"code": w["code"], "message": w["message"]} for w in pack["warnings"]],
    }
    if pack["answer"]["status"] != "disabled":
        compact["answer"] = compact_answer(pack["answer"])
    if pack.get("research"):
        compact["research"] = pack["research"]
    if pack.get("trace_url"):
        compact["trace_url"] = link(pack["trace_url"])
    return compact


def compact_row(
    n: int, row: Mapping[str, Any], labels: dict[str, str], link: Link
) -> dict[str, Any]:
    """One evidence row as an agent sees it: a brain row with its Datasette row URL, or a web
    row marked outside the brain, ephemeral, with its providers."""
    shown: dict[str, Any] = {
        "n": n,
        "key": row["source_key"],
        "origin": row["origin"],
    }
    if row["kind"] == "external":
        providers = [labels.get(p, p) for p in row["providers"]]
        shown |= {
            "store": row["store"],
            "providers": providers,
            "provenance": f"{display.web_badge(row['providers'], labels)}: a web result, not "
            "in the user's brain",
        }
    else:
        shown["provenance"] = display.LOCAL_BADGE
    shown |= {
        "kind": row["kind"],
        "title": row["title"],
        "url": row["url"],
        "excerpt": row["excerpt"],
    }
    if row.get("published_at"):
        shown["published_at"] = row["published_at"]
    if row["kind"] != "external":
        shown["source_type"] = row["source_type"]
        shown["row_url"] = link(row["row_url"])
    if row.get("also_found_by"):
        shown["also_found_by"] = [labels.get(p, p) for p in row["also_found_by"]]
    if row.get("provider_excerpt"):  # the provider's text about a page the brain holds
        shown["provider_excerpt"] = row["provider_excerpt"]
    if row.get("linked_source"):  # the page this item links to, in the brain, matched too
        page = row["linked_source"]
        shown["linked_page"] = {
            "key": page["source_key"],
            "provenance": display.LOCAL_BADGE,
            "title": page["title"],
            "url": page["url"],
            "excerpt": page["excerpt"],
            "row_url": link(page["row_url"]),
        }
        if page.get("provider_excerpt"):
            shown["linked_page"]["provider_excerpt"] = page["provider_excerpt"]
    return shown


def compact_answer(answer: AnswerJSON) -> dict[str, Any]:
    """The verified answer sentence by sentence (its text is the sentences in order), each
    with the keys it cites and whether they support it; the keys by origin, and what the
    verifier removed."""
    return {
        "status": answer["status"],
        "synthesizer": answer["synthesizer"],
        "message": answer["message"],
        "sentences": [
            {"text": s["text"], "citations": s["citations"], "supported": s["supported"]}
            for s in answer["sentences"]
        ],
        "citations": answer["citations"],
        "rejected_citations": answer["rejected_citations"],
        "gaps": [{"code": g["code"], "message": g["message"]} for g in answer["gaps"]],
        "conflicts": answer["conflicts"],
    }


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
    chosen, allowed = await choose_brain(datasette, actor, settings, database)
    searched = [chosen] if database else allowed
    for name in searched:
        hit = await brain_row(datasette, name, key)
        if hit is not None:
            return source_row(hit, row_url_for(datasette, name), name, link)
    raise ResearchError(f"No row with the key {key!r} in {', '.join(searched)}.", 404, "no_row")


def source_row(hit: Hit, row_url: Callable[[str, int], str], database: str, link: Link) -> dict:
    """A brain row for an agent: what it is, where it came from, and its texts in dbrain's
    excerpt order (summary first) within ``SOURCE_TEXT_CHARS`` altogether."""
    row = hit.row
    shown: dict[str, Any] = {
        "ok": True,
        "key": row["source_key"],
        "database": database,
        "kind": hit.kind,
        "origin": LOCAL_ORIGIN,
        "provenance": display.LOCAL_BADGE,
        **row_facts(hit.kind, row),
    }
    shown["texts"] = trimmed_texts(excerpt_fields(hit.kind, row), SOURCE_TEXT_CHARS)
    shown["truncated"] = any(t["truncated"] for t in shown["texts"])
    shown["row_url"] = link(row_url(hit.kind, hit.id))
    return shown


def trimmed_texts(fields: list[tuple[str, str, str]], budget: int) -> list[dict[str, Any]]:
    """Each distinct non-empty text with its field and evidence role, within one shared
    budget: the text that reaches it is cut at a word boundary and those after it come empty,
    all marked ``truncated`` (``chars`` is a text's full length)."""
    texts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, role, value in fields:
        text = str(value or "").strip()
        if not text or text in seen:
            continue
        seen.add(text)
        kept = trim(text, budget)
        budget = budget - len(kept) if kept == text else 0  # no crumbs after a cut
        texts.append(
            {
                "field": name,
                "role": role,
                "text": kept,
                "chars": len(text),
                "truncated": len(kept) < len(text),
            }
        )
    return texts


def trim(text: str, most: int) -> str:
    """The text, or its first ``most`` characters ending at a word boundary when one is near."""
    if len(text) <= most:
        return text
    cut = text[:most]
    space = cut.rfind(" ")
    return (cut[:space] if space > most * 0.8 else cut).rstrip()


async def checked_promotion(
    datasette: Any, actor: dict | None, run_id: str, keys: list[str], tags: Any, note: Any
) -> tuple[Any, TraceJSON, Any, list[dict[str, Any]]]:
    """The checks of ``POST /-/research/promote``, in its order (the request, permission, a run
    this actor may use, a brain that can take the rows, keys of that run's web rows): the
    promotion, the run, the brain and the rows, or the ResearchError that refuses it."""
    promotion = parse_request(
        {"run_id": run_id, "source_keys": keys, "tags": tags or [], "note": note or ""}
    )
    if not await can(datasette, actor, PROMOTE):
        raise ResearchError("You may not promote results (dbrain-promote).", 403, "forbidden")
    trace = await visible_run(datasette, actor, promotion.run_id)
    brain = promotion_brain(datasette, trace)
    return promotion, trace, brain, chosen_rows(trace, promotion.source_keys)


def promotion_reply(
    datasette: Any, trace: TraceJSON, results: list[dict[str, Any]], link: Link = same_path
) -> dict[str, Any]:
    """What a tool says of a promotion: each row's outcome in words, and where it is now."""
    return {
        "ok": True,
        "run_id": trace["run_id"],
        "database": trace["database"],
        "results": [
            {
                "key": r["source_key"],
                "status": r["status"],
                "local_source_key": r["local_source_key"],
                "title": r["title"],
                "message": promotion_message(r),
                "row_url": link(
                    str(datasette.urls.row(trace["database"], "sources", str(r["row_id"])))
                ),
                **({"tags": r["tags"]} if "tags" in r else {}),
                **({"note_key": r["note_key"]} if r.get("note_key") else {}),
            }
            for r in results
        ],
        "trace_url": link(traces.run_path(datasette, trace["run_id"])),
    }
