"""The commands' help in docs/cli.md, generated from the commands themselves (click), so the
page cannot drift from what ``--help`` prints.

    python scripts/cli_help.py       # print the block
    make docs                        # write it into docs/cli.md (cog)
"""

from __future__ import annotations

from click.testing import CliRunner
from datasette.cli import cli

COMMANDS = (
    ["dbrain-research"],
    ["dbrain-demo"],
    ["dbrain-websearch", "index"],
    ["dbrain-websearch", "eval", "run"],
    ["dbrain-websearch", "eval", "propose"],
    ["dbrain-websearch", "purge-cache"],
    ["dbrain-websearch", "config-reference"],
    ["dbrain-websearch", "token"],
)


def help_text(args: list[str]) -> str:
    """What ``datasette ARGS --help`` prints, with click's terminal width fixed."""
    result = CliRunner().invoke(cli, [*args, "--help"], terminal_width=100)
    if result.exit_code != 0:
        raise SystemExit(f"datasette {' '.join(args)} --help failed: {result.output}")
    return result.output.replace("Usage: cli ", "Usage: datasette ").rstrip()


def block() -> str:
    parts = [
        f"### `datasette {' '.join(args)}`\n\n```\n{help_text(args)}\n```" for args in COMMANDS
    ]
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(block())
