"""The kinds of event a research trace holds, and each one's shape: the one registry both the
writer (``trace_events.events_for``) and the reader (``display``) use.

``EventName`` lists every kind; each has its TypedDict here (``name`` its literal name, ``data``
its shape) and ``TraceEvent`` is their union, so a kind written, read or misspelled on one side
only is a type error. A saved trace keeps the events as they were written; every ``data`` key
declared here has been written since its event was first saved, so older traces read alike.

(No postponed annotations here: ``TypedDict`` reads ``NotRequired`` when the class is made.)
"""

from typing import Any, Literal, NotRequired, TypedDict

from .pack_json import ConfidenceJSON, CostJSON, JudgeJSON, RejectedCitationJSON

# Every kind of event a trace holds, in the order a run writes them.
EventName = Literal[
    "query_plan_built",
    "local_search_admitted",
    "local_search_completed",
    "judge",
    "external_search_skipped",
    "external_query_built",
    "external_provider_skipped",
    "external_provider_request",
    "external_provider_response",
    "external_result_deduped",
    "external_evidence_selected",
    "external_merge_completed",
    "deep_round",
    "deep_query",
    "deep_proposal",
    "deep_stopped",
    "answer_synthesized",
    "answer_verified",
    "evidence_selected",
]


class QueryPlanBuiltData(TypedDict):
    text_query: str
    fts_query: str
    query_terms: list[str]
    syntax: str
    filters: dict[str, Any]
    limit: int


class QueryPlanBuilt(TypedDict):
    """How the question became queries."""

    at: str
    name: Literal["query_plan_built"]
    data: QueryPlanBuiltData


class BrainSearchAdmittedData(CostJSON):
    narrowed_terms: list[str]
    waited_ms: float


class BrainSearchAdmitted(TypedDict):
    """What admission weighed, and how long the question waited its turn."""

    at: str
    name: Literal["local_search_admitted"]
    data: BrainSearchAdmittedData


class BrainSearchCompletedData(TypedDict):
    query_mode: str
    match_query: str
    exact_matches: int
    item_text_matches: int
    source_text_matches: int
    rows: list[str]


class BrainSearchCompleted(TypedDict):
    """The brain's rows, by key."""

    at: str
    name: Literal["local_search_completed"]
    data: BrainSearchCompletedData


class Judged(TypedDict):
    """The judge's verdict, whole."""

    at: str
    name: Literal["judge"]
    data: JudgeJSON


class WebSkippedData(TypedDict):
    mode: str
    reason: str


class WebSkipped(TypedDict):
    """Why the web was not searched."""

    at: str
    name: Literal["external_search_skipped"]
    data: WebSkippedData


class WebQueryBuiltData(TypedDict):
    provider: str
    query: str
    params: dict[str, Any]


class WebQueryBuilt(TypedDict):
    """What one provider was asked."""

    at: str
    name: Literal["external_query_built"]
    data: WebQueryBuiltData


class ProviderSkippedData(TypedDict):
    provider: str
    reason: str


class ProviderSkipped(TypedDict):
    """A provider not called (its budget was spent)."""

    at: str
    name: Literal["external_provider_skipped"]
    data: ProviderSkippedData


class ProviderRequestData(TypedDict):
    provider: str
    cached: bool


class ProviderRequest(TypedDict):
    """A provider called, or answered from the cache."""

    at: str
    name: Literal["external_provider_request"]
    data: ProviderRequestData


class ProviderResponseData(TypedDict):
    provider: str
    results: int
    cached: bool
    returned: list[dict[str, Any]]
    error: NotRequired[str]  # a failed call's warning code, and its message
    message: NotRequired[str]


class ProviderResponse(TypedDict):
    """What a provider returned (bounded), or why it failed."""

    at: str
    name: Literal["external_provider_response"]
    data: ProviderResponseData


class ResultDeduped(TypedDict):
    """One merge decision (``merge``): its ``decision`` and ``url``, and what it names."""

    at: str
    name: Literal["external_result_deduped"]
    data: dict[str, Any]


class SelectedWebRow(TypedDict):
    source_key: str
    url: str
    providers: list[str]


class WebEvidenceSelectedData(TypedDict):
    rows: list[SelectedWebRow]


class WebEvidenceSelected(TypedDict):
    """The web rows the run kept."""

    at: str
    name: Literal["external_evidence_selected"]
    data: WebEvidenceSelectedData


class MergeCompletedData(TypedDict):
    external_rows: int
    local_rows_credited: int
    decisions: int
    warnings: list[str]


class MergeCompleted(TypedDict):
    """The merge, counted."""

    at: str
    name: Literal["external_merge_completed"]
    data: MergeCompletedData


class DeepRoundData(TypedDict):
    round: int
    gaps: list[str]


class DeepRound(TypedDict):
    """One round of a deep run, and the facets still uncovered after it."""

    at: str
    name: Literal["deep_round"]
    data: DeepRoundData


class DeepQuery(TypedDict):
    """One follow-up query of a round: ``round`` and what ``ResearchRoundJSON`` says of it."""

    at: str
    name: Literal["deep_query"]
    data: dict[str, Any]


class DeepProposal(TypedDict):
    """A model's proposed step and what the runtime made of it (``strategy=pro``)."""

    at: str
    name: Literal["deep_proposal"]
    data: dict[str, Any]


class DeepStoppedData(TypedDict):
    stop_reason: str
    stop_message: str
    confidence: ConfidenceJSON
    spent: dict[str, int]


class DeepStopped(TypedDict):
    """Why a deep run stopped."""

    at: str
    name: Literal["deep_stopped"]
    data: DeepStoppedData


class AnswerSynthesizedData(TypedDict):
    synthesizer: str
    status: str
    sentences: int
    evidence: dict[str, Any]
    timings_ms: dict[str, float]


class AnswerSynthesized(TypedDict):
    """The answer written: by which synthesizer, how long, from what."""

    at: str
    name: Literal["answer_synthesized"]
    data: AnswerSynthesizedData


class ConflictsDecidedData(TypedDict):
    status: str
    kept: int
    dropped: list[Any]


class AnswerVerifiedData(TypedDict):
    citations: dict[str, list[str]]
    rejected_citations: list[RejectedCitationJSON]
    unsupported_sentences: list[dict[str, Any]]
    conflicts: ConflictsDecidedData
    gaps: list[str]


class AnswerVerified(TypedDict):
    """What the citation verifier decided (``verifier_decisions``)."""

    at: str
    name: Literal["answer_verified"]
    data: AnswerVerifiedData


class EvidenceSelectedData(TypedDict):
    local: int
    external: int


class EvidenceSelected(TypedDict):
    """The run's rows, counted by origin."""

    at: str
    name: Literal["evidence_selected"]
    data: EvidenceSelectedData


# One event of a trace: its ``name`` says which.
TraceEvent = (
    QueryPlanBuilt
    | BrainSearchAdmitted
    | BrainSearchCompleted
    | Judged
    | WebSkipped
    | WebQueryBuilt
    | ProviderSkipped
    | ProviderRequest
    | ProviderResponse
    | ResultDeduped
    | WebEvidenceSelected
    | MergeCompleted
    | DeepRound
    | DeepQuery
    | DeepProposal
    | DeepStopped
    | AnswerSynthesized
    | AnswerVerified
    | EvidenceSelected
)
