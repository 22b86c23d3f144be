"""The fake SearXNG: its JSON API, bot limiter, languages and engines."""

from __future__ import annotations

import html
import re
import zlib
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

from ..corpus import Page
from .common import (
    HTML,
    FakeState,
    Hit,
    Incoming,
    Reply,
    html_error,
    json_reply,
    snippet,
    text_reply,
    utc,
    within,
)

_FORBIDDEN = (
    "You don&#39;t have the permission to access the requested resource. "
    "It is either read-protected or not readable by the server."
)


_TIME_RANGE_DAYS = {"day": 1, "week": 7, "month": 31, "year": 365}


_SEARXNG_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[a-zA-Z]{2})?$")


_SEARXNG_CATEGORY = {"paper": "science", "github": "it", "news": "news", "wiki": "general"}


_ENGINE_SETS = (
    ["duckduckgo", "brave"],
    ["startpage"],
    ["brave", "bing", "duckduckgo"],
    ["qwant", "duckduckgo"],
)


def _engines(page: Page) -> list[str]:
    if page.kind == "wiki":
        return ["wikipedia", "duckduckgo"]
    if page.kind == "paper":
        return ["arxiv", "google scholar"]
    if page.kind == "github":
        return ["github", "duckduckgo"]
    return list(_ENGINE_SETS[zlib.crc32(page.url.encode()) % len(_ENGINE_SETS)])


def _searxng_html(q: str, results: list[dict[str, Any]]) -> str:
    """A bare results page: what a client that forgot ``format=json`` gets back."""
    articles = "".join(
        f'<article class="result"><h3><a href="{html.escape(r["url"])}">'
        f"{html.escape(r['title'])}</a></h3><p>{html.escape(r['content'])}</p></article>"
        for r in results
    )
    return (
        f"<!DOCTYPE html><html><head><title>{html.escape(q)} - SearXNG</title></head>"
        f"<body>{articles}</body></html>"
    )


class SearxngFake(FakeState):
    """FakeWeb's SearXNG routes (a mixin: ``self`` is the server)."""

    def _searxng(self, req: Incoming) -> Reply:
        limited = self._claim("searxng", {"rate_limited"})
        if limited is not None:
            reply = text_reply(429, "Too Many Requests")
            if "retry_after" in limited.options:
                reply.headers.append(("Retry-After", str(limited.options["retry_after"])))
            return reply
        params = {k: v[-1] for k, v in req.query.items()}
        if req.method == "POST":
            form = parse_qs(req.body.decode("utf-8", "replace"), keep_blank_values=True)
            params.update({k: v[-1] for k, v in form.items()})
        output = params.get("format", "html")
        if output not in ("html", "csv", "json", "rss"):
            output = "html"
        if output in ("csv", "rss") or (
            output == "json" and self._claim("searxng", {"json_disabled"})
        ):
            return html_error(403, "Forbidden", _FORBIDDEN)
        q = params.get("q", "")
        if not q:
            if output == "html":
                return text_reply(200, _searxng_html("", []), HTML)
            return json_reply(400, {"error": "No query"})
        language = params.get("language", "all")
        if language != "auto" and not _SEARXNG_LANGUAGE.match(language):
            return json_reply(400, {"error": f'Invalid value "{language}" for parameter language'})
        language = language.lower()
        pageno_raw = params.get("pageno", "1")
        time_range = params.get("time_range", "")
        if not pageno_raw.isdigit() or int(pageno_raw) < 1:
            return json_reply(400, {"error": f'Invalid value "{pageno_raw}" for parameter pageno'})
        if time_range not in ("", "day", "week", "month", "year"):
            return json_reply(
                400, {"error": f'Invalid value "{time_range}" for parameter time_range'}
            )
        categories = [c.strip() for c in params.get("categories", "").split(",") if c.strip()]
        localized = self._claim("searxng", {"localized_dates"}) is not None
        hits = [] if self._claim("searxng", {"empty"}) else self._search(q)
        selected: list[tuple[Hit, str | None]] = []
        for hit in hits:
            page = hit.page
            if time_range and not within(
                page.published_at, self.now - timedelta(days=_TIME_RANGE_DAYS[time_range]), self.now
            ):
                continue
            if language not in ("", "all", "auto") and not page.language.startswith(
                language.split("-")[0]
            ):
                continue
            own = {"general", _SEARXNG_CATEGORY.get(page.kind, "general")}
            chosen = next((c for c in categories if c in own), None)
            if categories and chosen is None:
                continue
            selected.append((hit, chosen))
        pageno = int(pageno_raw)
        shown = selected[(pageno - 1) * 10 : pageno * 10]
        results = [
            self._searxng_result(hit, (pageno - 1) * 10 + i + 1, chosen, localized)
            for i, (hit, chosen) in enumerate(shown)
        ]
        if output == "html":
            return text_reply(200, _searxng_html(q, results), HTML)
        return json_reply(
            200,
            {
                "query": q,
                "number_of_results": len(selected),
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            },
        )

    def _searxng_result(
        self, hit: Hit, position: int, category: str | None, localized: bool = False
    ) -> dict[str, Any]:
        page = hit.page
        engines = _engines(page)
        published = page.published_at
        result: dict[str, Any] = {
            "url": page.url,
            "title": page.title or page.url,
            "content": snippet(page.text, hit.terms),
            "engine": engines[0],
            "template": "default.html",
            "parsed_url": list(urlparse(page.url)),
            "engines": engines,
            "positions": [position],
            "publishedDate": None,
            "score": round(len(engines) / position, 4),
            "category": category or "general",
            "priority": "",
            "thumbnail": page.image or "",
            "img_src": "",
        }
        if published is not None:
            result.update(self._searxng_dates(page, published, localized))
        return result

    def _searxng_dates(self, page: Page, published: datetime, localized: bool) -> dict[str, str]:
        """``publishedDate`` as an instance of either era sends it, and ``pubdate`` as both do.

        Engines give naive or zone-aware datetimes (here: papers and news are aware), which
        is why the ISO form only sometimes ends in ``+00:00`` and ``pubdate`` in ``+0000``.
        Before mid-2023 the JSON carried the HTML page's localized text instead: "N minute(s)
        ago" or "N hour(s), M minute(s) ago" within a day, else Babel's medium date."""
        moment = utc(published)
        if page.kind not in ("paper", "news"):
            moment = moment.replace(tzinfo=None)
        dates = {"pubdate": moment.strftime("%Y-%m-%d %H:%M:%S%z")}
        if not localized:
            dates["publishedDate"] = moment.isoformat()
            return dates
        age = self.now.replace(tzinfo=None) - utc(published).replace(tzinfo=None)
        if age.days >= 1:
            dates["publishedDate"] = f"{moment:%b} {moment.day}, {moment.year}"
            return dates
        hours, minutes = int(age.seconds / 3600), int((age.seconds / 60) % 60)
        dates["publishedDate"] = (
            f"{minutes} minute(s) ago"
            if hours == 0
            else f"{hours} hour(s), {minutes} minute(s) ago"
        )
        return dates
