"""Who sees a saved run whole: its owner and root; anyone else who may open it (an anonymous
run's link) sees what it shares (``exports.shared``), on every page that shows a run (the run
page and its files, the research page's ``?run=``, compare).

A visitor who is not signed in owns no run by name, so the browser that made an anonymous run
keeps a signed cookie of its run ids: the run stays whole for the person who asked, while the
same link passed on shows the answer and its cited rows only. The page that searches sets the
cookie itself; the live stream cannot (its headers go before the run has an id), so its "done"
address carries a signed claim that the page exchanges for the cookie and then drops from the
address, so a copied link never carries it. A claim is good for ``CLAIM_MAX_AGE`` seconds and
only in the browser the stream answered: the stream sets a random ``CLAIMANT`` cookie, which
the claim names, so a claim copied out of one browser claims nothing in another.
"""

from __future__ import annotations

import secrets
import time
import urllib.parse
from typing import Any

from datasette import Response
from itsdangerous import BadSignature

from ..options import param
from ..service import actor_id_of, owns_run
from ..traces import TraceJSON

COOKIE = "dbrain_websearch_runs"
NAMESPACE = "dbrain-websearch-own-runs"
CLAIM = "dbrain-websearch-claim"
CLAIMANT = "dbrain_websearch_claimant"
CLAIM_MAX_AGE = 600  # seconds a stream's claim may be exchanged for the cookie
KEPT = 30  # the newest runs a browser keeps as its own (a cookie holds about 4 KB)
MAX_AGE = 180 * 24 * 3600  # as long as retention keeps a young run


def own_runs(datasette: Any, request: Any) -> list[str]:
    """The anonymous runs this browser made (none when the cookie is missing or forged)."""
    signed = request.cookies.get(COOKIE, "")
    if not signed:
        return []
    try:
        runs = datasette.unsign(signed, NAMESPACE)
    except BadSignature:
        return []
    return [r for r in runs if isinstance(r, str)] if isinstance(runs, list) else []


def sees_whole_run(datasette: Any, request: Any, trace: TraceJSON) -> bool:
    """Does this request own the run (``service.owns_run``, this browser's runs included)?"""
    return owns_run(request.actor, trace, own_runs(datasette, request))


def remember_run(datasette: Any, request: Any, response: Any, run_id: str) -> None:
    """A run an anonymous visitor just made is theirs: the response keeps it in their cookie."""
    if actor_id_of(request.actor) or not run_id:
        return
    runs = [r for r in own_runs(datasette, request) if r != run_id][-(KEPT - 1) :]
    response.set_cookie(
        COOKIE,
        datasette.sign([*runs, run_id], NAMESPACE),
        max_age=MAX_AGE,
        path=datasette.urls.path("/"),
        httponly=True,
        samesite="lax",
    )


def claimant(request: Any) -> str:
    """The random id the stream gives this browser (its ``CLAIMANT`` cookie, else a new one)."""
    given = request.cookies.get(CLAIMANT, "")
    return given if 16 <= len(given) <= 64 and given.isascii() else secrets.token_urlsafe(16)


def claimant_cookie(datasette: Any, value: str) -> str:
    """The ``Set-Cookie`` header that keeps ``claimant`` in this browser while a claim lasts."""
    path = datasette.urls.path("/")
    return f"{CLAIMANT}={value}; Path={path}; Max-Age={CLAIM_MAX_AGE}; HttpOnly; SameSite=Lax"


def claim_token(datasette: Any, run_id: str, by: str, now: float | None = None) -> str:
    """What the stream's "done" address carries, for the page to set the cookie with: the run,
    the browser's ``claimant`` id and when it was made."""
    at = int(time.time() if now is None else now)
    return datasette.sign({"run": run_id, "by": by, "at": at}, CLAIM)


def claimed(datasette: Any, request: Any, params: dict[str, list[str]]) -> Response | None:
    """``?run=…&claim=…``: the same address without the claim, the run remembered as this
    browser's when the claim is the stream's for that run, made for this browser (its
    ``CLAIMANT`` cookie) less than ``CLAIM_MAX_AGE`` seconds ago; any other is only dropped."""
    token = param(params, "claim")
    if not token:
        return None
    query = [
        (k, v)
        for k, v in urllib.parse.parse_qsl(request.query_string, keep_blank_values=True)
        if k != "claim"
    ]
    response = Response.redirect(request.path + "?" + urllib.parse.urlencode(query))
    try:
        claim = datasette.unsign(token, CLAIM)
    except BadSignature:
        return response
    if not isinstance(claim, dict) or not isinstance(claim.get("at"), int):
        return response
    mine = request.cookies.get(CLAIMANT, "")
    fresh = 0 <= time.time() - claim["at"] <= CLAIM_MAX_AGE
    if fresh and mine and claim.get("by") == mine and claim.get("run") == param(params, "run"):
        remember_run(datasette, request, response, claim["run"])
    return response
