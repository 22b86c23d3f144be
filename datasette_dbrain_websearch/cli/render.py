"""A research pack as the terminal shows it: the verdict, a deep run's rounds, the answer with
its citations by label, and each row with its badge, excerpt and signals (pure; control
characters removed).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from .. import citations
from ..display import terminal_safe
from ..pack_json import PackJSON, ranked_row
from ..providers import DIRECT_LABEL


def render_answer(pack: PackJSON) -> list[str]:
    """The answer, each sentence with its citations by label (``[3]``, ``[W2]``, as on the page
    and in the exports) and its marks."""
    answer = pack.get("answer") or {}
    if answer.get("status", "disabled") == "disabled":
        return []
    refs = citations.labels(pack)
    by = answer["synthesizer"]
    lines = ["", f"Answer ({by}; every citation checked against this run):"]
    for n, sentence in enumerate(answer["sentences"], start=1):
        cited = "".join(citations.cite(refs[k]) for k in sentence["citations"] if k in refs)
        mark = "" if sentence["supported"] else "  << UNSUPPORTED"
        text = f"{n}. {sentence['text']} {cited}".rstrip() + mark
        lines += textwrap.wrap(text, 96, initial_indent="  ", subsequent_indent="     ")
    if answer["status"] != "ok":
        lines.append(f"  {answer['message']}")
    if answer["rejected_citations"]:
        keys = ", ".join(r["key"] for r in answer["rejected_citations"])
        lines.append(f"  Removed citations to keys this run never retrieved: {keys}")
    for conflict in answer["conflicts"]["items"]:
        cited = "".join(citations.cite(refs[k]) for k in conflict["citations"] if k in refs)
        lines.append(f"  Sources disagree: {conflict['text']} {cited}")
    lines += [f"  Gap: {gap['message']}" for gap in answer["gaps"]]
    return lines


def render_research(pack: PackJSON) -> list[str]:
    """A deep run's rounds (each query and why it was asked), why it stopped, and how far to
    trust it."""
    research = pack.get("research")
    if not research:
        return []
    lines = [""]
    for done in research["rounds"]:
        for query in done["queries"]:
            text = f"Round {done['round']}: {query['query']} ({query['why']}; {query['added']} new)"
            lines += _wrapped(text, "  ")
    confidence = research["confidence"]
    lines.append(
        f"Stopped: {research['stop_reason']} ({research['stop_message']}); confidence "
        f"{confidence['level']} ({confidence['score']:.2f})"
    )
    return lines


def _wrapped(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, 96, initial_indent=indent, subsequent_indent=indent)


def _provider_text(page: Mapping[str, Any], indent: str) -> list[str]:
    """A held page dbrain has not extracted: the provider's text, said to be the provider's."""
    found = page.get("provider_excerpt")
    if not found:
        return []
    return _wrapped(f"[{found['excerpt_from']}'s text, not your brain's] {found['text']}", indent)


def render_text(pack: PackJSON) -> str:
    """A readable terminal rendering of a pack (control characters removed)."""
    verdict = pack["judge"]["combined"]
    plan = pack["query_plan"]
    lines = [
        f"Verdict: {verdict['verdict']} ({verdict['reason']}) - {verdict['message']}",
        f"Local dbrain evidence: {len(pack['evidence'])} rows   "
        f"[{plan['query_mode']}: {plan['match_query']}]",
    ]
    if pack["external_search"]["ran"]:
        providers = ", ".join(pack["external_search"]["providers"])
        lines.append(
            f"Outside dbrain corpus: {len(pack['external_evidence'])} rows from {providers} "
            "(ephemeral)"
        )
    elif pack["external_evidence"]:  # no search: the page the question named, read directly
        lines.append(
            f"Outside dbrain corpus: {DIRECT_LABEL}, read directly "
            f"({pack['external_evidence'][0]['url']}, ephemeral)"
        )
    lines += [
        f"Warning: {w['provider'] + ': ' if w.get('provider') else ''}{w['message']}"
        for w in pack["warnings"]
    ]
    lines += render_research(pack)
    lines += render_answer(pack)
    refs = citations.labels(pack)
    for entry in pack["ranking"]:
        row: Mapping[str, Any] = ranked_row(pack, entry)
        ref = f"{citations.cite(refs[row['source_key']]):>5}"
        lines.append("")
        if entry["list"] == "external_evidence":
            badge = f"OUTSIDE DBRAIN CORPUS / {' + '.join(row['providers'])} / ephemeral"
            lines.append(f"{ref} [{badge}] {row['title']}")
        else:
            found_by = ", ".join(row.get("also_found_by", []))
            lines.append(
                f"{ref} [{row['kind']}/{row['source_type']}] {row['title']}"
                + (f"  (also found by {found_by})" if found_by else "")
            )
        lines.append(f"    {row['source_key']}  {row['url']}".rstrip())
        lines += _wrapped(row["excerpt"], "    ")
        lines += _provider_text(row, "    ")
        if row.get("linked_source"):
            page = row["linked_source"]
            lines.append(f"    linked page in your brain: {page['title']}")
            lines.append(f"      {page['source_key']}  {page['url']}".rstrip())
            lines += _wrapped(page["excerpt"], "      ")
            lines += _provider_text(page, "      ")
        if row.get("user_tags"):
            lines.append(f"    tags: {', '.join(row['user_tags'])}")
        signals = "; ".join(s["name"] for s in row["retrieval"]["signals"])
        lines.append(f"    signals: {signals}   score {row['retrieval']['score']}")
    return terminal_safe("\n".join(lines))
