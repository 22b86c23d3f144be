"""Scripts promote on both Datasette lines with the plugin's own tokens: the README's commands,
run as written (the token from the CLI, then a JSON POST carrying it and no cookie)."""

from __future__ import annotations

from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch.tokens import create_token

from ..helpers import db_rows, make_datasette, web_config, web_pack

SECRET = "the-servers-secret"
GRANT_ROOT = {"dbrain-promote": {"id": "root"}}


async def server(brain, fake, secret=SECRET):
    ds = make_datasette(
        [str(brain[0])], plugin_config=web_config(fake), permissions=GRANT_ROOT, secret=secret
    )
    await ds.invoke_startup()
    return ds


def cli_token(*args: str, env: dict | None = None) -> str:
    result = CliRunner().invoke(cli, ["dbrain-websearch", "token", *args], env=env)
    assert result.exit_code == 0, result.output
    return result.output.strip()


async def test_a_script_promotes_with_a_token_from_the_cli(brain, fake):
    ds = await server(brain, fake)
    token = cli_token("root", env={"DATASETTE_SECRET": SECRET})
    assert token.startswith("dbrainws_")
    pack = await web_pack(ds, "lattice qcd")
    key = pack["external_evidence"][0]["source_key"]
    response = await ds.client.post(
        "/-/research/promote",
        json={"run_id": pack["run_id"], "source_keys": [key], "tags": ["physics"]},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    assert result["status"] == "created" and result["tags"] == "physics"
    (source,) = db_rows(
        brain[0], "select user_tags from sources where source_key = ?", [result["local_source_key"]]
    )
    assert source == {"user_tags": "physics"}


async def test_a_token_acts_only_on_the_research_routes_and_only_until_it_expires(brain, fake):
    ds = await server(brain, fake)
    token = cli_token("root", "--secret", SECRET)
    bearer = {"Authorization": f"Bearer {token}"}
    elsewhere = await ds.client.get("/-/actor.json", headers=bearer)
    assert elsewhere.json()["actor"] is None  # the rest of Datasette does not know it
    runs = await ds.client.get("/-/research/runs.json", headers=bearer)
    assert "message" not in runs.json()  # signed in: root's runs are listed
    expired = create_token(ds, "root", expires_after=60, now=0)
    forged = create_token(await server(brain, fake, secret="another"), "root")
    pack = await web_pack(ds, "lattice qcd")
    body = {"run_id": pack["run_id"], "source_keys": [pack["external_evidence"][0]["source_key"]]}
    for bad in (expired, forged, "dbrainws_not-a-token"):
        response = await ds.client.post(
            "/-/research/promote", json=body, headers={"Authorization": f"Bearer {bad}"}
        )
        assert response.status_code == 403, bad


def test_the_cli_needs_the_servers_secret():
    result = CliRunner().invoke(cli, ["dbrain-websearch", "token", "root"], env={})
    assert result.exit_code != 0 and "--secret" in result.output


def test_the_cli_refuses_actor_ids_no_one_can_read():
    """An empty, blank or invisible actor id (a zero-width space, a soft hyphen) names no one a
    person could recognise in a log or a run's owner; control characters hide what is written."""
    env = {"DATASETTE_SECRET": SECRET}
    for invisible in ("", " ", "\u200b", "\u00ad\u200d", "\ufeff", "ro\u0007ot"):
        result = CliRunner().invoke(cli, ["dbrain-websearch", "token", invisible], env=env)
        assert result.exit_code != 0 and "ACTOR_ID" in result.output, repr(invisible)
    assert cli_token("alice\u200b", env=env).startswith("dbrainws_")  # visible, with an extra
