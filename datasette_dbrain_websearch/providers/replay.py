"""Replay recorded provider answers, so web search can be evaluated and tested offline.

A ``ReplayProvider`` stands in for Brave, Exa or SearXNG under the same name: the web stage, the
merge and the pack treat its results exactly as they treat a live answer, but nothing leaves the
machine. It returns what was recorded (or raises the recorded failure, as a live provider's
``ProviderError`` would be raised) and remembers every call, so an eval can tell whether a run
reached a provider at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .base import (
    AUTH_FAILED,
    FAILED,
    NOT_IN_PLAN,
    RATE_LIMITED,
    TIMEOUT,
    TOO_LARGE,
    Capabilities,
    Provider,
    ProviderContext,
    ProviderError,
    SearchRequest,
    WebResult,
)

RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(WebResult))
ERROR_CODES = (AUTH_FAILED, RATE_LIMITED, FAILED, TIMEOUT, NOT_IN_PLAN, TOO_LARGE)
_TEXT_FIELDS = ("url", "title", "snippet", "text", "author", "published_at", "domain")


class ReplayError(ValueError):
    """A recorded response is malformed; the message says which field and why."""


def web_result(recorded: Mapping[str, Any], position: int) -> WebResult:
    """One recorded result as a ``WebResult``; ``rank`` defaults to its 1-based position."""
    if not isinstance(recorded, Mapping):
        raise ReplayError(f"result {position} must be an object with at least a url")
    unknown = sorted(set(recorded) - set(RESULT_FIELDS))
    if unknown:
        raise ReplayError(
            f"result {position} has unknown field(s) {', '.join(unknown)}; "
            f"expected some of {', '.join(RESULT_FIELDS)}"
        )
    values: dict[str, Any] = {"rank": position}
    for name, value in recorded.items():
        if name in _TEXT_FIELDS and not isinstance(value, str):
            raise ReplayError(f"result {position}: '{name}' must be a string")
        if name == "rank" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ReplayError(f"result {position}: 'rank' must be a whole number from 1")
        if name == "score" and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ReplayError(f"result {position}: 'score' must be a number")
        if name == "highlights":
            if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
                raise ReplayError(f"result {position}: 'highlights' must be a list of strings")
            value = tuple(value)
        values[name] = value
    if not values.get("url"):
        raise ReplayError(f"result {position} has no url")
    return WebResult(**values)


def recorded_error(recorded: Mapping[str, Any]) -> ProviderError:
    """A recorded failure (``{"error": code, "message": ...}``) as the ProviderError to raise."""
    unknown = sorted(set(recorded) - {"error", "message"})
    if unknown:
        raise ReplayError(
            f"a recorded failure has unknown field(s) {', '.join(unknown)}; "
            "expected error and message"
        )
    code = recorded.get("error")
    if code not in ERROR_CODES:
        raise ReplayError(f"a recorded failure's 'error' must be one of {', '.join(ERROR_CODES)}")
    message = recorded.get("message", f"recorded failure {code}")
    if not isinstance(message, str):
        raise ReplayError("a recorded failure's 'message' must be a string")
    return ProviderError(code, message)


class ReplayProvider(Provider):
    """A provider that answers from a recording and never touches the network."""

    # A recording already holds whatever the live call returned, so every option is "honoured":
    # claiming less would add warnings the live run never had.
    capabilities = Capabilities(
        search=True,
        contents=True,
        freshness=True,
        domain_filters=True,
        highlights=True,
        full_text=True,
    )

    def __init__(
        self,
        name: str,
        recorded: Sequence[Mapping[str, Any]] = (),
        *,
        label: str = "",
        error: ProviderError | None = None,
    ) -> None:
        # A replay stands in for the provider it recorded, under that provider's name: the one
        # provider whose name is its instance's, not its class's.
        self.name = name  # type: ignore[misc]
        self.label = label or name  # type: ignore[misc]
        self.results = [web_result(r, n) for n, r in enumerate(recorded, start=1)]
        self.error = error
        self.calls: list[SearchRequest] = []

    @classmethod
    def from_fixture(cls, name: str, fixture: Any, label: str = "") -> ReplayProvider:
        """A list of recorded results, or a recorded failure ``{"error": code, "message": ...}``."""
        if isinstance(fixture, Mapping):
            return cls(name, (), label=label, error=recorded_error(fixture))
        if not isinstance(fixture, list):
            raise ReplayError("must be a list of recorded results or a recorded failure")
        return cls(name, fixture, label=label)

    async def search(self, request: SearchRequest, ctx: ProviderContext) -> list[WebResult]:
        self.calls.append(request)
        if self.error is not None:
            raise self.error
        return list(self.results)
