"""The fake Brave Search: Web Search and LLM Context, its plans, rate limits and errors (its
request parameters and their validation: ``brave_params``)."""

from __future__ import annotations

import json
import uuid
import zlib
from collections.abc import Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from ..corpus import Page
from .brave_params import THRESHOLD_COVERAGE, VALIDATION_DETAIL, pyd_error, read_params
from .common import (
    BRAVE_REFUSALS,
    MONTH_WINDOW,
    PLANS,
    BravePlan,
    FakeState,
    Hit,
    Incoming,
    Mode,
    Reply,
    clip,
    decorate,
    hits_in,
    hostname,
    json_reply,
    parse_query,
    relative_age,
    site_name,
    snippet,
    split_sentences,
    tokens,
    utc,
    within,
)

_MIN_SNIPPET_TOKENS = 16


def _llm_snippets(
    page: Page, terms: Sequence[str], budget: int, most: int
) -> tuple[list[str], int]:
    """Paragraphs most relevant first (a table as a JSON string second), cut to the token budget."""
    paragraphs = page.text.split("\n\n")
    order = sorted(range(len(paragraphs)), key=lambda i: (-hits_in(paragraphs[i], terms), i))
    chunks = [paragraphs[i] for i in order]
    if page.table is not None:
        chunks.insert(1, json.dumps(page.table, ensure_ascii=False))
    snippets: list[str] = []
    spent = 0
    for chunk in chunks:
        if len(snippets) >= most:
            break
        left = budget - spent
        if tokens(chunk) > left:
            if chunk.startswith("{") or left < _MIN_SNIPPET_TOKENS:
                break
            chunk = clip(chunk, left * 4)
        snippets.append(chunk)
        spent += tokens(chunk)
    return snippets, spent


class BraveFake(FakeState):
    """FakeWeb's Brave routes (a mixin: ``self`` is the server)."""

    def _brave_headers(
        self,
        plan: BravePlan | None = None,
        remaining: tuple[int, int] | None = None,
        reset: tuple[int, int] | None = None,
    ) -> list[tuple[str, str]]:
        """The four two-window X-RateLimit-* headers (per second, per month)."""
        plan = plan or PLANS[self.brave_plan]
        with self._lock:
            in_window = self._clock() - self._window_start < 1
            used_now = self._window_count if in_window else 0
            billed = self._billed
        month_left = max(plan.per_month - billed, 0) if plan.per_month else 0
        remaining = remaining or (max(plan.per_second - used_now, 0), month_left)
        reset = reset or (1, self._month_reset())
        return [
            ("X-RateLimit-Limit", f"{plan.per_second}, {plan.per_month}"),
            ("X-RateLimit-Policy", f"{plan.per_second};w=1, {plan.per_month};w={MONTH_WINDOW}"),
            ("X-RateLimit-Remaining", f"{remaining[0]}, {remaining[1]}"),
            ("X-RateLimit-Reset", f"{reset[0]}, {reset[1]}"),
        ]

    def _month_reset(self) -> int:
        first = self.now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        following = (first + timedelta(days=32)).replace(day=1)
        return int((following - self.now).total_seconds())

    def _brave_error(
        self,
        status: int,
        code: str,
        detail: str,
        meta: dict[str, Any],
        headers: Sequence[tuple[str, str]] = (),
        form: str | None = None,
    ) -> Reply:
        """Brave's error body: live answers carry one ``error`` object; with ``form="array"``
        (the mode's option when not given) the reference pages' ``errors`` list instead."""
        error: dict[str, Any] = {
            "id": str(uuid.uuid4()),
            "status": status,
            "code": code,
            "detail": detail,
            "meta": meta,
        }
        listed = (form or self._option("brave", "form", "object")) == "array"
        payload: dict[str, Any] = {"type": "ErrorResponse"}
        payload.update({"errors": [error]} if listed else {"error": error})
        payload["time"] = self._epoch()
        tolerant = self._claim("brave", {"error_missing_fields"})
        if tolerant is not None:
            for name in tolerant.options.get("drop", ("id", "time", "code")):
                (payload if name == "time" else error).pop(name, None)
        return json_reply(status, payload, headers)

    def _brave_limited(self, mode: Mode) -> Reply:
        default_plan = self.brave_plan if mode.name == "rate_limited" else "free"
        plan = PLANS[mode.options.get("plan", default_plan)]
        with self._lock:
            billed = self._billed
        month_left = max(plan.per_month - billed, 0) if plan.per_month else 0
        extra = (
            [("Retry-After", str(mode.options["retry_after"]))]
            if "retry_after" in mode.options
            else []
        )
        if mode.name == "quota_limited":
            headers = self._brave_headers(plan, (plan.per_second, 0), (1, self._month_reset()))
            return self._brave_error(
                429,
                "QUOTA_LIMITED",
                "Request quota limit exceeded for plan.",
                {"component": "rate_limiter"},
                headers + extra,
                form=mode.options.get("form"),
            )
        reset_seconds = int(mode.options.get("reset_seconds", 1))
        headers = self._brave_headers(plan, (0, month_left), (reset_seconds, self._month_reset()))
        meta = {
            "plan": plan.name,
            "rate_limit": plan.per_second,
            "rate_current": plan.per_second,
            "quota_limit": plan.per_month,
            "quota_current": billed,
            "org_rate_limit": None,
            "org_rate_current": 0,
            "component": "rate_limiter",
        }
        return self._brave_error(
            429,
            "RATE_LIMITED",
            "Request rate limit exceeded for plan.",
            meta,
            headers + extra,
            form=mode.options.get("form"),
        )

    def _brave_admit(self) -> Reply | None:
        """The real limiter: the plan's per-second window, and its monthly quota when capped."""
        plan = PLANS[self.brave_plan]
        with self._lock:
            if plan.per_month and self._billed >= plan.per_month:
                over_quota = True
            else:
                over_quota = False
                now = self._clock()
                if now - self._window_start >= 1:
                    self._window_start, self._window_count = now, 0
                if self._window_count < plan.per_second:
                    self._window_count += 1
                    return None
        if over_quota:
            return self._brave_limited(Mode("quota_limited", {"plan": self.brave_plan}))
        return self._brave_limited(Mode("rate_limited"))

    def _brave(self, endpoint: str, req: Incoming) -> Reply:
        token = req.headers.get("x-subscription-token")
        if token is None:
            missing = pyd_error(
                "missing", ["header", "x-subscription-token"], "Field required", None
            )
            return self._brave_error(422, "VALIDATION", VALIDATION_DETAIL, {"errors": [missing]})
        if token not in self.brave_keys:
            return self._brave_error(
                422,
                "SUBSCRIPTION_TOKEN_INVALID",
                "The provided subscription token is invalid.",
                {"component": "authentication"},
            )
        refusal = self._claim("brave", {"not_in_plan"}) if endpoint == "llm/context" else None
        if refusal is not None:
            # A plan without LLM Context: 400 OPTION_NOT_IN_PLAN as reported live, or the
            # reference's 403 RESOURCE_NOT_ALLOWED; Web Search keeps working either way.
            code = refusal.options.get("code", "OPTION_NOT_IN_PLAN")
            status, detail, component = BRAVE_REFUSALS[code]
            return self._brave_error(
                status, code, detail, {"component": component}, form=refusal.options.get("form")
            )
        limited = self._claim("brave", {"rate_limited", "quota_limited"})
        if limited is not None:
            return self._brave_limited(limited)
        refused = self._brave_admit()
        if refused is not None:
            return refused
        params = read_params(endpoint, req, self.now)
        if params.errors:
            return self._brave_error(
                422, "VALIDATION", VALIDATION_DETAIL, {"errors": params.errors}
            )
        values = params.values
        hits = [] if self._claim("brave", {"empty"}) else self._search(values["q"])
        window = values["freshness"]
        if window is not None:
            hits = [h for h in hits if within(h.page.published_at, *window)]
        if endpoint == "web/search":
            payload = self._brave_web(values, hits)
        else:
            payload = self._brave_llm(values, hits)
        with self._lock:
            self._billed += 1
        return json_reply(200, payload, self._brave_headers())

    def _brave_web(self, values: dict[str, Any], hits: list[Hit]) -> dict[str, Any]:
        count, offset = values["count"], values["offset"]
        start = offset * count
        shown = hits[start : start + count]
        query = parse_query(values["q"])
        summary: dict[str, Any] = {
            "original": values["q"],
            "show_strict_warning": False,
            "is_navigational": False,
            "is_news_breaking": False,
            "spellcheck_off": not values["spellcheck"],
            "country": str(values["country"]).lower(),
            "bad_results": False,
            "should_fallback": False,
            "postal_code": "",
            "city": "",
            "header_country": "",
            "more_results_available": len(hits) > start + count,
            "state": "",
        }
        if query.sites:
            summary["search_operators"] = {
                "applied": True,
                "cleaned_query": " ".join(query.terms),
                "sites": list(query.sites),
            }
        payload: dict[str, Any] = {"type": "search", "query": summary}
        result_filter = values["result_filter"]
        wanted = result_filter is None or "web" in {
            part.strip() for part in result_filter.split(",")
        }
        results = [self._brave_result(hit, values) for hit in shown] if wanted else []
        payload["mixed"] = {
            "type": "mixed",
            "main": [{"type": "web", "index": i, "all": False} for i in range(len(results))],
            "top": [],
            "side": [],
        }
        if results:
            payload["web"] = {"type": "search", "results": results, "family_friendly": True}
        return payload

    def _brave_result(self, hit: Hit, values: dict[str, Any]) -> dict[str, Any]:
        page = hit.page
        parts = urlsplit(page.url)
        host = parts.hostname or ""
        favicon = f"https://imgs.search.brave.com/fakeweb/favicon/{host or 'none'}.png"
        description = snippet(page.text, hit.terms)
        if values["text_decorations"]:
            description = decorate(description, hit.terms)
        segments = [s for s in parts.path.split("/") if s]
        result: dict[str, Any] = {
            "title": page.title or host or page.url,
            "url": page.url,
            "is_source_local": False,
            "is_source_both": False,
            "description": description,
        }
        published = page.published_at
        if published is not None:
            result["page_age"] = utc(published).strftime("%Y-%m-%dT%H:%M:%S")
        result.update(
            {
                "profile": {
                    "name": site_name(host),
                    "url": page.url,
                    "long_name": host,
                    "img": favicon,
                },
                "language": page.language,
                "family_friendly": True,
                "type": "search_result",
                "subtype": "generic",
                "is_live": False,
                "meta_url": {
                    "scheme": parts.scheme,
                    "netloc": parts.netloc,
                    "hostname": host,
                    "favicon": favicon,
                    "path": ("\u203a " + " \u203a ".join(segments)) if segments else "",
                },
            }
        )
        if page.image:
            digest = f"{zlib.crc32(page.image.encode()):08x}"
            result["thumbnail"] = {
                "src": f"https://imgs.search.brave.com/fakeweb/thumb/{digest}.jpg",
                "original": page.image,
                "logo": False,
            }
        if published is not None:
            result["age"] = relative_age(published, self.now)
        if values["extra_snippets"]:
            extras = [
                clip(s, 200)
                for s in split_sentences(page.text)
                if s not in description and hits_in(s, hit.terms)
            ][:5]
            if extras:
                result["extra_snippets"] = extras
        if values["include_fetch_metadata"]:
            result["fetched_content_timestamp"] = int(self.now.timestamp()) - 86_400
        return result

    def _brave_llm(self, values: dict[str, Any], hits: list[Hit]) -> dict[str, Any]:
        floor = THRESHOLD_COVERAGE[values["context_threshold_mode"]]
        chosen = [h for h in hits[: values["count"]] if h.coverage >= floor]
        chosen = chosen[: values["maximum_number_of_urls"]]
        tokens_left = values["maximum_number_of_tokens"]
        snippets_left = values["maximum_number_of_snippets"]
        generic: list[dict[str, Any]] = []
        sources: dict[str, Any] = {}
        for hit in chosen:
            if tokens_left < _MIN_SNIPPET_TOKENS or snippets_left <= 0:
                break
            page = hit.page
            snippets: list[str] = []
            if "empty_snippets" not in page.quirks:
                budget = min(values["maximum_number_of_tokens_per_url"], tokens_left)
                most = min(values["maximum_number_of_snippets_per_url"], snippets_left)
                snippets, spent = _llm_snippets(page, hit.terms, budget, most)
                tokens_left -= spent
                snippets_left -= len(snippets)
            generic.append({"url": page.url, "title": page.title or "", "snippets": snippets})
            if "no_source" not in page.quirks:
                sources[page.url] = self._llm_source(page, values["enable_source_metadata"])
        return {"grounding": {"generic": generic, "map": []}, "sources": sources}

    def _llm_source(self, page: Page, metadata: bool) -> dict[str, Any]:
        host = hostname(page.url)
        published = page.published_at
        age = None
        if published is not None:
            day = utc(published)
            days = (self.now.date() - day.date()).days
            age = [
                f"{day:%A}, {day:%B} {day.day}, {day.year}",
                day.date().isoformat(),
                f"{days} days ago",
            ]
        source: dict[str, Any] = {"title": page.title or "", "hostname": host, "age": age}
        if metadata:
            source["site_name"] = site_name(host)
            source["favicon"] = f"https://imgs.search.brave.com/fakeweb/favicon/{host}.png"
            if page.image:
                source["thumbnail"] = {"src": page.image, "original": page.image}
        return source
