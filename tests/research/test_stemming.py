"""One stemmer for every place that decides whether a word matched: held against FTS5's own
tokens (``fts5vocab``) for a word list, so what the page marks is what SQLite found."""

from __future__ import annotations

import sqlite3

import pytest

from datasette_dbrain_websearch.stemming import TermMatcher, fold, forms_of, stem, stems

# Plurals, -ies/-ied, -ing with doubled letters, -ational, y -> i, diacritics, capitals,
# digits, long and short tokens, apostrophes and hyphens.
WORDS = """
policies studies running runs ran café Café naïve résumé tokenizers tokenizer postgresql
compared comparison comparisons happy happiness relational generalizations ties sky skies
hopping hoped agreed feed fed rating rated conditional sensational digitizer operator
operators operating x-ray don't O'Reilly İstanbul straße Ünïcödé 3d ab abc 2026 v1.2.3 fts5
bm25 SQLite's caresses ponies cats controlling rolling filing sizing crystallization
electriciti trekking hitchhiking revving taxiing
supercalifragilisticexpialidociousnessandmoreletterstoexceedsixtyfourbytesxxxxx
""".split()
# Every word of an English dictionary (Debian's wamerican, 73,651 tokens) where Snowball's porter
# parts from FTS5's; this module's stemmer agrees with FTS5 on all of them.
SNOWBALL_DEPARTS = """
accessibly analogies analogy anesthesiology anthologies anthology anthropology apologies apology
archaeology archeology assemblies assembly astrology audibly bacteriology biotechnology bubbly
cardiology chronologies chronology compatibly contemptibly cosmetology cosmologies cosmology
credibly criminology crumbly cytology dermatology doxologies doxology dumbly ecology egyptology
embryology entomology epidemiology epistemology eschatology ethnology etiologies etiology
etymologies etymology fallibly feasibly flexibly forcibly genealogies genealogy gerontology
graphology grokked grokking gynecology hematology horology horribly humbly hydrology ideologies
ideology ignobly illegibly immunology imperceptibly implausibly impossibly inaudibly
incompatibly incomprehensibly incontrovertibly incorrigibly incredibly indefensibly indelibly
indestructibly indivisibly inexhaustibly infallibly inflexibly insensibly intangibly
intelligibly invincibly invisibly irresistibly irresponsibly irreversibly legibly macrologies
macrology meteorology methodologies methodology microbiology mineralogy morphology musicology
mythologies mythology nanotechnologies nanotechnology negligibly neurology nimbly numbly
numerology oncology ophthalmology ornithology ostensibly paleontology parapsychology pathology
pebbly penology perceptibly permissibly pharmacology philology phonology phraseology phrenology
physiology plausibly possibly psychologies psychology radiology reprehensibly responsibly revved
revving scientology seismology sensibly sociology specced speccing stubbly superbly tangibly
tautologies tautology technologies technology terminologies terminology terribly topology
toxicology trekked trekking unintelligibly urology virology visibly volubly wobbly yakked
yakking yukked yukking
""".split()


def fts5_tokens(text: str) -> list[str]:
    """The terms FTS5's ``porter unicode61`` stores for ``text``, in order."""
    conn = sqlite3.connect(":memory:")
    conn.execute("create virtual table t using fts5(body, tokenize='porter unicode61')")
    conn.execute("insert into t values (?)", [text])
    conn.execute("create virtual table temp.v using fts5vocab(main, t, instance)")
    return [term for (term,) in conn.execute("select term from temp.v order by offset")]


def test_every_word_stems_as_fts5_stores_it():
    assert stems(" ".join(WORDS)) == fts5_tokens(" ".join(WORDS))


def test_words_where_snowballs_porter_departs_from_fts5():
    assert len(SNOWBALL_DEPARTS) == 166
    assert stems(" ".join(SNOWBALL_DEPARTS)) == fts5_tokens(" ".join(SNOWBALL_DEPARTS))


@pytest.mark.parametrize("word", WORDS)
def test_each_word_alone(word):
    assert stems(word) == fts5_tokens(word)


def test_fold_lowercases_and_strips_latin_diacritics_keeping_positions():
    assert fold("Café NAÏVE") == "cafe naive"
    assert len(fold("İstanbul Ünïcödé")) == len("İstanbul Ünïcödé")
    assert stem("policies") == "polici" == stem("policy")


def test_matcher_marks_what_fts5_matched():
    matcher = TermMatcher([("policy", [forms_of("policies")]), ("cafe", [forms_of("cafe")])])
    text = "Policy studies at the Café"
    found = [(text[s:e], name) for s, e, name in matcher.finditer(text)]
    assert found == [("Policy", "policy"), ("Café", "cafe")]
    assert matcher.found([text]) == {"policy", "cafe"}


def test_prefix_forms_match_stem_prefixes_as_fts5_does():
    prefix = TermMatcher([("postgres", [forms_of("postgres", prefix=True)])])
    whole = TermMatcher([("postgres", [forms_of("postgres")])])
    assert prefix.found(["PostgreSQL 17"]) == {"postgres"}
    assert whole.found(["PostgreSQL 17"]) == set()
    conn = sqlite3.connect(":memory:")
    conn.execute("create virtual table t using fts5(body, tokenize='porter unicode61')")
    conn.execute("insert into t values ('PostgreSQL 17')")
    assert conn.execute("select count(*) from t where t match '\"postgres\"*'").fetchone()[0]
    assert not conn.execute("select count(*) from t where t match '\"postgres\"'").fetchone()[0]


def test_a_word_of_two_tokens_matches_them_in_a_row():
    matcher = TermMatcher([("x-ray", [forms_of("x-ray")])])
    assert matcher.found(["an X-ray of the hand"]) == {"x-ray"}
    assert matcher.found(["x marks the ray"]) == set()


# Sentences and the terms a matcher finds in each; a page is many of them.
SENTENCES = [
    ("Policies for the Café's x-ray room", ["policy", "cafe", "x-ray"]),
    ("An overflow is not a flow; under_flow is", ["flow", "flow"]),
    ("Flowcharts and flowing water", ["flowchart", "flow"]),
    ("Templates in C++ beat C templates", ["c++"]),
    ("PostgreSQL 17 and postgres", ["postgres", "postgres"]),
    ("x marks the ray; naïve ÜNÏCÖDÉ", ["naive", "unicode"]),
]
PAGE_TERMS = [
    ("policy", [forms_of("policies")]),
    ("cafe", [forms_of("cafe")]),
    ("x-ray", [forms_of("x-ray")]),
    ("flow", [forms_of("flow")]),
    ("flowchart", [forms_of("flowchart")]),
    ("c++", [forms_of("c++")]),
    ("postgres", [forms_of("postgres", prefix=True)]),
    ("naive", [forms_of("naive")]),
    ("unicode", [forms_of("unicode")]),
]


def test_a_page_is_searched_as_its_sentences_are():
    matcher = TermMatcher(PAGE_TERMS)
    for sentence, names in SENTENCES:
        assert [name for _, _, name in matcher.finditer(sentence)] == names, sentence
    # A page is long enough to be searched a head at a time: the same matches, in order.
    page = " ".join(sentence for sentence, _ in SENTENCES * 8)
    assert len(page) > 1000
    expected, at = [], 0
    for sentence, _ in SENTENCES * 8:
        expected += [(s + at, e + at, n) for s, e, n in matcher.finditer(sentence)]
        at += len(sentence) + 1
    assert list(matcher.finditer(page)) == expected


def test_a_text_folds_as_its_characters_do():
    text = "Ünïcödé İstanbul straße CAFÉ naïve — “quoted” 東京 " * 20
    assert fold(text) == "".join(fold(ch) for ch in text)
    # Mostly ASCII (English with an accented name or two) folds the same way, by another path.
    english = (
        "Notes from the Café in İstanbul: the GRINDER was set finer for espresso, and the burrs "
        "were cleaned twice this week before the morning rush started at seven. "
    ) * 20
    assert fold(english) == "".join(fold(ch) for ch in english)
    assert fold(english).startswith("notes from the cafe in istanbul: the grinder was set")
    assert fold(text).startswith("unicode istanbul straße cafe naive — “quoted” 東京")
