"""API tokens for scripts, on both Datasette lines.

Datasette 1.0 has ``datasette create-token``; 0.65 has no tokens at all, so a script could not
promote there. ``datasette dbrain-websearch token ACTOR`` signs a token with the server's secret
(``--secret`` or ``DATASETTE_SECRET``, as the server got it); a request carrying it as
``Authorization: Bearer dbrainws_…`` acts as that actor on the plugin's own routes only (never
the rest of Datasette), until it expires. asgi-csrf lets Bearer requests through, as Datasette
does for its own tokens.
"""

from __future__ import annotations

import time
import unicodedata
from typing import Any

from itsdangerous import BadSignature

PREFIX = "dbrainws_"
NAMESPACE = "dbrain-websearch-token"
ROUTES = "/-/research"


def check_actor_id(actor_id: str) -> str:
    """An actor id a token may name: an empty, blank or invisible one (``{"id": ""}``, a
    zero-width space) names no one a person can read, and is refused with a ``ValueError``;
    so is one with control characters, which no log or page shows as written."""
    if not any(unicodedata.category(c)[0] in "LMNPS" for c in actor_id):
        raise ValueError("an actor id cannot be empty, blank or invisible")
    if any(unicodedata.category(c) == "Cc" for c in actor_id):
        raise ValueError("an actor id cannot hold control characters")
    return actor_id


def create_token(
    datasette: Any, actor_id: str, expires_after: int | None = None, now: float | None = None
) -> str:
    """A token acting as ``actor_id`` (for ``expires_after`` seconds, when given)."""
    check_actor_id(actor_id)
    payload: dict[str, Any] = {"a": actor_id, "t": int(now if now is not None else time.time())}
    if expires_after:
        payload["d"] = int(expires_after)
    return PREFIX + datasette.sign(payload, NAMESPACE)


def actor_for_token(
    datasette: Any, authorization: str, path: str, now: float | None = None
) -> dict[str, Any] | None:
    """The actor a plugin token names, on the plugin's routes; None for anything else."""
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.startswith(PREFIX) or ROUTES not in path:
        return None
    try:
        payload = datasette.unsign(token[len(PREFIX) :], NAMESPACE)
    except (BadSignature, ValueError, TypeError):
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("a"), str):
        return None
    if not payload["a"].strip():  # a blank actor, signed before tokens refused one
        return None
    expires = payload.get("d")
    if expires and (now if now is not None else time.time()) > payload.get("t", 0) + expires:
        return None
    return {"id": payload["a"], "token": "dbrain-websearch"}
