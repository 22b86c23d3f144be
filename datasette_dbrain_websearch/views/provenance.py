"""A promoted source's row in Datasette says which research run found it.

Datasette's row and table pages render the ``sources.source_key`` cell through the
``render_cell`` hook; for a row a promotion created, the cell links the run (whose page keeps
its own privacy: someone else's run is a 404 there).
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup, escape

from .. import traces
from ..permissions import plugin_database_name
from ..saved_runs import promoting_run


def promoted_source_cell(datasette: Any, database: str, table: str, column: str, value: Any) -> Any:
    """The cell's HTML for a promoted source's key (an awaitable), or None for every other
    cell: the checks that need no query come first, since the hook sees every cell."""
    if table != "sources" or column != "source_key" or not str(value).startswith("src:"):
        return None
    runs_database = plugin_database_name(datasette)
    if runs_database is None or runs_database == database:
        return None

    async def inner() -> Any:
        run_id = await promoting_run(datasette, database, str(value))
        if run_id is None:
            return None
        url = traces.run_path(datasette, run_id)
        return Markup(
            f'{escape(value)} <a href="{escape(url)}" '
            'title="The research run whose web result became this row">'
            "· saved from research</a>"
        )

    return inner
