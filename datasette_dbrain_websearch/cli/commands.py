"""The plugin's commands, attached to Datasette's CLI: ``datasette dbrain-research``, ``datasette
dbrain-demo`` and the ``datasette dbrain-websearch`` group (``index``, ``eval``, ``purge-cache``,
``config-reference``, ``token``).

``dbrain-research`` runs exactly the research the JSON API runs, through an in-process Datasette
(no server), so ``--json`` prints the same pack ``/-/research.json`` returns.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import click
from datasette.utils import StartupError

from .. import exports
from ..config import Settings
from ..config_keys import PLUGIN_NAME, ConfigError
from ..errors import ResearchError
from ..pack_json import PackJSON
from .eval_commands import eval_group
from .render import render_text


async def _run(
    brain: str, params: dict[str, list[str]], metadata: str | None
) -> tuple[PackJSON, dict[str, str]]:
    """The pack of one research run, and the providers' names as people read them."""
    from datasette.app import Datasette
    from datasette.utils import parse_metadata

    from ..options import request_from_params
    from ..pipeline import WebAccess
    from ..service import Access, RunOptions, access_for, research

    config = parse_metadata(Path(metadata).read_text()) if metadata else {}
    datasette = Datasette([brain], metadata=config)
    # Settings come from Datasette so $env/$file secrets resolve exactly as they do in serve.
    settings = Settings.from_datasette(datasette)
    await datasette.invoke_startup()
    database = Path(brain).stem
    # The shell user owns the config and the brain, so the CLI may use whatever web search and
    # model the config enables; the web surfaces check the permissions per actor instead.
    web = (await access_for(datasette, None, settings)).web
    request = request_from_params(params, settings)
    allowed = WebAccess(True, web.providers, web.cache_db, rankers=web.rankers)
    run = RunOptions(
        None, "cli", settings, Access(allowed, model=True, promote=True, brains=(database,))
    )
    pack = await research(datasette, database, request, run)
    return pack, web.labels


def _settings(metadata: str | None) -> Settings:
    """The plugin's settings from a Datasette config file (defaults without one)."""
    from datasette.utils import parse_metadata

    config = parse_metadata(Path(metadata).read_text()) if metadata else {}
    plugins = config.get("plugins") or {}
    return Settings.from_config(plugins.get(PLUGIN_NAME))


def default_index(brain: str) -> Path:
    from ..runs_db import default_path

    return default_path([brain]) or Path(brain).with_name("research_runs.db")


def register(cli: click.Group) -> None:
    """Attach the plugin's commands to Datasette's CLI."""

    @cli.command(name="dbrain-research")
    @click.argument("brain", type=click.Path(exists=True, dir_okay=False))
    @click.argument("question")
    @click.option("--json", "as_json", is_flag=True, help="Print the research_pack.v1 JSON")
    @click.option(
        "--markdown",
        "export",
        flag_value="markdown",
        help="Print the run as Markdown (answer, references)",
    )
    @click.option("--csv", "export", flag_value="csv", help="Print the run's rows as CSV")
    @click.option("--limit", type=int, help="Evidence rows to return")
    @click.option("--tag", multiple=True, help="Only rows with this user tag (repeatable)")
    @click.option("--source-type", multiple=True, help="Only rows of this source_type")
    @click.option("--kind", type=click.Choice(["item", "source", "all"]), help="Items or sources")
    @click.option("--syntax", type=click.Choice(["simple", "raw"]), help="raw = FTS5 syntax")
    @click.option("--since", help="Only rows dated on or after YYYY-MM-DD")
    @click.option("--until", help="Only rows dated on or before YYYY-MM-DD")
    # dbrain's own spellings (--external-search, on-weak, --external-provider ...) work too;
    # the values are checked as the JSON API checks its parameters.
    @click.option(
        "--external",
        "--external-search",
        "web_mode",
        metavar="never|on-weak|always",
        help="Search the web too: never, on-weak (on_weak) or always (needs "
        "external_search.enabled in the config; default: its default_mode)",
    )
    @click.option(
        "--external-count",
        "web_count",
        metavar="N",
        help="Web rows to keep (default: external_search.count, at most its max_count)",
    )
    @click.option(
        "--provider",
        "--external-provider",
        multiple=True,
        help="Web provider(s) in fallback order, or all",
    )
    @click.option(
        "--freshness",
        "--external-freshness",
        help="Web results from the past pd/pw/pm/py or a date range",
    )
    @click.option("--read", type=int, help="Read the top N web results' pages before the answer")
    @click.option(
        "--deep",
        is_flag=True,
        help="Deep research: follow-up rounds until covered or out of budget (deep.*)",
    )
    @click.option(
        "--strategy",
        type=click.Choice(["auto", "pro"]),
        default=None,
        help="pro: the answer's model proposes each deep round (implies --deep; answer.model)",
    )
    @click.option("--site", multiple=True, help="Web results only from this site (repeatable)")
    @click.option("--not-site", multiple=True, help="Never web results from this site (repeatable)")
    @click.option(
        "--answer/--no-answer",
        default=None,
        help="Write an answer over the evidence, every citation checked (default: answer.default)",
    )
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
        export: str | None,
        limit: int | None,
        tag: tuple[str, ...],
        source_type: tuple[str, ...],
        kind: str | None,
        syntax: str | None,
        since: str | None,
        until: str | None,
        web_mode: str | None,
        web_count: str | None,
        provider: tuple[str, ...],
        freshness: str | None,
        read: int | None,
        deep: bool,
        strategy: str | None,
        site: tuple[str, ...],
        not_site: tuple[str, ...],
        answer: bool | None,
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
            ("external", web_mode),
            ("external_count", web_count),
            ("freshness", freshness),
            ("read", read),
            ("strategy", strategy),
        ):
            if value is not None:
                params[name] = [str(value)]
        params["tag"] = list(tag)
        params["source_type"] = list(source_type)
        params["provider"] = list(provider)
        params["site"] = list(site)
        params["not_site"] = list(not_site)
        if answer is not None:
            params["answer"] = ["1" if answer else "0"]
        if deep:
            params["depth"] = ["deep"]
        try:
            pack, labels = asyncio.run(_run(brain, params, metadata))
        except (ConfigError, StartupError) as exc:
            raise click.ClickException(str(exc)) from exc
        except ResearchError as exc:
            if as_json:
                click.echo(json.dumps(exc.as_json(), indent=2))
                raise SystemExit(1) from exc
            raise click.ClickException(exc.message) from exc
        if as_json:
            click.echo(json.dumps(pack, indent=2, ensure_ascii=False))
        elif export == "markdown":
            when = datetime.now(UTC).isoformat()
            click.echo(exports.markdown(pack, when, labels, str), nl=False)
        elif export == "csv":
            click.echo(exports.csv_text(pack, labels, str), nl=False)
        else:
            click.echo(render_text(pack))

    @cli.group(name="dbrain-websearch")
    def dbrain_websearch() -> None:
        """Maintenance and evaluation commands for datasette-dbrain-websearch."""

    dbrain_websearch.add_command(eval_group)

    @dbrain_websearch.command(name="purge-cache")
    @click.argument("database", type=click.Path(exists=True, dir_okay=False))
    @click.option("--expired", is_flag=True, help="Only delete entries past their TTL")
    def purge_cache(database: str, expired: bool) -> None:
        """Delete cached provider responses from DATABASE (research_runs.db)."""
        from ..runs_db import purge_cache as purge

        count = purge(Path(database), expired_only=expired)
        click.echo(f"Deleted {count} cached provider response(s) from {database}")

    @dbrain_websearch.command(name="index")
    @click.argument("brain", type=click.Path(exists=True, dir_okay=False))
    @click.option(
        "--index",
        "index_db",
        type=click.Path(dir_okay=False),
        help="The plugin database to write (default: research_runs.db next to BRAIN, or the "
        "configured traces_database)",
    )
    @click.option("--model", help="llm embedding model id (default: the configured semantic.model)")
    @click.option("-m", "--metadata", type=click.Path(exists=True), help="Datasette config file")
    def index(brain: str, index_db: str | None, model: str | None, metadata: str | None) -> None:
        """Build or refresh the semantic lane's index of BRAIN (only changed rows are
        embedded)."""
        from ..embeddings import SemanticUnavailable, embedding_model
        from ..runs_db import create
        from ..semantic_index import brain_rows, index_brain

        settings = _settings(metadata)
        model_id = model if model is not None else settings.semantic.model
        path = Path(index_db or settings.traces_database or default_index(brain))
        try:
            embedding_model(model_id)  # say so before creating anything
            create(path)
            total = brain_rows(Path(brain))
            with click.progressbar(length=total, label=f"Embedding with {model_id}") as bar:
                report = index_brain(Path(brain), path, model_id, progress=bar.update)
        except SemanticUnavailable as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(
            f"Indexed {report.rows:,} rows of {Path(brain).name} with {model_id} into {path}: "
            f"{report.embedded:,} embedded, {report.unchanged:,} unchanged, "
            f"{report.removed:,} removed"
        )

    @dbrain_websearch.command(name="config-reference")
    def config_reference() -> None:
        """Print every configuration key with its type, default and limits (Markdown)."""
        from ..config_reference import reference_markdown

        click.echo(reference_markdown())

    @dbrain_websearch.command(name="token")
    @click.argument("actor_id")
    @click.option(
        "--secret",
        envvar="DATASETTE_SECRET",
        help="The secret the server was started with (--secret, or DATASETTE_SECRET)",
    )
    @click.option(
        "--expires-after", type=click.IntRange(min=1), help="Seconds the token is good for"
    )
    def token(actor_id: str, secret: str | None, expires_after: int | None) -> None:
        """Print an API token acting as ACTOR_ID on the research routes (both Datasette lines),
        for scripts: send it as ``Authorization: Bearer <token>``."""
        from datasette.app import Datasette

        from ..tokens import check_actor_id, create_token

        try:
            check_actor_id(actor_id)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="ACTOR_ID") from exc
        if not secret:
            raise click.ClickException(
                "A token is signed with the server's secret: start Datasette with --secret "
                "(or DATASETTE_SECRET) and give the same here (--secret or DATASETTE_SECRET)."
            )
        click.echo(create_token(Datasette([], secret=secret), actor_id, expires_after))

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
        from ..demo import build_demo_brain

        try:
            counts = build_demo_brain(path, size=size, overwrite=force)
        except FileExistsError as exc:
            raise click.ClickException(f"{path} exists; pass --force to replace it") from exc
        click.echo(
            f"Built {path}: {counts['items']} items, {counts['sources']} sources "
            f"in {counts['seconds']:.1f}s"
        )
