"""Diagnostic: what research would cost if finding the question's terms in rows were free.

On ``PYTHONPATH``, Python imports this module at start-up; in a ``datasette serve`` process it
replaces excerpts (a field's first characters, nothing marked) and the terms a row holds
(every term, no phrase) with stubs that cost nothing, an upper bound on what any faster
(compiled) matcher could gain. Rankings and excerpts are wrong under it: it measures time only.

    PYTHONPATH=bench/free_matching .venv/bin/python bench/bench_research.py \\
        --collection cranfield,squad,hotpotqa
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

if sys.argv[0].endswith("datasette") and "serve" in sys.argv:
    from datasette_dbrain_websearch import evidence, lexical
    from datasette_dbrain_websearch.excerpts import Excerpt

    def best_excerpt(fields: Sequence[tuple[str, str, str]], terms: Any, max_chars: int) -> Excerpt:
        for name, role, text in fields:
            if text:
                return Excerpt(text[:max_chars], text[:max_chars], name, role, ())
        return Excerpt("", "", "", "", ())

    def rows_signals(plan: Any, rows: Iterable[Sequence[str]]) -> list[tuple[set[str], bool]]:
        names = {t.name for t in plan.question_terms}
        return [(set(names), False) for _ in rows]

    evidence.best_excerpt = best_excerpt  # type: ignore[assignment]
    lexical.rows_signals = rows_signals
