"""What a question asks for, and how a sentence writes each kind of answer (data and pure
functions): the word lists and patterns the answer check (``answerability``) reads.

A question's kind comes from its wh-word and the noun after it ("what year" asks for a date,
"which country" for a place); a sentence gives a span of that type when it holds a year, a
number, a name, a reason the question does not already say. The lists are the project's own:
English function words and common opposites, month names, number words.
"""

from __future__ import annotations

import re

from ..stemming import stem

# Question kinds, and the span each asks for.
PERSON, PLACE, TIME, NUMBER, FREQUENCY, REASON, THING, MANNER, STATEMENT, TOPIC = (
    "person",
    "place",
    "time",
    "number",
    "frequency",
    "reason",
    "thing",
    "manner",
    "statement",
    "topic",
)
# What a wh-word's noun asks for: "what year", "which country", "what percentage".
TIME_NOUNS = frozenset(
    "year years century centuries decade decades date dates day days month months time times "
    "period periods era eras age ages timeframe season seasons".split()
)
PLACE_NOUNS = frozenset(
    "country countries city cities town towns region regions state states place places "
    "location locations continent island islands river rivers county counties province "
    "provinces area areas village villages nation nations capital street address venue "
    "campus".split()
)
PERSON_NOUNS = frozenset(
    "person people man men woman women king kings queen queens duke dukes author authors "
    "writer writers artist artists player players leader leaders ruler rulers president "
    "presidents emperor emperors pope scientist scientists founder founders inventor "
    "inventors director directors actor actors actress singer composer musician chef baker "
    "family families group organisation organization company companies team teams band".split()
)
NUMBER_NOUNS = frozenset(
    "number numbers amount amounts percentage percent proportion share size population price "
    "prices cost costs rate count total".split()
)
REASON_NOUNS = frozenset("reason reasons cause causes purpose".split())
# The span "what <noun>" / "which <noun>" asks for.
NOUN_TYPES = {
    **dict.fromkeys(TIME_NOUNS, TIME),
    **dict.fromkeys(PLACE_NOUNS, PLACE),
    **dict.fromkeys(PERSON_NOUNS, PERSON),
    **dict.fromkeys(NUMBER_NOUNS, NUMBER),
    **dict.fromkeys(REASON_NOUNS, REASON),
}
HOW_NUMBER = frozenset(
    "many much long old far big large tall high wide deep heavy fast few".split()
)
AUXILIARIES = frozenset(
    "is are was were do does did can could has have had will would should may might must shall "
    "isn aren wasn weren don doesn didn".split()
)
BE_FORMS = frozenset("is are was were be been being".split())  # "was absorbed": passive
WH_WORDS = frozenset("what which who whom whose when where why how".split())
# Words that set aside rather than say what is asked: "Aside from X, what other ...".
SETTING_ASIDE = frozenset("aside besides other others else except apart instead".split())
# Words that ask rather than say what is asked: "What is the name of ...", "What type of ...".
ASKING_WORDS = frozenset(
    "name named called call term kind kinds type types sort example examples mean means "
    "meaning".split()
)

# A span of each type, as a sentence writes it.
_ORDINALS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
    "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth "
    "twenty-first"
)
_MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
ORDINALS = frozenset(_ORDINALS.split())
TIME_SPAN = re.compile(
    r"\b(?:1\d{3}|20\d{2})(?:s|\u2019s|'s)?\b"  # a year or a decade: 1066, 1990s
    r"|\b\d{2,3}0s\b"  # the 880s
    r"|\b\d{1,2}(?:st|nd|rd|th)[- ]centur(?:y|ies)\b"
    r"|\b(?:" + "|".join(_ORDINALS.split()) + r")[- ]centur(?:y|ies)\b"
    r"|\b(?:" + "|".join(_MONTHS.split()) + r")\.?\s+\d{1,4}\b"
    r"|\b\d{1,2}\s+(?:" + "|".join(_MONTHS.split()) + r")\b"
    r"|\b\d{1,4}\s*(?:AD|BC|BCE|CE)\b|\b(?:AD|BC)\s*\d{1,4}\b"
    r"|\b\d+\s+(?:years?|months?|weeks?|days?|centuries|decades?)\s+(?:ago|later|earlier|"
    r"after|before)\b"
    r"|\b(?:in|since|until|by|from|during|before|after|around|circa|c\.)\s+\d{3,4}\b",
    re.IGNORECASE,
)
_NUMBER_WORDS = (
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred hundreds thousand thousands million millions billion billions dozen dozens half "
    "twice thrice double triple single"
)
NUMBER_SPAN = re.compile(
    r"\d+(?:[.,]\d+)*|\b(?:" + "|".join(_NUMBER_WORDS.split()) + r")\b", re.IGNORECASE
)
# How often: "weekly", "every few days", "twice a year", "3 times per week".
FREQUENCY_SPAN = re.compile(
    r"\b(?:hourly|daily|nightly|weekly|fortnightly|monthly|quarterly|yearly|annually|"
    r"every\s+(?:\w+\s+)?(?:second|minute|hour|day|night|week|month|year|time)s?|"
    r"(?:once|twice|\w+\s+times)\s+(?:a|an|per|each|every)\s+\w+|"
    r"(?:each|per)\s+(?:day|week|month|year)|always|never|often|rarely|seldom|usually)\b",
    re.IGNORECASE,
)
REASON_SPAN = re.compile(
    r"\b(?:because|due to|owing to|as a result|so that|in order to|thanks to|caused by|"
    r"led to|leads to|reason|result of|therefore|thus|hence|since|to avoid|to prevent|"
    r"to protect|to make|to ensure|to allow|to keep|so as to|for fear)\b",
    re.IGNORECASE,
)
# A name: a capitalised word, or a run of them (not one that only opens the sentence).
NAME = re.compile(r"\b[A-Z][\w'\u2019.\-]*\w(?:[ \t]+[A-Z][\w'\u2019.\-]*\w)*|\b[A-Z]\b")
# A place as a sentence gives one: a name after "in", "at", "from" ("in Copenhagen and Lyon").
_PLACE_NAME = r"[A-Z][\w'\u2019.\-]*\w(?:[ \t]+[A-Z][\w'\u2019.\-]*\w)*"
LOCATED = re.compile(
    rf"\b(?:in|at|from|near|into|to|across|outside|inside)\s+"
    rf"((?:the\s+)?{_PLACE_NAME}(?:(?:,\s*|\s+and\s+){_PLACE_NAME})*)"
)
_PLACE_NOUN = r"(?:river|lake|sea|city|town|village|county|province|region|island|kingdom|duchy)"
# Else a place a sentence names after another word that places it ("earl of Hereford", "the
# river Deabolis", "between P and PSPACE"); never a name that merely opens the sentence.
NAMED_PLACE = re.compile(
    rf"\b(?:(?:of|between|on|over|along|beyond|off|within|throughout|through|towards?)\s+"
    rf"(?:the\s+)?(?:{_PLACE_NOUN}\s+(?:of\s+)?)?|{_PLACE_NOUN}\s+(?:of\s+)?)"
    rf"({_PLACE_NAME}(?:(?:,\s*|\s+and\s+){_PLACE_NAME})*)"
)
REFERS_BACK = re.compile(
    r"\b(?:he|she|it|they|his|her|its|their|him|them|this|these|those|there)\b", re.IGNORECASE
)
# "whether or not", "may or may not": no negation of what is asked.
NOT_A_NEGATION = re.compile(r"\bor (?:\w+ )?not\b", re.IGNORECASE)
NEGATION = re.compile(
    r"\b(?:not|never|no|none|nor|neither|cannot|without|nobody|nothing|nowhere)\b|n[\u2019']t\b",
    re.IGNORECASE,
)
# A number or date the question states as a condition ("in 1948", "the 10th century", "15
# cities"); a count of what it asks for ("What are two examples") is no condition.
QUESTION_NUMBER = re.compile(
    r"\b\d+(?:[.,]\d+)*(?:\s*(?:s|\u2019s|'s|st|nd|rd|th))?\b"
    r"|\b(?:" + "|".join(_ORDINALS.split()) + r")(?=[- ]centur)",
    re.IGNORECASE,
)
# Numbers as a sentence may state them, in figures or words.
STATED_NUMBER = re.compile(
    r"\b\d+(?:[.,]\d+)*(?:\s*(?:s|\u2019s|'s|st|nd|rd|th))?\b"
    r"|\b(?:" + "|".join(_NUMBER_WORDS.split()) + "|" + "|".join(_ORDINALS.split()) + r")\b",
    re.IGNORECASE,
)
MONTH_NAMES = frozenset(_MONTHS.split()) | frozenset(
    "monday tuesday wednesday thursday friday saturday sunday".split()
)
# What the answer check says a sentence lacks: "gives no place".
WANTED = {
    PERSON: "name",
    PLACE: "place",
    TIME: "date or time",
    NUMBER: "number",
    FREQUENCY: "frequency",
    REASON: "reason",
    THING: "more than the question's own words",
    MANNER: "more than the question's own words",
    STATEMENT: "",
    TOPIC: "",
}
# Words that put a condition on what is asked: a sentence that does not say them does not
# answer ("Who was the first ..." is not answered by who was one of them).
# "first", "only" and the irregular superlatives "least", "fewest" and "worst": an answer must
# say them too. Not "most" (people write it for "chiefly") nor "best" ("the best theory for"):
# measured, each cost questions the collections answer (bench_abstain, bench_verdict).
CONDITION_WORDS = frozenset("first last only least fewest worst".split())
_ADJECTIVE_BASES = frozenset(
    """old larg earli lat near great high low long short small young new big strong weak
    fast slow rich poor wid deep heav light clos far hard easi simpl cheap dens warm cold hot
    bright dark tall""".split()
)
_WORD_NUMBERS = {
    w: str(n)
    for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve".split()
    )
}
_ORDINAL_NUMBERS = {w: str(n) for n, w in enumerate(_ORDINALS.split()[:20], start=1)}


def _opposites() -> dict[str, frozenset[str]]:
    """Common English opposites, both ways, by stem: a question that says one where its
    evidence says the other asks something the evidence does not state. Converse relations
    are not among them: "Y bought it" is what "X sold it to Y" says."""
    pairs = """
        simple complex simplicity complexity easy hard easy difficult easier harder
        more less more fewer most least most fewest many few larger smaller largest smallest
        large small big small high low higher lower highest lowest upper lower
        increase decrease increased decreased increases decreases rise fall gain loss
        before after earlier later earliest latest first last precede succeed preceded
        succeeded precedes succeeds begin end beginning end start end started ended
        old new older newer oldest newest old young older younger oldest youngest
        ancient modern medieval modern past future past present
        north south east west northern southern eastern western
        always never often rarely often seldom frequently rarely common rare commonly rarely
        usually rarely same different similar different include exclude included excluded
        maximum minimum max min upper lower positive negative true false
        deterministic nondeterministic direct indirect directly indirectly possible impossible
        able unable known unknown finite infinite equal unequal complete incomplete
        parallel perpendicular primary secondary major minor inner outer internal external
        private public allowed forbidden legal illegal strong weak strongest weakest
        fast slow faster slower fastest slowest long short longer shorter longest shortest
        hot cold warm cool wet dry open closed above below inside outside male female
        success failure
        """.split()
    table: dict[str, set[str]] = {}
    for a, b in zip(pairs[::2], pairs[1::2], strict=True):
        table.setdefault(stem(a), set()).add(stem(b))
        table.setdefault(stem(b), set()).add(stem(a))
    return {k: frozenset(v) for k, v in table.items()}


OPPOSITES = _opposites()
# "un-", "in-", "im-", "ir-", "il-", "non-", "dis-": a word that is another's negation.
NEGATING_PREFIXES = ("un", "in", "im", "ir", "il", "non", "dis")


def superlative(word: str) -> bool:
    """ "oldest", "largest", "earliest": a condition on what is asked (not "interest")."""
    return word.endswith("est") and word[:-3] in _ADJECTIVE_BASES


def normal_number(match: re.Match[str]) -> str:
    """A number or date as compared: digits without separators or suffixes ("1,000's" ->
    "1000", "10th" -> "10"), number words as digits ("three" -> "3", "tenth" -> "10")."""
    low = match.group().lower().replace(",", "")
    low = re.sub(r"\s*(?:s|\u2019s|'s|st|nd|rd|th)$", "", low)
    return _WORD_NUMBERS.get(low) or _ORDINAL_NUMBERS.get(low) or low
