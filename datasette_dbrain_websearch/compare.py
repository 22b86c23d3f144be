"""Two saved runs side by side (pure): what one found that the other did not.

The question a comparison answers is usually "what did the web add?": the same question with and
without the web. Verdicts, counts, time and cost sit side by side; rows are matched by what they
point at (a brain row by its key, a web row by its URL), so the rows only one run holds stand
out; each answer sentence says whether it cites the brain, the web, or both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import citations
from .display import plural
from .pack import row_keys
from .pack_json import WEB_ORIGIN

Row = Mapping[str, Any]


def identity(row: Row) -> str:
    """What a row points at, the same in any run: a web page's URL, a brain row's key."""
    return f"url:{row['url']}" if row["origin"] == WEB_ORIGIN else f"key:{row['source_key']}"


def row_summary(row: Row, rank: int) -> dict[str, Any]:
    return {
        "key": row["source_key"],
        "origin": row["origin"],
        "rank": rank,
        "title": row.get("title", ""),
        "url": row.get("url", ""),
        **({"row_url": row["row_url"]} if row.get("row_url") else {}),
        **({"providers": list(row["providers"])} if row.get("providers") else {}),
    }


def ranked_entries(pack: Row) -> list[tuple[Row, Row]]:
    """The run's ranking entries and their rows in its reading order, brain and web (of a run,
    ``PackJSON``, or what it shares, ``exports.shared``: read alike, by their lists' names)."""
    return [(entry, pack[entry["list"]][entry["index"]]) for entry in pack["ranking"]]


def answer_sides(pack: Row) -> list[dict[str, Any]]:
    """Each answer sentence with the side it cites: ``brain``, ``web``, ``both`` or ``none``,
    and the labels of the rows it cites (``citations``), as the run's page shows them."""
    labels = citations.labels(pack)
    brain = {key for row in pack["evidence"] for key in row_keys(row)}
    web = {row["source_key"] for row in pack["external_evidence"]}
    sides = []
    for sentence in pack["answer"]["sentences"]:
        cited = set(sentence["citations"])
        on = ("brain" if cited & brain else "") + ("web" if cited & web else "")
        sides.append(
            {
                "text": sentence["text"],
                "citations": sentence["citations"],
                "refs": [labels[key] for key in sentence["citations"] if key in labels],
                "cites": {"brainweb": "both", "": "none"}.get(on, on),
            }
        )
    return sides


def side(trace: Row, cost: Mapping[str, Any]) -> dict[str, Any]:
    """One run's column: its verdict, counts, time, cost and answer; of a shared run
    (``exports.shared``), only its answer and the count of the rows it cites."""
    pack = trace["pack"]
    seen = {
        "run_id": pack["run_id"],
        "started_at": trace["started_at"],
        "question": pack["question"],
        "database": pack["database"],
    }
    if pack.get("shared"):
        cited = {"brain": len(pack["evidence"]), "web": len(pack["external_evidence"])}
        return {**seen, "shared": True, "cited": cited, "answer": answer_sides(pack)}
    judge = pack["judge"]
    verdict = judge["combined"] or judge
    web = pack["external_search"]
    return {
        **seen,
        "shared": False,
        "verdict": verdict["verdict"],
        "message": verdict["message"],
        "brain_verdict": judge["verdict"],
        "web_searched": bool(web["ran"]),
        "providers": list(web["providers"]),
        "counts": {"brain": len(pack["evidence"]), "web": len(pack["external_evidence"])},
        "total_ms": pack["timings_ms"].get("total", 0.0),
        "provider_calls": int(cost.get("calls", 0)),
        "cost_usd": round(float(cost.get("cost_usd", 0.0)), 6),
        "answer": answer_sides(pack),
    }


def compare_runs(
    a: Row, b: Row, costs: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The comparison of two saved runs (traces); ``costs`` by run id, from the ledger."""
    costs = costs or {}
    rows = {}
    for name, trace in (("a", a), ("b", b)):
        pack = trace["pack"]
        # A shared run's rows keep their place in the whole run.
        rows[name] = {
            identity(row): row_summary(row, entry.get("place", rank))
            for rank, (entry, row) in enumerate(ranked_entries(pack), start=1)
        }
    shared = [k for k in rows["a"] if k in rows["b"]]
    comparison = {
        "ok": True,
        "a": side(a, costs.get(a["pack"]["run_id"], {})),
        "b": side(b, costs.get(b["pack"]["run_id"], {})),
        "same_question": a["pack"]["question"] == b["pack"]["question"],
        "only_in_a": [row for key, row in rows["a"].items() if key not in rows["b"]],
        "only_in_b": [row for key, row in rows["b"].items() if key not in rows["a"]],
        "in_both": [
            {**rows["a"][k], "rank_in_b": rows["b"][k]["rank"], "key_in_b": rows["b"][k]["key"]}
            for k in shared
        ],
    }
    comparison["summary"] = summary(comparison)
    return comparison


def summary(comparison: Mapping[str, Any]) -> str:
    """The comparison in one sentence: what the web added, when one run searched it and the
    other did not; else what each found that the other did not."""
    a, b = comparison["a"], comparison["b"]
    found = (
        f"A found {plural(len(comparison['only_in_a']), 'row')} B did not; B found "
        f"{plural(len(comparison['only_in_b']), 'row')} A did not."
    )
    shared = [name for name, one in (("A", a), ("B", b)) if one["shared"]]
    if shared:
        return (
            f"{found} {' and '.join(shared)} {'is' if len(shared) == 1 else 'are'} not yours: "
            "only the rows each answer cites are shown."
        )
    if a["web_searched"] == b["web_searched"]:
        return found
    web, brain, only = (
        (a, b, comparison["only_in_a"]) if a["web_searched"] else (b, a, comparison["only_in_b"])
    )
    pages = sum(1 for row in only if row["origin"] == WEB_ORIGIN)
    held = len(only) - pages
    said = sum(1 for s in web["answer"] if s["cites"] in ("web", "both"))
    verdict = (
        f"the verdict went from {words(brain['verdict'])} to {words(web['verdict'])}"
        if web["verdict"] != brain["verdict"]
        else f"the same verdict ({words(web['verdict'])})"
    )
    cost = (
        f"{plural(web['provider_calls'], 'provider call')} (${web['cost_usd']:.3f})"
        if web["provider_calls"]
        else "no provider call (answered from the cache)"
    )
    return (
        f"The web added {plural(pages, 'page')}"
        + (f" and pointed to {plural(held, 'row')} of your brain" if held else "")
        + f", {plural(said, 'answer sentence')} citing it, and {verdict}; it took "
        f"{max(0.0, web['total_ms'] - brain['total_ms']):,.0f} ms more and {cost}."
    )


def words(verdict: str) -> str:
    return verdict.replace("_", " ")
