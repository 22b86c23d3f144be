"""The fake Brave's request parameters: read from the query string (GET) or the JSON body
(POST) and validated as Brave validates them, every error collected in the shape of the
pydantic errors Brave returns (``meta.errors``), with each endpoint's defaults and limits."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .common import FRESHNESS, Incoming, freshness_window

VALIDATION_DETAIL = "Unable to validate request parameter(s)"


_STR_MSG = "Input should be a valid string"


_INT_MSG = "Input should be a valid integer"


_INT_PARSE_MSG = "Input should be a valid integer, unable to parse string as an integer"


_WEB_INTS = {"count": (20, 1, 20), "offset": (0, 0, 9)}


WEB_BOOLS = {
    "text_decorations": True,
    "spellcheck": True,
    "extra_snippets": False,
    "summary": False,
    "enable_rich_callback": False,
    "include_fetch_metadata": False,
    "operators": True,
}


_LLM_INTS = {
    "count": (20, 1, 50),
    "maximum_number_of_urls": (20, 1, 50),
    "maximum_number_of_tokens": (8192, 1024, 32768),
    "maximum_number_of_snippets": (50, 1, 100),
    "maximum_number_of_tokens_per_url": (4096, 512, 8192),
    "maximum_number_of_snippets_per_url": (50, 1, 100),
}


_LLM_BOOLS = {"enable_source_metadata": False, "spellcheck": True}


_SAFESEARCH = ("off", "moderate", "strict")


_THRESHOLDS = ("strict", "balanced", "lenient", "disabled")


THRESHOLD_COVERAGE = {"strict": 0.5, "balanced": 0.25, "lenient": 0.0, "disabled": 0.0}


def pyd_error(
    kind: str, loc: list[Any], msg: str, value: Any, ctx: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One entry of ``meta.errors``, shaped like the pydantic errors Brave returns."""
    entry: dict[str, Any] = {"type": kind, "loc": loc, "msg": msg, "input": value}
    if ctx is not None:
        entry["ctx"] = ctx
    return entry


def _choices(options: Sequence[str]) -> str:
    quoted = [f"'{o}'" for o in options]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


class BraveParams:
    """Validates query-string (GET) or JSON-body (POST) parameters, collecting every error."""

    def __init__(self, source: dict[str, Any], where: str) -> None:
        self.source = source
        self.where = where
        self.errors: list[dict[str, Any]] = []
        self.values: dict[str, Any] = {}

    def _loc(self, name: str) -> list[Any]:
        return [self.where, name]

    def query(self) -> None:
        if "q" not in self.source:
            self.errors.append(pyd_error("missing", self._loc("q"), "Field required", None))
            return
        q = self.source["q"]
        if not isinstance(q, str):
            self.errors.append(pyd_error("string_type", self._loc("q"), _STR_MSG, q))
        elif not q:
            self.errors.append(
                pyd_error(
                    "string_too_short",
                    self._loc("q"),
                    "String should have at least 1 character",
                    q,
                    {"min_length": 1},
                )
            )
        elif len(q) > 400:
            self.errors.append(
                pyd_error(
                    "string_too_long",
                    self._loc("q"),
                    "String should have at most 400 characters",
                    q,
                    {"max_length": 400},
                )
            )
        elif len(q.split()) > 50:
            problem = "the query must not have more than 50 words"
            self.errors.append(
                pyd_error(
                    "value_error", self._loc("q"), f"Value error, {problem}", q, {"error": problem}
                )
            )
        else:
            self.values["q"] = q

    def integer(self, name: str, default: int, low: int, high: int) -> None:
        self.values[name] = default
        if name not in self.source:
            return
        raw = self.source[name]
        if isinstance(raw, bool) or not isinstance(raw, int | float | str):
            self.errors.append(pyd_error("int_type", self._loc(name), _INT_MSG, raw))
            return
        if isinstance(raw, str) and not re.fullmatch(r"[+-]?\d+", raw.strip()):
            self.errors.append(pyd_error("int_parsing", self._loc(name), _INT_PARSE_MSG, raw))
            return
        if isinstance(raw, float) and not raw.is_integer():
            msg = "Input should be a valid integer, got a number with a fractional part"
            self.errors.append(pyd_error("int_from_float", self._loc(name), msg, raw))
            return
        value = int(raw)
        if value < low:
            msg = f"Input should be greater than or equal to {low}"
            self.errors.append(
                pyd_error("greater_than_equal", self._loc(name), msg, raw, {"ge": low})
            )
        elif value > high:
            msg = f"Input should be less than or equal to {high}"
            self.errors.append(
                pyd_error("less_than_equal", self._loc(name), msg, raw, {"le": high})
            )
        else:
            self.values[name] = value

    def boolean(self, name: str, default: bool | None) -> None:
        """Only ``true``/``false``: the documented wire form, so a client sending ``True`` fails."""
        self.values[name] = default
        if name not in self.source:
            return
        raw = self.source[name]
        if isinstance(raw, bool):
            self.values[name] = raw
        elif raw in ("true", "false"):
            self.values[name] = raw == "true"
        else:
            msg = "Input should be a valid boolean, unable to interpret input"
            self.errors.append(pyd_error("bool_parsing", self._loc(name), msg, raw))

    def enum(self, name: str, default: str | None, options: Sequence[str]) -> None:
        self.values[name] = default
        if name not in self.source:
            return
        raw = self.source[name]
        if raw in options:
            self.values[name] = raw
        else:
            expected = _choices(options)
            self.errors.append(
                pyd_error(
                    "enum",
                    self._loc(name),
                    f"Input should be {expected}",
                    raw,
                    {"expected": expected},
                )
            )

    def freshness(self, now: datetime) -> None:
        self.values["freshness"] = None
        raw = self.source.get("freshness")
        if raw in (None, ""):
            return
        if not isinstance(raw, str) or not FRESHNESS.match(raw):
            pattern = FRESHNESS.pattern
            self.errors.append(
                pyd_error(
                    "string_pattern_mismatch",
                    self._loc("freshness"),
                    f"String should match pattern '{pattern}'",
                    raw,
                    {"pattern": pattern},
                )
            )
            return
        try:
            self.values["freshness"] = freshness_window(raw, now)
        except ValueError:
            problem = "invalid date in the freshness range"
            self.errors.append(
                pyd_error(
                    "value_error",
                    self._loc("freshness"),
                    f"Value error, {problem}",
                    raw,
                    {"error": problem},
                )
            )

    def text(self, name: str, default: str | None = None) -> None:
        raw = self.source.get(name, default)
        self.values[name] = raw if isinstance(raw, str) else default


def read_params(endpoint: str, req: Incoming, now: datetime) -> BraveParams:
    """The request's parameters for ``endpoint``, from its query string (GET) or JSON body
    (POST), validated as Brave validates them (``now`` is the clock ``freshness`` counts from)."""
    if req.method == "GET":
        params = BraveParams({k: v[-1] for k, v in req.query.items()}, "query")
    else:
        try:
            source = req.json_body() if req.body else {}
        except ValueError as exc:
            params = BraveParams({}, "body")
            params.errors.append(
                pyd_error("json_invalid", ["body", 0], "JSON decode error", {}, {"error": str(exc)})
            )
            return params
        if not isinstance(source, dict):
            params = BraveParams({}, "body")
            msg = "Input should be a valid dictionary or object to extract fields from"
            params.errors.append(pyd_error("model_attributes_type", ["body"], msg, source))
            return params
        params = BraveParams(source, "body")
    params.query()
    params.text("country", "US")
    params.text("search_lang", "en")
    ints, bools = (_WEB_INTS, WEB_BOOLS) if endpoint == "web/search" else (_LLM_INTS, _LLM_BOOLS)
    for name, (default, low, high) in ints.items():
        params.integer(name, default, low, high)
    for name, flag in bools.items():
        params.boolean(name, flag)
    params.enum("safesearch", "moderate", _SAFESEARCH)
    params.freshness(now)
    if endpoint == "web/search":
        params.enum("units", None, ("metric", "imperial"))
        params.text("result_filter")
    else:
        params.enum("context_threshold_mode", "balanced", _THRESHOLDS)
        params.boolean("enable_local", None)
    return params
