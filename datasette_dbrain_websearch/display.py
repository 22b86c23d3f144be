"""What the page says about a pack, in words for people (pure functions).

The pack keeps the machine's account (lanes, bm25, RRF); the page tells the same facts as
sentences: "matched 3 of 3 words", "found by Brave at rank 2", "in your brain since
2026-03-15". Keys and scores are still there, last, for those who look.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .pack_json import BRAIN_ORIGIN, RANKER_PREFIX, WEB_ORIGIN, PackJSON
from .providers import DIRECT_LABEL
from .web_ranking import UNIT

if TYPE_CHECKING:  # the trace's types only (pure: not the module that stores traces, nor the
    # events' writer, which imports the web stage, whose judge says its verdicts with ``plural``)
    from .trace_event_types import TraceEvent
    from .traces import TraceJSON

Row = Mapping[str, Any]
ORDINAL = {1: "1st", 2: "2nd", 3: "3rd"}
FEW_WORDS = 0.5  # a web row holding fewer than half the question's words says so


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Drop control characters, so provider text cannot move the cursor or retitle a terminal."""
    return _CONTROL.sub("", text)


def plural(count: int, word: str, many: str = "") -> str:
    return f"{count} {word if count == 1 else many or word + 's'}"


def ordinal(n: int) -> str:
    return ORDINAL.get(n if n % 100 not in (11, 12, 13) else 0, f"{n}th")


def names(labels: Mapping[str, str], providers: Sequence[str]) -> str:
    shown = [labels.get(p, p) for p in providers]
    return " and ".join(shown) if len(shown) < 3 else ", ".join(shown[:-1]) + " and " + shown[-1]


BRAIN_BADGE = "Your dbrain brain"
# How deep a web row's text goes: what the provider returned, or the page itself, read.
DEPTH_LABELS = {"snippet": "provider snippet", "page": "full page read"}


def web_badge(providers: Sequence[str], labels: Mapping[str, str]) -> str:
    """The origin every web row carries, wherever it is shown."""
    return f"Outside dbrain corpus / {' + '.join(labels.get(p, p) for p in providers)} / ephemeral"


def word_match(row: Row) -> str:
    """ "matches 3 of 3 words" (or the one word, or none of them)."""
    matched = len(row["retrieval"]["matched_terms"])
    total = matched + len(row["retrieval"]["missing_terms"])
    if not total:
        return ""
    return (
        f"matches {matched} of {plural(total, 'word')}"
        if total > 1
        else ("matches the word" if matched else "does not contain the word")
    )


# The signals that rank a web row against the question (``web_ranking``), in words.
WEB_RANKING_SIGNALS = {
    "external_provider_rank": "provider rank",
    "term_coverage_title": "title words",
    "term_coverage_snippet": "snippet words",
    "term_coverage_page": "page words",
    "semantic_cosine": "meaning",
}


def web_ranking_line(row: Row) -> str:
    """ "ranked against the question: provider rank 0.98, title words 0.25 ... = 1.46": what
    each signal added to a web row's score (a plugin's ranker by its name), in ``UNIT``s (rank
    1 at the only provider is 1)."""
    added: dict[str, float] = {}
    for signal in row["retrieval"]["signals"]:
        name = signal["name"]
        label = WEB_RANKING_SIGNALS.get(name) or name.removeprefix(RANKER_PREFIX)
        if name in WEB_RANKING_SIGNALS or name.startswith(RANKER_PREFIX):
            added[label] = added.get(label, 0.0) + float(signal["weight"]) / UNIT
    if not added:
        return ""
    parts = ", ".join(f"{label} {value:.2f}" for label, value in added.items())
    return f"ranked against the question: {parts} = {sum(added.values()):.2f}"


MEANING_ONLY = "found by meaning \u2014 no words in common"


def meaning_only(row: Row) -> bool:
    """A brain row the semantic lane found although it holds none of the question's words."""
    return any(lane.get("dense_only") for lane in row["retrieval"]["lanes"])


def few_words(row: Row) -> bool:
    """A web row that holds fewer than half of the question's words."""
    matched = len(row["retrieval"]["matched_terms"])
    total = matched + len(row["retrieval"]["missing_terms"])
    return total > 1 and matched / total < FEW_WORDS


def why(row: Row, labels: Mapping[str, str]) -> list[str]:
    """Why a row is here, one short sentence each, in the order people ask."""
    said: list[str] = []
    for lane in row["retrieval"]["lanes"]:
        name = lane["name"]
        linked = "its linked page: " if lane.get("linked_source_key") else ""
        if name == "exact_lookup":
            said.append(f"the question names it exactly (its {lane.get('field', 'key')})")
        elif name == "lexical":
            table = "items" if lane.get("table") == "items_fts" else "sources"
            how = (
                " (some of the words: no row had them all)"
                if lane.get("query") == "relaxed"
                else ""
            )
            said.append(f"{linked}{ordinal(lane['rank'])} best match among your {table}{how}")
        elif name == "semantic":
            close = f"{MEANING_ONLY}: " if lane.get("dense_only") else ""
            said.append(
                f"{linked}{close}close in meaning to the question "
                f"(cosine {float(lane.get('raw_score', 0.0)):.2f})"
            )
        elif name == "external_search":
            where = "your brain's copy" if lane.get("store") == "local" else "this page"
            if linked:
                where = "its linked page in your brain"
            cached = ", from the cache" if lane.get("cached") else ""
            provider = labels.get(lane["provider"], lane["provider"])
            said.append(f"{provider} found {where} at rank {lane['rank']}{cached}")
        elif name == "direct_url":
            cached = ", from the cache" if lane.get("cached") else ""
            said.append(f"the question is this page's URL: read directly, not searched{cached}")
    if row.get("origin") == WEB_ORIGIN:
        ranked = web_ranking_line(row)
        if ranked:
            said.append(ranked)
    match = word_match(row)
    if match:
        missing = row["retrieval"]["missing_terms"]
        said.append(match + (f"; not: {', '.join(missing)}" if missing else ""))
    if row.get("origin") == BRAIN_ORIGIN and row.get("saved_at"):
        said.append(f"in your brain since {str(row['saved_at'])[:10]}")
    if row.get("published_at"):
        said.append(f"published {str(row['published_at'])[:10]}")
    return said


def counts_line(pack: PackJSON, labels: Mapping[str, str]) -> str:
    """ "Brain: 10 · Web: 5 (Brave, Exa)" — the same numbers the lists below hold."""
    line = f"Brain: {len(pack['evidence'])}"
    web = pack["external_search"]
    if web.get("ran"):
        providers = ", ".join(labels.get(p, p) for p in web["providers"]) or "no provider answered"
        line += f" · Web: {len(pack['external_evidence'])} ({providers})"
    elif pack["external_evidence"]:  # no search: the page the question named, read directly
        line += f" · Web: {len(pack['external_evidence'])} ({DIRECT_LABEL})"
    return line


# What a brain row is, in words: "web" means outside your brain everywhere on the page, so a
# saved page is a "web page", never bare "web".
SOURCE_TYPE_LABELS = {
    "web": "web page",
    "github": "GitHub",
    "youtube": "YouTube",
    "pdf": "PDF",
    "x_article": "X article",
    "apple_note": "note",
    "feed_entry": "feed entry",
    "github_star": "GitHub star",
    "manual": "note you wrote",
    "safari_tab": "Safari tab",
    "x_bookmark": "X bookmark",
}


def kind_label(source_type: str) -> str:
    """A row's ``source_type`` as people say it ("web" is a "web page"; unknown ones with
    spaces for underscores)."""
    return SOURCE_TYPE_LABELS.get(source_type, source_type.replace("_", " "))


WEB_SKIPPED = {
    "mode_never": "the request said never",
    "disabled": "web search is turned off in this Datasette",
    "not_permitted": "not allowed for whoever asked",
    "local_evidence_enough": "your brain holds the answer",
    "empty_query": "no words to send",
    "cross_site": "the request came from another site",
    "sites_not_allowed": "the sites asked for are outside this Datasette's allow_domains",
    "direct_url": "the question is a URL: the page you named was read instead",
    "deep_budget": "one search could spend more than deep research's web_searches budget",
}


def web_skipped(reason: str) -> str:
    """Why a run did not search the web, in words."""
    return WEB_SKIPPED.get(reason, reason.replace("_", " "))


def no_answer(answer: Row) -> str:
    """The answer box's first words when no sentence answers: "No answer in your brain"."""
    return str(answer["message"]).split(". ", 1)[0].rstrip(".")


def no_answer_reason(answer: Row) -> str:
    """Why no sentence answers, after ``no_answer``'s words ("Nothing says where: …")."""
    parts = answer["message"].split(". ", 1)
    return parts[1] if len(parts) > 1 else ""


def answer_parts(answer: Row) -> list[tuple[str, list[Row]]]:
    """The answer's sentences by origin: ``"brain"`` (resting on the brain, or citing
    nothing) and ``"web"`` (citing only web rows, shown under "From the web"), never mixed;
    the part that holds the answer's first sentence (its point) first, empty parts left out."""
    web_keys = set(answer["citations"]["external"])
    brain: list[Row] = []
    web: list[Row] = []
    for sentence in answer["sentences"]:
        cited = sentence["citations"]
        (web if cited and all(k in web_keys for k in cited) else brain).append(sentence)
    parts = [("brain", brain), ("web", web)]
    if web and web[0] is answer["sentences"][0]:
        parts.reverse()
    return [(origin, part) for origin, part in parts if part]


def cited_quotes(pack: PackJSON | None) -> dict[str, list[str]]:
    """For each row key the answer cites, the sentences of that row it rests on (each once, in
    the answer's order): the row shows them, so every citation can be checked where it
    points."""
    quotes: dict[str, list[str]] = {}
    for sentence in pack["answer"]["sentences"] if pack is not None else []:
        for found in sentence.get("quotes", []):  # runs saved before quotes have none
            if found["text"] and found["text"] not in quotes.setdefault(found["key"], []):
                quotes[found["key"]].append(found["text"])
    return quotes


def missing_words(pack: PackJSON) -> list[str]:
    """The question's words that none of the top rows mention, the brain's or the web's (what
    the run's verdict lacks); none where the verdict's message already says what the rows lack
    (its closest row's words, the answer check's finding, a deep run's)."""
    judge = pack["judge"]
    combined = judge.get("combined", judge)
    reason = combined["reason"].split(":")[-1]
    if combined["verdict"] == "enough_evidence" or reason in SAID_BY_THE_VERDICT:
        return []
    if "answer_check" in judge["inputs"] or pack.get("research"):
        return []
    missing = list(judge["inputs"].get("missing_terms_in_top_rows", []))
    web = judge.get("web") or {}
    if web.get("searched"):
        missing = [t for t in missing if t in web["missing_terms"]]
    return missing


# Verdicts whose message names what the rows lack (``judge``): the page says it once.
SAID_BY_THE_VERDICT = frozenset({"weak_match", "missing_keyword", "not_answered"})


def matches_note(pack: PackJSON) -> str:
    """How many rows could answer (they hold the question's rarest word), against how many are
    shown."""
    coverage = pack["coverage"]
    items, sources = coverage["item_text_matches"], coverage["source_text_matches"]
    mentioned = items + sources
    shown = len(pack["evidence"])
    if not mentioned or mentioned <= shown:
        return ""
    return (
        f"{plural(items, 'item')} and {plural(sources, 'source')} hold its rarest word; "
        f"the best {shown} are shown."
    )


def verdict_numbers(pack: PackJSON) -> str:
    """The numbers behind the verdict, for the page's details (its message is words): the
    best row's evidence score against the threshold, its share of the question's weight and
    its cosine, and how many sentences the answer check read."""
    inputs = pack["judge"]["inputs"]
    best = inputs.get("best_row")
    parts = []
    if best:
        label = f"[{best['label']}]" if best.get("label") else f"row {best['rank']}"
        close = "" if best.get("cosine") is None else f", cosine {best['cosine']:.2f}"
        parts.append(
            f"evidence score {best['score']:.2f} (enough from {inputs['min_score']:.2f}) for "
            f"{label}: {best['weight_share']:.0%} of the question's weight{close}"
        )
    check = inputs.get("answer_check")
    if check and check.get("sentences_checked") is not None:
        parts.append(
            f"answer check: {plural(check['sentences_checked'], 'sentence')} read, "
            + ("one answers" if check["answered"] else "none answers")
        )
    return ("Verdict: " + "; ".join(parts)) if parts else ""


def spaced(value: Any) -> str:
    """``weak_evidence`` -> ``weak evidence``."""
    return str(value or "").replace("_", " ")


def _event_summary(event: TraceEvent, labels: Mapping[str, str]) -> str:
    """One event in words, by its kind (``trace_events.EventName``); kinds with nothing more to
    say are their name, spaced."""
    if event["name"] == "query_plan_built":
        words = ", ".join(event["data"]["query_terms"]) or "no words to search"
        return f"Question read as: {words}"
    if event["name"] == "local_search_admitted":
        admitted = event["data"]
        postings = f"reads {int(admitted['postings']):,} postings"
        heavy = "a heavy question, in turn with the others" if admitted["heavy"] else "a light one"
        waited = float(admitted["waited_ms"])
        narrowed = ", ".join(admitted["narrowed_terms"])
        return (
            f"Admitted: {postings}, {heavy}"
            + (f"; waited {waited:,.0f} ms" if waited >= 1 else "")
            + (f"; left out of the ranking: {narrowed}" if narrowed else "")
        )
    if event["name"] == "local_search_completed":
        searched = event["data"]
        how = " (rows with some of the words)" if searched["query_mode"] == "relaxed" else ""
        return f"Searched your brain: {plural(len(searched['rows']), 'row')}{how}"
    if event["name"] == "judge":
        judge = event["data"]
        return f"Verdict: {judge['verdict'].replace('_', ' ')}. {judge['message']}"
    if event["name"] == "external_search_skipped":
        return f"Web not searched ({web_skipped(event['data']['reason'])})"
    if event["name"] == "external_query_built":
        asked = event["data"]
        return f"Asked {labels.get(asked['provider'], asked['provider'])}: “{asked['query']}”"
    if event["name"] == "external_provider_request":
        request = event["data"]
        return f"Request to {labels.get(request['provider'], request['provider'])}" + (
            " (answered from the cache)" if request["cached"] else ""
        )
    if event["name"] == "external_provider_response":
        response = event["data"]
        provider = labels.get(response["provider"], response["provider"])
        return f"{provider} answered: {plural(int(response['results']), 'result')}"
    if event["name"] == "external_result_deduped":
        decision = event["data"]
        return f"Merge: {spaced(decision['decision'])} {decision['url']}"
    if event["name"] == "external_evidence_selected":
        return f"Kept {plural(len(event['data']['rows']), 'web row')}"
    if event["name"] == "external_merge_completed":
        merged = event["data"]
        web = plural(int(merged["external_rows"]), "web row")
        credited = plural(int(merged["local_rows_credited"]), "brain row")
        return f"Merged: {web}, {credited} also found on the web"
    if event["name"] == "answer_synthesized":
        answer = event["data"]
        return (
            f"Answer written ({answer['synthesizer']}): "
            f"{plural(int(answer['sentences']), 'sentence')}, {answer['status']}"
        )
    if event["name"] == "answer_verified":
        verified = event["data"]
        cited = verified["citations"]
        return (
            f"Citations checked: {len(cited.get('local', []))} brain, "
            f"{len(cited.get('external', []))} web, "
            f"{len(verified['rejected_citations'])} removed, "
            f"{len(verified['unsupported_sentences'])} unsupported sentence(s)"
        )
    if event["name"] == "evidence_selected":
        counted = event["data"]
        return f"Evidence: {counted['local']} from your brain, {counted['external']} from the web"
    return str(event["name"]).replace("_", " ")


def timeline(trace: TraceJSON, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """The run's events as people read them: when (ms after the start) and what happened."""

    def moment(stamp: str) -> datetime:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))

    started = moment(trace["started_at"])
    return [
        {
            "offset_ms": round((moment(e["at"]) - started).total_seconds() * 1000),
            "name": e["name"],
            "summary": _event_summary(e, labels),
            "data": e["data"],
        }
        for e in trace["events"]
    ]
