"""Web rows ranked against the question before the cut (``web_ranking``): the pure ranking,
then through the research API and page over the fake provider server, and a plugin's ranker."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest
from datasette import hookimpl
from datasette.plugins import pm

from datasette_dbrain_websearch.demo.corpus import Page
from datasette_dbrain_websearch.demo.fakeweb import FakeWeb
from datasette_dbrain_websearch.merge import DomainPolicy, merge_web
from datasette_dbrain_websearch.providers import Provider, WebResult
from datasette_dbrain_websearch.query_plan import plan_query
from datasette_dbrain_websearch.web_hits import normalize_hits
from datasette_dbrain_websearch.web_ranking import (
    UNIT,
    WebCandidate,
    WebRanker,
    WebRanking,
    rank_web,
    ranked_order,
)

from ..helpers import BRAVE_KEY, EXA_KEY, actor_cookies, ask, registered, web_ds

PROSE = "how does the gluon propagator behave under confinement in lattice simulations"


def candidate(url: str, title: str, snippet: str = "", rank: int = 1, provider: str = "brave"):
    return WebCandidate(url, title, snippet, "", "", ((provider, rank),))


def test_rare_words_outrank_a_higher_provider_rank():
    plan = plan_query(PROSE)
    names = [t.name for t in plan.question_terms]
    assert len(names) > 3  # prose: terms weigh by their rarity in the brain
    weights = dict.fromkeys(names, 0.2) | {"propagator": 5.0, "confinement": 5.0}
    common = candidate("https://a.example/", "Lattice simulations", "how lattice simulations go", 1)
    rare = candidate("https://b.example/", "Propagator", "the propagator under confinement", 2)
    ranked = rank_web([common, rare], plan, weights)
    assert ranked_order(ranked) == [1, 0]
    assert ranked[1].score > ranked[0].score


def test_equal_scores_keep_the_providers_order():
    plan = plan_query("gluon propagator")
    same = [candidate(f"https://{c}.example/", "Gluon propagator", "gluon", 1) for c in "abc"]
    ranked = rank_web(same, plan, {})
    assert len({r.score for r in ranked}) == 1
    assert ranked_order(ranked) == [0, 1, 2]


def test_every_signal_is_named_and_valued_and_adds_up_to_the_score():
    plan = plan_query("gluon propagator")
    row = WebCandidate(
        "https://a.example/",
        "Gluon propagator",
        "the gluon",
        "more text",
        "the page on the gluon propagator",
        (("brave", 3), ("exa", 1)),
    )
    (ranked,) = rank_web([row], plan, {}, cosines=[0.4], labels={"brave": "Brave"})
    names = [s["name"] for s in ranked.signals]
    assert names == [
        "external_provider_rank",
        "external_provider_rank",
        "term_coverage_title",
        "term_coverage_snippet",
        "term_coverage_page",
        "semantic_cosine",
    ]
    by_name = {s["name"]: s for s in ranked.signals}
    assert by_name["term_coverage_title"]["weight"] == pytest.approx(0.5 * UNIT, abs=1e-6)
    assert (
        "2 of the question's 2 terms (gluon, propagator): 1.000 x 0.5"
        in (by_name["term_coverage_title"]["detail"])
    )
    assert (
        "1 of the question's 2 terms (gluon): 0.500" in by_name["term_coverage_snippet"]["detail"]
    )
    assert by_name["semantic_cosine"]["weight"] == pytest.approx(0.4 * 0.5 * UNIT, abs=1e-6)
    assert "rank 3 at Brave" in ranked.signals[0]["detail"]
    # Two providers answered: rank 1 at both would be worth 1 (``UNIT``).
    assert ranked.signals[1]["weight"] == pytest.approx(UNIT / 2, abs=1e-6)
    assert ranked.score == pytest.approx(sum(s["weight"] for s in ranked.signals), abs=1e-5)
    assert ranked.cosine == 0.4


def test_meaning_moves_a_row_up_when_the_lane_ran():
    plan = plan_query("gluon propagator")
    rows = [
        candidate("https://a.example/", "Notes", "", 1),
        candidate("https://b.example/", "", "", 2),
    ]
    assert ranked_order(rank_web(rows, plan, {})) == [0, 1]
    assert ranked_order(rank_web(rows, plan, {}, cosines=[0.05, 0.6])) == [1, 0]


def hits(provider: str, pages: Sequence[tuple[str, str, str]]):
    results = [
        WebResult(url=url, title=title, snippet=snippet, rank=n)
        for n, (url, title, snippet) in enumerate(pages, start=1)
    ]
    return normalize_hits(provider, results, cached=False)[0]


def test_ranked_before_the_cut_and_again_with_the_pages_read():
    found = hits(
        "brave",
        [
            ("https://a.example/", "Weather today", "sunny"),
            ("https://b.example/", "Other", "nothing here"),
            ("https://c.example/", "Gluon", "the propagator"),
        ],
    )
    ranking = WebRanking("gluon propagator", plan_query("gluon propagator"))
    outcome = merge_web(found, set(), DomainPolicy(), 2, ranking.order)
    # The page holding the question's words survives the cut; the provider's second does not.
    assert [r.canonical_url for r in outcome.rows] == ["https://c.example/", "https://a.example/"]
    assert {"decision": "dropped_by_budget", "url": "https://b.example/"} in outcome.decisions
    read = {"https://a.example/": "All about the gluon propagator, read in full."}
    reread = ranking.order(outcome.rows, read)
    assert [r.canonical_url for r in reread] == ["https://a.example/", "https://c.example/"]
    names = [s["name"] for s in ranking.ranks["https://a.example/"].signals]
    assert "term_coverage_page" in names


class Boost(WebRanker):
    """Puts the pages of one domain first."""

    name = "boost"
    label = "Favoured site"
    weight = 2.0

    def __init__(self, domain: str = "b.example") -> None:
        self.domain = domain

    def score(self, question: str, rows: Sequence[WebCandidate]) -> list[float]:
        return [1.0 if self.domain in row.url else 0.0 for row in rows]


class Broken(WebRanker):
    name = "broken"

    def score(self, question: str, rows: Sequence[WebCandidate]) -> list[float]:
        raise RuntimeError("boom")


def test_a_plugin_ranker_adds_its_signal_and_a_broken_one_is_left_out_with_a_warning():
    found = hits(
        "brave",
        [("https://a.example/", "Gluon", "gluon"), ("https://b.example/", "Gluon", "gluon")],
    )
    ranking = WebRanking("gluon", plan_query("gluon"), rankers=[Broken(), Boost(), Broken()])
    rows = merge_web(found, set(), DomainPolicy(), 5, ranking.order).rows
    assert [r.canonical_url for r in rows] == ["https://b.example/", "https://a.example/"]
    boosted = ranking.ranks["https://b.example/"].signals[-1]
    assert boosted["name"] == "ranker_boost"
    assert boosted["weight"] == pytest.approx(2.0 * UNIT, abs=1e-6)
    ranking.order(rows)  # the second pass: still one warning for the broken ranker
    assert [w["code"] for w in ranking.warnings] == ["web_ranker_failed"]


# Through the research API: the fake provider ranks by how many of the question's words a page
# holds, title and text together, then by its title, then by its corpus order; so the page that
# only names the words in its title comes first, ahead of the page whose text discusses them.
TITLE_ONLY = Page(
    "https://title-only.example/gluon",
    "Gluon propagator lattice",
    "A list of links. Nothing else is written on this page at all.",
    "general",
)
DISCUSSES = Page(
    "https://discusses.example/gluon",
    "Gluon propagator notes",
    "The gluon propagator on the lattice is suppressed in the infrared, as lattice "
    "simulations of the gluon propagator show.",
    "general",
)
UNRELATED = Page(
    "https://unrelated.example/weather",
    "Lattice fences",
    "Weather resistant lattice fences for the garden.",
    "general",
)


@pytest.fixture(scope="module")
def rankweb() -> Iterator[FakeWeb]:
    with FakeWeb(
        brave_keys=(BRAVE_KEY,), exa_keys=(EXA_KEY,), pages=(TITLE_ONLY, DISCUSSES, UNRELATED)
    ) as server:
        yield server


@pytest.fixture
def ranked_fake(rankweb, monkeypatch):
    monkeypatch.setenv("TEST_BRAVE_KEY", BRAVE_KEY)
    monkeypatch.setenv("TEST_EXA_KEY", EXA_KEY)
    rankweb.reset()
    yield rankweb
    rankweb.reset()


class Fences(Provider):
    """A second provider, whose first result holds one of the question's three words."""

    name = "fences"
    label = "Fences"

    async def search(self, request, ctx):
        return [WebResult(url=UNRELATED.url, title=UNRELATED.title, snippet=UNRELATED.text, rank=1)]


QUESTION = {"q": "gluon propagator lattice", "external": "always", "external_count": "2"}


async def test_the_json_orders_web_rows_by_the_question_and_says_why(brain, ranked_fake):
    with registered(Fences()):
        ds = await web_ds(brain, ranked_fake, providers=["brave", "fences"])
        status, pack = await ask(ds, **QUESTION, provider="all")
        page = await ds.client.get(
            "/-/research", params={**QUESTION, "provider": "all"}, cookies=actor_cookies(ds, "root")
        )
    assert status == 200
    rows = pack["external_evidence"]
    # The providers' fused order was: the title-only page and the fences (rank 1 each), then
    # the page that discusses the question (Brave's 2nd). Ranked against the question before
    # the cut to two rows, the fences are left out and the discussion comes first.
    assert [row["url"] for row in rows] == [DISCUSSES.url, TITLE_ONLY.url]
    assert [row["retrieval"]["lanes"][0]["rank"] for row in rows] == [2, 1]
    assert {"decision": "dropped_by_budget", "url": UNRELATED.url} in pack["merge_decisions"]
    assert rows[0]["retrieval"]["fused_score"] < rows[1]["retrieval"]["fused_score"]
    first = rows[0]["retrieval"]
    signals = {s["name"]: s for s in first["signals"]}
    assert {"external_provider_rank", "term_coverage_title", "term_coverage_snippet"} <= set(
        signals
    )
    assert "3 of the question's 3 terms" in signals["term_coverage_snippet"]["detail"]
    assert first["score"] == pytest.approx(sum(s["weight"] for s in first["signals"]), abs=1e-5)
    assert page.status_code == 200
    assert "ranked against the question: provider rank 0.49, title words 0.33" in page.text


class RankerPlugin:
    """A throwaway Datasette plugin registering one ranker through the plugin's hook."""

    __name__ = "boost_ranker_test_plugin"

    def __init__(self, ranker: WebRanker) -> None:
        self.ranker = ranker

    @hookimpl
    def register_dbrain_websearch_rankers(self, datasette):
        return [self.ranker]


@contextmanager
def ranker_registered(ranker: WebRanker) -> Iterator[None]:
    plugin = RankerPlugin(ranker)
    pm.register(plugin, name=plugin.__name__)
    try:
        yield
    finally:
        pm.unregister(name=plugin.__name__)


async def test_a_registered_ranker_changes_the_order(brain, ranked_fake):
    ds = await web_ds(brain, ranked_fake)
    question = {**QUESTION, "external_count": "3"}
    _, without = await ask(ds, **question)
    assert [row["url"] for row in without["external_evidence"]] == [
        DISCUSSES.url,
        TITLE_ONLY.url,
        UNRELATED.url,
    ]
    with ranker_registered(Boost("unrelated.example")):
        _, pack = await ask(ds, **question)
    assert [row["url"] for row in pack["external_evidence"]] == [
        UNRELATED.url,
        DISCUSSES.url,
        TITLE_ONLY.url,
    ]
    boosted = pack["external_evidence"][0]["retrieval"]["signals"]
    assert {"name": "ranker_boost", "detail": "Favoured site: 1.000 x 2.0", "weight": 0.032787} in (
        boosted
    )
