"""The example pack in docs/json-api.md, generated from a pinned pack (``tests/data/packs``),
which ``tests/research/test_pack_json.py`` checks is what the JSON API returns, byte for byte:
so the example is a real response and cannot drift. Abridged to be read: one row of each
evidence list, a few items of every other list, long text cut.

    python scripts/example_pack.py   # print the block
    make docs                        # write it into docs/json-api.md (cog)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PINNED = Path(__file__).resolve().parent.parent / "tests" / "data" / "packs"
ROWS = ("evidence", "external_evidence")
LIST_ITEMS = 3
TEXT_CHARS = 90
RUN_ID = "20261202T093000.123456789Z-5c0ffee5c0ffee5c0ffee5c0"


def abridged(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: abridged(v, k) for k, v in value.items()}
    if isinstance(value, list):
        kept = value[:1] if key in ROWS else value[:LIST_ITEMS]
        return [abridged(v) for v in kept]
    if isinstance(value, str) and len(value) > TEXT_CHARS:
        return value[:TEXT_CHARS] + "…"
    return value


def compact(value: Any, indent: int = 0, width: int = 96) -> str:
    """JSON, indented, with each object or list on one line where it fits in ``width``."""
    one_line = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, dict | list) or indent + len(one_line) <= width or not value:
        return one_line
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {compact(v, indent + 2, width)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact(v, indent + 2, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def block(name: str = "also_found") -> str:
    """The pinned pack ``name`` as an abridged JSON block for a Markdown page."""
    pack = json.loads((PINNED / f"{name}.json").read_text(encoding="utf-8"))
    return f"```json\n{compact(abridged(pack)).replace('RUN_ID', RUN_ID)}\n```"


if __name__ == "__main__":
    print(block())
