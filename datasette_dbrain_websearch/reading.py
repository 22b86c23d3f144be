"""Reading the top web results' pages before the answer cites them.

A web row's text is whatever the provider returned: a snippet, a few highlights. A search result
is not citable until its page is read, so with ``read: N`` the run fetches the top N pages
through the SSRF-guarded fetcher and extractor (or a reader service, ``read_via``), in parallel
within what is left of the web stage's time, cached like provider answers and counted in the
ledger. A page that cannot be read leaves its row on the provider's snippet, with a warning
that names it.

Bounds: at most ``MAX_READ`` pages per request and ``MAX_READ`` being read at once per actor,
``MAX_READING`` for everyone together (and the bodies they hold, ``fetch.MAX_HELD_BYTES``);
each page's fetch and extraction share one deadline (the extraction runs in a worker process
that is killed when it passes, see ``extraction.ExtractPool``). A page is sent to ``read_via``
only if the fetcher's own public-host policy would let it fetch the page itself
(``public_hosts.host_refusal``), and in the form that policy judged (``sendable_url``: the host
as the reader's URL parser reads it, so ``127.0.0.①`` is judged as 127.0.0.1); a name that does
not resolve here is not sent unless ``read_unresolved`` says so. The reader's address is trusted
because the configuration names it, which admits no result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from . import ledger, provider_cache
from .config import WebSettings
from .extraction import extractor_missing
from .fetch import FetchResult, fetch_page
from .providers.base import WebResult
from .public_hosts import HostRefused, host_refusal, sendable_url

LEDGER_NAME = "page_read"  # the ledger's "provider" for page reads (they cost nothing)
MAX_READ = 10  # pages per request, and pages being read at once for one actor
MAX_READING = 24  # pages being read at once for everyone (each holds its body, then a worker)
PAGE_TIMEOUT = 15.0  # seconds for one page, when the stage has that much left
MIN_SECONDS = 1.0  # less time than this left: the pages are not read at all
PAGE_CHARS = 20_000  # what the answer's passages and verifier see of a read page


@dataclass(frozen=True)
class Page:
    """A read page: its extracted text, or why it could not be read."""

    url: str
    ok: bool
    text: str = ""
    title: str = ""
    error: str = ""
    cached: bool = False


@dataclass
class ReadOutcome:
    pages: dict[str, Page] = field(default_factory=dict)
    warnings: list[dict[str, str]] = field(default_factory=list)
    ledger: list[dict[str, Any]] = field(default_factory=list)
    elapsed_ms: float = 0.0


def reader_url(url: str, via: str) -> str:
    """Where a page is read from: the page itself, or a reader service given its URL."""
    return f"{via}{url}" if via else url


def page_of(url: str, fetched: FetchResult) -> Page:
    """A fetch as a page; its heading, when it repeats the title, is not its text."""
    text = fetched.text.strip()
    if fetched.title and text.startswith(fetched.title):
        text = text[len(fetched.title) :].lstrip()
    if fetched.ok and text:
        return Page(url, True, text[:PAGE_CHARS], fetched.title)
    return Page(url, False, error=fetched.error or "the page has no main text")


# Pages being read now, per actor id ("" for anonymous visitors, who share one allowance).
_reading: dict[str, int] = {}


class PageReader:
    """Reads pages for one run: cache first, then the fetcher, all at once."""

    def __init__(
        self,
        settings: WebSettings,
        cache_db: Any | None,
        actor_id: str = "",
        run_id: str = "",
    ) -> None:
        self.settings = settings
        self.cache_db = cache_db
        self.actor_id = actor_id
        self.run_id = run_id

    async def read(self, urls: Sequence[str], seconds_left: float) -> ReadOutcome:
        outcome = ReadOutcome()
        if not urls:
            return outcome
        missing = extractor_missing()
        if missing:
            outcome.warnings.append({"code": "page_read_unavailable", "message": missing})
            return outcome
        if seconds_left < MIN_SECONDS:
            outcome.warnings.append(
                {
                    "code": "page_read_skipped",
                    "message": "The web search used the run's time: no page was read, so web rows "
                    "rest on the providers' snippets.",
                }
            )
            return outcome
        started = time.monotonic()
        timeout = min(PAGE_TIMEOUT, seconds_left)
        busy, everyone = _reading.get(self.actor_id, 0), sum(_reading.values())
        room = min(MAX_READ - busy, MAX_READING - everyone)
        taken = list(urls)[: max(0, room)]
        if len(taken) < len(urls):
            why = (
                f"{busy} pages were being read for you already (at most {MAX_READ} at once)"
                if MAX_READ - busy <= MAX_READING - everyone
                else f"the server is reading {everyone} pages for others (at most "
                f"{MAX_READING} at once)"
            )
            outcome.warnings.append(
                {
                    "code": "page_read_skipped",
                    "message": f"{len(urls) - len(taken)} of {len(urls)} pages were not read: "
                    f"{why}, so those rows rest on the providers' snippets.",
                }
            )
        if not taken:
            return outcome
        _reading[self.actor_id] = busy + len(taken)
        try:
            pages = await asyncio.gather(*(self._one(url, timeout, outcome) for url in taken))
        finally:
            left = _reading.get(self.actor_id, 0) - len(taken)
            if left > 0:
                _reading[self.actor_id] = left
            else:
                _reading.pop(self.actor_id, None)
        outcome.pages = {page.url: page for page in pages}
        failed = [page for page in pages if not page.ok]
        if failed:
            named = "; ".join(f"{urlsplit(p.url).hostname}: {p.error}" for p in failed)
            outcome.warnings.append(
                {
                    "code": "page_read_failed",
                    "message": f"Could not read {len(failed)} of {len(pages)} pages ({named}); "
                    "those rows rest on the provider's snippet.",
                }
            )
        await self._record(outcome)
        outcome.elapsed_ms = round((time.monotonic() - started) * 1000, 3)
        return outcome

    async def _one(self, url: str, timeout: float, outcome: ReadOutcome) -> Page:
        via = self.settings.read_via
        deadline = time.monotonic() + timeout
        try:  # checked and sent in one form: the host as the reader will read it
            sent = sendable_url(url)
        except HostRefused as refused:
            return Page(url, False, error=f"refused: {refused}")
        if via:
            # The reader fetches what it is given: only what the fetcher itself would fetch.
            refusal = await host_refusal(
                sent,
                self.settings.fetch_allow_networks,
                timeout,
                unresolved=self.settings.read_unresolved,
            )
            if refusal:
                return Page(url, False, error=refusal)
        key = provider_cache.cache_key(LEDGER_NAME, {"url": url, "via": via})
        cached = await self._cached(key)
        if cached is not None:
            return Page(url, True, cached.text, cached.title, cached=True)
        target = reader_url(sent, via)
        started = time.monotonic()
        fetched = await fetch_page(
            target,
            timeout=max(0.0, deadline - started),
            allow_networks=self.settings.fetch_allow_networks,
            trusted_origin=via,
            requester=self.actor_id,
        )
        outcome.ledger.extend(
            ledger.rows_for(
                LEDGER_NAME,
                [
                    {
                        "endpoint": urlsplit(target).hostname or "",
                        "status": fetched.status or 0,
                        "error": fetched.failure_kind,
                        "latency_ms": (time.monotonic() - started) * 1000,
                    }
                ],
                1 if fetched.ok else 0,
                0.0,
                self.actor_id,
                self.run_id,
            )
        )
        page = page_of(url, fetched)
        if page.ok:
            await self._remember(key, page)
        return page

    async def _cached(self, key: str) -> WebResult | None:
        if not self.settings.cache_ttl or self.cache_db is None:
            return None
        try:
            found = await provider_cache.cache_get(self.cache_db, key)
        except Exception:  # a locked or read-only plugin database: read the page instead
            return None
        return found[0] if found else None

    async def _remember(self, key: str, page: Page) -> None:
        if not self.settings.cache_ttl or self.cache_db is None:
            return
        params = {"query": page.url, "via": self.settings.read_via}
        result = WebResult(url=page.url, title=page.title, text=page.text)
        try:
            await provider_cache.cache_put(
                self.cache_db, key, LEDGER_NAME, params, [result], self.settings.cache_ttl
            )
        except Exception:  # the page was read; only the next run pays again
            return

    async def _record(self, outcome: ReadOutcome) -> None:
        if self.cache_db is None or not outcome.ledger:
            return
        try:
            await ledger.record(self.cache_db, outcome.ledger)
        except Exception as exc:  # a locked plugin database must not cost the run
            outcome.warnings.append(
                {
                    "code": "provider_ledger_failed",
                    "message": f"The page reads could not be recorded ({type(exc).__name__}).",
                }
            )


def read_targets(canonical_urls: Sequence[str], count: int) -> list[str]:
    """The pages to read: the top ``count`` web rows', in their order, each once."""
    return list(dict.fromkeys(canonical_urls))[: max(0, min(count, MAX_READ))]
