"""The service layer: what every surface (the views, the CLI, the MCP and agent tools, evals,
startup) does with a Datasette, whatever the request looked like.

Which brains exist and which an actor may research, what it may do (``Access``), running a
``ResearchRequest`` (``research``, with ``RunOptions``) and saving its trace, reading a saved
run (and who may), a brain's row by key, and relevance marks. Promotion is ``promotions``, the
rest of what is read of saved runs ``saved_runs``. Surfaces parse their own input (HTTP
parameters and bodies live in ``views.common``), call these, and never import each other.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

from . import ledger, traces
from .admission import gate_for
from .answer import AnswerAccess
from .answer.model import METER, ModelMeter
from .brain import TABLE, Hit, is_brain, row_by_key
from .brain_access import reader, table_names
from .compat import with_stored_keys
from .config import Budget, Settings
from .deep import run_deep
from .errors import ResearchError
from .feedback import RocchioWeights, apply_feedback, carried, row_urls, validate_marks
from .feedback_store import feedback_for, save_feedback
from .lexical import file_version
from .options import DEEP, PRO, ResearchRequest, param, run_params
from .pack import row_keys
from .pack_json import PackJSON
from .permissions import LLM_ANSWER, PROMOTE, RESEARCH, WEB_SEARCH, can
from .pipeline import Progress, RunContext, WebAccess, run_pipeline
from .providers import registered_providers
from .refinement import refinement
from .runs_db import plugin_database
from .saved_runs import marks_on
from .traces import TraceJSON
from .web_ranking import registered_rankers

# An actor as Datasette gives it (None: an anonymous visitor).
Actor = dict[str, Any] | None

log = logging.getLogger("datasette_dbrain_websearch")


@contextmanager
def permission_memo() -> Iterator[None]:
    """Inside it, each permission question (``may``), and whether each database is a brain, is
    asked once: the view, the page's menu and the saved-run checks ask again (on Datasette 1.0
    every permission question is a query)."""
    token = _ACCESS.set({})
    try:
        yield
    finally:
        _ACCESS.reset(token)


HIDDEN_DATABASES = ("_internal", "_memory")


ROOT = "root"


# The permission answers of the request a research view is handling: each is asked once, though
# the view, the page's menu and the saved-run checks ask it again (on Datasette 1.0 every
# question is a query).
_ACCESS: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar("dbrain_access", default=None)


async def may(datasette: Any, actor: Actor, action: str, database: str | None = None) -> bool:
    """``can``, remembered for the rest of the request inside a ``with_permission_memo`` view."""
    memo = _ACCESS.get()
    if memo is None:
        return await can(datasette, actor, action, database)
    key = (json.dumps(actor, sort_keys=True, default=str), action, database)
    if key not in memo:
        memo[key] = await can(datasette, actor, action, database)
    return bool(memo[key])


async def brain_databases(datasette: Any, settings: Settings) -> list[str]:
    """Names of attached databases that are brains (or the configured ``databases``); the
    plugin's own database never is one, so it is not read on every request."""
    if settings.databases is not None:
        return [name for name in settings.databases if name in datasette.databases]
    names = []
    own = plugin_database(datasette)
    for name, db in datasette.databases.items():
        if name in HIDDEN_DATABASES or db is own:
            continue
        if await _is_brain(db):
            names.append(name)
    return names


async def _is_brain(db: Any) -> bool:
    """Whether a database is a brain, asked once per request inside ``permission_memo``: a
    brain another program holds locked costs the request one bounded wait (its 503), not one
    more for the page's menu."""
    memo = _ACCESS.get()
    key = ("is_brain", db.name)
    if memo is not None and key in memo:
        found = memo[key]
        if isinstance(found, ResearchError):
            raise found
        return bool(found)
    path: str | None = getattr(db, "path", None) if not getattr(db, "is_memory", False) else None
    version = file_version(path)
    seen = _BRAINS.get(path) if path is not None and version is not None else None
    if seen is not None and seen[0] == version:
        return seen[1]
    try:
        found = is_brain(await reader(db)(table_names))
    except ResearchError as exc:
        if memo is not None:
            memo[key] = exc
        raise
    if memo is not None:
        memo[key] = found
    if path is not None and version is not None:
        _BRAINS[path] = (version, found)
    return found


# Per process: whether each attached file is a brain, by its version (``file_version``): a
# question pays a file stat for it, not a hop to a read thread.
_BRAINS: dict[str, tuple[tuple[Any, ...], bool]] = {}


async def researchable_brains(datasette: Any, actor: Actor, settings: Settings) -> list[str]:
    """The brains this actor may research, in attach order."""
    brains = await brain_databases(datasette, settings)
    return [b for b in brains if await may(datasette, actor, RESEARCH, b)]


def row_url_for(datasette: Any, database: str) -> Callable[[str, int], str]:
    """The Datasette row page of an evidence row (``/brain/sources/12``), as ``urls.row``
    builds it: the table's address worked out once, not once a row."""
    tables = {kind: str(datasette.urls.table(database, table)) for kind, table in TABLE.items()}

    def row_url(kind: str, row_id: int) -> str:
        return f"{tables[kind]}/{row_id}"

    return row_url


@dataclass(frozen=True)
class Access:
    """What one request's actor may do, decided once per request (``access_for``) and passed
    down to the run and the page, rather than asked again where each is needed: reach the web
    (``web``: ``dbrain-external-search``, through which providers, whether another site sent
    the request), have a model write the answer or direct a deep run (``model``:
    ``dbrain-llm-answer``), promote web rows into a brain (``promote``), and which brains it may
    research at all (``brains``: ``dbrain-research``, in attach order)."""

    web: WebAccess
    model: bool
    promote: bool
    brains: tuple[str, ...] = ()


async def access_for(
    datasette: Any, actor: Actor, settings: Settings, cross_site: bool = False
) -> Access:
    """This actor's ``Access`` on this request (``cross_site``: another site sent this browser
    request, ``requesters.cross_site_with_cookie``)."""
    web = WebAccess(
        permitted=await may(datasette, actor, WEB_SEARCH),
        providers=registered_providers(datasette),
        cache_db=plugin_database(datasette),
        actor_id=actor_id_of(actor),
        cross_site=cross_site,
        rankers=registered_rankers(datasette),
    )
    model = await may(datasette, actor, LLM_ANSWER)
    promote = await may(datasette, actor, PROMOTE)
    return Access(web, model, promote, tuple(await researchable_brains(datasette, actor, settings)))


def index_path(datasette: Any) -> str | None:
    """The plugin database's file, where the semantic lane's vectors are (None: no file)."""
    db = plugin_database(datasette)
    return getattr(db, "path", None) if db is not None else None


async def choose_brain(
    datasette: Any, settings: Settings, allowed: Sequence[str], requested: str | None
) -> str:
    """The brain asked for by name (or the first) of those the actor may research
    (``Access.brains``); a brain the actor may not research reads as unknown. The page, the JSON
    API and the agent tools refuse alike."""
    if not allowed:
        if await brain_databases(datasette, settings):
            raise cannot_research()
        raise ResearchError("No dbrain brain is attached to this Datasette.", 404, "no_brain")
    if requested and requested not in allowed:
        raise ResearchError(
            f"Unknown brain '{requested}'; choose one of: {', '.join(allowed)}.",
            404,
            "unknown_brain",
        )
    return requested or allowed[0]


async def shed_refusal(datasette: Any, requester: Callable[[bool], str]) -> ResearchError | None:
    """The 503 for a requester shed moments ago (``admission.Gate.refuse_shed``, which may
    hold it), else None; cheap enough to ask before Datasette routes a request
    (``views.guards``): while nobody is shed, neither the settings nor the requester
    (``requester(trust_forwarded_for)``) is read."""
    gate = gate_for(datasette)
    if not gate.shed_until:
        return None
    trust = Settings.from_datasette(datasette).trust_forwarded_for
    try:
        await gate.refuse_shed(requester(trust))
    except ResearchError as refused:
        return refused
    return None


def cannot_research() -> ResearchError:
    return ResearchError(
        "You may not research any brain here (permission dbrain-research); if you have an "
        "account that may, sign in first.",
        403,
        "forbidden",
    )


@dataclass(frozen=True)
class RunOptions:
    """Who asks for a run and how it is made, beside what is asked (``ResearchRequest``).

    ``access`` (``access_for``) is what the actor may do, decided once for the request; a
    cross-site request (``access.web.cross_site``) spends nothing: no web search, no model
    answer, in every round of a deep run. ``lineage`` (from ``refined``) records a refined
    run's parent and refinement. ``requester`` (``requester_of``) is who a heavy question counts
    against (None: no per-requester limit; ``admission``). ``wait_for_trace=False`` returns
    before the trace is written (see ``then_settle``); ``save=False`` writes none (the evals).
    ``arrived`` (``views.guards.arrived_at``) starts the time limit when the request came in.
    """

    actor: Actor
    surface: str
    settings: Settings
    access: Access
    progress: Progress | None = None
    lineage: dict[str, Any] | None = None
    requester: str | None = None
    wait_for_trace: bool = True
    save: bool = True
    arrived: float | None = None


async def research(
    datasette: Any, database: str, request: ResearchRequest, run: RunOptions
) -> PackJSON:
    """Research a checked request on one brain and save its trace: the one path every surface
    (the views, the CLI, the tools, the evals) takes. ``depth=deep`` runs the follow-up rounds
    of ``deep.run_deep``."""
    settings, actor, web = run.settings, run.actor, run.access.web
    if request.web.mode != "never":
        settings = await with_stored_keys(datasette, settings, actor_id_of(actor))
    wants_model = request.strategy == PRO or (
        request.answer and settings.answer.synthesizer == "llm"
    )
    context = RunContext(
        execute_fn=reader(datasette.get_database(database)),
        database=database,
        settings=settings,
        row_url=row_url_for(datasette, database),
        web=web,
        answering=AnswerAccess(wants_model and run.access.model, datasette, actor, web.cross_site),
        progress=run.progress,
        semantic_index=index_path(datasette),
        gate=gate_for(datasette),
        requester=run.requester,
        arrived=run.arrived,
    )
    deep = request.depth == DEEP  # strategy=pro is deep too (``checked_request``)
    me = actor_id_of(actor)
    meter = model_meter(datasette, settings, me) if wants_model else None
    metering = METER.set(meter)
    try:
        async with gate_for(datasette).long_run(run.requester) if deep else nullcontext():
            typed = await (run_deep if deep else run_pipeline)(request, context)
    finally:
        METER.reset(metering)
    pack = cast(PackJSON, {**typed.to_json(), **(run.lineage or {})})
    if meter is not None:
        await record_model_calls(datasette, meter, me, pack["run_id"])
    if carried(pack):
        pack = apply_feedback(pack, carried(pack), weights_from(settings))
    if run.save:
        await traces.record(
            datasette,
            pack,
            surface=run.surface,
            actor=actor,
            permitted=web.permitted,
            wait=run.wait_for_trace,
        )
    return pack


def model_meter(datasette: Any, settings: Settings, actor_id: str) -> ModelMeter:
    """The run's ``ModelMeter``: each model call holds a place under ``answer.daily_calls``
    (refused past it) and is written to the ledger afterwards (``record_model_calls``)."""
    cap = settings.answer.daily_calls

    async def before() -> str | None:
        db = plugin_database(datasette)
        if not cap or db is None:
            return None
        held = await ledger.reserve(
            db,
            ledger.MODEL,
            Budget(daily_calls=cap),
            "The language model",
            0.0,
            actor_id,
            setting="answer.daily_calls",
        )
        if isinstance(held, str):
            return held
        meter.reserved.append(held)
        return None

    meter = ModelMeter(before)
    return meter


async def record_model_calls(datasette: Any, meter: ModelMeter, actor_id: str, run_id: str) -> None:
    """The run's model calls in the ledger, in the write that releases their places; a
    locked plugin database costs the run nothing."""
    db = plugin_database(datasette)
    if db is None or not (meter.calls or meter.reserved):
        return
    rows = ledger.rows_for(ledger.MODEL, meter.calls, 0, 0.0, actor_id, run_id)
    try:
        await ledger.record(db, rows, meter.reserved)
    except Exception:  # the answer stands; only the count is lost
        log.warning("could not record the run's model calls", exc_info=True)


def actor_id_of(actor: Actor) -> str:
    return str((actor or {}).get("id") or "")


async def visible_trace(datasette: Any, actor: Actor, run_id: str) -> TraceJSON:
    """The saved run, or the same 404 whether it does not exist or is not this actor's: a run
    id must not reveal that someone asked something."""
    trace = await seen_trace(datasette, actor, run_id)
    if trace is None and traces.not_saved(run_id):
        # Its answer was shown, then its save failed: say so (the id reveals nothing more).
        raise ResearchError(
            f"Run {run_id} was answered but could not be saved (the runs database refused "
            f"the write: {traces.not_saved(run_id)}); ask the question again to research it "
            "anew.",
            404,
            "trace_not_saved",
        )
    if trace is None:
        raise ResearchError(f"No saved run {run_id}.", 404, "no_such_run")
    return trace


def owns_run(actor: Actor, trace: TraceJSON, browser_runs: Sequence[str] = ()) -> bool:
    """Root and the run's owner: the signed-in actor who made it, or for an anonymous run the
    browser that made it (``browser_runs``: the runs its signed cookie names, ``own_runs``; a
    tool call has none). Anyone else who may see the run (an anonymous run's link) sees what
    it shares, and may not mark, promote from, refine or re-run it with its hidden settings."""
    me, owner = actor_id_of(actor), trace["actor_id"]
    if me == ROOT or (me and owner == me):
        return True
    return not owner and trace["run_id"] in browser_runs


async def owned_trace(
    datasette: Any, actor: Actor, run_id: str, browser_runs: Sequence[str] = ()
) -> TraceJSON:
    """A saved run its requester owns (``owns_run``), else the same 404 as for no run at all:
    what the owner saw must not be guessed at through what it accepts."""
    trace = await visible_trace(datasette, actor, run_id)
    if not owns_run(actor, trace, browser_runs):
        raise ResearchError(f"No saved run {run_id}.", 404, "no_such_run")
    return trace


async def seen_trace(datasette: Any, actor: Actor, run_id: str) -> TraceJSON | None:
    """The saved run if it exists and this actor may see it (``may_see_run``), else None."""
    db = plugin_database(datasette)
    trace = await traces.load(db, run_id) if db is not None else None
    return trace if trace is not None and await may_see_run(datasette, actor, trace) else None


async def may_see_run(datasette: Any, actor: Actor, trace: TraceJSON) -> bool:
    """Runs hold people's questions. A run is for its own actor and for root; a run made by an
    anonymous visitor, for whoever has its link (the run id carries 96 random bits). Always only
    on a brain the actor may research."""
    if not await may(datasette, actor, RESEARCH, trace["database"]):
        return False
    owner, me = trace["actor_id"], actor_id_of(actor)
    return not owner or owner == me or me == ROOT


def weights_from(settings: Settings) -> RocchioWeights:
    return RocchioWeights(settings.feedback.alpha, settings.feedback.beta, settings.feedback.gamma)


async def brain_row(datasette: Any, database: str, key: str) -> Hit | None:
    """A brain's item or source by its key, hydrated (the tools' "read a source")."""
    hit: Hit | None = await reader(datasette.get_database(database))(partial(row_by_key, key=key))
    return hit


async def saved_trace(datasette: Any, actor: Actor, run_id: str) -> TraceJSON:
    """A saved run the actor may see: permission first (403 for those who may research no brain
    here), then ``visible_trace``."""
    settings = Settings.from_datasette(datasette)
    if not await researchable_brains(datasette, actor, settings):
        raise cannot_research()
    return await visible_trace(datasette, actor, run_id)


async def with_feedback(
    datasette: Any, pack: PackJSON, settings: Settings
) -> tuple[PackJSON, dict[str, Any] | None]:
    """A saved run's pack re-ranked by the marks people gave its rows since, and the refinement
    they suggest (None when there are none)."""
    marks = [*carried(pack), *await marks_on(datasette, pack["run_id"])]
    if not marks:
        return pack, None
    reranked = apply_feedback(pack, marks, weights_from(settings))
    return reranked, await refinement(datasette, pack, marks)


async def refined(
    datasette: Any,
    actor: Actor,
    params: dict[str, list[str]],
    browser_runs: Sequence[str] = (),
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """The parameters a ``refine_from`` request researches, and what to record about it. The
    parent run's marks are its owner's (``owns_run``; ``browser_runs`` as there), so anyone
    else is answered as if it did not exist."""
    parent_id = param(params, "refine_from")
    if not parent_id:
        return params, {}
    if not traces.RUN_ID.fullmatch(parent_id):
        raise ResearchError("refine_from must be a run id.", code="bad_refine_from")
    parent = await saved_trace(datasette, actor, parent_id)
    if not owns_run(actor, parent, browser_runs):
        raise ResearchError(f"No saved run {parent_id}.", 404, "no_such_run")
    marks = [*carried(parent["pack"]), *await marks_on(datasette, parent_id)]
    refined_by = await refinement(datasette, parent["pack"], marks)
    params = {**{k: list(v) for k, v in run_params(parent["pack"]).items()}, **params}
    if not param(params, "q"):
        # The question stays the person's (the judge's and the web's terms); the added words
        # widen the ranking query only, each a chip the page can take away.
        params["q"] = [parent["pack"]["question"]]
        had = parent["pack"]["query_plan"].get("expansion_terms") or []
        params["expand"] = list(dict.fromkeys([*had, *refined_by["added_terms"]]))
    # A row marked 👎 stays below the rest in the run Expand makes (``research``).
    dropped = [m for m in validate_marks(marks) if m["value"] == "irrelevant"]
    lineage: dict[str, Any] = {"parent_run_id": parent_id, "refinement": refined_by}
    return params, {**lineage, "feedback": {"marks": dropped}} if dropped else lineage


async def mark_rows(datasette: Any, actor: Actor, trace: TraceJSON, body: Any) -> dict[str, Any]:
    """Save marks (👍/👎) on a saved run's rows and say what they do: the run re-ranked, the
    rows that moved, and the refinement they suggest. Marks must name the run's rows."""
    try:
        marks = validate_marks(body)
    except ValueError as exc:
        raise ResearchError(str(exc), code="bad_feedback") from exc
    pack, run_id = trace["pack"], trace["run_id"]
    rows = [*pack["evidence"], *pack["external_evidence"]]
    known = {key for row in rows for key in row_keys(row)} | {
        url for row in rows for url in row_urls(row)
    }
    unknown = [m["key"] for m in marks if m["key"] not in known]
    if unknown:
        raise ResearchError(f"Not rows of run {run_id}: {', '.join(unknown)}.", code="not_in_run")
    db = plugin_database(datasette)
    try:
        await save_feedback(db, run_id, marks, actor_id_of(actor))
    except Exception as exc:
        raise ResearchError(
            f"The feedback could not be saved ({type(exc).__name__}).", 503, "feedback_not_saved"
        ) from exc
    all_marks = validate_marks([*carried(pack), *await feedback_for(db, run_id)])
    reranked = apply_feedback(pack, all_marks, weights_from(Settings.from_datasette(datasette)))
    return {
        "ok": True,
        "run_id": run_id,
        "feedback": all_marks,
        "ranking": reranked["ranking"],
        "moves": reranked["feedback"]["moves"],
        "refinement": await refinement(datasette, pack, all_marks),
    }
