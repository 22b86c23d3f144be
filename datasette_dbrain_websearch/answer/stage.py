"""The answer stage of a research run: choose the evidence, synthesize, verify, report gaps.

It runs after the merge, only when the request asks for an answer, and can only add to the
pack: a failing model leaves ``answer.status = "failed"`` and a warning, never fewer rows.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..brain_access import TimeBudget
from ..citations import citing, of_run
from ..config import AnswerSettings
from ..display import plural
from ..pack import Answer, Pack
from ..pack_rows import BrainRow, Row, WebRow
from ..query_plan import QueryPlan
from ..question_terms import wanted_raw_terms
from ..urls import URL_NOT_HELD, names_a_page
from ..web_gate import CROSS_SITE_WARNING
from .answerability import (
    Answerability,
    Question,
    answers,
    assess,
    bridges_in,
    explain,
    read_question,
)
from .claims import ask_claims
from .conflicts import find_conflicts
from .extractive import Passage, Similarity, checked_claims, extract
from .gaps import find_gaps, web_contribution
from .model import (
    Labelled,
    ModelFailure,
    ask_model,
    build_prompt,
    declined,
    resolve_model,
    split_reply,
)
from .verify import RunKeys, Verified, verify, without_unsupported

Progress = Callable[[dict[str, Any]], Awaitable[None]]
EXTRACTIVE = "extractive"
NOT_ANSWERED = "not_answered"  # the answer's status when no sentence answers the question


@dataclass(frozen=True)
class AnswerAccess:
    """What the surface knows about answering for this actor: may the evidence go to a model,
    and the Datasette (for datasette-llm) and actor to ask for it. ``cross_site``: another
    site sent this browser request (``requesters.cross_site_with_cookie``), so no model is
    asked on the account; the answer is written offline."""

    model_permitted: bool = False
    datasette: Any = None
    actor: dict | None = None
    cross_site: bool = False
    claims: bool = False  # strategy=pro: the model answers in claims bound to keys (``claims``)


def choose_rows(ranked: list[Row], most: int) -> list[Row]:
    """Up to ``most`` rows for the answer, brain rows first, in reading order. Web rows keep at
    least a third of the places when the run found some, so asking the web is never for
    nothing."""
    brain = [r for r in ranked if isinstance(r, BrainRow)]
    web = [r for r in ranked if not isinstance(r, BrainRow)]
    web_places = min(len(web), max(most // 3, most - len(brain)))
    return brain[: most - web_places] + web[:web_places]


def _label(row: Row, labels: Mapping[str, str]) -> str:
    if isinstance(row, BrainRow):
        facts = [f"{row.kind} ({row.source_type})" if row.source_type else row.kind]
        date = row.published_at or row.saved_at
        if date:
            facts.append(f"dated {date[:10]}")
        where = "FROM THE USER'S BRAIN"
    else:
        names = " + ".join(labels.get(p, p) for p in row.providers)
        facts = [f"web result from {names}, not saved", row.domain]
        if row.published_at:
            facts.append(f"published {row.published_at[:10]}")
        where = "OUTSIDE THE USER'S BRAIN"
    facts = [f for f in facts if f]
    return f"{where}; {'; '.join(facts)}; title: {row.title}"


def _summary(verified: Verified) -> str:
    sentences, removed = verified.sentences, verified.removed
    unsupported = sum(1 for s in sentences if not s["supported"])
    parts = [plural(len(sentences), "sentence")]
    parts.append(
        f"{unsupported} not supported by the rows it cites"
        if unsupported
        else "every one cited and supported by this run's evidence"
    )
    if removed:
        parts.append(f"{plural(len(removed), 'sentence')} the cited rows do not support removed")
    if verified.rejected:
        rejected = len(verified.rejected)
        parts.append(f"{plural(rejected, 'citation')} to keys this run did not retrieve removed")
    return "; ".join(parts) + "."


@dataclass
class Draft:
    """What a synthesizer wrote, before the verifier reads it."""

    synthesizer: str
    text: str = ""
    conflicts: list[str] | None = None  # None: sources were not compared
    via: str = ""
    evidence: dict[str, Any] = field(default_factory=dict)
    failure: str = ""
    claims: bool = False  # claims bound to keys: one no valid key supports is always dropped
    not_answered: bool = False  # a model said the evidence does not answer the question
    lacking: str = ""  # what it said the evidence lacks


async def answer_stage(
    pack: Pack,
    passages: Mapping[str, Passage],
    settings: AnswerSettings,
    access: AnswerAccess,
    labels: Mapping[str, str],
    emit: Progress,
    budget: TimeBudget,
    similarity: Similarity | None = None,
    order: Sequence[Row] | None = None,
    found: Answerability | None = None,
) -> tuple[Answer, list[dict[str, str]]]:
    """The pack's ``answer`` over the run's rows and the warnings the stage adds.
    ``similarity`` (the semantic lane's, when it ran) scores the offline answer's sentences by
    meaning too. Writing and verifying run within the run's ``budget``; a model's reply has
    its own timeout and is not charged.

    ``order`` (deep research) is the rows the answer reads, in its order (each hop's best in
    turn), instead of ``choose_rows``: a web row left out of it is neither read nor citable
    (deep research cites only pages it read); ``found``, its answer check (else the check runs
    over the rows read here): the answer leads with a sentence that answers, and when none
    does, says so and writes nothing."""
    started = time.perf_counter()
    warnings: list[dict[str, str]] = []
    ranked = list(order) if order is not None else pack.ranked()
    terms = list(pack.plan.query_terms)
    use_model = settings.synthesizer == "llm" or access.claims
    if use_model and not access.model_permitted:
        use_model = False
        warnings.append(
            {
                "code": "answer_model_not_permitted",
                "message": "Your account may not send evidence to a language model (permission "
                "dbrain-llm-answer); this answer was written offline from the evidence itself.",
            }
        )
    if use_model and access.cross_site:
        use_model = False
        _skip_model_cross_site(pack, warnings)
    rows = (
        ranked[: settings.max_evidence]
        if order is not None
        else choose_rows(ranked, settings.max_evidence)
    )
    pairs = [(p, row) for rank, row in enumerate(rows) for p in _passages(row, rank, passages)]
    chosen = [p for p, _ in pairs]
    brain = tuple(key for r in pack.evidence for key in r.keys)
    keys = RunKeys(
        brain=brain,
        web=tuple(r.source_key for r in ranked if isinstance(r, WebRow)),
        passages={
            # A linked page (shown inside its item's row) is cited by its own text.
            **{k: f"{p.title}\n{p.text}" for k, p in passages.items() if k in brain},
            **{r.source_key: f"{r.title}\n{r.excerpt.text}" for r in ranked},
            **{p.key: f"{p.title}\n{p.text}" for p in chosen},
        },
    )
    await emit({"stage": "answer", "status": "started", "message": "Writing an answer"})
    synthesis_started = time.perf_counter()
    if found is None:
        named = frozenset(
            key
            for row in rows
            if row.is_exact or (isinstance(row, WebRow) and row.direct_url)
            for key in row.keys
        )
        with budget.phase():
            found = answer_check(asked(pack.question, pack.plan), terms, chosen, similarity, named)
    if use_model:
        with budget.paused():
            draft = await _ask(pack.question, pairs, settings, access, labels, emit, keys)
    elif found.answered:
        leads = frozenset(f.sentence for f in found.findings if f.answers)
        then = found.via.sentence if found.via else None
        with budget.phase():
            drafted = extract(
                terms, chosen, settings.max_sentences, similarity, budget.check, leads, then
            )
        draft = Draft(EXTRACTIVE, drafted)
    else:  # no sentence answers: nothing is written (the evidence stays below)
        draft = Draft(EXTRACTIVE)
    synthesis_ms = _ms(synthesis_started)
    verification_started = time.perf_counter()
    with budget.phase():
        verified = verify(draft.text, keys, settings.min_support, draft.conflicts)
        if not settings.keep_unsupported or draft.claims:
            verified = without_unsupported(verified, keys)
        gaps = find_gaps(
            terms,
            pack.evidence,
            pack.web_rows,
            pack.web_search,
            pack.verdict.combined["verdict"],
            verified.brain,
            verified.web,
        )
        contribution = web_contribution(
            terms, ranked, pack.verdict, pack.web_search, verified.sentences, keys.web
        )
        offline = (
            find_conflicts(terms, verified.sentences, chosen, budget.check)
            if draft.synthesizer == EXTRACTIVE and verified.sentences
            else None
        )
    verification_ms = _ms(verification_started)
    status, message = _outcome(draft, verified, bool(rows), found, pack)
    if status == NOT_ANSWERED and verified.sentences:  # a model's sentences that answer nothing
        verified = replace(
            verified,
            sentences=[],
            brain=[],
            web=[],
            removed=[*verified.removed, *verified.sentences],
        )
    if status == "failed":
        warnings.append({"code": "answer_failed", "message": message})
    answer = Answer(
        status,
        draft.synthesizer,
        message,
        via=draft.via,
        text=verified.text,
        sentences=verified.sentences,
        removed_sentences=verified.removed,
        draft=draft.text,
        citations={"local": verified.brain, "external": verified.web},
        rejected_citations=verified.rejected,
        gaps=gaps,
        conflicts=_conflicts(draft, verified, offline),
        web_contribution=contribution,
        evidence=draft.evidence or {"admitted_source_keys": [p.key for p in chosen]},
        answerability=found.to_json(),
        timings_ms={
            "synthesis": synthesis_ms,
            "verification": verification_ms,
            "total": _ms(started),
        },
    )
    await emit({"stage": "answer", "status": "done", "answer_status": status, "message": message})
    return answer, warnings


MODEL_CROSS_SITE = (
    "This request came from another site, so no language model was asked on your account: "
    "this answer was written offline from the evidence itself; ask again from this page to "
    "have the model write it."
)
WEB_AND_MODEL_CROSS_SITE = (
    "This request came from another site, so neither the web nor a language model was used "
    "on your account: the answer was written offline from your brain's evidence; search again "
    "from this page to include them."
)


def answer_check(
    question: Question,
    terms: Sequence[str],
    passages: Sequence[Passage],
    similarity: Similarity | None = None,
    named: frozenset[str] = frozenset(),
    bridges: Iterable[str] | None = None,
) -> Answerability:
    """Does a sentence of these rows answer the question (``answerability.assess`` over the
    claims the answer reads), directly or through ``bridges`` (by default the names their
    best rows give)? The verdict, the answer and deep research all ask it here."""
    if bridges is None:
        bridges = bridges_in(question, [(p.title, p.text) for p in passages], terms)
    claims = checked_claims(terms, passages)
    return assess(question, claims, similarity, named=named, bridges=bridges)


def asked(question: str, plan: QueryPlan) -> Question:
    """The question as the answer check reads it (the verdict's and the answer's): a raw FTS5
    query (``syntax=raw``) by the words it asks for, as a topic."""
    if plan.syntax == "raw":
        return read_question(" ".join(wanted_raw_terms(question)))
    return read_question(question)


def _skip_model_cross_site(pack: Pack, warnings: list[dict[str, str]]) -> None:
    """The cross-site warning for a model not asked: one warning per run, so when the web
    was skipped for the same reason its warning says both."""
    web_skip = next((w for w in pack.warnings if w.get("code") == CROSS_SITE_WARNING), None)
    if web_skip is not None:
        web_skip["message"] = WEB_AND_MODEL_CROSS_SITE
    else:
        warnings.append({"code": CROSS_SITE_WARNING, "message": MODEL_CROSS_SITE})


async def _ask(
    question: str,
    pairs: list[tuple[Passage, Row]],
    settings: AnswerSettings,
    access: AnswerAccess,
    labels: Mapping[str, str],
    emit: Progress,
    keys: RunKeys,
) -> Draft:
    """The model's draft; ``emit`` hears how far it has got, never its text (the page shows
    only the verified answer). A failure is recorded in the draft, never raised."""
    draft = Draft(f"llm:{settings.model or 'default'}")
    if not pairs:
        return draft
    try:
        resolved = await resolve_model(
            settings.model, settings.api_key, access.datasette, access.actor
        )
        draft.synthesizer, draft.via = f"llm:{resolved.model_id}", resolved.via
        await emit({"stage": "answer", "status": "model", "message": f"Asking {resolved.model_id}"})
        system, prompt, budget = build_prompt(
            question,
            [Labelled(p.key, p.origin, p.text, p.title, label=_label(r, labels)) for p, r in pairs],
            settings.max_chars,
            settings.max_sentences,
        )
        draft.evidence = budget.as_dict()

        written = 0

        async def on_text(chunk: str) -> None:
            # Progress, never the draft: what the page shows is the verified answer.
            nonlocal written
            written += len(chunk)
            await emit(
                {
                    "stage": "answer",
                    "status": "writing",
                    "chars": written,
                    "message": f"{resolved.model_id} is writing ({written:,} characters so far)",
                }
            )

        if access.claims:
            found, turns = await ask_claims(
                resolved.model,
                prompt,
                resolved.key,
                settings.timeout,
                on_text,
                keys,
                settings.max_sentences,
            )
            draft.text, draft.conflicts, draft.claims = found.text, found.conflicts, True
            draft.evidence["claims"] = {"turns": turns, "problems": found.problems}
        else:
            reply = await ask_model(
                resolved.model, system, prompt, resolved.key, settings.timeout, on_text
            )
            draft.text, draft.conflicts = split_reply(reply)
            lacking = declined(draft.text)
            if lacking is not None:  # the model says the evidence does not answer
                draft.text, draft.not_answered, draft.lacking = "", True, lacking
    except ModelFailure as exc:
        draft.failure = str(exc)
    return draft


def _outcome(
    draft: Draft,
    verified: Verified,
    had_rows: bool,
    found: Answerability,
    pack: Pack,
) -> tuple[str, str]:
    """The answer's status and the sentence that explains it: for no answer, what part of the
    question nothing states (``answerability.explain``)."""
    if draft.failure:
        return "failed", f"No answer: {draft.failure}. The evidence below is complete."
    if not had_rows:
        return "no_evidence", "No answer: this run found no evidence to answer from."
    where = "your brain or the web results" if pack.web_rows else "your brain"
    if verified.sentences and not answers_nothing(draft, verified, found):
        return "ok", _summary(verified)
    if draft.synthesizer != EXTRACTIVE and verified.sentences:
        return NOT_ANSWERED, (
            f"No answer in {where}. {explain(found, citing(of_run(pack)))} The model's sentences "
            "do not answer it either (kept below as removed)."
        )
    if draft.lacking:
        return NOT_ANSWERED, f"No answer in {where}. The model says: {draft.lacking}"
    if draft.synthesizer == EXTRACTIVE or draft.not_answered:
        if names_a_page(pack.question):
            said = URL_NOT_HELD
        elif found.answered:
            said = (
                "The rows name the question's words only in titles, links or lists, never in "
                "a sentence that answers it."
            )
        else:
            said = explain(found, citing(of_run(pack)))
        return NOT_ANSWERED, f"No answer in {where}. {said}"
    if verified.removed:
        return NOT_ANSWERED, (
            f"No answer in {where}. The rows the model cited support none of its sentences "
            "(listed as removed below)."
        )
    return NOT_ANSWERED, f"No answer in {where}. The model's reply held no sentences."


def answers_nothing(draft: Draft, verified: Verified, found: Answerability) -> bool:
    """Does a model's answer answer nothing: no sentence of the evidence answers the question
    (the answer check), and none of the model's own sentences does either? Then it is no
    answer, however well each sentence is supported."""
    if draft.synthesizer == EXTRACTIVE or found.answered:
        return False
    return not any(answers(found.question, s["text"]).answers for s in verified.sentences)


def _conflicts(
    draft: Draft, verified: Verified, offline: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """Where the sources disagree: the model's lines, verified, or (``offline``, for the
    extractive answer) what ``find_conflicts`` found; ``not_assessed`` when nothing answered."""
    if offline is not None:
        return {"status": "assessed", "items": offline, "dropped": []}
    if draft.conflicts is not None:
        return {
            "status": "assessed",
            "items": verified.conflicts,
            "dropped": verified.dropped_conflicts,
        }
    reason = (
        "no sentence answered, so no sources were compared"
        if draft.synthesizer == EXTRACTIVE
        else "the model gave no answer"
    )
    return {"status": "not_assessed", "items": [], "reason": reason}


def _passages(row: Row, rank: int, passages: Mapping[str, Passage]) -> list[Passage]:
    """The texts a row answers from: its own and, for an item shown with its linked page, the
    page's (cited by the page's key, which points at the same row)."""
    origin = "local" if isinstance(row, BrainRow) else "external"
    found = []
    for n, key in enumerate(row.keys):
        passage = passages.get(key)
        text = passage.text if passage and passage.text else ("" if n else row.excerpt.text)
        title = passage.title if passage and passage.title else row.title
        if text:
            found.append(Passage(key, origin, text, title, row.is_exact, rank))
    return found


def _ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
