"""``research_pack.v1`` as its readers see it: the JSON's shape, typed.

``pack.Pack`` builds a run and writes this JSON once (``Pack.to_json``); everything that reads a
run afterwards (the page, saved runs and traces, exports, comparisons, the agent tools, evals,
the CLI) reads this shape, whether the run is fresh or loaded from the runs database. Deeper
parts that only one reader looks into stay ``dict[str, Any]``. ``tests/research/test_pack_json.py``
checks the pinned packs against these types, so they cannot drift from the JSON.

(No postponed annotations here: ``TypedDict`` reads ``NotRequired`` when the class is made.)
"""

from typing import Any, NotRequired, TypedDict

# Every row says where it comes from: the brain, or the web (outside it, never stored).
BRAIN_ORIGIN = "dbrain_corpus"
WEB_ORIGIN = "outside_dbrain_corpus"
# A web row's signal from a ranker another plugin registers: ``ranker_<its name>``.
RANKER_PREFIX = "ranker_"


class Signal(TypedDict):
    """One reason a row is where it is: a name, a sentence for people, its weight."""

    name: str
    detail: str
    weight: float


class RetrievalJSON(TypedDict):
    """Why a row ranked where it did."""

    score: float
    fused_score: float
    lanes: list[dict[str, Any]]
    signals: list[Signal]
    matched_terms: list[str]
    missing_terms: list[str]


class LinkedSourceJSON(TypedDict):
    """The page a saved item links to, shown inside the item's row."""

    source_key: str
    kind: str
    evidence_role: str
    title: str
    url: str
    row_url: str
    domain: str
    source_type: str
    note_path: str
    user_tags: list[str]
    published_at: str
    saved_at: str
    extract_status: str
    extracted_at: str
    summarized_at: str
    excerpt: str
    excerpt_html: str
    matched_terms: list[str]
    also_found_by: NotRequired[list[str]]


class ProviderExcerptJSON(TypedDict):
    """What a provider said of a page the brain holds but never extracted."""

    text: str
    html: str
    origin: str
    evidence_role: str
    excerpt_from: str
    provider_url: str


class EvidenceJSON(TypedDict):
    """A row of the brain (``evidence``)."""

    source_key: str
    kind: str
    origin: str
    evidence_role: str
    title: str
    url: str
    row_url: str
    source_type: str
    note_path: str
    user_tags: list[str]
    published_at: str
    saved_at: str
    excerpt: str
    excerpt_html: str
    retrieval: RetrievalJSON
    author: NotRequired[str]
    domain: NotRequired[str]
    extract_status: NotRequired[str]
    extracted_at: NotRequired[str]
    summarized_at: NotRequired[str]
    linked_source: NotRequired[LinkedSourceJSON]
    provider_excerpt: NotRequired[ProviderExcerptJSON]
    also_found_by: NotRequired[list[str]]


class WebEvidenceJSON(TypedDict):
    """A row from the web (``external_evidence``): outside the brain, ephemeral."""

    source_key: str
    kind: str
    origin: str
    store: str
    evidence_role: str
    depth: str
    title: str
    url: str
    canonical_url: str
    provider_url: str
    providers: list[str]
    direct_url: NotRequired[bool]  # true: the page the question named by its URL, read directly
    domain: str
    author: str
    source_type: str
    published_at: str
    text: str
    excerpt: str
    excerpt_html: str
    retrieval: RetrievalJSON


class RankingEntryJSON(TypedDict):
    """One place of the reading order: which list, which index."""

    source_key: str
    origin: str
    list: str
    index: int


class CostJSON(TypedDict):
    """What admission weighed (``cost.Cost``): the postings the ranking query reads, and
    whether that made the question heavy."""

    postings: int
    heavy: bool
    reason: str


class QueryPlanJSON(TypedDict):
    """How the question became queries."""

    text_query: str
    fts_query: str
    relaxed_query: str
    match_query: str
    ranking: str
    query_terms: list[str]
    expansion_terms: list[str]
    excluded_terms: list[str]
    narrowed_terms: list[str]
    cost: CostJSON
    syntax: str
    query_mode: str
    profile: str
    limit: int
    filters: dict[str, Any]
    retrieval_lanes: list[dict[str, Any]]
    external_queries: list[dict[str, Any]]


class JudgeJSON(TypedDict):
    """The verdict (``judge.RunVerdict``)."""

    verdict: str
    reason: str
    message: str
    inputs: dict[str, Any]
    web: dict[str, Any]
    combined: dict[str, Any]


class WebSearchJSON(TypedDict):
    """Whether the web was searched, and what it returned and read."""

    mode: str
    requested: bool
    ran: bool
    skipped_reason: str
    providers: list[str]
    sites: list[str]
    not_sites: list[str]
    current_state_question: bool
    returned: NotRequired[list[dict[str, Any]]]
    read: NotRequired[list[dict[str, Any]]]


class CoverageJSON(TypedDict):
    """How much was found, by kind, type, tag and provider."""

    evidence_count: int
    local_evidence_count: int
    by_kind: list[dict[str, Any]]
    by_source_type: list[dict[str, Any]]
    top_user_tags: list[dict[str, Any]]
    exact_matches: int
    item_text_matches: int
    source_text_matches: int
    external_evidence_count: int
    external_by_provider: list[dict[str, Any]]
    displayed_limit: int
    recall_note: str


class RejectedCitationJSON(TypedDict):
    """A citation marker the verifier removed: the key, and why (``answer.verify``)."""

    key: str
    reason: str
    sentence: NotRequired[int]  # in the answer's n-th sentence (from 1)
    conflict: NotRequired[bool]  # in a line saying where the sources disagree


class AnswerJSON(TypedDict):
    """The grounded answer (``pack.Answer``), or why there is none."""

    status: str
    synthesizer: str
    via: str
    message: str
    text: str
    draft: str
    sentences: list[dict[str, Any]]
    citations: dict[str, list[str]]
    rejected_citations: list[RejectedCitationJSON]
    removed_sentences: list[dict[str, Any]]
    gaps: list[dict[str, Any]]
    conflicts: dict[str, Any]
    evidence: dict[str, Any]
    answerability: dict[str, Any]  # does a sentence answer the question, and which
    web_contribution: dict[str, Any]
    timings_ms: dict[str, float]


class ResearchRoundJSON(TypedDict):
    """One round of a deep research run: what it asked, why, and what it added."""

    round: int
    queries: list[dict[str, Any]]  # {query, why, reason, searched_web, added, proposed_by}
    added: list[str]  # keys of the rows it added to the run
    gaps: list[str]  # the facets still uncovered after it (none once a sentence answers)
    answered: NotRequired[bool]  # a sentence answers the question after it (runs before: none)


class ConfidenceJSON(TypedDict):
    """How far to trust the answer, computed from the evidence (never asked of a model)."""

    score: float
    level: str  # high | medium | low ("high" only when a sentence answers)
    answered: bool  # a sentence of the rows answers the question (``answer.answerability``)
    coverage: float
    read_depth: float
    agreement: float


class ResearchJSON(TypedDict):
    """How a deep research run went (``depth=deep``): its rounds and why it stopped."""

    depth: str
    strategy: str  # auto | pro (a model proposed the rounds)
    proposals: list[dict[str, Any]]  # a model's steps and what the runtime made of each
    rounds: list[ResearchRoundJSON]
    stop_reason: str  # answered | no_progress | budget | time
    stop_message: str
    confidence: ConfidenceJSON
    answer_check: dict[str, Any]  # the answer check over every round (``Answerability``)
    spent: dict[str, int]  # rounds, web_searches, reads


class DidYouMeanJSON(TypedDict):
    """A respelled question the brain holds words for."""

    question: str
    corrections: list[dict[str, Any]]


class PackJSON(TypedDict):
    """One research run: ``research_pack.v1``."""

    ok: bool
    schema_version: str
    run_id: str
    question: str
    database: str
    mode: str
    query_plan: QueryPlanJSON
    judge: JudgeJSON
    external_search: WebSearchJSON
    coverage: CoverageJSON
    evidence: list[EvidenceJSON]
    external_evidence: list[WebEvidenceJSON]
    ranking: list[RankingEntryJSON]
    merge_decisions: list[dict[str, Any]]
    warnings: list[dict[str, Any]]
    timings_ms: dict[str, float]
    did_you_mean: DidYouMeanJSON | None
    answer: AnswerJSON
    research: NotRequired[ResearchJSON]  # deep research runs only
    # Added after ``Pack.to_json``: by saving the run (``traces.record``), by a refined run's
    # lineage (``service.refined``) and by re-ranking a saved run (``feedback.apply_feedback``).
    trace_url: NotRequired[str]
    parent_run_id: NotRequired[str]
    refinement: NotRequired[dict[str, Any]]
    feedback: NotRequired[dict[str, Any]]


def ranked_row(pack: PackJSON, entry: RankingEntryJSON) -> EvidenceJSON | WebEvidenceJSON:
    """The row a ranking entry places: ``entry["index"]`` of the list it names."""
    if entry["list"] == "external_evidence":
        return pack["external_evidence"][entry["index"]]
    return pack["evidence"][entry["index"]]
