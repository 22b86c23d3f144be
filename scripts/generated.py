"""What the docs generators share: a block of a Markdown page between two markers, rewritten
from the code it documents, and the command line that prints or writes it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def with_block(text: str, start: str, end: str, block: str) -> str:
    """``text`` with what lies between the ``start`` and ``end`` markers replaced by ``block``."""
    begin = text.index(start) + len(start)
    return text[:begin] + "\n" + block + "\n" + text[text.index(end) :]


def main(description: str, block: Callable[[], str], start: str, end: str) -> None:
    """Print the block, or with ``--write PAGE.md`` rewrite it in that page."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", metavar="PAGE.md", help="rewrite the block in this file")
    args = parser.parse_args()
    if not args.write:
        print(block())
        return
    path = Path(args.write)
    text = path.read_text(encoding="utf-8")
    path.write_text(with_block(text, start, end, block()), encoding="utf-8")
