"""Relevance feedback on a research pack: the marks people give its rows, and Rocchio
re-ranking by them (pure).

Rows and the question are vectors of the pack's own TF-IDF space (``feedback_space``).
Rocchio moves the normalized query: ``q' = alpha*q + beta*P - gamma*N``, where P and N are the
means of ``s * d`` over the positive and negative rows and ``s`` is a mark's strength: 1 for a
judgement (``relevant``/``irrelevant``), 0.5 for a nudge (``more``/``less``). Negative
components are kept, not clipped: we re-rank a candidate set rather than query an index, and
they are what pushes rows like a ``less`` row down. Expand's words are ``expansion``'s.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .feedback_space import Address, Vector, cosine, dot, vector_space
from .pack import row_keys
from .pack_json import PackJSON

FEEDBACK_VALUES = ("more", "less", "relevant", "irrelevant", "unsure")
MARK_STRENGTH = {"relevant": 1.0, "more": 0.5, "unsure": 0.0, "less": -0.5, "irrelevant": -1.0}
MAX_MARKS = 200
# Sort keys are rounded so float noise (equal sums added up in another order) cannot break a tie
# that belongs to the previous order.
KEY_DIGITS = 9


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


def resolve_marks(
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
    space = vector_space(out)
    query = space.query_vector(list((out.get("query_plan") or {}).get("query_terms") or []))
    record, by_row = resolve_marks(marks, space.rows)
    shift = _shift([(space.vectors[a], MARK_STRENGTH[v]) for a, v in by_row.items()], weights)
    moved = query
    if shift:
        moved = {t: weights.alpha * w for t, w in query.items()}
        for t, w in shift.items():
            moved[t] = moved.get(t, 0.0) + w
    ranking = out.get("ranking") or []
    addresses = [_address(entry, space.rows) for entry in ranking]
    before = [cosine(space.vectors[a], query) for a in addresses]
    after = [cosine(space.vectors[a], moved) for a in addresses]
    exact = [i for i, a in enumerate(addresses) if _is_exact(space.rows[a])]
    rest = sorted(set(range(len(addresses))) - set(exact))
    slots = _isotonic([before[i] for i in rest])
    keys = {
        i: weights.alpha * slot + dot(space.vectors[addresses[i]], shift)
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
