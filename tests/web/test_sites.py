"""Sites per question: ``site`` / ``not_site`` reach each provider in its own form, are enforced
afterwards like the config's lists, and are recorded in the pack and the trace."""

from __future__ import annotations

import json

from click.testing import CliRunner
from datasette.cli import cli

from datasette_dbrain_websearch.providers import Provider, WebResult

from ..helpers import actor_cookies, registered, web_config, web_datasette, web_pack

QUESTION = "espresso extraction"
SITE = "espressoscience.org"


async def ask(ds, **params) -> dict:
    return await web_pack(ds, QUESTION, **params)


def sent(fake, provider):
    return [r for r in fake.requests if r.provider == provider]


async def test_brave_gets_site_operators_and_rows_come_only_from_the_site(brain, fake):
    ds = await web_datasette(brain, fake)
    everywhere = await ask(ds)
    assert {r["domain"] for r in everywhere["external_evidence"]} - {SITE}
    fake.reset()
    pack = await ask(ds, site=f"https://www.{SITE}/", not_site="coffeewire.news")
    (request,) = sent(fake, "brave")
    assert request.query["q"] == [f"{QUESTION} site:{SITE} -site:coffeewire.news"]
    assert pack["external_evidence"]
    assert {r["domain"] for r in pack["external_evidence"]} == {SITE}
    assert pack["external_search"]["sites"] == [SITE]
    assert pack["external_search"]["not_sites"] == ["coffeewire.news"]
    trace = await ds.client.get(pack["trace_url"] + ".json", cookies=actor_cookies(ds, "root"))
    (query,) = trace.json()["pack"]["query_plan"]["external_queries"]
    assert query["params"]["include_domains"] == [SITE]
    assert query["sites_sent_as"] == {"q": f"{QUESTION} site:{SITE} -site:coffeewire.news"}


async def test_exa_gets_include_and_exclude_domains(brain, fake):
    ds = await web_datasette(brain, fake, providers=["exa"])
    pack = await ask(ds, site=f"{SITE},homebarista-notes.com", not_site="grindlab.coffee")
    (request,) = sent(fake, "exa")
    assert request.json["includeDomains"] == [SITE, "homebarista-notes.com"]
    assert request.json["excludeDomains"] == ["grindlab.coffee"]
    assert pack["external_evidence"]
    assert {r["domain"] for r in pack["external_evidence"]} <= {SITE, "homebarista-notes.com"}


async def test_searxng_gets_site_operators(brain, fake):
    ds = await web_datasette(brain, fake, providers=["searxng"])
    pack = await ask(ds, site=SITE)
    (request,) = sent(fake, "searxng")
    assert request.query["q"] == [f"{QUESTION} site:{SITE}"]
    assert {r["domain"] for r in pack["external_evidence"]} == {SITE}


class Everywhere(Provider):
    """A provider whose API cannot be told about sites: it answers from anywhere."""

    name, label = "everywhere", "Everywhere"

    async def search(self, request, ctx):
        return [
            WebResult(url=f"https://{host}/espresso", title="Espresso extraction", rank=i)
            for i, host in enumerate(("other.example", SITE, "www.coffeewire.news"), start=1)
        ]


async def test_a_provider_that_cannot_filter_is_filtered_afterwards(brain, fake):
    with registered(Everywhere()):
        ds = await web_datasette(brain, fake, providers=["everywhere"])
        pack = await ask(ds, site=SITE)
    assert [r["domain"] for r in pack["external_evidence"]] == [SITE]
    codes = [w["code"] for w in pack["warnings"]]
    assert "provider_ignored_option" in codes and "external_domain_filtered" in codes
    drops = [d for d in await decisions(ds, pack) if d["decision"] == "dropped_by_domain_policy"]
    assert sorted(d["rule"] for d in drops) == ["site", "site"]


async def decisions(ds, pack) -> list[dict]:
    trace = await ds.client.get(pack["trace_url"] + ".json", cookies=actor_cookies(ds, "root"))
    return trace.json()["pack"]["merge_decisions"]


async def test_sites_outside_the_configs_allow_list_are_not_searched(brain, fake):
    ds = await web_datasette(brain, fake, allow_domains=["homebarista-notes.com"])
    pack = await ask(ds, site=SITE)
    assert sent(fake, "brave") == []
    assert pack["external_search"]["ran"] is False
    assert pack["external_search"]["skipped_reason"] == "sites_not_allowed"
    assert "site_not_allowed" in [w["code"] for w in pack["warnings"]]
    # A site inside the allow-list narrows it.
    pack = await ask(ds, site=f"homebarista-notes.com,{SITE}")
    (request,) = sent(fake, "brave")
    assert request.query["q"] == [f"{QUESTION} site:homebarista-notes.com"]


async def test_a_site_that_is_no_domain_is_a_400(brain, fake):
    ds = await web_datasette(brain, fake)
    for value in ("localhost", "not a domain", ",".join(f"s{i}.example" for i in range(11))):
        response = await ds.client.get("/-/research.json", params={"q": QUESTION, "site": value})
        body = response.json()
        assert (response.status_code, body["code"]) == (400, "bad_site")
        assert "example.com" in body["error"]


def test_the_cli_takes_sites(brain, fake, tmp_path):
    meta = tmp_path / "metadata.json"
    meta.write_text(json.dumps({"plugins": {"datasette-dbrain-websearch": web_config(fake)}}))
    args = [str(brain[0]), QUESTION, "--external", "always", "--json", "-m", str(meta)]
    result = CliRunner().invoke(
        cli, ["dbrain-research", *args, "--site", SITE, "--not-site", "x.example"]
    )
    assert result.exit_code == 0, result.output
    pack = json.loads(result.output)
    assert pack["external_search"]["sites"] == [SITE]
    assert {r["domain"] for r in pack["external_evidence"]} == {SITE}
    (request,) = sent(fake, "brave")
    assert request.query["q"] == [f"{QUESTION} site:{SITE} -site:x.example"]


async def test_the_page_keeps_the_sites_in_its_form_and_its_links(brain, fake):
    ds = await web_datasette(brain, fake)
    response = await ds.client.get(
        "/-/research",
        params=[
            ("q", QUESTION),
            ("external", "always"),
            ("site", SITE),
            ("site", "homebarista-notes.com"),
        ],
        cookies=actor_cookies(ds, "root"),
    )
    assert response.status_code == 200
    html = response.text
    assert f'name="site" value="{SITE}, homebarista-notes.com"' in html
    assert f"only {SITE}, homebarista-notes.com" in html  # the folded web options say so
    (request,) = sent(fake, "brave")
    assert request.query["q"] == [f"{QUESTION} site:{SITE} OR site:homebarista-notes.com"]
