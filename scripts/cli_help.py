"""The commands' help in docs/cli.md, generated from the commands themselves (click), so the
page cannot drift from what ``--help`` prints.

    python scripts/cli_help.py              # print the block
    python scripts/cli_help.py --write docs/cli.md
"""

from __future__ import annotations

import generated
from click.testing import CliRunner
from datasette.cli import cli

START = "<!-- cli-help: generated from the commands by `make docs`; do not edit -->"
END = "<!-- /cli-help -->"
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


def with_block(text: str) -> str:
    """``text`` with the block between the markers replaced by the current one."""
    return generated.with_block(text, START, END, block())


if __name__ == "__main__":
    generated.main(__doc__.splitlines()[0], block, START, END)
