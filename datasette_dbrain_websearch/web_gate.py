"""Whether a run searches the web at all: the request's web choices and the policy gate (pure).

``decide`` searches the web only when the request's mode asks for it, the config enables it, the
actor holds ``dbrain-external-search``, another site did not send the request and, for
``on_weak``, the judge found the local evidence weak; every other case is a named reason, and
those a person should hear of a warning.
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import WebSettings
from .judge import ENOUGH_EVIDENCE
from .merge import DomainPolicy
from .word_lists import CURRENT_STATE_WORDS

CURRENT_STATE_PHRASES = ("as of now", "right now", "this week", "this month")


@dataclass(frozen=True)
class WebRequest:
    """What one request asks of the web stage (from ``external=``, ``provider=`` ...)."""

    mode: str
    providers: tuple[str, ...] = ()
    freshness: str = ""
    count: int = 5
    read: int = 0  # the top web results whose pages are read before the answer (``read=``)
    sites: tuple[str, ...] = ()  # only results from these domains (``site=``)
    not_sites: tuple[str, ...] = ()  # never results from these (``not_site=``)

    def domain_policy(self, settings: WebSettings) -> DomainPolicy:
        """The config's domain lists narrowed by this question's sites."""
        return DomainPolicy(
            settings.allow_domains, settings.block_domains, self.sites, self.not_sites
        )


@dataclass(frozen=True)
class Decision:
    run: bool
    skipped_reason: str = ""
    warning: dict[str, str] | None = None


def is_current_state(question: str) -> bool:
    """Does the question ask how things are now ("latest", "today", "as of now" ...)?"""
    words = {w.strip(".,;:!?()\"'").lower() for w in question.split()}
    lowered = question.lower()
    return bool(words & CURRENT_STATE_WORDS) or any(p in lowered for p in CURRENT_STATE_PHRASES)


CROSS_SITE_WARNING = "external_search_cross_site"
"""The one warning code for everything a cross-site request was denied (the web here, the
model in ``answer.stage``, a new run in ``views.compare``): nothing is spent on the account."""


def decide(
    mode: str, settings: WebSettings, permitted: bool, verdict: str, cross_site: bool = False
) -> Decision:
    """May this run call any provider? Always returns the reason when it may not."""
    if mode == "never":
        return Decision(False, "mode_never")
    if not settings.enabled:
        return Decision(
            False,
            "disabled",
            {
                "code": "external_search_disabled",
                "message": "Web search is turned off in this Datasette's config "
                "(external_search.enabled is false); showing local evidence only.",
            },
        )
    if not permitted:
        return Decision(
            False,
            "not_permitted",
            {
                "code": "external_search_not_permitted",
                "message": "You are not allowed to search the web here (permission "
                "dbrain-external-search); showing local evidence only.",
            },
        )
    if cross_site:
        return Decision(
            False,
            "cross_site",
            {
                "code": CROSS_SITE_WARNING,
                "message": "This request came from another site, so the web was not searched "
                "on your account; search again from this page to include it.",
            },
        )
    if mode == "on_weak" and verdict == ENOUGH_EVIDENCE:
        return Decision(False, "local_evidence_enough")
    return Decision(True)
