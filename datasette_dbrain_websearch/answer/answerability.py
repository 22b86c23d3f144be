"""Does a sentence answer the question? Decided offline and deterministically (pure).

Holding a question's words is not answering it: "Where did the author of The Slow Loaf train?"
is not answered by a row that says where she lives, nor "what is the capital of Mongolia" by
"operators only when written in capitals". Classic offline QA decides it the way this module
does:

1. **The question** (``read_question``): its *kind* (who, where, when, how many, how much,
   which, what, why, how, yes/no, or a topic given as keywords), the *type of span* that kind
   asks for (``question_types``: a person, a place, a date, a number, a reason, a thing), and
   its *focus*: its content words, each weighing how specific it is in English
   (``spelling.english_words``: "capital" weighs little, "Mongolia" much, a word no dictionary
   knows the most), the names it gives, the numbers and dates it states as conditions, words
   such as "first" or "oldest", and whether it asks about what is *not* so.
2. **Each candidate sentence** (``answers``), read with its neighbours and its row's title
   (its window). It answers when the window holds at least ``MIN_FOCUS`` of the focus's weight,
   every name (in the sentence or title, or its window when it refers back: "It was written
   by …"), every number, date and condition; when it says "not" where the question does; when
   no question word is swapped for its opposite ("simplicity" where the row says
   "complexity"); and when the sentence itself gives a span of the asked type that the
   question does not already give (a sentence that only repeats the question says nothing).
3. **The question is about its closest sentences** (``answering``): a sentence that passes
   but matches the question far less closely (``CLOSE``: its focus words weighed by rarity
   among the candidates, and its meaning where the semantic lane runs) than sentences that do
   not answer is not what the question asks about.

``assess`` returns the run's ``Answerability``: the best answering sentence, or the closest
one and why it does not answer, which ``explain`` says in words a person reads in one breath.
The verdict, the answer and deep research's stop all read it (one account of the run).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Any

from ..spelling import english_words
from ..stemming import fold, stem
from ..word_lists import CURRENT_STATE_WORDS, STOP_WORDS
from .names import bridge_entities
from .question_types import (
    ASKING_WORDS,
    AUXILIARIES,
    BE_FORMS,
    CONDITION_WORDS,
    FREQUENCY,
    FREQUENCY_SPAN,
    HOW_NUMBER,
    LOCATED,
    MANNER,
    MONTH_NAMES,
    NAME,
    NAMED_PLACE,
    NEGATING_PREFIXES,
    NEGATION,
    NOT_A_NEGATION,
    NOUN_TYPES,
    NUMBER,
    NUMBER_SPAN,
    OPPOSITES,
    ORDINALS,
    PERSON,
    PERSON_NOUNS,
    PLACE,
    QUESTION_NUMBER,
    REASON,
    REASON_SPAN,
    REFERS_BACK,
    SETTING_ASIDE,
    STATED_NUMBER,
    STATEMENT,
    THING,
    TIME,
    TIME_SPAN,
    TOPIC,
    WANTED,
    WH_WORDS,
    normal_number,
    superlative,
)
from .text import ATTRIBUTION_WORDS, stem_sequence, stems, words

MIN_FOCUS = 0.35  # share of the focus's weight a window holds to answer
MOST_WEIGHT = 8.0  # a word no dictionary knows, or a name: the most specific
LEAST_WEIGHT = 1.0
CLOSE = 0.8  # an answering sentence matches the question at least this share of the closest
SEMANTIC_WEIGHT = 0.3  # how far meaning decides which sentences match the question closest
TORN = 5  # contradicting sentences, the closest by their words, whose meaning is weighed too
BRIDGE_ROWS = 5  # the best rows bridges are read from
CHOICE = re.compile(r"\bor\b", re.IGNORECASE)  # "A or B?": a choice between two names

SIMPLE_KINDS = {"when": TIME, "where": PLACE, "why": REASON}  # the span a wh-word asks for
Similarity = Callable[[Sequence[str]], Sequence[float]]  # texts -> cosine with the question

# Why a sentence does not answer (``Finding.problem``).
OFF_TOPIC, NO_NAME, NO_NUMBER, NO_CONDITION = "off_topic", "name", "number", "condition"
NOT_NEGATED, OPPOSITE, TOO_LITTLE, NO_SPAN = "negation", "opposite", "too_little", "no_span"
NOT_CLOSEST, TURNED = "not_closest", "turned"
CONTRADICTIONS = frozenset({NO_NAME, NO_NUMBER, NO_CONDITION, NOT_NEGATED, OPPOSITE, TURNED})


@dataclass(frozen=True)
class Roles:
    """Who does what to whom in a question asking for a doer or a done-to: its verb, the name
    it gives as the verb's subject or object (as written, and its stems), and whether it
    asks in the passive ("What was absorbed into …?")."""

    verb: str
    subject: tuple[str, frozenset[str]] | None = None
    object: tuple[str, frozenset[str]] | None = None
    passive: bool = False


@dataclass(frozen=True)
class Question:
    """What a question asks, as the check reads it (hashable: sentences are judged once)."""

    text: str
    kind: str  # who, where, when, how many, how much, which, what, why, how, yes/no, topic
    expects: str  # the span it asks for (``question_types``: PERSON, PLACE, TIME, ...)
    weights: tuple[tuple[str, float], ...]  # (content stem, how specific it is), in order
    written: tuple[tuple[str, str], ...]  # (content stem, the word as the question writes it)
    names: tuple[tuple[str, frozenset[str]], ...]  # (a name as written, its stems)
    numbers: frozenset[str]  # numbers and dates it states as conditions ("1948", "10")
    conditions: frozenset[str]  # "first", "oldest": what an answer must say too
    negated: bool
    sequence: tuple[str, ...] = ()  # every word's stem, in order (``_replaced`` reads them)
    roles: Roles | None = None  # who does what to whom, where it asks for either

    @cached_property
    def focus(self) -> dict[str, float]:
        return dict(self.weights)

    @cached_property
    def weight(self) -> float:
        return sum(self.focus.values())

    @cached_property
    def plain(self) -> frozenset[str]:
        """Focus stems that are no part of a name: what is asked about the names."""
        named = frozenset().union(*(n for _, n in self.names))
        return frozenset(self.focus) - named

    @cached_property
    def ranked(self) -> tuple[str, ...]:
        """Its focus stems, most specific first."""
        return tuple(s for s, _ in sorted(self.weights, key=lambda pair: -pair[1]))

    def word(self, stem_: str) -> str:
        """A focus stem as the question writes it."""
        return self._written.get(stem_, stem_)

    @cached_property
    def _written(self) -> dict[str, str]:
        return dict(self.written)

    def plain_words(self) -> list[str]:
        """What is asked about the names, as the question writes it, most specific first."""
        return [self.word(s) for s in self.ranked if s in self.plain]


@dataclass(frozen=True)
class Finding:
    """A sentence judged against the question: whether it answers, and why not when not."""

    key: str
    sentence: str
    answers: bool
    held: float  # share of the focus's weight its window holds
    span: str = ""  # the span of the asked type it gives
    missing: tuple[str, ...] = ()  # focus words (as written) its window lacks
    problem: str = ""  # why it does not answer (OFF_TOPIC, NO_NAME, ...); "" when it does
    detail: str = ""  # what the problem names: the name, number or opposite
    aligned: float = 0.0  # how closely it matches the question, the closest sentence 1


@dataclass(frozen=True)
class Claim:
    """A sentence a row shows, as the check reads it: with its row's key and title and the
    sentences either side of it."""

    key: str
    title: str
    sentence: str
    neighbours: tuple[str, ...] = ()


@dataclass(frozen=True)
class Answerability:
    """Does the run's evidence answer the question: its best answering sentence, or its
    closest sentence and why it does not."""

    question: Question
    best: Finding | None  # the answering sentence that matches the question closest
    closest: Finding | None  # else the sentence closest to the question
    checked: int = 0  # sentences judged
    findings: tuple[Finding, ...] = field(default=(), repr=False)
    via: Claim | None = None  # a two-part answer's first part: the sentence naming the bridge

    @property
    def answered(self) -> bool:
        return self.best is not None

    def unstated(self) -> list[str]:
        """What the question asks (its words beside its names, as written) that no sentence
        of the answer states, in its window: a two-part question's part still to find."""
        if self.best is None:
            return self.question.plain_words()
        held = _window(self.via) if self.via is not None else frozenset()
        stem_of = {word: s for s, word in self.question.written}
        return [
            w
            for w in self.question.plain_words()
            if w in self.best.missing and stem_of.get(w, w) not in held
        ]

    def completed(self, claims: Sequence[Claim]) -> Answerability:
        """The answer with a sentence about its span stating what the question asks that the
        answering sentence does not ("Henry J. Kaiser ... known as the father of modern
        American shipbuilding"), as its second part (``via``), where one does."""
        unstated = self.unstated()
        if self.best is None or self.via is not None or not unstated or not self.best.span:
            return self
        about = stems(self.best.span)
        wanted = {s for s, word in self.question.written if word in unstated}
        around = [c for c in claims if about and about <= _window(c)]
        best = max(around, key=lambda c: len(wanted & _window(c)), default=None)
        if best is None or not wanted <= _window(best):
            return self
        return replace(self, via=best)

    def to_json(self) -> dict[str, Any]:
        """What the pack records of the check (the verdict's inputs, the answer's evidence)."""
        found = self.best or self.closest
        return {
            "answered": self.answered,
            "asks": self.question.kind,
            "expects": self.question.expects,
            "sentences_checked": self.checked,
            "source_key": found.key if found else "",
            "sentence": found.sentence if found else "",
            "span": self.best.span if self.best else "",
            "problem": "" if self.best or not found else found.problem,
            "missing": list(found.missing) if found else [],
            "via": {"source_key": self.via.key, "sentence": self.via.sentence}
            if self.via
            else None,
        }


def read_question(text: str) -> Question:
    """The question's kind, the span it asks for and its focus (module docstring)."""
    tokens = words(text)
    kind, expects, asking = _kind(tokens, text)
    weights: dict[str, float] = {}
    written: dict[str, str] = {}
    for word in re.findall(r"[^\W_]+", text):
        low = fold(word)
        if low in WH_WORDS or low in STOP_WORDS or low in ATTRIBUTION_WORDS or low in AUXILIARIES:
            continue
        if low in CURRENT_STATE_WORDS:  # "latest": asked of the web, never required of a row
            continue
        if low in SETTING_ASIDE:  # "aside from", "what other": no word a row must say
            continue
        if NEGATION.fullmatch(low) or (len(low) < 3 and not low.isdigit()):
            continue
        s = stem(low)
        if s in asking:
            continue
        weights[s] = max(weights.get(s, 0.0), _specificity(low))
        written.setdefault(s, word)
    names = tuple(
        (name, stems_)
        for name in _names(text)
        if (stems_ := frozenset(stem(w) for w in words(name) if w not in STOP_WORDS))
    )
    for _, stems_ in names:
        for s in stems_ & weights.keys():
            weights[s] = MOST_WEIGHT
    return Question(
        text=text,
        kind=kind,
        expects=expects,
        weights=tuple(weights.items()),
        written=tuple(written.items()),
        names=names,
        numbers=frozenset(n for m in QUESTION_NUMBER.finditer(text) if (n := normal_number(m))),
        conditions=frozenset(
            stem(w)
            for w in tokens
            if (w in CONDITION_WORDS or superlative(w)) and w not in CURRENT_STATE_WORDS
        ),
        negated=bool(NEGATION.search(NOT_A_NEGATION.sub(" ", text))),
        sequence=stem_sequence(text),
        roles=_roles(tokens, names, weights),
    )


def _roles(
    tokens: Sequence[str],
    names: Sequence[tuple[str, frozenset[str]]],
    focus: Mapping[str, float],
) -> Roles | None:
    """The question's roles, where it asks for a doer or a done-to and gives a name beside
    its verb: "Who replaced the Normans?" asks for the subject (the Normans are the object);
    "Who did Edgar marry?" for the object (Edgar is the subject); "What was absorbed into the
    Anglo-Norman language?" for what a passive verb was done to. Else None."""
    if len(tokens) < 3 or tokens[0] not in ("who", "whom", "what") or not names:
        return None
    named = frozenset().union(*(n for _, n in names))

    def verb(token: str) -> bool:
        return token not in STOP_WORDS and stem(token) in focus and stem(token) not in named

    def given(part: Sequence[str]) -> tuple[str, frozenset[str]] | None:
        held = set(map(stem, part))
        return next((name for name in names if name[1] <= held), None)

    if tokens[1] in ("did", "does", "do"):  # names after its verb say where or when
        at = next((i for i in range(2, len(tokens)) if verb(tokens[i])), None)
        subject = given(tokens[2:at]) if at is not None else None
        return Roles(stem(tokens[at]), subject=subject) if at is not None and subject else None
    if tokens[1] in BE_FORMS and verb(tokens[2]):
        done_to = given(tokens[3:])
        return Roles(stem(tokens[2]), object=done_to, passive=True) if done_to else None
    if tokens[0] == "what" or tokens[1] in AUXILIARIES or not verb(tokens[1]):
        return None  # "What culture …": a noun, not a verb, may follow "what"
    done_to = given(tokens[2:])
    return Roles(stem(tokens[1]), object=done_to) if done_to else None


def _kind(tokens: Sequence[str], text: str) -> tuple[str, str, frozenset[str]]:
    """(kind, expected span, asking stems) from the question's wh-word and the noun after it;
    a question opening with an auxiliary is yes/no; no wh-word nor "?" is a topic."""
    # "When extensive time is required, this represents what case?": a clause before a comma
    # opened by "when" or "if" sets a scene; the question is the wh-word after it.
    clause = re.match(r"\s*(?:when|where|if|while|after|before|since)\b[^,]*,", text, re.I)
    if clause and any(w in WH_WORDS for w in words(text[clause.end() :])):
        tokens = words(text[clause.end() :])
    for i, token in enumerate(tokens):
        if token not in WH_WORDS:
            continue
        after = tokens[i + 1 : i + 4]
        nxt = after[0] if after else ""
        if token == "how":
            if nxt in ("many", "much"):
                return f"how {nxt}", NUMBER, frozenset()
            if nxt == "often":
                return "how often", FREQUENCY, frozenset()
            if nxt == "long" and "ago" in tokens:
                return "when", TIME, frozenset()
            if nxt in HOW_NUMBER:
                return "how much", NUMBER, frozenset({stem(nxt)})
            return "how", MANNER, frozenset()
        if token in ("who", "whom", "whose"):
            return "who", PERSON, frozenset()
        if token in SIMPLE_KINDS:
            return token, SIMPLE_KINDS[token], frozenset()
        # what / which: the noun asked about decides ("what year", "which country"); after
        # "type of" or "kind of" it asks for a kind, whatever the noun ("what type of time").
        asking = {stem(w) for w in after if w in ASKING_WORDS}
        if nxt in ASKING_WORDS:
            return token, THING, frozenset(asking)
        noun = next((w for w in after if w not in STOP_WORDS), "")
        expects = NOUN_TYPES.get(noun, THING)
        if expects != THING:
            asking.add(stem(noun))
        return token, expects, frozenset(asking)
    if tokens and tokens[0] in AUXILIARIES:
        return "yes/no", STATEMENT, frozenset()
    if text.rstrip().endswith("?"):
        return "what", THING, frozenset()
    return "topic", TOPIC, frozenset()


def _specificity(word: str) -> float:
    """How much a word says what the question is about: its rarity in English (a word the
    dictionary lacks, a name, a product, a code: the most)."""
    if word.isdigit():
        return MOST_WEIGHT
    count = (english_words() or {}).get(word, 0)
    if not count:
        return MOST_WEIGHT
    return max(LEAST_WEIGHT, min(MOST_WEIGHT, math.log10(_english_total() / count)))


@lru_cache(maxsize=1)
def _english_total() -> int:
    return sum((english_words() or {}).values()) or 1


def _names(text: str) -> list[str]:
    """The names the question gives: runs of capitalised words, without a leading word that
    is only capitalised for opening it ("In", "What", "Is") or a question or function word."""
    found: list[str] = []
    for match in NAME.finditer(text):
        name = _name_of(match)
        if len(name) >= 2:
            found.append(name)
    return list(dict.fromkeys(found))


def _name_of(match: re.Match[str]) -> str:
    """A capitalised run without its leading common words ("In Britain" -> "Britain")."""
    parts = match.group().split()
    opening = _opens_sentence(match)
    while parts:
        low = fold(parts[0])
        common = low in STOP_WORDS or low in WH_WORDS or low in AUXILIARIES
        if not (common or (opening and low in (english_words() or {}))):
            break
        parts.pop(0)
        opening = False
    return " ".join(parts)


def _opens_sentence(match: re.Match[str]) -> bool:
    before = match.string[: match.start()].rstrip()
    return not before or before.endswith((".", "!", "?", ":", '"', "\u201c"))


def answers(
    question: Question,
    sentence: str,
    neighbours: Sequence[str] = (),
    title: str = "",
    key: str = "",
    given: frozenset[str] = frozenset(),
) -> Finding:
    """One sentence, read with its ``neighbours`` and its row's ``title`` (its window),
    against the question (module docstring, step 2). ``given``: focus stems an earlier hop
    of the research established (deep research: "the author of The Slow Loaf" is Ingrid
    Halvorsen), held by every window."""
    return replace(_judged(question, sentence, tuple(neighbours), title, given), key=key)


@lru_cache(maxsize=4096)
def _judged(
    question: Question,
    sentence: str,
    neighbours: tuple[str, ...],
    title: str,
    given: frozenset[str],
) -> Finding:
    focus = question.focus
    own = _held(stems(sentence), focus)
    titled = _held(stems(title), focus)
    window_stems = own.union(given, titled, *(_held(stems(n), focus) for n in neighbours))
    # A sentence that refers back ("It was commissioned by Odo") names what it is about in
    # the sentences around it: its window speaks for it; else only its own words and title.
    close = window_stems if REFERS_BACK.search(sentence) else own | titled | given
    held = sum(w for s, w in focus.items() if s in window_stems) / (question.weight or 1.0)
    missing = tuple(question.word(s) for s in focus if s not in window_stems)

    def no(problem: str, detail: str = "") -> Finding:
        return Finding("", sentence, False, held, "", missing, problem, detail)

    # A later hop's sentence (its names are an earlier hop's) says itself something of what
    # is asked about them: "lives in Bergen" does not say where she trained.
    plain = question.plain - given
    if not close & focus.keys() or (given and plain and not own & plain):
        return no(OFF_TOPIC)
    lacking_name = next((name for name, n in question.names if not _named(n, close)), None)
    if lacking_name:
        return no(NO_NAME, lacking_name)
    if question.numbers:
        window = " ".join([title, *neighbours, sentence])
        stated = {n for m in STATED_NUMBER.finditer(window) if (n := normal_number(m))}
        lacking = sorted(question.numbers - stated)
        if lacking:
            return no(NO_NUMBER, lacking[0])
    unstated = next(
        (w for w in question.conditions if not _says(w, sentence, neighbours, title, given)), None
    )
    if unstated:
        return no(NO_CONDITION, question.word(unstated))
    negated = bool(NEGATION.search(sentence))
    if question.negated and not negated:
        return no(NOT_NEGATED)
    swapped = None if negated else _swapped(question, own, window_stems)
    swapped = swapped or _replaced(question, sentence, window_stems)
    if swapped:
        return no(OPPOSITE, swapped)
    turned = _turned(question, sentence)
    if turned:
        return no(TURNED, turned)
    if held < MIN_FOCUS:
        return no(TOO_LITTLE)
    span = _span(question, sentence)
    if span is None:
        return no(NO_SPAN)
    return Finding("", sentence, True, held, span, missing)


def _held(stems_: frozenset[str], focus: Mapping[str, float]) -> frozenset[str]:
    """A text's stems, with each focus stem it holds in a longer or shorter form of five
    letters or more ("bakeri" holds "baker", "nationality" "nation") added."""
    return _widened(stems_, frozenset(s for s in focus if len(s) >= 5))


@lru_cache(maxsize=8192)
def _widened(stems_: frozenset[str], long: frozenset[str]) -> frozenset[str]:
    """``_held`` for a text's stems and the focus's stems of five letters or more (the same
    sentence is read in several windows: remembered)."""
    wanted = long - stems_
    if not wanted:
        return stems_
    starts = {t[:n] for t in stems_ if len(t) >= 5 for n in range(5, len(t))}
    wider = [s for s in wanted if s in starts or any(s[:n] in stems_ for n in range(5, len(s)))]
    return stems_.union(wider) if wider else stems_


def _named(name: frozenset[str], held: frozenset[str]) -> bool:
    """Does the text give the name: all its words, or all but one of several ("William" for
    "William the Conqueror"), a long word misspelt by a letter counting ("Hatmanis" for
    "Hartmanis")?"""
    found = sum(1 for w in name if w in held or _misspelt(w, held))
    return found == len(name) or (len(name) > 1 and found >= len(name) - 1)


def _misspelt(word: str, held: frozenset[str]) -> bool:
    """Is a word of 6 letters or more one edit away from a word the text holds?"""
    if len(word) < 6:
        return False
    return any(abs(len(w) - len(word)) <= 1 and _one_edit(word, w) for w in held)


def _one_edit(a: str, b: str) -> bool:
    """One insertion, deletion or substitution apart (or equal)."""
    if len(a) > len(b):
        a, b = b, a
    i = next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    return a[i + (len(a) == len(b)) :] == b[i + 1 :]


def _swapped(question: Question, sentence: frozenset[str], window: frozenset[str]) -> str:
    """The sentence's word where the question says its opposite ("complexity" for the
    question's "simplicity", "common" for "uncommon"), or ""."""
    for s in question.focus:
        if s in window:
            continue
        for other in OPPOSITES.get(s, ()):
            if other in question.focus:  # "simple or complex?": a choice, not a condition
                continue
            if other in sentence:
                return f"{other}|{question.word(s)}"
        for prefix in NEGATING_PREFIXES:
            base = s[len(prefix) :]
            if s.startswith(prefix) and len(base) > 3 and base in sentence:
                return f"{base}|{question.word(s)}"
            if prefix + s in sentence:
                return f"{prefix}{s}|{question.word(s)}"
    return ""


# "at least three", "at most", "at best", "at first": a bound or "initially", not the
# superlative or the ordinal a question asks about.
BOUND = re.compile(r"\bat\s+(?:least|most|best|worst|last|first)\b", re.IGNORECASE)


def _says(
    condition: str, sentence: str, neighbours: tuple[str, ...], title: str, given: frozenset[str]
) -> bool:
    """Does the window say the question's condition ("first", "least"), not as a bound?"""
    return condition in given or any(
        condition in stems(BOUND.sub(" ", text)) for text in (sentence, title, *neighbours)
    )


def _replaced(question: Question, sentence: str, window: frozenset[str]) -> str:
    """The sentence's word standing where the question has one its window lacks, between the
    same two words ("a mathematical abstraction" for "a scientific abstraction"), as
    "said|asked", or "": the question asks about something else than the sentence says."""
    asked, said = question.sequence, stem_sequence(sentence)
    for i in range(1, len(asked) - 1):
        wanted, left, right = asked[i], asked[i - 1], asked[i + 1]
        if wanted not in question.focus or wanted in window:
            continue
        if left in STOP_STEMS and right in STOP_STEMS:  # "of _ the" frames anything
            continue
        if question.word(wanted).lower() in ORDINALS or wanted.isdigit():
            continue  # numbers and ordinals count differently in true sentences ("3rd year")
        for j in range(1, len(said) - 1):
            if said[j - 1] == left and said[j + 1] == right and said[j] not in STOP_STEMS:
                return f"{words(sentence)[j]}|{question.word(wanted)}"
    return ""


def _turned(question: Question, sentence: str) -> str:
    """The question's name, as written, where the sentence puts it on the other side of the
    question's verb ("The Normans replaced the Anglo-Saxons" for "Who replaced the
    Normans?"), or "": the sentence says it the other way round."""
    roles = question.roles
    if roles is None:
        return ""
    said = stem_sequence(sentence)
    verb = roles.verb
    at = next(
        (i for i, s in enumerate(said) if s == verb or (len(verb) >= 5 and s.startswith(verb))),
        None,
    )
    if at is None:
        return ""
    passive = any(s in BE_STEMS for s in said[max(0, at - 2) : at])  # "was eventually absorbed"
    if roles.passive and not passive:
        return ""
    by = next((i for i in range(at + 1, min(len(said), at + 6)) if said[i] == "by"), None)

    def side(name: frozenset[str]) -> str:
        """Does the sentence give the name as its verb's subject or object (or not at all)?"""
        longest = max(name, key=len)
        if longest not in said:
            return ""
        where = said.index(longest)
        if passive:  # "X was betrayed to … by Y": X is done to, Y does
            return "subject" if by is not None and where > by else "object" if where < at else ""
        return "subject" if where < at else "object"

    if roles.subject and side(roles.subject[1]) == "object":
        return roles.subject[0]
    wrong = "object" if roles.passive else "subject"
    if roles.object and side(roles.object[1]) == wrong:
        return roles.object[0]
    return ""


STOP_STEMS = frozenset(stem(w) for w in STOP_WORDS)
BE_STEMS = frozenset(stem(w) for w in BE_FORMS)


def _span(question: Question, sentence: str) -> str | None:
    """The span of the asked type the sentence gives that the question does not, or None."""
    asked = stems(question.text)
    expects = question.expects
    if expects in (STATEMENT, TOPIC):
        return ""
    if expects == TIME:
        return _first_new(TIME_SPAN.finditer(sentence), asked)
    if expects == NUMBER:
        return _first_new(NUMBER_SPAN.finditer(sentence), asked)
    if expects == FREQUENCY:
        return _first_new(FREQUENCY_SPAN.finditer(sentence), asked)
    if expects == REASON:
        found = REASON_SPAN.search(sentence)
        return found.group() if found else _new_words(sentence, asked, 2)
    if expects == PLACE:  # a name where a place goes: "in Copenhagen and Lyon", "at Bannow"
        located = _first_new(LOCATED.finditer(sentence), asked)
        return located or _first_new(NAMED_PLACE.finditer(sentence), asked)
    if expects in (THING, MANNER):
        return _new_words(sentence, asked, 1)
    name = _first_new(NAME.finditer(sentence), asked, names=True)
    if name is not None:
        return name
    # a person or a group is named, or said by what they are ("the dukes", "officials")
    return next((w for w in words(sentence) if w in PERSON_NOUNS and stem(w) not in asked), None)


def _first_new(
    matches: Iterable[re.Match[str]], asked: frozenset[str], names: bool = False
) -> str | None:
    """The first match the question does not already say (for names: not a word that is only
    capitalised for opening its sentence, nor a month or weekday)."""
    for match in matches:
        span = _name_of(match) if names else match.group(match.lastindex or 0)
        if names and (not span or fold(span) in MONTH_NAMES):
            continue
        found = stems(span)
        if found and not found <= asked:
            return span
    return None


def _new_words(sentence: str, asked: frozenset[str], most: int) -> str | None:
    """``most`` content words the question does not say, or None: the sentence says
    something beyond the question."""
    new = [
        w
        for w in words(sentence)
        if w not in STOP_WORDS and w not in ATTRIBUTION_WORDS and len(w) > 2
        if stem(w) not in asked
    ]
    return " ".join(new[:most]) if len(new) >= most else None


def answering(
    question: Question,
    claims: Sequence[Claim],
    similarity: Similarity | None = None,
    given: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Every claim that mentions the focus, judged, best first: the answering ones, then the
    rest, each by how closely it matches the question (module docstring, step 3); ``given``
    as for ``answers``."""
    judged: list[Finding] = []
    pool: list[tuple[frozenset[str], frozenset[str]]] = []
    focus = question.focus.keys()
    for claim in claims:
        own = _held(stems(claim.sentence), question.focus) & focus
        if not own:
            continue
        around = stems(claim.title).union(*(stems(n) for n in claim.neighbours)) & focus
        pool.append((own, around - own))
        judged.append(
            answers(question, claim.sentence, claim.neighbours, claim.title, claim.key, given)
        )
    closeness = _closeness(pool)
    # The question is about the sentence it matches closest: where that one contradicts it
    # (another name, number or date, no "not", an opposite), a sentence matching it far less
    # closely that happens to pass is not what it asks about. Meaning weighs in on those two
    # kinds only (embedding every sentence costs milliseconds; the rest keep their words).
    contradicting = [n for n, f in enumerate(judged) if f.problem in CONTRADICTIONS]
    contradicting.sort(key=lambda n: -closeness[n])
    torn = [n for n, f in enumerate(judged) if f.answers] + contradicting[:TORN]
    if similarity is not None and any(judged[n].answers for n in torn) and contradicting:
        meaning = similarity([judged[n].sentence for n in torn])
        for n, cosine in zip(torn, meaning, strict=True):
            closeness[n] = (1 - SEMANTIC_WEIGHT) * closeness[n] + SEMANTIC_WEIGHT * max(0.0, cosine)
    closest = max(closeness, default=0.0) or 1.0
    aligned = [c / closest for c in closeness]
    contradicted = max(
        (a for f, a in zip(judged, aligned, strict=True) if f.problem in CONTRADICTIONS),
        default=0.0,
    )
    findings = []
    for finding, close in zip(judged, aligned, strict=True):
        if finding.answers and close < CLOSE * contradicted:
            finding = replace(finding, answers=False, problem=NOT_CLOSEST)
        findings.append(replace(finding, aligned=close))
    findings.sort(key=lambda f: (not f.answers, -f.aligned))
    return findings


def _closeness(pool: Sequence[tuple[frozenset[str], frozenset[str]]]) -> list[float]:
    """How closely each sentence matches the question by its words: its focus words weighed
    by their rarity among the candidates (a word only its neighbours or title hold counts
    half), the closest 1 (``answering`` adds meaning where it decides something)."""
    df: dict[str, int] = {}
    for own, _ in pool:
        for s in own:
            df[s] = df.get(s, 0) + 1
    n = len(pool)
    idf = {s: math.log(1 + (n - c + 0.5) / (c + 0.5)) for s, c in df.items()}
    # fsum: exact whatever order a set gives its words (ties must not depend on the hash seed)
    lexical = [
        math.fsum(idf[s] for s in own) + 0.5 * math.fsum(idf.get(s, 0.0) for s in around)
        for own, around in pool
    ]
    top = max(lexical, default=0.0) or 1.0
    return [v / top for v in lexical]


def assess(
    question: Question,
    claims: Sequence[Claim],
    similarity: Similarity | None = None,
    given: frozenset[str] = frozenset(),
    named: frozenset[str] = frozenset(),
    bridges: Iterable[str] = (),
) -> Answerability:
    """Does any of the claims answer the question (``answering``), directly or through one of
    the ``bridges`` (``bridges_in``: read only when nothing answers directly, so a generator
    costs nothing where a sentence does)? A row the question names exactly (its key, URL, id or
    note path: ``named``) is what it asks for: its first two claims answer it."""
    findings = answering(question, claims, similarity, given)
    if named:
        taken: dict[str, int] = {}
        leading = []
        for c in claims:
            if c.key in named and taken.get(c.key, 0) < 2:
                taken[c.key] = taken.get(c.key, 0) + 1
                leading.append(c)
        findings = [
            *(Finding(c.key, c.sentence, True, 1.0, aligned=1.0) for c in leading),
            *findings,
        ]
    best = findings[0] if findings and findings[0].answers else None
    if best is None:
        for bridge in bridges:
            through = _through(question, claims, stems(bridge), similarity)
            if through is not None:
                return through
        both = _compared(question, claims, similarity)
        if both is not None:
            return both
    closest = None if best else max(findings, key=lambda f: f.aligned, default=None)
    return Answerability(question, best, closest, len(findings), tuple(findings))


def _compared(
    question: Question, claims: Sequence[Claim], similarity: Similarity | None
) -> Answerability | None:
    """A choice between two names ("Who is older, Annie Morton or Terry Richardson?") is
    answered when a sentence answers it of each (their birth dates); None otherwise. The first
    name's sentence leads, the second's follows (``via``)."""
    if len(question.names) != 2 or not CHOICE.search(question.text):
        return None
    parts: list[tuple[Answerability, Finding]] = []
    for name, other in (question.names, question.names[::-1]):
        focus = tuple((s, w) for s, w in question.weights if s not in other[1] - name[1])
        found = assess(replace(question, weights=focus, names=(name,)), claims, similarity)
        if found.best is None:
            return None
        parts.append((found, found.best))
    (first, _), (_, second) = parts
    return replace(first, question=question, via=Claim(second.key, "", second.sentence))


def bridges_in(
    question: Question, rows: Sequence[tuple[str, str]], terms: Sequence[str]
) -> Iterator[str]:
    """The names the best rows (``(title, text)``, best first) give that the question depends
    on but does not say (``names.bridge_entities``), found only when first asked for."""
    yield from bridge_entities(question.text, rows[:BRIDGE_ROWS], terms)


def _through(
    question: Question,
    claims: Sequence[Claim],
    bridge: frozenset[str],
    similarity: Similarity | None,
) -> Answerability | None:
    """The check through one bridge (a two-part question): what the sentences naming it hold
    of the question's words is established ("the author of The Slow Loaf" is Ingrid
    Halvorsen), then the sentences about it are checked with that ``given``; None when none
    answers."""
    if not bridge:
        return None
    focus = frozenset(question.focus)
    first_hop = [c for c in claims if bridge <= stems(c.sentence) and not _titled(c, bridge)]
    held = [(stems(c.sentence) | stems(c.title)) & focus for c in first_hop]
    given = frozenset().union(*held)
    if not given:
        return None
    second_hop = [
        c
        for c in claims
        if _titled(c, bridge) or bridge <= stems(" ".join([c.sentence, *c.neighbours]))
    ]
    found = assess(question, second_hop, similarity, given)
    if not found.answered:
        return None
    via = max(zip(first_hop, held, strict=True), key=lambda pair: len(pair[1]))[0]
    return replace(found, via=via)


def _window(claim: Claim) -> frozenset[str]:
    """The stems of a claim, its title and its neighbours."""
    return stems(claim.sentence).union(stems(claim.title), *(stems(n) for n in claim.neighbours))


def _titled(claim: Claim, bridge: frozenset[str]) -> bool:
    return bridge <= stems(claim.title)


def explain(found: Answerability, label: Callable[[str], str] = lambda key: "") -> str:
    """What the evidence does and does not say, in plain words: "[2] says “Bergen”." or
    "Nothing says where: the closest sentence, [3], does not mention “train”." ``label``
    names a row by the label people see ("[3]"), never by a position that can change."""
    question = found.question
    if found.best is not None:
        cited = label(found.best.key) or "A row"
        if found.best.span:
            return f"{cited} says “{found.best.span}”."
        return f"{cited} {'states it' if question.kind == 'yes/no' else 'is about it'}."
    asked = ASKED.get(question.kind, "what the question asks")
    closest = found.closest
    if question.kind == "topic" or closest is None:
        words = _listed(_top_words(question) if closest is None else closest.missing[:3])
        return f"No sentence mentions {words}." if words != "it" else "No sentence is about it."
    cited = label(closest.key)
    where = f"the closest sentence{', ' + cited + ',' if cited else ''}"
    return f"Nothing says {asked}: {where} {_problem(question, closest)}."


ASKED = {
    "who": "who",
    "where": "where",
    "when": "when",
    "why": "why",
    "how many": "how many",
    "how often": "how often",
    "how much": "how much",
    "how": "how",
    "which": "which",
    "what": "what",
    "yes/no": "whether it is so",
}


def _problem(question: Question, closest: Finding) -> str:
    """Why the closest sentence does not answer, as the end of a plain sentence."""
    problem, detail = closest.problem, closest.detail
    if problem == OFF_TOPIC or (problem == TOO_LITTLE and closest.missing):
        return f"does not mention {_listed(closest.missing[:3])}"
    if problem == NO_NAME:
        return f"does not mention {detail}"
    if problem == NO_NUMBER:
        return f"does not state {detail}"
    if problem == NO_CONDITION:
        return f"does not say “{detail}”"
    if problem == NOT_NEGATED:
        return "does not say what is not so, which the question asks"
    if problem == OPPOSITE:
        says, asks = detail.split("|", 1)
        return f"says “{says}”, not “{asks}”"
    if problem == TURNED:
        return f"says it the other way round, of “{detail}”"
    if problem == NO_SPAN:
        return f"gives no {WANTED[question.expects]}"
    if problem == NOT_CLOSEST:
        return "is about something else"
    return "says too little of what the question asks about"


def _top_words(question: Question) -> list[str]:
    return [question.word(s) for s in question.ranked[:3]]


def _listed(items: Sequence[str]) -> str:
    quoted = [f"“{item}”" for item in items]
    if len(quoted) <= 1:
        return "".join(quoted) or "it"
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]
