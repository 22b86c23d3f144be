"""``datasette dbrain-research`` and ``datasette dbrain-demo``."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner
from datasette.cli import cli


def test_research_json_is_the_pack(brain):
    path, ids = brain
    result = CliRunner().invoke(cli, ["dbrain-research", str(path), "espresso grinder", "--json"])
    assert result.exit_code == 0, result.output
    pack = json.loads(result.output)
    assert pack["schema_version"] == "research_pack.v1"
    assert [r["source_key"] for r in pack["evidence"]] == [
        "apple-note:espresso-1",
        ids["src_espresso_key"],
    ]
    assert pack["evidence"][1]["row_url"] == f"/brain/sources/{ids['src_espresso']}"


def test_research_text_output(brain):
    path, _ = brain
    result = CliRunner().invoke(cli, ["dbrain-research", str(path), "sqlite", "--limit", "1"])
    assert result.exit_code == 0, result.output
    assert "Verdict: enough_evidence (strong_match) - Row 1 holds 100% of what" in result.output
    assert "Local dbrain evidence: 1 rows" in result.output
    assert " 1. [item/github_star] simonw/datasette" in result.output


def test_research_filters(brain):
    path, _ = brain
    args = ["dbrain-research", str(path), "espresso", "--kind", "item", "--json", "--tag", "coffee"]
    pack = json.loads(CliRunner().invoke(cli, args).output)
    assert [r["source_key"] for r in pack["evidence"]] == ["apple-note:espresso-1"]


def test_research_errors(brain):
    path, _ = brain
    result = CliRunner().invoke(
        cli, ["dbrain-research", str(path), "a AND (", "--syntax", "raw", "--json"]
    )
    assert result.exit_code == 1
    assert json.loads(result.output)["status"] == 400
    result = CliRunner().invoke(cli, ["dbrain-research", str(path), "???"])
    assert result.exit_code == 1
    assert "Nothing searchable" in result.output


def test_research_reads_plugin_config(brain, tmp_path):
    path, _ = brain
    meta = tmp_path / "metadata.yml"
    judge = "plugins:\n  datasette-dbrain-websearch:\n    judge:\n"
    meta.write_text(judge + "      mode: dbrain\n      min_evidence: 9\n")
    result = CliRunner().invoke(
        cli, ["dbrain-research", str(path), "espresso grinder", "--json", "-m", str(meta)]
    )
    assert json.loads(result.output)["judge"]["reason"] == "too_few_rows"
    meta.write_text(judge + "      min_score: 0.999\n")
    result = CliRunner().invoke(
        cli, ["dbrain-research", str(path), "espresso grinder", "--json", "-m", str(meta)]
    )
    assert json.loads(result.output)["judge"]["reason"] == "weak_match"
    meta.write_text("plugins:\n  datasette-dbrain-websearch:\n    typo: 1\n")
    result = CliRunner().invoke(cli, ["dbrain-research", str(path), "x", "-m", str(meta)])
    assert result.exit_code == 1 and "unknown config key(s) typo" in result.output


def test_demo_builds_a_brain_and_refuses_to_overwrite(tmp_path):
    path = tmp_path / "demo.db"
    result = CliRunner().invoke(cli, ["dbrain-demo", str(path)])
    assert result.exit_code == 0, result.output
    conn = sqlite3.connect(path)
    assert conn.execute("pragma user_version").fetchone()[0] == 20
    assert conn.execute("select count(*) from items").fetchone()[0] > 100
    conn.close()
    again = CliRunner().invoke(cli, ["dbrain-demo", str(path)])
    assert again.exit_code == 1 and "--force" in again.output
    assert CliRunner().invoke(cli, ["dbrain-demo", str(path), "--force"]).exit_code == 0
