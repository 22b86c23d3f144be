"""A saved run as files people take elsewhere (pure: a trace in, text out).

Markdown holds the verified answer with its citations as numbered references, then every row with
its origin, URL, excerpt and how deep its text goes, each under its label (``citations``:
brain rows ``[1]``, ``[2]``…, web rows ``[W1]``, ``[W2]``…, as the page and the CLI cite them).
Every text it quotes (titles, answer sentences, excerpts, notes, messages) goes through
``_escape``, and only http(s) addresses become links (``_link``): anyone's words are shown as
written, never applied as HTML, links or images. CSV holds the rows, one a line, with the same
reference and origin columns, its text as data and no cell a spreadsheet would run (``_cell``).

A run shared with someone other than its owner (``shared``: an anonymous run's link) holds the
question, the answer and the rows it cites, each under the reference it has in the full run:
not the other rows, the web's uncited snippets and pages, nor how the run was searched.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Mapping
from typing import Any

from . import citations, display
from .pack import row_keys
from .pack_json import WEB_ORIGIN, PackJSON, ranked_row

Row = Mapping[str, Any]
Link = Callable[[str], str]

CSV_COLUMNS = (
    "ref",
    "origin",
    "badge",
    "key",
    "kind",
    "source_type",
    "title",
    "url",
    "row_url",
    "domain",
    "providers",
    "depth",
    "published_at",
    "excerpt",
    "cited_by_answer",
)


# What a shared run shows of a row, of an item's linked page, and of the answer.
SHARED_ROW_FIELDS = (
    "source_key",
    "kind",
    "origin",
    "source_type",
    "title",
    "url",
    "canonical_url",
    "domain",
    "published_at",
    "author",
    "excerpt",
    "excerpt_html",
    "providers",
    "depth",
    "row_url",
    "also_found_by",
)
SHARED_ANSWER_FIELDS = ("status", "synthesizer", "message", "text", "sentences", "citations")


def cited_keys(pack: PackJSON | Row) -> set[str]:
    """The keys the verified answer cites (its sentences and where its sources disagree), of a
    run or of what it shares (``shared``)."""
    answer = pack["answer"]
    said = [*answer["sentences"], *answer["conflicts"].get("items", [])]
    return {key for sentence in said for key in sentence.get("citations", [])}


def is_cited(row: Row, cited: set[str]) -> bool:
    return bool(cited.intersection(row_keys(row)))


def _shared_row(row: Row) -> dict[str, Any]:
    kept = {name: row[name] for name in SHARED_ROW_FIELDS if name in row}
    page = row.get("linked_source")
    if page:
        kept["linked_source"] = {n: page[n] for n in SHARED_ROW_FIELDS if n in page}
    return kept


def shared(pack: PackJSON) -> dict[str, Any]:
    """The run as someone other than its owner sees it: the question, the verified answer and
    the rows it cites, in reading order; each ranking entry keeps its ``place`` in the full run
    (where the owner's page shows the row), and each row its label there (``ref``)."""
    cited = cited_keys(pack)
    refs = citations.labels(pack)
    answer: Row = pack["answer"]
    out: dict[str, Any] = {
        "ok": True,
        "shared": True,
        "run_id": pack["run_id"],
        "question": pack["question"],
        "database": pack["database"],
        "answer": {name: answer[name] for name in SHARED_ANSWER_FIELDS if name in answer},
        "evidence": [],
        "external_evidence": [],
        "ranking": [],
    }
    if answer["conflicts"]:
        out["answer"]["conflicts"] = {"status": answer["conflicts"]["status"]}
        out["answer"]["conflicts"]["items"] = answer["conflicts"].get("items", [])
    if pack.get("trace_url"):
        out["trace_url"] = pack["trace_url"]
    for place, entry in enumerate(pack["ranking"], start=1):
        row = ranked_row(pack, entry)
        if not is_cited(row, cited):
            continue
        rows = out[entry["list"]]
        out["ranking"].append({**entry, "index": len(rows), "place": place})
        rows.append({**_shared_row(row), "ref": refs[row["source_key"]]})
    return out


def depth(row: Row) -> str:
    """How deep a row's text goes, in words: the brain's own copy, or what the web gave."""
    if row["origin"] != WEB_ORIGIN:
        return "saved in your brain"
    return display.DEPTH_LABELS.get(row.get("depth", "snippet"), "provider snippet")


def badge(row: Row, labels: Mapping[str, str]) -> str:
    if row["origin"] == WEB_ORIGIN:
        return display.web_badge(row["providers"], labels)
    return display.BRAIN_BADGE


def _sentence(sentence: Row, refs: Mapping[str, str]) -> str:
    """An answer sentence (or a conflict) with its ``[key]`` citations as references (a key
    the run does not hold cannot appear: the verifier removed it)."""
    text = _escape(sentence["text"])
    cited = "".join(citations.cite(refs[k]) for k in sentence["citations"] if k in refs)
    return f"{text} {cited}".rstrip()


def _answer_lines(pack: PackJSON, refs: Mapping[str, str]) -> list[str]:
    answer = pack["answer"]
    if answer["status"] != "ok" or not answer["sentences"]:
        return [_escape(answer["message"]), ""] if answer["message"] else []
    lines: list[str] = []
    for n, (origin, part) in enumerate(display.answer_parts(answer)):
        if origin == "web":
            lines += ["*From the web (outside your brain):*", ""]
        elif n:
            lines += ["*From your brain:*", ""]
        if any(s.get("item") for s in part):
            lines += [f"- {_sentence(s, refs)}" for s in part]
        else:
            lines.append(" ".join(_sentence(s, refs) for s in part))
        lines.append("")
    conflicts = answer["conflicts"]["items"]
    if conflicts:
        lines += ["*Where the sources disagree:*", ""]
        lines += [f"- {_sentence(c, refs)}" for c in conflicts]
        lines.append("")
    return lines


def _quote(text: str) -> str:
    """An excerpt as a block quote, line by line, each line escaped."""
    lines = (_escape(line) for line in text.strip().splitlines())
    return "\n".join(f"   > {line}" if line else "   >" for line in lines)


def _row_lines(ref: str, row: Row, labels: Mapping[str, str], link: Link) -> list[str]:
    title = row.get("title") or row.get("url") or row["source_key"]
    origin = _escape(badge(row, labels))
    if row["origin"] == WEB_ORIGIN:
        origin += f" · {depth(row)}"
    lines = [f"{citations.cite(ref)} **{_escape(title)}** — {origin}"]
    if row.get("url"):
        lines.append(f"   {_link(row['url'])}")
    if row.get("row_url"):
        lines.append(f"   In your brain: {_link(link(row['row_url']))}")
    page = row.get("linked_source") or {}
    if page.get("source_key"):
        where = f" {_link(link(page['row_url']))}" if page.get("row_url") else ""
        lines.append(f"   Linked page: {_escape(page.get('title') or page.get('url', ''))}{where}")
    if row.get("also_found_by"):
        lines.append(f"   Also found by {_escape(display.names(labels, row['also_found_by']))}")
    if row.get("excerpt"):
        lines.append(_quote(row["excerpt"]))
    return [*lines, ""]


_MARKUP = re.compile(r"([\\`*_\[\]<>#|&])")
_WEB_LINK = re.compile(r"https?://[^\s<>\\]+", re.IGNORECASE)


def _escape(text: str) -> str:
    """Quoted text (a title, an answer's sentence, an excerpt, a note) shown as written, never
    applied: every character Markdown or HTML could act on is backslash-escaped, so no tag
    (``<img onerror=…>``), entity (``&lt;``), link, image or emphasis survives; whitespace
    becomes one space."""
    return _MARKUP.sub(r"\\\1", " ".join(text.split()))


def _link(url: str) -> str:
    """An address as a link only when it is http(s) and nothing in it can end the link early;
    any other (``javascript:``, ``data:``, ``vbscript:``…) is shown as escaped text."""
    return f"<{url}>" if _WEB_LINK.fullmatch(url) else _escape(url)


def markdown(
    pack: PackJSON, when: str, labels: Mapping[str, str], link: Link, share: bool = False
) -> str:
    """The run as Markdown: question, verdict, verified answer, then numbered references.
    ``when`` is the run's start (ISO 8601); ``link`` makes a path of this Datasette a URL.
    ``share`` (someone other than the run's owner): the question, the answer and the rows it
    cites, under the references they have in the full run."""
    refs = citations.labels(pack)
    cited = cited_keys(pack)
    lines = [
        f"# {_escape(pack['question'])}",
        "",
        f"Researched {when[:16].replace('T', ' ')} UTC in the brain `{pack['database']}`"
        + (
            f" · run [{pack['run_id']}]({link(pack['trace_url'])})" if pack.get("trace_url") else ""
        ),
        "",
    ]
    if not share:
        judge = pack["judge"]
        verdict: Row = judge["combined"] or judge
        said = verdict["verdict"].replace("_", " ").capitalize()
        lines += [f"**{said}.** {_escape(verdict['message'])}", ""]
    answer = _answer_lines(pack, refs)
    if answer:
        lines += ["## Answer", "", *answer]
    listed = [
        (r, row) for r, row in citations.labelled_rows(pack) if not share or is_cited(row, cited)
    ]
    brain = [(r, row) for r, row in listed if not r.startswith("W")]
    web = [(r, row) for r, row in listed if r.startswith("W")]
    if share:
        lines += ["Shared: the rows the answer cites. The rest of the run is its owner's.", ""]
    lines += ["## In your brain", ""]
    for ref, row in brain:
        lines += _row_lines(ref, row, labels, link)
    if not brain:
        lines += [
            "The answer cites nothing in the brain." if share else "Nothing in your brain matched.",
            "",
        ]
    if web:
        lines += [
            "## From the web",
            "",
            "Outside your dbrain corpus: found for this run only, not saved in your brain.",
            "",
        ]
        for ref, row in web:
            lines += _row_lines(ref, row, labels, link)
    return "\n".join(lines).rstrip() + "\n"


def csv_text(pack: PackJSON, labels: Mapping[str, str], link: Link, share: bool = False) -> str:
    """The run's rows as CSV, brain rows first, each with its reference and origin (``share``:
    only the rows the answer cites)."""
    cited = {k for s in pack["answer"]["sentences"] for k in s["citations"]}
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    shown = cited_keys(pack)
    for ref, row in citations.labelled_rows(pack):
        if share and not is_cited(row, shown):
            continue
        values = {
            "ref": ref,
            "origin": row["origin"],
            "badge": badge(row, labels),
            "key": row["source_key"],
            "kind": row["kind"],
            "source_type": row.get("source_type", ""),
            "title": row.get("title", ""),
            "url": row.get("url", ""),
            "row_url": link(row["row_url"]) if row.get("row_url") else "",
            "domain": row.get("domain", ""),
            "providers": " ".join(row.get("providers", [])),
            "depth": depth(row),
            "published_at": row.get("published_at", ""),
            "excerpt": row.get("excerpt", ""),
            "cited_by_answer": "yes" if row["source_key"] in cited else "",
        }
        writer.writerow({name: _cell(str(value)) for name, value in values.items()})
    return out.getvalue()


def _cell(value: str) -> str:
    """A cell a spreadsheet shows as text, never runs: web titles and excerpts are anyone's
    words, and ``=HYPERLINK(…)`` or ``@SUM(…)`` would be formulas (OWASP's CSV injection)."""
    return f"'{value}" if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
