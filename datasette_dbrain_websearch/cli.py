"""Command-line surfaces: ``datasette dbrain-research`` and ``datasette dbrain-demo``.

``dbrain-research`` runs exactly the research the JSON API runs, through an in-process Datasette
(no server), so ``--json`` prints the same pack ``/-/research.json`` returns.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import click

from .config import PLUGIN_NAME, ConfigError, Settings
from .errors import ResearchError
from .research import parse_options, research


def _settings_from(metadata: str | None) -> Settings:
    if not metadata:
        return Settings()
    from datasette.utils import parse_metadata

    raw = parse_metadata(Path(metadata).read_text())
    return Settings.from_config((raw.get("plugins") or {}).get(PLUGIN_NAME))


async def _run(brain: str, params: dict[str, list[str]], settings: Settings) -> dict[str, Any]:
    from datasette.app import Datasette

    from .views import row_url_for

    datasette = Datasette([brain])
    database = Path(brain).stem
    options = parse_options(params, settings)
    db = datasette.get_database(database)
    return await research(
        db.execute_fn, database, options, settings, row_url_for(datasette, database)
    )


def render_text(pack: dict[str, Any]) -> str:
    """A readable terminal rendering of a pack."""
    judge = pack["judge"]
    plan = pack["query_plan"]
    lines = [
        f"Verdict: {judge['verdict']} ({judge['reason']}) - {judge['message']}",
        f"Local dbrain evidence: {len(pack['evidence'])} rows   "
        f"[{plan['query_mode']}: {plan['match_query']}]",
    ]
    lines += [f"Warning: {w['message']}" for w in pack["warnings"]]
    for n, row in enumerate(pack["evidence"], start=1):
        tags = ", ".join(row["user_tags"])
        lines.append("")
        lines.append(f"{n:>2}. [{row['kind']}/{row['source_type']}] {row['title']}")
        lines.append(f"    {row['source_key']}  {row['url']}".rstrip())
        if row["excerpt"]:
            lines += textwrap.wrap(
                row["excerpt"], 96, initial_indent="    ", subsequent_indent="    "
            )
        if tags:
            lines.append(f"    tags: {tags}")
        signals = "; ".join(s["name"] for s in row["retrieval"]["signals"])
        lines.append(f"    signals: {signals}   score {row['retrieval']['score']}")
    return "\n".join(lines)


def register(cli: click.Group) -> None:
    """Attach the plugin's commands to Datasette's CLI."""

    @cli.command(name="dbrain-research")
    @click.argument("brain", type=click.Path(exists=True, dir_okay=False))
    @click.argument("question")
    @click.option("--json", "as_json", is_flag=True, help="Print the research_pack.v1 JSON")
    @click.option("--limit", type=int, help="Evidence rows to return")
    @click.option("--tag", multiple=True, help="Only rows with this user tag (repeatable)")
    @click.option("--source-type", multiple=True, help="Only rows of this source_type")
    @click.option("--kind", type=click.Choice(["item", "source", "all"]), help="Items or sources")
    @click.option("--syntax", type=click.Choice(["simple", "raw"]), help="raw = FTS5 syntax")
    @click.option("--since", help="Only rows dated on or after YYYY-MM-DD")
    @click.option("--until", help="Only rows dated on or before YYYY-MM-DD")
    @click.option(
        "-m",
        "--metadata",
        type=click.Path(exists=True, dir_okay=False),
        help="Datasette metadata/config file with the plugin's settings",
    )
    def dbrain_research(
        brain: str,
        question: str,
        as_json: bool,
        limit: int | None,
        tag: tuple[str, ...],
        source_type: tuple[str, ...],
        kind: str | None,
        syntax: str | None,
        since: str | None,
        until: str | None,
        metadata: str | None,
    ) -> None:
        """Research BRAIN.db for QUESTION without starting a server."""
        params: dict[str, list[str]] = {"q": [question]}
        for name, value in (
            ("limit", limit),
            ("kind", kind),
            ("syntax", syntax),
            ("since", since),
            ("until", until),
        ):
            if value is not None:
                params[name] = [str(value)]
        params["tag"] = list(tag)
        params["source_type"] = list(source_type)
        try:
            settings = _settings_from(metadata)
            pack = asyncio.run(_run(brain, params, settings))
        except ConfigError as exc:
            raise click.ClickException(str(exc)) from exc
        except ResearchError as exc:
            if as_json:
                click.echo(json.dumps(exc.as_json(), indent=2))
                raise SystemExit(1) from exc
            raise click.ClickException(exc.message) from exc
        if as_json:
            click.echo(json.dumps(pack, indent=2, ensure_ascii=False))
        else:
            click.echo(render_text(pack))

    @cli.command(name="dbrain-demo")
    @click.argument("path", type=click.Path(dir_okay=False))
    @click.option(
        "--size",
        type=click.IntRange(min=1),
        help="Build a large synthetic brain of SIZE items and SIZE/2 sources",
    )
    @click.option("--force", is_flag=True, help="Replace PATH if it exists")
    def dbrain_demo(path: str, size: int | None, force: bool) -> None:
        """Build a demo dbrain brain (schema v20) at PATH."""
        from .demo import build_demo_brain

        try:
            counts = build_demo_brain(path, size=size, overwrite=force)
        except FileExistsError as exc:
            raise click.ClickException(f"{path} exists; pass --force to replace it") from exc
        click.echo(
            f"Built {path}: {counts['items']} items, {counts['sources']} sources "
            f"in {counts['seconds']:.1f}s"
        )
