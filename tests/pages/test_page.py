"""The research page: form, verdict, counts, rows, escaping, errors, base_url."""

from __future__ import annotations

import re
import sqlite3

from ..helpers import make_datasette


async def test_empty_page_shows_labelled_form(ds):
    response = await ds.client.get("/-/research")
    assert response.status_code == 200
    html = response.text
    assert '<form class="core dbrain-form"' in html and 'method="get"' in html
    for field_id in (
        "dbrain-q",
        "dbrain-tag",
        "dbrain-source-type",
        "dbrain-kind",
        "dbrain-since",
        "dbrain-until",
        "dbrain-limit",
        "dbrain-syntax",
    ):
        assert f'<label for="{field_id}"' in html, field_id
        assert f'id="{field_id}"' in html
    assert "Local dbrain evidence" not in html
    assert "dbrain_websearch.css" in html


async def test_results_page_shows_verdict_counts_rows_and_json_link(ds, brain):
    _, ids = brain
    html = (await ds.client.get("/-/research?q=espresso+grinder")).text
    assert "Brain: 2</span>" in html and "Web:" not in html
    assert "dbrain-verdict-enough_evidence" in html
    assert 'href="/-/research.json?q=espresso+grinder"' in html
    assert f'href="/brain/sources/{ids["src_espresso"]}"' in html
    assert f'href="/brain/items/{ids["note_espresso"]}"' in html
    assert "<mark>espresso</mark>" in html.lower()
    assert "#espresso" in html and "1st best match among your sources" in html
    assert "bm25" not in html.lower().replace('"bm25"', "")  # words for people, not arithmetic
    assert 'value="espresso grinder"' in html


async def test_script_title_is_escaped(ds):
    html = (await ds.client.get("/-/research?q=malicious+payload")).text
    assert "<script>alert('owned')</script>" not in html
    assert "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt; payload notes" in html
    assert "<b>bold</b>" not in html


async def test_hostile_query_is_escaped_in_the_form(ds):
    response = await ds.client.get('/-/research?q="><script>x</script>')
    assert response.status_code == 200
    assert "<script>x</script>" not in response.text


async def test_errors_render_on_the_page_with_400(ds):
    response = await ds.client.get("/-/research?q=espresso+AND+(&syntax=raw")
    assert response.status_code == 400
    assert 'role="alert"' in response.text and "FTS5 query error" in response.text
    assert 'id="dbrain-q"' in response.text


async def test_no_evidence_page(ds):
    html = (await ds.client.get("/-/research?q=quantum+chromodynamics")).text
    assert "Brain: 0</span>" in html
    assert "dbrain-verdict-no_evidence" in html
    assert "Nothing in the top rows mentions <em>quantum</em>, <em>chromodynamics</em>" in html


async def test_several_brains_offer_a_picker(brain, tmp_path):
    second = tmp_path / "second.db"
    sqlite3.connect(second).close()
    src = sqlite3.connect(brain[0])
    src.backup(sqlite3.connect(second))
    ds = make_datasette([str(brain[0]), str(second)])
    html = (await ds.client.get("/-/research?q=espresso&database=second")).text
    assert re.search(r'<option value="second" selected>', html)
    assert "/second/sources/" in html
    per_db = (await ds.client.get("/second/-/research?q=espresso")).text
    assert 'action="/second/-/research"' in per_db


async def test_base_url_is_respected(brain):
    ds = make_datasette([str(brain[0])], settings={"base_url": "/prefix/"})
    # ds.client adds base_url itself.
    html = (await ds.client.get("/-/research?q=espresso+grinder")).text
    assert 'action="/prefix/-/research"' in html
    assert 'href="/prefix/-/research.json?q=espresso+grinder"' in html
    assert 'href="/prefix/brain/sources/' in html
    body = (await ds.client.get("/-/research.json?q=espresso")).json()
    assert all(r["row_url"].startswith("/prefix/brain/") for r in body["evidence"])


async def test_links_the_page_builds_carry_one_value_per_parameter(brain):
    """A checkbox with a default sends answer=0&answer=1; the page's links keep the value the
    server read (the last), and every value of a repeatable parameter (tag)."""
    ds = make_datasette([str(brain[0])], plugin_config={"answer": {"default": True}})
    await ds.invoke_startup()
    html = (
        await ds.client.get(
            "/-/research?q=sourdugh&answer=0&answer=1&tag=baking&tag=bread&limit=5&limit=7"
        )
    ).text
    link = html.split('class="dbrain-did-you-mean"')[1].split('href="')[1].split('"')[0]
    query = link.replace("&amp;", "&").split("?", 1)[1].split("&")
    assert query.count("answer=1") == 1 and "answer=0" not in query
    assert query.count("limit=7") == 1 and "limit=5" not in query
    assert "tag=baking" in query and "tag=bread" in query


async def test_a_brain_row_says_what_it_is_in_words_never_bare_web(ds):
    """Issue 19: "web" means outside your brain; a saved web page is a "web page"."""
    html = (await ds.client.get("/-/research?q=sqlite+fts5")).text
    badges = re.findall(r'class="dbrain-badge dbrain-badge-local"[^>]*>([^<]*)<', html)
    assert "dbrain source · web page" in badges
    assert not any(b.endswith("· web") for b in badges)


async def test_mark_buttons_are_named_as_they_read(brain):
    """Issue 19: an accessible name says what the label says ("More like this", not
    "Somewhat relevant"); an emoji button is named by what it means."""
    from ..helpers import actor_cookies

    ds = make_datasette([str(brain[0])])
    await ds.invoke_startup()
    html = (await ds.client.get("/-/research?q=espresso", cookies=actor_cookies(ds, "root"))).text
    names = dict(
        re.findall(r'aria-label="([^"]+)"\s+class="dbrain-mark[^"]*" data-value="(\w+)"', html)
    )
    by_value = {value: name for name, value in names.items()}
    assert by_value == {
        "relevant": "Relevant",
        "irrelevant": "Not relevant",
        "more": "More like this",
        "less": "Less like this",
        "unsure": "Unsure",
    }


async def test_research_is_first_in_datasettes_menu(brain):
    """Issue 19: Research was item 13 of 15 in the menu; it comes first."""
    from ..helpers import actor_cookies

    ds = make_datasette([str(brain[0])])
    await ds.invoke_startup()
    html = (await ds.client.get("/", cookies=actor_cookies(ds, "root"))).text
    menu = html.split('class="nav-menu-inner"')[1].split("</ul>")[0]
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', menu)
    assert links[0] == ("/-/research", "Research")  # before Databases, Plugins, ... (0.65)
