"""Read before citing: the top web results' pages are read (through the fake's page reader),
their rows show the page's own passage and say so, the answer rests on the pages, failures fall
back to the snippet with a named warning, reads are cached and counted in the ledger."""

from __future__ import annotations

import sqlite3

from datasette_dbrain_websearch.providers import Provider, WebResult

from ..helpers import actor_cookies, registered, web_datasette, web_pack

QUESTION = "lattice qcd"


async def reading_ds(brain, fake, **external):
    return await web_datasette(
        brain,
        fake,
        read_via=f"{fake.url}/reader/",  # on loopback: trusted as configured, no allowance needed
        read_unresolved=True,  # the fake's page names resolve nowhere offline
        **external,
    )


async def ask(ds, **params):
    return await web_pack(ds, QUESTION, **params)


def reads(fake):
    return [r for r in fake.requests if r.provider == "reader"]


def page_text(fake, url):
    """What the reader serves of the page: its heading, then its text."""
    return next(f"{p.title} {p.text}" for p in fake.pages if _plain(p.url) == _plain(url))


def _plain(url):
    return url.split("://", 1)[1].removeprefix("www.").rstrip("/")


async def test_the_top_pages_are_read_and_their_rows_say_so(brain, fake):
    ds = await reading_ds(brain, fake, cache_ttl=3600)
    pack = await ask(ds, read="2")
    rows = pack["external_evidence"]
    assert len(rows) > 2
    assert [r["depth"] for r in rows] == ["page", "page"] + ["snippet"] * (len(rows) - 2)
    # Read at once, so they reach the reader in any order.
    assert sorted(r.path for r in reads(fake)) == sorted(f"/reader/{r['url']}" for r in rows[:2])
    for row in rows[:2]:
        assert row["evidence_role"] == "external_page"
        # The row shows the passage of the page that matches, from the page's own text.
        assert row["excerpt"].strip(" .…") in " ".join(page_text(fake, row["url"]).split())
        assert row["retrieval"]["matched_terms"]
        assert any(s["name"] == "external_page_read" for s in row["retrieval"]["signals"])
    assert pack["external_search"]["read"] == [
        {"url": r["url"], "read": True, "cached": False} for r in rows[:2]
    ]
    assert "read" in pack["timings_ms"]
    # Each read is in the ledger (free), beside the provider's billed call.
    conn = sqlite3.connect(brain[0].parent / "research_runs.db")
    ledger = conn.execute(
        "select provider, status, cost_usd, run_id from dbrain_websearch_provider_calls "
        "where provider = 'page_read'"
    ).fetchall()
    assert ledger == [("page_read", 200, 0.0, pack["run_id"])] * 2
    # The same pages again come from the cache: nothing is read twice.
    fake.reset()
    again = await ask(ds, read="2")
    assert reads(fake) == []
    assert [p["cached"] for p in again["external_search"]["read"]] == [True, True]
    assert [r["depth"] for r in again["external_evidence"][:2]] == ["page", "page"]


class Teaser(Provider):
    """A provider that returns only a few words of each page (as many search APIs do)."""

    name, label = "teaser", "Teaser"

    def __init__(self, pages):
        self.pages = pages

    async def search(self, request, ctx):
        return [
            WebResult(url=p.url, title=p.title or "", snippet=" ".join(p.text.split()[:6]), rank=i)
            for i, p in enumerate(self.pages, start=1)
        ]


async def test_the_answer_quotes_read_pages_and_is_checked_against_them(brain, fake):
    lattice = [p for p in fake.pages if "lattice qcd" in (p.title or "").lower()][:3]
    with registered(Teaser(lattice)):
        ds = await reading_ds(brain, fake, providers=["teaser"])
        teased = await ask(ds, answer="1")
        pack = await ask(ds, read="3", answer="1")
    snippets = {r["source_key"]: r["excerpt"] for r in teased["external_evidence"]}
    answer = pack["answer"]
    web = {r["source_key"]: r for r in pack["external_evidence"]}
    quotes = [
        (q["key"], q["text"]) for s in answer["sentences"] for q in s["quotes"] if q["key"] in web
    ]
    assert quotes and all(s["supported"] for s in answer["sentences"])
    for key, quote in quotes:
        assert web[key]["depth"] == "page"
        assert quote.strip(" .…") in " ".join(page_text(fake, web[key]["url"]).split())
    # What the answer says comes from the pages: the providers' six words never held it.
    assert any(quote not in snippets[key] for key, quote in quotes)


class Unreadable(Provider):
    """Results on pages the reader does not hold: reading them fails (404)."""

    name, label = "unreadable", "Unreadable"

    async def search(self, request, ctx):
        return [
            WebResult(
                url=f"https://gone{i}.example/lattice",
                title="Lattice QCD notes",
                snippet="Lattice QCD puts quarks and gluons on a grid.",
                rank=i,
            )
            for i in (1, 2)
        ]


async def test_a_page_that_cannot_be_read_falls_back_to_the_snippet_with_a_warning(brain, fake):
    with registered(Unreadable()):
        ds = await reading_ds(brain, fake, providers=["unreadable"])
        pack = await ask(ds, read="1")
    (first, second) = pack["external_evidence"]
    assert (first["depth"], second["depth"]) == ("snippet", "snippet")
    assert first["excerpt"] == "Lattice QCD puts quarks and gluons on a grid."
    (warning,) = [w for w in pack["warnings"] if w["code"] == "page_read_failed"]
    assert "gone1.example" in warning["message"] and "1 of 1" in warning["message"]
    (read,) = pack["external_search"]["read"]
    assert read["read"] is False and read["error"]


async def test_nothing_is_read_unless_asked(brain, fake):
    ds = await reading_ds(brain, fake)
    pack = await ask(ds)
    assert reads(fake) == [] and "read" not in pack["external_search"]
    assert {r["depth"] for r in pack["external_evidence"]} == {"snippet"}
    bad = await ds.client.get(
        "/-/research.json",
        params={"q": QUESTION, "read": "11"},
        cookies=actor_cookies(ds, "root"),
    )
    assert (bad.status_code, bad.json()["code"]) == (400, "bad_read")


async def test_without_the_fetch_extra_reading_says_how_to_get_it(brain, fake, monkeypatch):
    from datasette_dbrain_websearch import extraction, reading

    monkeypatch.setattr(reading, "extractor_missing", lambda: extraction.EXTRACTOR_MISSING)
    ds = await reading_ds(brain, fake)
    pack = await ask(ds, read="2")
    (warning,) = [w for w in pack["warnings"] if w["code"] == "page_read_unavailable"]
    assert "pip install 'datasette-dbrain-websearch[fetch]'" in warning["message"]
    assert reads(fake) == [] and {r["depth"] for r in pack["external_evidence"]} == {"snippet"}
