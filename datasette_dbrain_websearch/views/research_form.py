"""What the research page's form and controls show (``views.research`` renders them): the
fields read back from the query string, whether the Filters drawer opens, the web and answer
controls, the one-click "Search the web" offer, Expand's chips and the fields a refined search
carries, this research's link with a parameter changed, and why "Save to brain" is refused.
"""

from __future__ import annotations

import urllib.parse
from typing import Any

from ..config import Settings
from ..config_keys import MODES
from ..options import BOOLEAN_VALUES, one_value_each, param
from ..pack_json import PackJSON
from ..pipeline import WebAccess
from ..providers.base import clean
from .common import MODE_LABELS, research_path
from .sign_in import HOW_TO_SIGN_IN

FRESHNESS_LABELS = [
    ("", "Any time"),
    ("pd", "Past day"),
    ("pw", "Past week"),
    ("pm", "Past month"),
    ("py", "Past year"),
]


def web_controls(settings: Settings, web: WebAccess, params: dict) -> dict[str, Any]:
    """What the page's "Search the web too" controls show for this actor and config."""
    web_settings = settings.web
    labels = web.labels
    order = " → ".join(labels.get(n, n) for n in web_settings.providers)
    freshness = (params.get("freshness") or [web_settings.freshness])[-1]
    start, _, end = freshness.partition("to") if freshness not in ("custom", "") else ("", "", "")
    custom = freshness == "custom" or bool(end)
    return {
        "enabled": web_settings.enabled,
        "permitted": web.permitted,
        "modes": [(m, MODE_LABELS[m]) for m in MODES],
        "mode": (params.get("external") or [web_settings.default_mode])[-1],
        "providers": [("", f"Configured order ({order})")]
        + [(n, labels.get(n, n)) for n in web_settings.providers]
        + [("all", "All at once")],
        "freshness": [*FRESHNESS_LABELS, ("custom", "Custom range")],
        "freshness_value": "custom" if custom else freshness,
        "range": (
            start or param(params, "freshness_since"),
            end or param(params, "freshness_until"),
        ),
        "labels": labels,
        "read": web_settings.read,
    }


def promotion_refusal(actor: dict | None) -> dict[str, str]:
    """Why web rows show a disabled "Save to brain", shortly (beside each) and in full (once,
    and for the ``p`` key): a visitor is told how to sign in, a signed-in person what they
    lack."""
    if not actor:
        return {
            "short": "sign in to save",
            "why": f"Signed-in people who may write to this brain can save a web page to it. "
            f"{HOW_TO_SIGN_IN}",
        }
    return {
        "short": "not allowed for you",
        "why": "Saving a web page to this brain needs the dbrain-promote permission, which "
        "your account does not have.",
    }


def web_offer(
    settings: Settings, web: WebAccess, actor: dict | None, pack: PackJSON | None, url: str
) -> dict[str, Any]:
    """The one-click "Search the web" for a run whose brain evidence is missing, weak or maybe
    out of date; for those who may not search the web, why not and how to get it."""
    web_settings = settings.web
    if not web_settings.enabled:
        return {"show": False, "url": "", "reason": ""}
    order = " → ".join(web.labels.get(n, n) for n in web_settings.providers)
    show, why = False, ""
    # A URL question whose page was read directly: searching would read it again.
    if pack and not pack["external_search"]["ran"] and not pack["external_evidence"]:
        # Offered whenever the run's verdict is not enough, beside a "did you mean" too: a
        # correction may be wrong, and the person chooses.
        verdict = pack["judge"].get("combined", pack["judge"])["verdict"]
        show = verdict != "enough_evidence" or pack["external_search"]["current_state_question"]
        why = {
            "no_evidence": "Nothing in your brain answers this",
            "weak_evidence": "Your brain's evidence is weak",
        }.get(verdict, "This asks about now, and your brain may be out of date")
    if web.permitted:
        return {"show": show, "url": url, "reason": f"{why}; ask {order}." if why else ""}
    reason = (
        "Sign in to search the web too: it needs an account allowed dbrain-external-search "
        "(root, or one named in external_search.allow). " + HOW_TO_SIGN_IN
        if actor is None
        else "Your account may not search the web (permission dbrain-external-search)."
    )
    return {"show": show, "url": "", "reason": f"{why}. {reason}" if why else reason}


EXPANDED = (
    "external",
    "provider",
    "freshness",
    "freshness_since",
    "freshness_until",
    "site",
    "not_site",
    "read",
    "answer",
    "depth",
    "strategy",
)


def expand_fields(params: dict[str, list[str]]) -> list[tuple[str, str]]:
    """What a refined search keeps of this one besides what the run records (web choices)."""
    kept = []
    for name in EXPANDED:
        values = [clean(v) for v in params.get(name) or [] if v.strip()]
        if values:
            kept.append((name, ",".join(values) if name in LISTED_FIELDS else values[-1]))
    return kept


def expansion_links(
    datasette: Any, route_db: str | None, params: dict[str, list[str]], pack: PackJSON | None
) -> dict[str, str]:
    """For each word Expand added, this research without it (the chip's remove link)."""
    if not pack:
        return {}
    words = pack["query_plan"].get("expansion_terms") or []
    base = {**params, "q": [pack["question"]]}
    return {
        word: research_url(
            datasette, route_db, {**base, "expand": [",".join(w for w in words if w != word)]}
        )
        for word in words
    }


def research_url(
    datasette: Any, route_db: str | None, params: dict[str, list[str]], **changes: str
) -> str:
    """This research with some parameters changed; empty ones and run/refine links dropped,
    one value each."""
    query = {
        k: v
        for k, v in one_value_each(params).items()
        if k not in ("run", "refine_from", *changes) and any(x.strip() for x in v)
    }
    query.update({k: [v] for k, v in changes.items()})
    return research_path(datasette, route_db, False) + "?" + urllib.parse.urlencode(query, True)


def answer_controls(settings: Settings, params: dict[str, list[str]]) -> dict[str, Any]:
    """The page's "Write an answer" box: ticked per request, else by ``answer.default``."""
    answer = settings.answer
    value = param(params, "answer").lower()
    llm = answer.synthesizer == "llm"
    return {
        "default": answer.default,
        "checked": BOOLEAN_VALUES.get(value, answer.default),
        "streams": llm,
        "help": "A language model writes it from the evidence"
        if llm
        else "Sentences picked from the evidence, each citing its row",
    }


def filters_set(form: dict[str, str], default_limit: int) -> bool:
    """Whether the Filters drawer opens: a filter differs from its default. A refined run
    (Expand) takes its parent's limit, syntax and profile, which must not open it by itself."""
    return bool(
        any(form[name] for name in ("tag", "source_type", "kind", "since", "until"))
        or form["syntax"] == "raw"
        or form["limit"] not in ("", str(default_limit))
        or form["profile"] not in ("", "general")
    )


def form_values(params: dict[str, list[str]]) -> dict[str, str]:
    """What the form shows back to the user (last value of each field)."""
    names = (
        "q",
        "limit",
        "tag",
        "source_type",
        "kind",
        "syntax",
        "since",
        "until",
        "external",
        "provider",
        "freshness",
        "freshness_since",
        "freshness_until",
        "external_count",
        "read",
        "profile",
        "answer",
        "depth",
        "strategy",
    )
    form = {n: param(params, n) for n in names}
    # Text fields that take several values show them all, as the search read them.
    for name in LISTED_FIELDS:
        form[name] = ", ".join(clean(v).strip() for v in params.get(name) or [] if v.strip())
    return form


LISTED_FIELDS = ("tag", "source_type", "site", "not_site")
