"""The README's demo questions, run through the JSON API over the real demo brain."""

from __future__ import annotations

from pathlib import Path

import pytest

from datasette_dbrain_websearch.demo import DEMO_QUESTIONS, build_demo_brain
from datasette_dbrain_websearch.demo.links import demo_links, main, request_params

from .helpers import make_datasette

VERDICTS = {
    "enough": "enough_evidence",
    "exact": "enough_evidence",
    "weak": "weak_evidence",
    "none": "no_evidence",
}


@pytest.fixture(scope="module")
def demo_ds(tmp_path_factory):
    path = tmp_path_factory.mktemp("demo") / "brain.db"
    build_demo_brain(path)
    return make_datasette([str(path)])


@pytest.mark.parametrize("case", DEMO_QUESTIONS, ids=[c["q"][:40] for c in DEMO_QUESTIONS])
async def test_demo_question_shows_what_the_readme_says(demo_ds, case):
    params = request_params(case)
    response = await demo_ds.client.get("/-/research.json", params=params)
    assert response.status_code == 200, response.text
    pack = response.json()
    assert pack["judge"]["verdict"] == VERDICTS[case["expect"]], pack["judge"]
    if case["expect"] == "exact":
        assert pack["evidence"][0]["source_key"] == case["source_key"]
        assert pack["judge"]["reason"] == "exact_match"
    if "tag" in case:
        assert all(case["tag"] in row["user_tags"] for row in pack["evidence"])
    if "kind" in case:
        assert {row["kind"] for row in pack["evidence"]} == {case["kind"]}
    if case["expect"] == "weak":  # no row holds every word: the best lacks one
        assert pack["query_plan"]["query_mode"] == "bm25"
        assert pack["evidence"][0]["retrieval"]["missing_terms"]


async def test_demo_page_renders_every_demo_question(demo_ds):
    for case in DEMO_QUESTIONS:
        params = request_params(case)
        response = await demo_ds.client.get("/-/research", params=params)
        assert response.status_code == 200
        assert 'dbrain-counts">Brain: ' in response.text


@pytest.mark.parametrize("case", DEMO_QUESTIONS, ids=[c["q"][:40] for c in DEMO_QUESTIONS])
async def test_demo_question_answered_with_every_sentence_cited_and_supported(demo_ds, case):
    params = request_params(case)
    response = await demo_ds.client.get("/-/research.json", params={**params, "answer": "1"})
    answer = response.json()["answer"]
    if case["expect"] == "none":
        assert answer["status"] == "no_evidence"
        return
    # Only a named row with no text yet (saved, never extracted) has nothing to answer with.
    assert answer["status"] == "ok" or case["expect"] == "exact", answer["message"]
    assert all(s["supported"] and s["citations"] for s in answer["sentences"])
    assert answer["rejected_citations"] == []


def test_the_readme_links_are_the_demo_questions_on_the_default_port():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for _, page, as_json in demo_links():
        assert f"[page]({page}) · [JSON]({as_json})" in readme


def test_the_demo_prints_its_questions_links_on_its_own_port(capsys):
    main(["8110"])
    printed = capsys.readouterr().out
    assert printed.count("http://127.0.0.1:8110/-/research?q=") == len(DEMO_QUESTIONS)
    assert "8001" not in printed
