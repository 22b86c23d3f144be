"""A question that is a URL the brain lacks: its page is read directly (through the same guarded
reader as search results) and shown as "the page you named", never searched for as words."""

from __future__ import annotations

import sqlite3

from datasette_dbrain_websearch.urls import normalize_url

from ..helpers import (
    GRANT_PROMOTE,
    SOURCE_URLS,
    actor_cookies,
    db_rows,
    make_datasette,
    post_json,
    serve_article,
    web_config,
)

PAGE = "https://quarkmatter.blog/what-is-lattice-qcd"
CROSS_SITE = {"sec-fetch-site": "cross-site"}


async def direct_ds(brain, fake, read_via=True, **external):
    """The fixture brain, web search on the fakes, pages read through the fake's reader (on
    loopback: trusted as configured) unless ``read_via`` is off."""
    if read_via:
        external["read_via"] = f"{fake.url}/reader/"
        external["read_unresolved"] = True
    ds = make_datasette(
        [str(brain[0])], plugin_config=web_config(fake, **external), permissions=GRANT_PROMOTE
    )
    await ds.invoke_startup()
    return ds


async def research(ds, q=PAGE, actor="root", headers=None, **params):
    cookies = actor_cookies(ds, actor) if actor else {}
    response = await ds.client.get(
        "/-/research.json", params={"q": q, **params}, cookies=cookies, headers=headers or {}
    )
    assert response.status_code == 200, response.text
    return response.json()


def searches(fake):
    return [r for r in fake.requests if r.provider != "reader"]


def reads(fake):
    return [r for r in fake.requests if r.provider == "reader"]


def codes(pack):
    return [w["code"] for w in pack["warnings"]]


async def test_a_url_question_reads_the_page_it_names(brain, fake):
    ds = await direct_ds(brain, fake)
    pack = await research(ds, f"  {PAGE}  ", external="always", answer="1")
    (row,) = pack["external_evidence"]
    # Read directly: no provider was asked, and the search lists stay empty.
    assert searches(fake) == []
    assert [r.path for r in reads(fake)] == [f"/reader/{PAGE}"]
    search = pack["external_search"]
    assert (search["ran"], search["providers"], search["skipped_reason"]) == (
        False,
        [],
        "direct_url",
    )
    assert "returned" not in search and pack["query_plan"]["external_queries"] == []
    assert search["read"] == [{"url": PAGE, "read": True, "cached": False}]
    # One web row: outside the brain, ephemeral, the page's own text, named as such.
    assert row["direct_url"] is True
    assert (row["origin"], row["store"], row["providers"]) == (
        "outside_dbrain_corpus",
        "ephemeral",
        ["direct"],
    )
    assert (row["depth"], row["evidence_role"]) == ("page", "external_page")
    assert row["source_key"].startswith("ext:direct:") and row["url"] == PAGE
    assert row["title"] == "What is lattice QCD, and why does it need supercomputers?"
    page = next(p for p in fake.pages if p.url == PAGE)
    assert row["excerpt"].strip(" .…")[:60] in " ".join(page.text.split())
    (lane,) = row["retrieval"]["lanes"]
    assert (lane["name"], lane["provider"], lane["rank"]) == ("direct_url", "direct", 1)
    # Answerable: the answer is given the page.
    assert row["source_key"] in pack["answer"]["evidence"]["admitted_source_keys"]
    # Counted as a page read in the ledger, never as a provider's search.
    conn = sqlite3.connect(brain[0].parent / "research_runs.db")
    ledger = conn.execute("select provider from dbrain_websearch_provider_calls").fetchall()
    assert ledger == [("page_read",)]
    # The page says what it is.
    html = (
        await ds.client.get(
            "/-/research",
            params={"q": PAGE, "external": "always"},
            cookies=actor_cookies(ds, "root"),
        )
    ).text
    assert "Outside dbrain corpus / the page you named / ephemeral" in html
    assert "read directly, not searched" in html


async def test_mode_never_reads_nothing_and_says_what_would(brain, fake):
    ds = await direct_ds(brain, fake)
    pack = await research(ds, external="never")
    assert fake.requests == [] and pack["external_evidence"] == []
    (hint,) = [w for w in pack["warnings"] if w["code"] == "direct_url_not_held"]
    assert "does not hold" in hint["message"] and "would read the page" in hint["message"]


async def test_no_page_is_read_for_whom_the_web_is_not_allowed(brain, fake):
    ds = await direct_ds(brain, fake)
    anonymous = await research(ds, actor=None, external="always")
    assert "external_search_not_permitted" in codes(anonymous)
    cross_site = await research(ds, headers=CROSS_SITE, external="always")
    assert "external_search_cross_site" in codes(cross_site)
    assert fake.requests == []
    assert anonymous["external_evidence"] == cross_site["external_evidence"] == []


async def test_a_url_the_brain_holds_is_not_read(brain, fake):
    ds = await direct_ds(brain, fake)
    pack = await research(ds, SOURCE_URLS["src_fts5"], external="always")
    assert pack["coverage"]["exact_matches"] >= 1
    assert reads(fake) == []
    assert not any(r.get("direct_url") for r in pack["external_evidence"])


async def test_a_private_address_is_refused_by_the_guard(brain, fake):
    ds = await direct_ds(brain, fake, read_via=False)
    with serve_article() as url:
        pack = await research(ds, url, external="always")
        assert pack["external_evidence"] == [] and searches(fake) == []
        (warning,) = [w for w in pack["warnings"] if w["code"] == "direct_url_not_read"]
        assert "127.0.0.1: it is not a public address" in warning["message"]
        assert "page_read_failed" not in codes(pack)
        # A network this Datasette allows is read, through the same fetcher.
        allowed = await direct_ds(
            brain, fake, read_via=False, fetch_allow_networks=["127.0.0.1/32"]
        )
        pack = await research(allowed, url, external="always")
    (row,) = pack["external_evidence"]
    assert row["direct_url"] and "four-dimensional grid" in row["text"]


async def test_a_page_that_cannot_be_read_says_so(brain, fake):
    ds = await direct_ds(brain, fake)
    pack = await research(ds, "https://nowhere.example/missing", external="on_weak")
    assert pack["external_evidence"] == [] and searches(fake) == []
    (warning,) = [w for w in pack["warnings"] if w["code"] == "direct_url_not_read"]
    assert "Could not read the page you named" in warning["message"]


async def test_the_page_you_named_can_be_promoted(brain, fake):
    ds = await direct_ds(brain, fake)
    pack = await research(ds, external="always")
    (row,) = pack["external_evidence"]
    response = await post_json(ds, {"run_id": pack["run_id"], "source_keys": [row["source_key"]]})
    assert response.status_code == 200, response.text
    (result,) = response.json()["results"]
    expected = normalize_url(PAGE)
    assert (result["status"], result["local_source_key"]) == ("created", expected.source_key)
    (source,) = db_rows(
        brain[0], "select * from sources where source_key = ?", [expected.source_key]
    )
    assert (source["canonical_url"], source["normalized_url"]) == (PAGE, PAGE)
    assert (source["title"], source["description"]) == (row["title"], row["text"])
    # Now the brain holds it: the same question finds it by exact lookup, nothing is read.
    fake.reset()
    again = await research(ds, external="always")
    assert again["coverage"]["exact_matches"] == 1 and reads(fake) == []
