"""Relevance feedback on a research pack: Rocchio re-ranking and query refinement (pure).

The vector space is TF-IDF over the pack's own rows (local and web; title plus excerpt), so
feedback needs no index and every number can be recomputed from the pack:

- tokens: lowercased runs of letters and digits (``_`` splits, as in FTS5's unicode61),
  without stop words, FTS operators, single characters or bare numbers, each reduced with
  ``stemming.stem`` (FTS5's porter) so "tokenizer" and "tokenizers" are one dimension;
- ``w(t, d) = tf(t, d) * idf(t)``, ``idf(t) = ln((1 + N) / (1 + df(t))) + 1`` (smoothed, so a
  term in every row still counts and a query term in none has a weight), each row L2-normalized;
- the query vector is built the same way from ``query_plan.query_terms``.

Rocchio moves the normalized query: ``q' = alpha*q + beta*P - gamma*N``, where P and N are the
means of ``s * d`` over the positive and negative rows and ``s`` is a mark's strength: 1 for a
judgement (``relevant``/``irrelevant``), 0.5 for a nudge (``more``/``less``). Negative
components are kept, not clipped: we re-rank a candidate set rather than query an index, and
they are what pushes rows like a ``less`` row down.
"""

from __future__ import annotations

import copy
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .answer.text import is_boilerplate, split_sentences
from .display import plural
from .pack import row_keys
from .pack_json import PackJSON
from .query_plan import NEGATIONS, RAW_OPERATORS, STOP_WORDS, trim_token
from .stemming import fold, stem

FEEDBACK_VALUES = ("more", "less", "relevant", "irrelevant", "unsure")
MARK_STRENGTH = {"relevant": 1.0, "more": 0.5, "unsure": 0.0, "less": -0.5, "irrelevant": -1.0}
MAX_MARKS = 200
MAX_ADDED_TERMS = 4
MAX_CANDIDATES = 20
# Sort keys are rounded so float noise (equal sums added up in another order) cannot break a tie
# that belongs to the previous order.
KEY_DIGITS = 9
LISTS = ("evidence", "external_evidence")

_TOKEN = re.compile(r"[^\W_]+")
_SKIP = STOP_WORDS | NEGATIONS | RAW_OPERATORS

# Words Expand never adds: they say little of what a row is about, in any brain
# (docs/research.md lists them). Verbs are matched by stem: "makes", "made" and "making" too.
GENERIC_VERBS = frozenset(
    """
    add allow appear apply ask base become began begin begun bring brought came come
    consider contain continue create describe determine discuss enable find follow found
    gave get give given go gone got happen held help hold include involve keep kept know
    known let like look made make mean meant need obtain offer perform produce provide put
    ran remain require return run said saw say see seem seen show shown start take tell
    think thought told took try turn use want went write written wrote
    """.split()
)
NUMBER_WORDS = frozenset(
    """
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand million billion trillion dozen half once twice first second third
    fourth fifth tenth
    """.split()
)
# Hedges and connectives, words of time and quantity, kinds of capture (what a row is, not
# what it says) and the parts of web addresses.
FILLER_WORDS = frozenset(
    """
    able actually almost already also although always amp another anyway approximately
    around article available away bad basically best better big blog certain com currently
    day days different easy else even ever every example examples fact former good great
    hence however htm html http https just kind last lot lots many may maybe might much must
    nbsp net new next nice now often old org part per perhaps php place possible post pretty
    probably quite quot rather re really shall since something sometimes still sure thing
    things though thus time times today transcript tweet usually various video way ways
    website week well whole www year years yet
    """.split()
)
_VERB_STEMS = frozenset(stem(v) for v in GENERIC_VERBS)
# A number with a unit or an ordinal ("30s", "1st", "10x", "2kg"), or a source key's hex run.
_NUMBER = re.compile(r"\d+[a-z]{0,3}|(?=[a-f]*\d)[0-9a-f]{6,}")


def filler_kind(word: str) -> str:
    """Why a word is no content word ("a stop word", "a number", "a generic verb", "filler"),
    or "" when it is one: Expand adds content words only."""
    word = fold(word)
    if word in _SKIP or len(word) < 2:
        return "a stop word"
    if word in NUMBER_WORDS or _NUMBER.fullmatch(word):
        return "a number"
    if stem(word) in _VERB_STEMS:
        return "a generic verb"
    if word in FILLER_WORDS:
        return "filler"
    return ""


Vector = dict[str, float]
Address = tuple[str, int]


@dataclass(frozen=True)
class RocchioWeights:
    """Weights of the original query (alpha), positive rows (beta) and negative rows (gamma)."""

    alpha: float = 1.0
    beta: float = 0.75
    gamma: float = 0.15

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"Rocchio weight {name} must be a finite number >= 0: {value!r}")


def validate_marks(marks: list[dict]) -> list[dict[str, str]]:
    """Check marks from a request and return ``[{"key", "value"}]``, one per key, last wins.

    A repeated key keeps its first position with its last value, so re-marking a row changes
    the mark without reordering the list the page shows.
    """
    if not isinstance(marks, list | tuple):
        raise ValueError(f"marks must be a list of {{'key', 'value'}} objects, not {marks!r}")
    if len(marks) > MAX_MARKS:
        raise ValueError(f"Too many marks: {len(marks)} (at most {MAX_MARKS}).")
    kept: dict[str, str] = {}
    for n, mark in enumerate(marks, start=1):
        if not isinstance(mark, dict):
            raise ValueError(f"Mark {n} must be an object with 'key' and 'value', not {mark!r}")
        if set(mark) != {"key", "value"}:
            raise ValueError(
                f"Mark {n} must have exactly the fields 'key' and 'value'; it has "
                f"{sorted(map(str, mark))}"
            )
        key, value = mark["key"], mark["value"]
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"Mark {n}: 'key' must be a source key or URL, not {key!r}")
        if not isinstance(value, str) or value.strip().lower() not in FEEDBACK_VALUES:
            raise ValueError(
                f"Mark {n}: 'value' must be one of {', '.join(FEEDBACK_VALUES)}, not {value!r}"
            )
        kept[key.strip()] = value.strip().lower()
    return [{"key": k, "value": v} for k, v in kept.items()]


def _surface_tokens(text: str) -> list[str]:
    return [
        t for t in _TOKEN.findall(fold(text)) if len(t) > 1 and not t.isdigit() and t not in _SKIP
    ]


def _weigh(counts: Counter[str], idf: dict[str, float]) -> Vector:
    """TF-IDF weights of one bag of stems, L2-normalized (an empty bag is the zero vector)."""
    raw = {t: tf * idf[t] for t, tf in counts.items() if t in idf}
    norm = math.sqrt(sum(w * w for w in raw.values()))
    return {t: w / norm for t, w in raw.items()} if norm else {}


def _dot(a: Vector, b: Vector) -> float:
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return sum(w * large.get(t, 0.0) for t, w in small.items())


def _cosine(unit: Vector, query: Vector) -> float:
    norm = math.sqrt(_dot(query, query))
    return _dot(unit, query) / norm if norm else 0.0


@dataclass
class _Space:
    """The pack's rows as unit TF-IDF vectors, with the surface forms behind each stem."""

    rows: dict[Address, Mapping[str, Any]]
    vectors: dict[Address, Vector]
    surfaces: dict[Address, Counter[str]]
    idf: dict[str, float]

    def query_vector(self, terms: list[str]) -> Vector:
        stems = Counter(stem(t) for term in terms for t in _surface_tokens(term))
        unseen = {t: _idf(len(self.rows), 0) for t in stems if t not in self.idf}
        return _weigh(stems, {**self.idf, **unseen})


def _idf(rows: int, df: int) -> float:
    return math.log((1 + rows) / (1 + df)) + 1


def _row_text(row: Mapping[str, Any]) -> str:
    """What a row says: its title and excerpt, without capture metadata ("Safari tab captured
    from iCloud Tabs", "Device: ..."), whose words say nothing of what the row is about."""
    said = [s for s in split_sentences(str(row.get("excerpt") or "")) if not is_boilerplate(s)]
    return " ".join([str(row.get("title") or ""), *said])


def _space(pack: PackJSON) -> _Space:
    listed: dict[str, Sequence[Mapping[str, Any]]] = {
        "evidence": pack["evidence"],
        "external_evidence": pack["external_evidence"],
    }
    rows = {(name, i): row for name in LISTS for i, row in enumerate(listed[name])}
    surfaces = {a: Counter(_surface_tokens(_row_text(row))) for a, row in rows.items()}
    stems: dict[Address, Counter[str]] = {}
    for a, counts in surfaces.items():
        stems[a] = Counter()
        for token, tf in counts.items():
            stems[a][stem(token)] += tf
    df = Counter(t for counts in stems.values() for t in counts)
    idf = {t: _idf(len(rows), n) for t, n in df.items()}
    return _Space(rows, {a: _weigh(c, idf) for a, c in stems.items()}, surfaces, idf)


def _resolve(
    marks: list[dict[str, str]], rows: dict[Address, Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], dict[Address, str]]:
    """Marks -> rows: a source key names its row, otherwise the key is a URL to match."""
    record: list[dict[str, Any]] = []
    by_row: dict[Address, str] = {}
    for mark in marks:
        key = mark["key"]
        hits = [a for a, row in rows.items() if key in row_keys(row)] or [
            a for a, row in rows.items() if key in row_urls(row)
        ]
        for a in hits:
            by_row[a] = mark["value"]
        record.append({**mark, "source_keys": [rows[a].get("source_key", "") for a in hits]})
    return record, by_row


def _centroid(vectors: list[tuple[Vector, float]]) -> Vector:
    """Mean of ``strength * vector`` over the rows (strength already without its sign)."""
    total: Vector = {}
    for vector, strength in vectors:
        for t, w in vector.items():
            total[t] = total.get(t, 0.0) + strength * w
    return {t: w / len(vectors) for t, w in total.items()}


def _shift(marked: list[tuple[Vector, float]], weights: RocchioWeights) -> Vector:
    """Rocchio's additions to the query, ``beta*P - gamma*N`` (empty when no mark can move it)."""
    shift: Vector = {}
    positive = [(v, s) for v, s in marked if s > 0]
    negative = [(v, -s) for v, s in marked if s < 0]
    for part, factor in ((positive, weights.beta), (negative, -weights.gamma)):
        if part and factor:
            for t, w in _centroid(part).items():
                shift[t] = shift.get(t, 0.0) + factor * w
    return shift


def _isotonic(values: list[float]) -> list[float]:
    """The closest non-increasing sequence in least squares (pool adjacent violators)."""
    blocks: list[tuple[float, int]] = []
    for value in values:
        total, count = value, 1
        while blocks and blocks[-1][0] / blocks[-1][1] < total / count:
            total, count = total + blocks[-1][0], count + blocks[-1][1]
            blocks.pop()
        blocks.append((total, count))
    return [total / count for total, count in blocks for _ in range(count)]


def _is_exact(row: Mapping[str, Any]) -> bool:
    lanes = (row.get("retrieval") or {}).get("lanes") or []
    return any(lane.get("name") == "exact_lookup" for lane in lanes)


def _address(entry: Mapping[str, Any], rows: dict[Address, Mapping[str, Any]]) -> Address:
    address: Any = (entry.get("list"), entry.get("index"))
    if address not in rows:
        raise ValueError(f"Ranking entry {entry!r} does not point at a row of the pack.")
    return address


def _move_detail(mark: str, exact: bool, places: int, before: float, after: float) -> str:
    said = f"marked {mark}" if mark else "not marked"
    if mark == "unsure":
        said += " (no effect)"
    if exact:
        moved = "exact hit, kept ahead of the rest"
    elif places:
        moved = f"moved {'up' if places > 0 else 'down'} {abs(places)}"
    else:
        moved = "kept its place"
    return f"{said}; {moved} (similarity {before:.2f} -> {after:.2f})"


def apply_feedback(
    pack: PackJSON, marks: list[dict[str, str]], weights: RocchioWeights = RocchioWeights()
) -> PackJSON:
    """A new pack re-ranked by Rocchio feedback; the input pack is left as it was.

    Rocchio ranks by ``cos(d, q')``, which orders rows as ``d . q'`` does (``|q'|`` is shared):
    ``alpha * d.q + d.(beta*P - gamma*N)``. The pack's reading order comes from bm25, fusion
    and the local/web policy, not from this vector space, so it stands in for ``d.q``: each
    non-exact row takes the slot of its position in the isotonic (non-increasing, least-squares)
    fit of the similarities ``d.q`` along that order. Hence an order that already follows the
    vector space is ranked exactly by ``cos(d, q')``, rows unrelated to the marked ones keep
    their relative order, and marks that cannot move the query move nothing. Ties keep the
    previous order; exact hits stay first, in their order; a row marked ``irrelevant`` goes
    below every row not so marked (a person who said "not this" never sees it above the rest).

    ``pack["feedback"]`` records the marks (each with the ``source_keys`` it resolved to), the
    weights, and a move for every row that was marked or changed place.
    """
    marks = validate_marks(marks)
    out = copy.deepcopy(pack)
    space = _space(out)
    query = space.query_vector(list((out.get("query_plan") or {}).get("query_terms") or []))
    record, by_row = _resolve(marks, space.rows)
    shift = _shift([(space.vectors[a], MARK_STRENGTH[v]) for a, v in by_row.items()], weights)
    moved = query
    if shift:
        moved = {t: weights.alpha * w for t, w in query.items()}
        for t, w in shift.items():
            moved[t] = moved.get(t, 0.0) + w
    ranking = out.get("ranking") or []
    addresses = [_address(entry, space.rows) for entry in ranking]
    before = [_cosine(space.vectors[a], query) for a in addresses]
    after = [_cosine(space.vectors[a], moved) for a in addresses]
    exact = [i for i, a in enumerate(addresses) if _is_exact(space.rows[a])]
    rest = sorted(set(range(len(addresses))) - set(exact))
    slots = _isotonic([before[i] for i in rest])
    keys = {
        i: weights.alpha * slot + _dot(space.vectors[addresses[i]], shift)
        for i, slot in zip(rest, slots, strict=True)
    }
    # A row marked irrelevant is not wanted at any similarity: below every row not so marked.
    dropped = {i for i in rest if by_row.get(addresses[i]) == "irrelevant"}
    order = exact + sorted(rest, key=lambda i: (i in dropped, -round(keys[i], KEY_DIGITS), i))
    out["ranking"] = [ranking[i] for i in order]
    moves: list[dict[str, Any]] = []
    for rank_after, i in enumerate(order, start=1):
        row, mark = space.rows[addresses[i]], by_row.get(addresses[i], "")
        places = i + 1 - rank_after
        if not mark and not places:
            continue
        delta = after[i] - before[i]
        row["retrieval"]["signals"].append(
            {
                "name": "feedback",
                "detail": _move_detail(mark, i in exact, places, before[i], after[i]),
                "weight": round(delta, 6),
            }
        )
        moves.append(
            {
                "source_key": row.get("source_key", ""),
                "origin": row.get("origin", ""),
                "rank_before": i + 1,
                "rank_after": rank_after,
                "similarity_before": round(before[i], 6),
                "similarity_after": round(after[i], 6),
                "mark": mark,
            }
        )
    out["feedback"] = {"marks": record, "weights": asdict(weights), "moves": moves}
    return out


def _matched_by(term: str, words: list[str], prefix: bool) -> str:
    """The query word that already finds a term: same stem, or (simple syntax) FTS5's prefix."""
    return next((w for w in words if stem(w) == stem(term) or (prefix and term.startswith(w))), "")


def _words(terms: list[str]) -> list[str]:
    return [t for term in terms for t in _TOKEN.findall(term.lower())]


def _extend(original: str, added: list[str], raw: bool) -> str:
    """Append terms so they keep their meaning: a raw query is grouped first, and a trailing
    "not"/"without" (which excluded nothing) is dropped rather than left to swallow a term."""
    if not added:
        return original
    if raw:
        return f"({original}) {' '.join(added)}"
    words = original.split()
    if words and trim_token(words[-1]).lower() in NEGATIONS:
        words.pop()
    return " ".join([*words, *added])


def refine_query(
    pack: PackJSON,
    marks: list[dict[str, str]],
    max_terms: int = MAX_ADDED_TERMS,
    brain_rows: Callable[[Iterable[str]], Mapping[str, int]] | None = None,
) -> dict:
    """Suggest up to ``max_terms`` content words from the rows marked ``more``/``relevant``.

    A candidate (a stem shown as its commonest form in the positive rows) has a positive and a
    negative weight: the sums of ``strength * w(t, d)`` over the positive and the negative rows
    holding it; its score is their difference. It is suppressed when the query already finds it
    (same stem, or a prefix match of a simple query's ``"term"*``), the question excluded it, it
    is no content word (``filler_kind``), or it comes mainly from negative rows (negative
    weight >= positive weight). The best unsuppressed candidates are added. Equal scores (the
    words of one marked row) go to the rarer word in the brain: ``brain_rows`` tells how many
    of the brain's rows hold each stem (a stem it does not count is held by none); then to the
    rarer in the pack, then to the one the marked rows say first (never to the alphabet).
    """
    if isinstance(max_terms, bool) or not isinstance(max_terms, int):
        raise ValueError(f"max_terms must be an integer, not {max_terms!r}")
    if not 0 <= max_terms <= MAX_ADDED_TERMS:
        raise ValueError(f"max_terms must be between 0 and {MAX_ADDED_TERMS}: {max_terms}")
    marks = validate_marks(marks)
    space = _space(pack)
    _, by_row = _resolve(marks, space.rows)
    plan = pack.get("query_plan") or {}
    prefix = plan.get("syntax") != "raw"
    query_words = _words([*(plan.get("query_terms") or []), *(plan.get("expansion_terms") or [])])
    excluded = _words(plan.get("excluded_terms") or [])
    weight: dict[int, dict[str, float]] = {1: {}, -1: {}}
    surfaces: dict[str, Counter[str]] = {}
    sources: dict[str, list[dict[str, str]]] = {}
    for a, value in by_row.items():
        strength = MARK_STRENGTH[value]
        if not strength:
            continue
        sign = 1 if strength > 0 else -1
        for t, w in space.vectors[a].items():
            weight[sign][t] = weight[sign].get(t, 0.0) + abs(strength) * w
            sources.setdefault(t, []).append(
                {"source_key": space.rows[a].get("source_key", ""), "mark": value}
            )
        if sign > 0:
            for token, tf in space.surfaces[a].items():
                surfaces.setdefault(stem(token), Counter())[token] += tf
    candidates: list[dict[str, Any]] = []
    rarity: dict[str, tuple[float, int]] = {}
    stems: dict[str, str] = {}
    for seen, (t, pos) in enumerate(weight[1].items()):
        term = min(surfaces[t].items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0]
        rarity[term] = (space.idf.get(t, 0.0), seen)
        stems[term] = t
        neg = weight[-1].get(t, 0.0)
        found_by = _matched_by(term, query_words, prefix)
        excluded_by = _matched_by(term, excluded, prefix)
        filler = filler_kind(term)
        if found_by:
            reason = f"already in the query as {found_by!r}"
        elif excluded_by:
            reason = f"excluded by the question ({excluded_by!r})"
        elif filler:
            reason = f"not a content word: {filler}"
        elif neg >= pos:
            reason = f"mainly from rows marked less/irrelevant ({neg:.3f} vs {pos:.3f})"
        else:
            reason = ""
        candidates.append(
            {
                "term": term,
                "score": round(pos - neg, 6),
                "positive_weight": round(pos, 6),
                "negative_weight": round(neg, 6),
                "suppressed": bool(reason),
                "reason": reason,
                "sources": sources[t],
            }
        )
    held: Mapping[str, int] = {}
    if brain_rows is not None:
        held = brain_rows(sorted({stems[c["term"]] for c in candidates if not c["suppressed"]}))
    candidates.sort(
        key=lambda c: (
            -c["score"],
            held.get(stems[c["term"]], 0),
            -rarity[c["term"]][0],
            rarity[c["term"]][1],
        )
    )
    added: list[str] = []
    for c in candidates:
        if c["suppressed"]:
            continue
        if len(added) < max_terms:
            added.append(c["term"])
            rows = sum(1 for s in c["sources"] if MARK_STRENGTH[s["mark"]] > 0)
            c["reason"] = f"added: from {plural(rows, 'row')} marked more/relevant"
        else:
            c["reason"] = f"not added: below the best {max_terms}"
    original = str(pack.get("question") or plan.get("text_query") or "").strip()
    return {
        "original_query": original,
        "added_terms": added,
        "refined_query": _extend(original, added, raw=not prefix),
        "candidates": [
            c for n, c in enumerate(candidates) if n < MAX_CANDIDATES or c["term"] in added
        ],
    }


def carried(pack: PackJSON) -> list[dict[str, str]]:
    """The marks a run took from the run it refines (``pack["feedback"]`` as saved: a row
    marked 👎 there is one here too, never silently back among the rest)."""
    marks = (pack.get("feedback") or {}).get("marks") or []
    return [{"key": m["key"], "value": m["value"]} for m in marks]


def row_urls(row: Mapping[str, Any]) -> tuple[str, ...]:
    """Every URL a mark may name a row by: canonical, and as the provider gave it."""
    return tuple(
        u for u in (row.get("url"), row.get("canonical_url"), row.get("provider_url")) if u
    )
