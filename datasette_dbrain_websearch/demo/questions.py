"""The demo's questions: what each one shows, the request it makes, and what the curated demo
brain holds for it (``make demo`` prints their links, and the tests ask every one)."""

from __future__ import annotations

from typing import Any

from ..urls import normalize_url

# Curated rows the exact-lookup demo questions point at.
_FTS5_DOCS_URL = "https://www.sqlite.org/fts5.html"
_DATASETTE_HOOKS_URL = "https://docs.datasette.io/en/stable/plugin_hooks.html"
_PENDING_GRINDER_URL = "https://grindlab.coffee/blog/grinder-retention-test-2026"

DEMO_QUESTIONS: list[dict[str, Any]] = [
    {
        "q": "cold climate heat pump",
        "shows": "a plain question with enough local evidence (items and sources)",
        "expect": "enough",
    },
    {
        "q": "grinder",
        "tag": "espresso",
        "shows": "a tag filter: only rows whose user_tags include 'espresso'",
        "expect": "enough",
    },
    {
        "q": "porter stemming",
        "kind": "source",
        "shows": "a kind filter: linked documents (sources) only, no saved items",
        "expect": "enough",
    },
    {
        "q": "http://www.sqlite.org/fts5.html?utm_source=newsletter#tokenizers",
        "shows": "exact lookup by URL, normalized like dbrain does (www, http, utm_*, fragment)",
        "expect": "exact",
        "source_key": normalize_url(_FTS5_DOCS_URL).source_key,
    },
    {
        "q": normalize_url(_DATASETTE_HOOKS_URL).source_key,
        "shows": "exact lookup by a src: source key",
        "expect": "exact",
        "source_key": normalize_url(_DATASETTE_HOOKS_URL).source_key,
    },
    {
        "q": _PENDING_GRINDER_URL + "?utm_medium=social",
        "shows": "exact lookup of a saved but never extracted source, which has no FTS row",
        "expect": "exact",
        "source_key": normalize_url(_PENDING_GRINDER_URL).source_key,
    },
    {
        "q": "tokio NEAR(runtime scheduler, 5)",
        "syntax": "raw",
        "shows": "raw FTS5 syntax: NEAR groups, column filters, boolean operators",
        "expect": "enough",
    },
    {
        "q": "analog synthesizer calibration",
        "shows": "weak evidence: one note matches two of the three terms",
        "expect": "weak",
    },
    {
        "q": "quantum chromodynamics lattice",
        "shows": "no local evidence: the case for searching the web",
        "expect": "none",
    },
    {
        "q": "What is the capital of Mongolia?",
        "shows": "no answer in your brain: a row says “capitals”, none says anything of "
        "Mongolia, so the answer box says so and writes nothing",
        "expect": "no_answer",
    },
    {
        "q": "Where does the author of The Slow Loaf live?",
        "external": "always",
        "depth": "deep",
        "shows": "deep research: a note names the book's author, and a second round finds where "
        "she lives on the (fake) web, reads the page and cites it (a quick run never does)",
        "expect": "first_hop",
    },
    {
        "q": "Where did the author of The Slow Loaf train as a baker?",
        "external": "always",
        "depth": "deep",
        "shows": "deep research stops when it has answered: the page it reads says where she "
        "trained (“Copenhagen and Lyon”), not only where she lives; without the web, no "
        "answer, and never a high confidence",
        "expect": "first_hop",
    },
]
"""Curated questions for the demo brain.

``q`` is the question; ``shows`` says which feature it demonstrates; ``expect`` is what the
demo brain holds for it (``enough``, ``weak``, ``none``, ``exact``, ``no_answer``: rows with
a word of it but no sentence that answers it, or ``first_hop``: the first part of a two-part
question, the second only on the fake web) and ``source_key`` the
row an exact lookup must return. The remaining keys (``tag``, ``kind``, ``syntax``,
``external``, ``depth``) are request parameters.
"""
