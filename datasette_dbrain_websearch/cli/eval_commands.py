"""``datasette dbrain-websearch eval``: run research eval cases against a brain (``eval CASES
BRAIN``) and propose a case from a saved run (``eval propose``); ``evals`` runs and scores them.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import click

from ..evals import (
    HELP,
    EvalInputError,
    check_brain,
    load_cases,
    load_run,
    plugin_database_path,
    propose_case,
    render_table,
    run_cases,
    summarize,
)
from ..runs_db import DEFAULT_FILENAME


class _EvalGroup(click.Group):
    """``eval CASES BRAIN`` runs cases (``eval run`` spelled out); ``eval propose`` proposes."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _read_metadata(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    from datasette.utils import parse_metadata

    try:
        return parse_metadata(Path(path).read_text(encoding="utf-8"))
    except Exception as exc:  # parse_metadata raises BadMetadataError, yaml or JSON errors
        raise EvalInputError(f"{path}: not a readable metadata/config file ({exc})") from exc


@click.command(name="run", help=HELP)
@click.argument("cases_path", metavar="CASES.json", type=click.Path(dir_okay=False))
@click.argument("brain", metavar="BRAIN.db", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON")
@click.option(
    "-m",
    "--metadata",
    type=click.Path(exists=True, dir_okay=False),
    help="Datasette metadata/config file with the plugin's settings (judge thresholds ...)",
)
def run_command(cases_path: str, brain: str, as_json: bool, metadata: str | None) -> None:
    cases = load_cases(Path(cases_path))
    check_brain(Path(brain))
    results = asyncio.run(run_cases(Path(brain), cases, _read_metadata(metadata)))
    totals = summarize(results)
    if as_json:
        report = {
            "ok": totals["failed"] == 0,
            "cases": [r.as_dict() for r in results],
            "metrics": totals,
        }
        click.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        click.echo(render_table(results))
    if totals["failed"]:
        raise click.exceptions.Exit(1)


@click.command(name="propose")
@click.argument("brain", metavar="[BRAIN.db]", required=False, type=click.Path(dir_okay=False))
@click.option("--run", "run_id", required=True, help="The run_id of a saved run")
@click.option(
    "--database",
    type=click.Path(dir_okay=False),
    help=f"The plugin database (default: {DEFAULT_FILENAME} next to BRAIN, else in the cwd)",
)
def propose_command(brain: str | None, run_id: str, database: str | None) -> None:
    """Print a case for a saved run: "relevant"/"more" feedback becomes expected keys,
    "irrelevant"/"less" forbidden ones (the run's top evidence when there is no feedback).
    Web answers are recorded as fixtures, so the case replays offline."""
    trace, feedback = load_run(plugin_database_path(database, brain), run_id)
    case, note = propose_case(trace, feedback)
    click.echo(f"Note: {note}.", err=True)
    click.echo(json.dumps(case, indent=2, ensure_ascii=False))


@click.group(
    name="eval",
    cls=_EvalGroup,
    help=HELP,
    subcommand_metavar="CASES.json BRAIN.db [--json] | propose --run RUN_ID",
)
def eval_group() -> None:
    """Research evals (the help text is HELP)."""


eval_group.add_command(run_command)
eval_group.add_command(propose_command)
