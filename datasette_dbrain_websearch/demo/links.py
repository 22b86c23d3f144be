"""The demo questions' links on the port the demo runs on (``make demo PORT=...`` prints them;
the README's table is the same list on the default port)."""

from __future__ import annotations

import sys
from typing import Any
from urllib.parse import urlencode

from .questions import DEMO_QUESTIONS

# The parameters of a demo question that go into its request (the rest describe it).
REQUEST_KEYS = (
    "q",
    "tag",
    "kind",
    "source_type",
    "syntax",
    "since",
    "until",
    "limit",
    "external",
    "depth",
)
DEFAULT_PORT = 8001


def request_params(case: dict[str, Any]) -> dict[str, str]:
    """A demo question's request parameters, in a fixed order."""
    return {k: str(case[k]) for k in REQUEST_KEYS if k in case}


def demo_links(port: int = DEFAULT_PORT) -> list[tuple[str, str, str]]:
    """(question, page link, JSON link) of every demo question on this port."""
    base = f"http://127.0.0.1:{port}/-/research"
    links = []
    for case in DEMO_QUESTIONS:
        query = urlencode(request_params(case))
        links.append((case["q"], f"{base}?{query}", f"{base}.json?{query}"))
    return links


def main(argv: list[str] | None = None) -> None:
    """Print the links for the port given as the first argument."""
    args = sys.argv[1:] if argv is None else argv
    port = int(args[0]) if args else DEFAULT_PORT
    print("  Demo questions (the README's, on this port):")
    for question, page, _ in demo_links(port):
        print(f"    {question[:44]:46}{page}")


if __name__ == "__main__":
    main()
