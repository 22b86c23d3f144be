"""The module map in docs/development.md, generated from the package itself: one row per
module, saying what it is in its docstring's first sentence, so the map cannot drift.

    python scripts/module_map.py     # print the table
    make docs                        # write it into docs/development.md (cog)
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "datasette_dbrain_websearch"


def first_sentence(docstring: str) -> str:
    """The docstring's first sentence (of its first paragraph), on one line."""
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    match = re.search(r"(.+?[.!?])(\s|$)", paragraph)
    return (match.group(1) if match else paragraph).replace("|", "\\|")


def modules() -> list[tuple[str, str]]:
    """(path inside the package, what it is), in the order a reader meets them: the top level,
    then each subpackage."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py"), key=lambda p: (len(p.relative_to(PACKAGE).parts), p)):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        found.append((path.relative_to(PACKAGE).as_posix(), first_sentence(doc)))
    return found


def table() -> str:
    rows = [f"| `{name}` | {what} |" for name, what in modules()]
    return "\n".join(["| module | what it is |", "|---|---|", *rows])


if __name__ == "__main__":
    print(table())
