"""The one label a row is cited by, the same on every surface (pure): the page's chips and rows,
the answer, Markdown, CSV, the CLI and the agent tools.

Brain rows are ``1``, ``2``…, web rows ``W1``, ``W2``…, so a citation says where it points
before it is looked up. A row is numbered by its place in its own list (the pack's
``evidence`` or ``external_evidence``), not in the reading order: a mark that moves a row on
the page does not renumber it, and ``[W2]`` in an exported answer finds the row labelled W2
wherever it now sits. A shared run (``exports.shared``) keeps fewer rows, each with its full
run's label as its ``ref``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .pack import Pack, row_keys
from .pack_json import PackJSON

Row = Mapping[str, Any]


def labelled_rows(pack: PackJSON | Mapping[str, Any]) -> list[tuple[str, Row]]:
    """Every row with its label, in label order: the brain's ``1``, ``2``…, then ``W1``…"""
    listed = [
        (row.get("ref") or f"{prefix}{n}", row)
        for rows, prefix in ((pack.get("evidence"), ""), (pack.get("external_evidence"), "W"))
        for n, row in enumerate(rows or [], start=1)
    ]
    return sorted(listed, key=lambda pair: (pair[0][0] == "W", int(pair[0].lstrip("W"))))


def labels(pack: PackJSON | Mapping[str, Any]) -> dict[str, str]:
    """Each key's label (an item's linked page, which an answer may cite, is cited by the
    item's label)."""
    out: dict[str, str] = {}
    for ref, row in labelled_rows(pack):
        for key in row_keys(row):
            out.setdefault(key, ref)
    return out


def numbered(brain: Iterable[Iterable[str]], web: Iterable[Iterable[str]] = ()) -> dict[str, str]:
    """``labels`` for a run still being made: each key's label from its row's keys (``keys``:
    its own and its linked page's), brain rows ``1``, ``2``…, web rows ``W1``…"""
    out: dict[str, str] = {}
    for rows, prefix in ((brain, ""), (web, "W")):
        for n, keys in enumerate(rows, start=1):
            for key in keys:
                out.setdefault(key, f"{prefix}{n}")
    return out


def of_run(pack: Pack) -> dict[str, str]:
    """``labels`` of a run still being made, from its rows."""
    return numbered((r.keys for r in pack.evidence), (r.keys for r in pack.web_rows))


def citing(labels: Mapping[str, str]) -> Callable[[str], str]:
    """A key as a text cites its row ("[3]", "[W2]"), or "" for a key of no row."""
    return lambda key: cite(labels[key]) if key in labels else ""


def cite(ref: str) -> str:
    """A label as the text cites it: ``[3]``, ``[W2]``."""
    return f"[{ref}]"
