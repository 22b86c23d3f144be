"""The research page as a workspace, through HTTP: what the page offers (Search the web,
provider order, custom freshness), where no-JavaScript forms land, the runs list's filters and
the run page's order."""

from __future__ import annotations

import html
import re
import urllib.parse

from ..helpers import (
    actor_cookies,
    ask,
    attr,
    csrf,
    make_datasette,
    promoting_ds,
    provider_requests,
    web_ds,
)


async def get_page(ds, actor="root", **params):
    cookies = actor_cookies(ds, actor) if actor else {}
    return (await ds.client.get("/-/research", params=params, cookies=cookies)).text


async def test_search_the_web_in_one_click_for_weak_or_missing_evidence(brain, fake):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    page = await get_page(ds, q="lattice qcd", tag="", kind="")
    url = attr(page, r'<a class="dbrain-button" href="([^"]+)">Search the web</a>')
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query, keep_blank_values=True)
    assert query == {"q": ["lattice qcd"], "external": ["always"]}  # empty fields dropped
    assert "Nothing in your brain answers this; ask Brave → Exa." in page
    enough = await get_page(ds, q="espresso grinder")
    assert "Search the web</a>" not in enough
    anonymous = await get_page(ds, actor=None, q="lattice qcd")
    assert "Search the web</a>" not in anonymous
    assert anonymous.count("Sign in to search the web too") == 1  # beside the verdict, once


async def test_provider_select_defaults_to_the_configured_order(brain, fake):
    ds = await web_ds(brain, fake, providers=["brave", "exa"])
    page = await get_page(ds)
    options = re.findall(
        r'<option value="([^"]*)"[^>]*>([^<]+)</option>', page.split("dbrain-provider")[2]
    )
    assert options[:4] == [
        ("", "Configured order (Brave → Exa)"),
        ("brave", "Brave"),
        ("exa", "Exa"),
        ("all", "All at once"),
    ]
    assert f'max="{50}"' in page  # the Rows input follows max_limit


async def test_custom_freshness_range_reaches_the_provider(brain, fake):
    ds = await web_ds(brain, fake)
    status, _ = await ask(
        ds,
        q="lattice qcd",
        external="always",
        freshness="custom",
        freshness_since="2026-01-01",
        freshness_until="2026-06-30",
    )
    assert status == 200
    (request,) = provider_requests(fake)
    assert request.query["freshness"] == ["2026-01-01to2026-06-30"]
    status, body = await ask(ds, q="lattice qcd", external="always", freshness="custom")
    assert status == 400 and body["code"] == "bad_freshness"


async def test_no_js_promotion_and_marks_land_on_the_saved_run(brain, fake):
    ds = await promoting_ds(brain, fake)
    root = actor_cookies(ds, "root")
    page = await get_page(ds, q="lattice qcd", external="always")
    nexts = re.findall(r'name="next" value="([^"]+)"', page)
    assert len(nexts) == 2 and all("run=" in html.unescape(n) for n in nexts)
    cookies, _, token = await csrf(ds, root)
    form = {
        "csrftoken": token,
        "run_id": attr(page, r'name="run_id" value="([^"]+)"'),
        "promote_one": attr(page, r'name="promote_one" value="([^"]+)"'),
        "next": html.unescape(nexts[0]),
    }
    response = await ds.client.post("/-/research/promote", data=form, cookies=cookies)
    assert response.status_code == 302 and "run=" in response.headers["location"]
    shown = await ds.client.get(response.headers["location"], cookies=root)
    assert "In your brain now:" in shown.text


async def test_forms_posted_by_the_script_get_json(brain, fake):
    ds = await web_ds(brain, fake)
    root = actor_cookies(ds, "root")
    page = await get_page(ds, q="lattice qcd", external="always")
    key = attr(page, r'name="mark" value="([^"|]+)\|relevant"')
    action = attr(page, r'<form id="dbrain-feedback" method="post" action="([^"]+)"')
    cookies, _, token = await csrf(ds, root)
    response = await ds.client.post(
        action,
        data={"csrftoken": token, "mark": f"{key}|relevant"},
        cookies=cookies,
        headers={"accept": "application/json"},
    )
    assert response.status_code == 200
    assert response.json()["feedback"] == [{"key": key, "value": "relevant"}]


async def test_runs_list_filters_in_sql_and_hides_runs_from_anonymous_visitors(brain, fake):
    ds = await web_ds(brain, fake)
    await ask(ds, q="espresso grinder")
    await ask(ds, q="lattice qcd", external="always")
    root = actor_cookies(ds, "root")

    async def questions(**params):
        page = await ds.client.get("/-/research/runs", params=params, cookies=root)
        return re.findall(r'data-label="Question"><a href="[^"]+">([^<]+)</a>', page.text)

    assert await questions() == ["lattice qcd", "espresso grinder"]
    assert await questions(verdict="no_evidence") == ["lattice qcd"]
    assert await questions(web="yes") == ["lattice qcd"]
    assert await questions(web="no", mode="never") == ["espresso grinder"]
    assert await questions(q="grind") == ["espresso grinder"]
    assert await questions(q="100%_") == []
    assert await questions(since="2999-01-01") == []
    assert await questions(verdict="bogus") == ["lattice qcd", "espresso grinder"]
    anonymous = await ds.client.get("/-/research/runs")
    assert "Sign in to see yours" in anonymous.text and "data-label" not in anonymous.text


async def test_run_page_shows_evidence_before_its_timeline_and_json(brain, fake):
    ds = await web_ds(brain, fake)
    _, pack = await ask(ds, q="lattice qcd", external="always")
    page = (await ds.client.get(pack["trace_url"], cookies=actor_cookies(ds, "root"))).text
    assert page.index('id="dbrain-evidence"') < page.index("<h2>Stages</h2>")
    assert page.index("<h2>Stages</h2>") < page.index('class="dbrain-raw"')
    assert "Searched your brain: 0 rows" in page and "Asked Brave: “lattice qcd”" in page
    assert "Outside dbrain corpus / Brave / ephemeral" in page


async def test_rows_explain_themselves_in_words(brain):
    ds = make_datasette([str(brain[0])])
    await ds.invoke_startup()
    page = await get_page(ds, actor=None, q="espresso grinder")
    assert "1st best match among your sources" in page
    assert "matches 2 of 2 words" in page
    assert "in your brain since 2026-05-10" in page
