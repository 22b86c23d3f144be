"""The word lists a question is read by (data): dbrain's stop list and canonical forms, its
corpus frames and chat headings, the English function words and chat words ranking skips,
negations and corrections, current-state words, and the phrases that frame a question.

They are dbrain's (``internal/queryterms``: ``stopwords.go``, ``normalize.go``, ``chat.go``)
where a comment says so, word for word; ``question_terms`` reads a question with them, and
feedback and the answer skip the same function words (``STOP_WORDS``).
"""

from __future__ import annotations

# English function words: not searched when ranking (their idf is near zero, their posting
# lists are the longest) and skipped by feedback suggestions and answer sentences.
ENGLISH_STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t
    """.split()
)
# Chat words that ask rather than say what is wanted ("tell me", "show me anything"): not
# searched when ranking; dbrain's own stop list holds most of them too.
CHAT_WORDS = frozenset(
    "tell show find give get know look looks anything something everything please vs versus "
    "dbrain".split()
)
STOP_WORDS = (
    ENGLISH_STOP_WORDS
    | CHAT_WORDS
    | frozenset("brain info information stuff remember recall".split())
)

# dbrain's stopwords.go, word for word.
QUESTION_STOP_WORDS = frozenset(
    """
    a an and are can could did do does
    about as at be been being brain by context current data dbrain evidence expansion find for
    from github have her him his how i if in include information into is it its key keys know
    like local look looks me metadata my of on or other present prior query question questions
    recent related relevant saved stories story that the their them there these this those
    repo repos repository repositories
    favored favoured favorite favorites favourite favourites
    show should source sources src tag tags tell tweet tweets
    to use user using was we were what when where which who why with would x you your
    """.split()
)

# dbrain's canonicalTerm (normalize.go): variants folded onto one term.
CANONICAL_TERMS = {
    "models": "model",
    "kid": "children",
    "kids": "children",
    "child": "children",
    "killed": "kill",
    "killing": "kill",
    "kills": "kill",
    "charged": "charge",
    "charges": "charge",
    "charging": "charge",
    "tools": "tool",
    "projects": "project",
    "packages": "package",
    "libraries": "library",
    "comparisons": "comparison",
    "compared": "comparison",
    "compare": "comparison",
    "histories": "history",
    "historical": "history",
    "transcripts": "transcript",
    "screenshots": "screenshot",
    "images": "image",
    "photos": "photo",
    "videos": "video",
    "recordings": "recording",
}

# dbrain's stripCorpusFramePhrases: removed in this order from the lowercased question.
CORPUS_FRAMES = (
    "in my research",
    "from my research",
    "my research",
    "in your research",
    "from your research",
    "your research",
    "in the research",
    "from the research",
)

# dbrain's chat retrieval headings (chat.go): a line break goes before each.
CHAT_HEADINGS = (
    "Current question:",
    "Recent user questions:",
    "Prior evidence titles for query focus:",
    "Prior evidence metadata for query expansion:",
    "Relevant prior evidence source keys:",
    "Pinned evidence keys:",
)

# Words that ask how things are *now*. They mark a question as current-state (so the web may
# be worth asking) but are not required of local rows: "latest sqlite" finds what "sqlite"
# finds. Web providers still receive them.
CURRENT_STATE_WORDS = frozenset(
    "latest current currently today recent recently now new newest".split()
)

NEGATIONS = frozenset({"not", "without", "exclude", "wrong"})  # drop the next word
CORRECTIONS = frozenset({"instead", "correct", "correction"})  # dropped themselves
# The ranking query's own stop words (``search_terms``); a question holding any word of either
# list is asked in words, not typed as a list of keywords (``is_keyword_list``).
SEARCH_STOP_WORDS = ENGLISH_STOP_WORDS | CHAT_WORDS
KEYWORD_LIST_STOPS = SEARCH_STOP_WORDS | QUESTION_STOP_WORDS
RAW_OPERATORS = frozenset({"and", "or", "not", "near"})

# Phrases that frame a question as a question to the brain: scaffolding, never searched.
SCAFFOLD_PHRASES = (
    "from dbrain",
    "in dbrain",
    "in my brain",
    "from my brain",
    "in my notes",
    "in my bookmarks",
    "have i saved",
    "did i save",
    "i have saved",
    "i saved",
)
