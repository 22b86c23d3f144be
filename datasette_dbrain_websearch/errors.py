"""The one error type every research surface turns into a response.

Views render it as ``{"ok": false, "error": ..., "status": ...}`` (JSON) or an error box (HTML);
the CLI prints it and exits non-zero. Anything the user typed that cannot be searched becomes a
``ResearchError`` with status 400, never an unhandled exception.
"""

from __future__ import annotations


class ResearchError(Exception):
    """A problem the caller can act on, with the HTTP status that describes it."""

    def __init__(self, message: str, status: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def as_json(self) -> dict:
        return {"ok": False, "error": self.message, "status": self.status, "code": self.code}
