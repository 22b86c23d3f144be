"""The demo and the test bench: never used by research itself.

``builder`` writes a dbrain-schema brain of real-looking items and sources (``datasette
dbrain-demo``); ``fakeweb`` is an offline fake of Brave, Exa and SearXNG that answers from
``corpus`` over real loopback HTTP, faithful to each API's errors and limits, so the demo and the
tests never call a real provider. The dbrain schema and FTS row writers both use live in
``schema.py`` and ``fts_rows.py``, with promotion, which writes real rows.
"""

from .builder import build_demo_brain
from .questions import DEMO_QUESTIONS

__all__ = ["DEMO_QUESTIONS", "build_demo_brain"]
