"""``datasette dbrain-research`` and ``datasette dbrain-demo``."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner
from datasette.cli import cli

from ..helpers import provider_requests, web_config


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
    assert "Verdict: enough_evidence (answered) - Your brain holds it: [1] is about it." in (
        result.output
    )
    assert "Local dbrain evidence: 1 rows" in result.output
    assert "  [1] [item/github_star] simonw/datasette" in result.output


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


def web_metadata(tmp_path, fake, **external) -> str:
    """A config file with web search on the fake providers (``external`` overrides keys;
    ``None`` removes one)."""
    config = web_config(fake)
    for key, value in external.items():
        if value is None:
            config["external_search"].pop(key)
        else:
            config["external_search"][key] = value
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps({"plugins": {"datasette-dbrain-websearch": config}}))
    return str(path)


@pytest.mark.parametrize("spelling", ["on-weak", "on_weak", "on_weak_local_evidence"])
def test_research_takes_dbrains_external_flags(brain, fake, tmp_path, spelling):
    """dbrain's ``--external never|on-weak|always`` and ``--external-count``: a weak question
    reaches the web with the count and freshness asked for."""
    path, _ = brain
    args = [
        "dbrain-research",
        str(path),
        "lattice qcd",
        "--json",
        "-m",
        web_metadata(tmp_path, fake),
    ]
    args += ["--external", spelling, "--external-count", "2", "--external-freshness", "pw"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    pack = json.loads(result.output)
    assert (pack["external_search"]["mode"], pack["external_search"]["ran"]) == ("on_weak", True)
    assert 0 < len(pack["external_evidence"]) <= 2
    (request,) = provider_requests(fake)
    assert request.query["freshness"] == ["pw"]


@pytest.mark.parametrize(
    "flags, code, message",
    [
        (["--external-count", "0"], "bad_external_count", "external_count must be a whole number"),
        (["--external-count", "11"], "bad_external_count", "from 1 to 10."),
        (["--external", "sometimes"], "bad_external", "external must be 'never', 'on_weak' (or"),
    ],
)
def test_bad_external_flags_are_refused_as_the_json_api_refuses_them(brain, flags, code, message):
    path, _ = brain
    result = CliRunner().invoke(cli, ["dbrain-research", str(path), "x", "--json", *flags])
    assert result.exit_code == 1
    error = json.loads(result.output)
    assert (error["status"], error["code"]) == (400, code) and message in error["error"]
    result = CliRunner().invoke(cli, ["dbrain-research", str(path), "x", *flags])
    assert result.exit_code == 1 and message in result.output


def test_dbrains_variables_are_defaults_under_the_config(brain, fake, tmp_path, monkeypatch):
    path, _ = brain
    monkeypatch.setenv("DBRAIN_EXTERNAL_SEARCH_MODE", "always")
    monkeypatch.setenv("DBRAIN_EXTERNAL_SEARCH_COUNT", "1")
    # The config sets default_mode: never, and wins.
    args = ["dbrain-research", str(path), "espresso grinder", "--json"]
    pack = json.loads(CliRunner().invoke(cli, [*args, "-m", web_metadata(tmp_path, fake)]).output)
    assert pack["external_search"]["mode"] == "never" and not provider_requests(fake)
    # Without it, dbrain's variable says always; its count holds too.
    silent = web_metadata(tmp_path, fake, default_mode=None)
    pack = json.loads(CliRunner().invoke(cli, [*args, "-m", silent]).output)
    assert pack["external_search"]["mode"] == "always" and len(pack["external_evidence"]) == 1
    monkeypatch.setenv("DBRAIN_EXTERNAL_SEARCH_COUNT", "many")
    result = CliRunner().invoke(cli, [*args, "-m", silent])
    assert result.exit_code == 1
    assert "'external_search.count' (from DBRAIN_EXTERNAL_SEARCH_COUNT) must be an integer" in (
        result.output
    )
