"""An offline stand-in for Brave Search, Exa and SearXNG, over real loopback HTTP.

There is no internet in tests or the demo, yet the provider clients must meet the real wire
formats, status codes, headers and failure shapes their documentation gives. This server
answers from the fixed corpus in ``corpus`` with deterministic ranking against a fixed
clock, and can be switched into fault modes (rate limits, 5xx, malformed or huge bodies, slow
answers, empty results, plan and credit errors) per provider.

It also does what the real services do beyond the happy path, as seen outside the docs:
SearXNG's bot limiter answers 429 to a ``/search`` without ``Accept-Language`` (on by default,
as on docker and public instances), bad ``language`` values get a 400, and an older instance's
localized dates are a mode; Exa rejects retired search types, sends no ``score``, can fail
``/contents`` as a whole and returns an arXiv abstract's text under its PDF URL; Brave can answer
errors in the reference pages' ``errors`` array form and refuse LLM Context with 403
``RESOURCE_NOT_ALLOWED``.

One server (``server``, over ``loopback``) plays all three providers (``brave`` with
``brave_params``, ``exa``, ``searxng``, over what they share, ``common``), at these paths::

    /brave/res/v1/web/search   GET (and POST with a JSON body)
    /brave/res/v1/llm/context  GET and POST
    /exa/search, /exa/contents POST
    /searxng/search            GET and POST (form)
    /reader/<page URL>         GET: the corpus page at that URL, as HTML (a page reader)
    /__fake/requests (GET), /__fake/mode (POST), /__fake/reset (POST)

Run it with ``python -m datasette_dbrain_websearch.demo.fakeweb --port N``.
"""

from .common import PLANS, BravePlan, RecordedRequest
from .server import FakeWeb, main

__all__ = ["PLANS", "BravePlan", "FakeWeb", "RecordedRequest", "main"]
