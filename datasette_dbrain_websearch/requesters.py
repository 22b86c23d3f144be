"""Who sent an HTTP request, as every surface reads it (the page, the JSON API, compare, MCP):
the requester a costly question counts against (``admission``), and whether another site sent
it with this person's cookie (a cross-site request spends nothing on their account)."""

from __future__ import annotations

import urllib.parse
from typing import Any

from .admission import requester_key
from .service import actor_id_of

OWN_SITE = ("same-origin", "none")  # Sec-Fetch-Site: "none" is a typed URL or a bookmark


def cross_site_with_cookie(request: Any, same_site_spends: bool = False) -> bool:
    """A browser request another site made (a link, a form, a script), signed in by this
    person's cookie. Browsers say so in ``Sec-Fetch-Site`` (older ones in ``Origin``); a
    request with an API token, or without a cookie, is nobody's browser session. A sibling
    site (``same-site``: another subdomain, which anyone hosting there controls) counts as
    another site unless the config's ``same_site_spends`` trusts it."""
    if request.headers.get("authorization") or "ds_actor" not in request.cookies:
        return False
    fetch_site = request.headers.get("sec-fetch-site", "").lower()
    if fetch_site:
        trusted = OWN_SITE + (("same-site",) if same_site_spends else ())
        return fetch_site not in trusted
    origin = request.headers.get("origin", "")
    return bool(origin) and urllib.parse.urlsplit(origin).netloc != request.host


FORWARDED = "forwarded"  # every request a proxy forwarded, when its word is not trusted


def requester_of(request: Any, trust_forwarded_for: bool = False) -> str:
    """Who a request counts against (``admission.requester_key``): its actor, else its
    address. The server may have taken that address from ``X-Forwarded-For`` (uvicorn does
    for a client on loopback), which any local client can write: unless the config's
    ``trust_forwarded_for`` says a proxy sets it, anonymous requests carrying it share one
    requester, so writing another address there escapes no per-address limit."""
    actor_id = actor_id_of(request.actor)
    forwarded = "x-forwarded-for" in request.headers or "forwarded" in request.headers
    if not actor_id and forwarded and not trust_forwarded_for:
        return FORWARDED
    client = request.scope.get("client") or ("",)
    return requester_key(actor_id, client[0])
