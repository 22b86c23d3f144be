"""Research evals: dbrain-style cases run against a brain, with the web replayed offline.

``datasette dbrain-websearch eval CASES.json BRAIN.db`` runs each case through the same
``request_from_params`` and ``service.research`` the CLI uses, in-process. Web search goes to a
``ReplayProvider`` per provider, answering from the case's ``fixtures`` (recorded provider
responses), so an eval never needs a key or the network and gives the same answer every time.
``eval propose --run RUN_ID`` turns a saved run, and the feedback given on it, into a case.

A case is one JSON object in an array. dbrain's fields: ``name``, ``question``, ``limit``,
``min_evidence``, ``expect_any_source_keys``, ``expect_top_source_keys``, ``forbid_source_keys``,
``expect_text``, ``max_latency_ms``. Web fields: ``external`` (never | on_weak | always,
default never), ``providers`` (the configured providers, in fallback order; default the
``fixtures`` keys), ``fixtures`` (``{"brave": [{"url", "title", "snippet", "text",
"published_at", "rank"}, ...]}``, or ``{"brave": {"error": "provider_failed", "message": ...}}``
to replay a failure), ``expect_external_urls``, ``expect_providers``, ``forbid_provider_calls``,
``expect_warnings``, ``expect_verdict``. Answer fields: ``answer`` (true to write one; implied
by the others), ``expected_citations`` and ``forbidden_citations`` (keys, or URLs of web rows),
``expected_answer_terms`` (words the answer's text must say, matched as the index matches
them: "backflushing" says "backflush"), ``expect_answer_status``. Request fields, as the JSON
API takes them: ``tag``, ``source_type``, ``kind``, ``syntax``, ``since``, ``until``,
``profile``, ``provider`` (``all`` = in parallel), ``freshness``, ``external_count``. Any other
field is an error: a check that cannot run must not pass silently.

Checks follow dbrain's wording. ``min_evidence`` counts the ranked rows (local and web);
``expect_top_source_keys`` holds the keys the first ranked row may have (as dbrain checks its
first evidence row); ``expect_any_source_keys`` needs one of its keys anywhere in the ranking;
``expect_text`` is matched case-insensitively against the ranked rows' titles, URLs, excerpts and
web texts; ``max_latency_ms`` bounds the research call; ``expect_external_urls`` must be web rows
(a page the brain holds collapses onto its local row instead); ``expect_providers`` is the exact
set of providers called, and ``forbid_provider_calls`` fails a case that called any.

Metrics (per case, then averaged over the cases that have expectations):

- expected = ``expect_any_source_keys`` + ``expect_top_source_keys`` + ``expect_external_urls``
  (canonicalized as dbrain does); a row of ``pack["ranking"]`` matches an expected key by its
  ``source_key`` (or, for an item shown with the page it links to, the page's key) and, for a
  web row, an expected URL by its ``canonical_url``;
- rank = the 1-based position in ``pack["ranking"]`` of the first row matching anything
  expected; RR = 1/rank, or 0 when nothing expected is ranked;
- recall@k = |expected found in the top k rows| / |expected|, with k = the case's ``limit``
  (the configured ``default_limit``, 10, when the case has none);
- MRR = the mean RR; recall@k overall = the mean per-case recall@k.

Answer metrics (over the cases that asked for an answer, summed before dividing):

- citation precision = valid cited keys / cited keys (valid + rejected by the verifier);
- supported-sentence rate = supported sentences / sentences;
- invented keys rejected = citations the verifier removed because the run never retrieved them.
"""

from .cases import (
    ANSWER_STATUSES,
    CASE_FIELDS,
    EXPECT_VALUES,
    FORBID_VALUES,
    HELP,
    KEY_LISTS,
    REQUEST_LISTS,
    REQUEST_STRINGS,
    Case,
    EvalInputError,
    load_cases,
    parse_case,
)
from .proposing import PROPOSE_TOP, load_run, plugin_database_path, propose_case
from .running import case_settings, check_brain, replay_providers, run_cases
from .scoring import (
    CaseResult,
    CitationCounts,
    Score,
    check_answer,
    check_case,
    cited_ids,
    ranked_ids,
    render_table,
    score_ranking,
    summarize,
)

__all__ = [
    "ANSWER_STATUSES",
    "CASE_FIELDS",
    "EXPECT_VALUES",
    "FORBID_VALUES",
    "HELP",
    "KEY_LISTS",
    "PROPOSE_TOP",
    "REQUEST_LISTS",
    "REQUEST_STRINGS",
    "Case",
    "CaseResult",
    "CitationCounts",
    "EvalInputError",
    "Score",
    "case_settings",
    "check_answer",
    "check_brain",
    "check_case",
    "cited_ids",
    "load_cases",
    "load_run",
    "parse_case",
    "plugin_database_path",
    "propose_case",
    "ranked_ids",
    "render_table",
    "replay_providers",
    "run_cases",
    "score_ranking",
    "summarize",
]
