"""What the tools return: the compact pack agents read (the verdict, the web, rows labelled
by origin, the verified answer), a brain row with its texts in one budget, and a promotion's
outcome, with links on this site or absolute for callers elsewhere."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .. import citations, display, traces
from ..brain import Hit, row_facts
from ..pack_json import BRAIN_ORIGIN, AnswerJSON, PackJSON, ranked_row
from ..promotions import promotion_message
from ..row_texts import excerpt_fields
from ..traces import TraceJSON

SOURCE_TEXT_CHARS = 8000  # what dbrain_get_source returns of a row's text (about 2k tokens)


Link = Callable[[str], str]


def same_path(path: str) -> str:
    """Links for callers on this site (the agent's chat page): paths as they are."""
    return path


def compact_pack(pack: PackJSON, labels: dict[str, str], link: Link) -> dict[str, Any]:
    """What an agent needs of a pack: the verdict, what the web did, the rows, the verified
    answer (when asked for), warnings and the run.

    Brain rows and web rows come in two lists, as the pack's ``evidence`` and
    ``external_evidence`` do, so no row can pass for the other kind even when a caller cuts a
    long reply short; ``n`` is a row's place in the run's reading order (``ranking``), ``ref``
    its label (``citations``: ``3``, ``W2``), as the page and the Markdown cite it.
    """
    web = pack["external_search"]
    refs = citations.labels(pack)
    rows: dict[str, list[dict[str, Any]]] = {"evidence": [], "external_evidence": []}
    for n, entry in enumerate(pack["ranking"], start=1):
        row = ranked_row(pack, entry)
        rows[entry["list"]].append(
            {"ref": refs[row["source_key"]], **compact_row(n, row, labels, link)}
        )
    compact: dict[str, Any] = {
        "ok": True,
        "run_id": pack["run_id"],
        "question": pack["question"],
        "database": pack["database"],
        # The run's verdict over everything it found; the brain's alone beside it.
        "verdict": {
            **pack["judge"]["combined"],
            "brain": {k: pack["judge"][k] for k in ("verdict", "reason", "message")},
        },
        "web": {
            "mode": web["mode"],
            "searched": web["ran"],
            "providers": [labels.get(p, p) for p in web["providers"]],
            "skipped_reason": web["skipped_reason"],
        },
        "counts": {"brain": len(pack["evidence"]), "web": len(pack["external_evidence"])},
        "brain_rows": rows["evidence"],
        "web_rows": rows["external_evidence"],
        "warnings": [{"code": w["code"], "message": w["message"]} for w in pack["warnings"]],
    }
    if pack["answer"]["status"] != "disabled":
        compact["answer"] = compact_answer(pack["answer"])
    if pack.get("research"):
        compact["research"] = pack["research"]
    if pack.get("trace_url"):
        compact["trace_url"] = link(pack["trace_url"])
    return compact


def compact_row(
    n: int, row: Mapping[str, Any], labels: dict[str, str], link: Link
) -> dict[str, Any]:
    """One evidence row as an agent sees it: a brain row with its Datasette row URL, or a web
    row marked outside the brain, ephemeral, with its providers."""
    shown: dict[str, Any] = {
        "n": n,
        "key": row["source_key"],
        "origin": row["origin"],
    }
    if row["kind"] == "external":
        providers = [labels.get(p, p) for p in row["providers"]]
        shown |= {
            "store": row["store"],
            "providers": providers,
            "provenance": f"{display.web_badge(row['providers'], labels)}: a web result, not "
            "in the user's brain",
        }
    else:
        shown["provenance"] = display.BRAIN_BADGE
    shown |= {
        "kind": row["kind"],
        "title": row["title"],
        "url": row["url"],
        "excerpt": row["excerpt"],
    }
    if row.get("published_at"):
        shown["published_at"] = row["published_at"]
    if row["kind"] != "external":
        shown["source_type"] = row["source_type"]
        shown["row_url"] = link(row["row_url"])
    if row.get("also_found_by"):
        shown["also_found_by"] = [labels.get(p, p) for p in row["also_found_by"]]
    if row.get("provider_excerpt"):  # the provider's text about a page the brain holds
        shown["provider_excerpt"] = row["provider_excerpt"]
    if row.get("linked_source"):  # the page this item links to, in the brain, matched too
        page = row["linked_source"]
        shown["linked_page"] = {
            "key": page["source_key"],
            "provenance": display.BRAIN_BADGE,
            "title": page["title"],
            "url": page["url"],
            "excerpt": page["excerpt"],
            "row_url": link(page["row_url"]),
        }
        if page.get("provider_excerpt"):
            shown["linked_page"]["provider_excerpt"] = page["provider_excerpt"]
    return shown


def compact_answer(answer: AnswerJSON) -> dict[str, Any]:
    """The verified answer sentence by sentence (its text is the sentences in order), each
    with the keys it cites and whether they support it; the keys by origin, and what the
    verifier removed."""
    return {
        "status": answer["status"],
        "synthesizer": answer["synthesizer"],
        "message": answer["message"],
        "sentences": [
            {"text": s["text"], "citations": s["citations"], "supported": s["supported"]}
            for s in answer["sentences"]
        ],
        "citations": answer["citations"],
        "rejected_citations": answer["rejected_citations"],
        "gaps": [{"code": g["code"], "message": g["message"]} for g in answer["gaps"]],
        "conflicts": answer["conflicts"],
    }


def source_row(hit: Hit, row_url: Callable[[str, int], str], database: str, link: Link) -> dict:
    """A brain row for an agent: what it is, where it came from, and its texts in dbrain's
    excerpt order (summary first) within ``SOURCE_TEXT_CHARS`` altogether."""
    row = hit.row
    shown: dict[str, Any] = {
        "ok": True,
        "key": row["source_key"],
        "database": database,
        "kind": hit.kind,
        "origin": BRAIN_ORIGIN,
        "provenance": display.BRAIN_BADGE,
        **row_facts(hit.kind, row),
    }
    shown["texts"] = trimmed_texts(excerpt_fields(hit.kind, row), SOURCE_TEXT_CHARS)
    shown["truncated"] = any(t["truncated"] for t in shown["texts"])
    shown["row_url"] = link(row_url(hit.kind, hit.id))
    return shown


def trimmed_texts(fields: list[tuple[str, str, str]], budget: int) -> list[dict[str, Any]]:
    """Each distinct non-empty text with its field and evidence role, within one shared
    budget: the text that reaches it is cut at a word boundary and those after it come empty,
    all marked ``truncated`` (``chars`` is a text's full length)."""
    texts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, role, value in fields:
        text = str(value or "").strip()
        if not text or text in seen:
            continue
        seen.add(text)
        kept = trim(text, budget)
        budget = budget - len(kept) if kept == text else 0  # no crumbs after a cut
        texts.append(
            {
                "field": name,
                "role": role,
                "text": kept,
                "chars": len(text),
                "truncated": len(kept) < len(text),
            }
        )
    return texts


def trim(text: str, most: int) -> str:
    """The text, or its first ``most`` characters ending at a word boundary when one is near."""
    if len(text) <= most:
        return text
    cut = text[:most]
    space = cut.rfind(" ")
    return (cut[:space] if space > most * 0.8 else cut).rstrip()


def promotion_reply(
    datasette: Any, trace: TraceJSON, results: list[dict[str, Any]], link: Link = same_path
) -> dict[str, Any]:
    """What a tool says of a promotion: each row's outcome in words, and where it is now."""
    return {
        "ok": True,
        "run_id": trace["run_id"],
        "database": trace["database"],
        "results": [
            {
                "key": r["source_key"],
                "status": r["status"],
                "local_source_key": r["local_source_key"],
                "title": r["title"],
                "message": promotion_message(r),
                "row_url": link(
                    str(datasette.urls.row(trace["database"], "sources", str(r["row_id"])))
                ),
                **({"tags": r["tags"]} if "tags" in r else {}),
                **({"note_key": r["note_key"]} if r.get("note_key") else {}),
            }
            for r in results
        ],
        "trace_url": link(traces.run_path(datasette, trace["run_id"])),
    }
