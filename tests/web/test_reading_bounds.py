"""Reading pages is bounded, and a page reader is only sent what the fetcher would fetch itself.

Extraction runs in a worker process under the fetch's deadline (a huge nested page or a stalled
extractor is cut there, the worker killed and the next page still read); ``read`` is capped per
request and per actor; ``read_via`` resolves each page's host and applies the fetcher's public-host
policy before asking the reader, whose own address (trusted because the configuration names it)
admits no search result. No test here bounds the time it takes or needs anything done within a
few seconds: each cuts something that would otherwise run for a minute or more, and asserts the
decision (the failure's kind, the worker killed), with the pool's clock held still where the
deadline itself is what is tested.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from datasette_dbrain_websearch import extraction, fetch, guarded_transport, public_hosts, reading
from datasette_dbrain_websearch.config import WebSettings
from datasette_dbrain_websearch.demo.fakeweb.pages import PageServer, nested_page
from datasette_dbrain_websearch.extraction import ExtractionTimeout, ExtractPool, FairSlots
from datasette_dbrain_websearch.fetch import fetch_page
from datasette_dbrain_websearch.providers import Provider, WebResult
from datasette_dbrain_websearch.public_hosts import host_refusal
from datasette_dbrain_websearch.reading import MAX_READ, MAX_READING, PageReader

from ..helpers import registered, web_datasette, web_pack

PAGE_HOST = "127.0.0.2"
ALLOW = (f"{PAGE_HOST}/32",)
PUBLIC = "93.184.215.14"  # a public address, as a resolver would answer for a real site
ARTICLE = (
    "<html><head><title>Lattice QCD notes</title></head><body><article>"
    + "<p>Lattice QCD puts quarks and gluons on a grid of points in space and time.</p>" * 12
    + "</article></body></html>"
).encode()


def skim(markup: bytes, *args: Any) -> tuple[str, str, str, str]:
    """A quick extractor (run in the worker): the page's size, not its text."""
    return "t", "", "", f"{len(markup)} bytes of lattice qcd"


def stall(*args: Any) -> tuple[str, str, str, str]:
    """An extractor that never finishes in time (run in the worker, which must be killed)."""
    time.sleep(120)
    return "", "", "", "too late"


def resident_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child may linger as a zombie until reaped; that holds no memory.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = PageServer(PAGE_HOST, {"/nested": nested_page(4.9)}, ARTICLE)
    yield server.start()
    server.stop()


async def test_a_huge_nested_page_is_cut_at_the_deadline_and_the_next_page_reads(site):
    before = resident_mb()
    killed = extraction._POOL.killed
    # 4.9 MB of nested blocks: minutes of extraction, and hundreds of MB, in a thread before.
    # Left to finish it would succeed; the failure says it was cut.
    result = await fetch_page(f"{site}/nested", timeout=5, allow_networks=ALLOW)
    assert (result.ok, result.failure_kind) == (False, "timeout"), result
    assert result.error.startswith("timed out after 5 s")
    # The extraction ran (and was killed) in a worker: this process holds the page, no tree.
    assert resident_mb() - before < 150
    if "extracting" in result.error:  # (under heavy load the download itself may be what timed out)
        assert extraction._POOL.killed == killed + 1
    after = await fetch_page(f"{site}/article", allow_networks=ALLOW)
    assert after.ok and "quarks and gluons" in after.text, after


def test_a_stalled_extractor_is_killed_at_the_deadline_and_its_worker_replaced():
    """The pool's clock stands a second before the deadline, however long starting the worker
    takes, so its one real wait (for the answer) is that second; the extractor stalls for two
    minutes, so no answer comes: the worker is killed and counted, and the next page gets a
    new one."""
    pool = ExtractPool(size=1)
    try:
        pool.warm()
        (pid,) = pool.pids()
        with pytest.raises(ExtractionTimeout, match="passed the deadline"):
            pool.run(stall, (), deadline=101.0, clock=lambda: 100.0)
        assert (pool.started, pool.killed, pool.pids()) == (1, 1, [])
        assert not alive(pid)
        args = (ARTICLE, "text/html", "utf-8", "https://lattice.example/")
        read = pool.run(extraction._extract, args, deadline=time.monotonic() + 60)
        assert "quarks and gluons" in read[3]
        assert pool.started == 2 and pool.pids() not in ([], [pid])
    finally:
        pool.close()


async def test_an_extraction_cut_at_the_fetchs_deadline_is_a_timeout(site, monkeypatch):
    """The extraction gets the fetch's own deadline, and its cut is the fetch's ``timeout``;
    the next page is read as ever."""
    given: list[float] = []

    async def cut(body: Any, deadline: float, max_markup: int, requester: str) -> tuple[str, ...]:
        given.append(deadline)
        raise ExtractionTimeout("the extraction passed the deadline")

    monkeypatch.setattr(fetch, "extract_within", cut)
    before = time.monotonic()
    result = await fetch_page(f"{site}/article", timeout=30, allow_networks=ALLOW)
    after = time.monotonic()
    assert (result.ok, result.failure_kind) == (False, "timeout"), result
    assert result.error == "timed out after 30 s extracting the page's text"
    (deadline,) = given
    assert before + 30 <= deadline <= after + 30
    monkeypatch.undo()
    read = await fetch_page(f"{site}/article", allow_networks=ALLOW)
    assert read.ok and "quarks and gluons" in read.text, read


def test_the_deadline_is_decided_on_the_clock_given():
    pool = ExtractPool(size=1)
    now = [100.0]
    try:
        # The deadline has passed by the clock: nothing is started, nothing waits.
        with pytest.raises(ExtractionTimeout):
            pool.run(stall, (), deadline=99.0, clock=lambda: now[0])
        assert pool.started == 0
        # The only worker slot is busy and the deadline is now: no waiting for it either.
        assert pool._slots.acquire("someone", 0)
        with pytest.raises(ExtractionTimeout):
            pool.run(stall, (), deadline=100.0, clock=lambda: now[0])
        pool._slots.release("someone")
        assert pool.started == 0
    finally:
        pool.close()


def test_extraction_turns_go_to_the_requester_holding_fewest():
    """Two workers, one person's pages in both and two more waiting: another person's one
    page, come last, is extracted next, before the first person's waiting ones."""
    slots = FairSlots(2)
    assert slots.acquire("heavy", 0) and slots.acquire("heavy", 0)
    order: list[str] = []

    def wait_turn(requester: str) -> None:
        if slots.acquire(requester, 60):
            order.append(requester)
            slots.release(requester)

    def waiting(count: int) -> None:
        for _ in range(1000):  # a bound on polling, not a duration asserted
            if len(slots.waiting) == count:
                return
            time.sleep(0.01)
        raise AssertionError(slots.waiting)

    threads = [threading.Thread(target=wait_turn, args=("heavy",)) for _ in range(2)]
    for thread in threads:
        thread.start()
    waiting(2)
    threads.append(threading.Thread(target=wait_turn, args=("light",)))
    threads[-1].start()
    waiting(3)
    slots.release("heavy")  # one worker frees: the light requester's turn, though it came last
    for thread in threads:
        thread.join(10)
    assert order == ["light", "heavy", "heavy"]
    slots.release("heavy")
    assert not slots.held and not slots.waiting


def test_a_worker_left_holding_memory_is_replaced():
    pool = ExtractPool(size=1, retire_rss=0)  # every worker holds more than nothing
    try:
        args = (ARTICLE, "text/html", "utf-8", "https://lattice.example/")
        first = pool.run(extraction._extract, args, deadline=time.monotonic() + 60)
        assert "quarks and gluons" in first[3]
        assert (pool.started, pool.retired, pool.pids()) == (1, 1, [])
        pool.retire_rss = 1 << 40
        pool.run(extraction._extract, args, deadline=time.monotonic() + 60)
        (pid,) = pool.pids()
        pool.run(extraction._extract, args, deadline=time.monotonic() + 60)
        assert (pool.started, pool.retired, pool.pids()) == (2, 1, [pid])  # kept, and reused
    finally:
        pool.close()


async def test_an_actor_reads_at_most_max_read_pages_at_once(site, monkeypatch):
    monkeypatch.setitem(reading._reading, "alice", MAX_READ - 1)
    reader = PageReader(WebSettings(fetch_allow_networks=ALLOW), None, actor_id="alice")
    urls = [f"{site}/article?{i}" for i in range(3)]
    outcome = await reader.read(urls, 30)
    assert list(outcome.pages) == urls[:1] and outcome.pages[urls[0]].ok
    (warning,) = outcome.warnings
    assert warning["code"] == "page_read_skipped" and "2 of 3 pages" in warning["message"]
    assert reading._reading["alice"] == MAX_READ - 1  # its own reads are given back
    # Another actor is not held up by alice's reads.
    other = await PageReader(WebSettings(fetch_allow_networks=ALLOW), None, "bob").read(urls, 30)
    assert len(other.pages) == 3 and not other.warnings and "bob" not in reading._reading


async def test_everyone_together_reads_at_most_max_reading_pages_at_once(site, monkeypatch):
    """Many people's reads at once: past ``MAX_READING`` pages for everyone, a new reader's
    pages wait for none and rest on their snippets, told why."""
    for n in range(MAX_READING // 2):  # others, each well within their own allowance
        monkeypatch.setitem(reading._reading, f"other{n}", 2)
    urls = [f"{site}/article?{i}" for i in range(2)]
    outcome = await PageReader(WebSettings(fetch_allow_networks=ALLOW), None, "carol").read(
        urls, 30
    )
    assert outcome.pages == {}
    (warning,) = outcome.warnings
    assert f"reading {MAX_READING} pages for others" in warning["message"]
    monkeypatch.setitem(reading._reading, "other0", 1)  # one of theirs finishes: one page read
    outcome = await PageReader(WebSettings(fetch_allow_networks=ALLOW), None, "carol").read(
        urls, 30
    )
    assert list(outcome.pages) == urls[:1] and outcome.pages[urls[0]].ok


async def test_page_bodies_held_for_everyone_are_capped(site, monkeypatch):
    """The bodies fetches hold, read or waiting for extraction, stay under
    ``MAX_HELD_BYTES`` together: a page that would pass it is left unread (and says so), and
    every fetch gives back what it held."""
    monkeypatch.setattr(fetch.Held, "total", fetch.MAX_HELD_BYTES - 100)  # others' bodies
    full = await fetch_page(f"{site}/article", allow_networks=ALLOW)
    assert (full.ok, full.error) == (False, fetch.SERVER_FULL)
    assert fetch.Held.total == fetch.MAX_HELD_BYTES - 100  # what it took was given back
    monkeypatch.setattr(fetch.Held, "total", 0)
    read = await fetch_page(f"{site}/article", allow_networks=ALLOW)
    assert read.ok and fetch.Held.total == 0


def test_memory_is_given_back_only_when_nothing_is_held_and_enough_was(monkeypatch):
    trims: list[int] = []
    monkeypatch.setattr(fetch, "release_memory", lambda: trims.append(1))
    monkeypatch.setattr(fetch.Held, "total", 1)
    monkeypatch.setattr(fetch.Held, "since_trim", fetch.TRIM_AFTER_BYTES)
    assert not fetch.trim_if_idle() and trims == []  # someone's body is still held
    fetch.Held.total = 0
    fetch.Held.since_trim = fetch.TRIM_AFTER_BYTES - 1
    assert not fetch.trim_if_idle() and trims == []  # too little read to be worth it
    fetch.Held.since_trim = fetch.TRIM_AFTER_BYTES
    assert fetch.trim_if_idle() and trims == [1]
    assert fetch.Held.since_trim == 0 and not fetch.trim_if_idle() and trims == [1]


async def test_thirty_people_reading_at_once_leave_memory_as_it_was(site, monkeypatch):
    """Issue 42: 30 people's readers at once, 3 nested 4.9 MB pages each. No more than
    ``MAX_READING`` pages are read and ``MAX_HELD_BYTES`` of bodies held at any moment, and
    once the last body is given back the server returns to within 100 MB of before (it stayed
    2 GB larger). A quick extractor stands in: memory here is about the bodies this process
    holds, not the extraction, which runs in worker processes."""
    monkeypatch.setattr(extraction, "_EXTRACTOR", skim)
    monkeypatch.setattr(fetch, "TRIM_DELAY_S", 0)
    trims: list[int] = []
    release = fetch.release_memory
    monkeypatch.setattr(fetch, "release_memory", lambda: (trims.append(1), release()))
    settings = WebSettings(fetch_allow_networks=ALLOW)
    warm = await PageReader(settings, None, "warm").read([f"{site}/nested?warm"], 60)
    assert warm.pages[f"{site}/nested?warm"].ok
    fetch.trim_if_idle()
    before = resident_mb()
    peaks = {"held": 0, "reading": 0}

    def watch() -> None:
        peaks["held"] = max(peaks["held"], fetch.Held.total)
        peaks["reading"] = max(peaks["reading"], sum(reading._reading.values()))

    async def person(n: int) -> reading.ReadOutcome:
        urls = [f"{site}/nested?{n}-{i}" for i in range(3)]
        return await PageReader(settings, None, f"person{n}").read(urls, 60)

    watcher = threading.Event()

    def sample() -> None:
        while not watcher.wait(0.005):
            watch()

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        outcomes = await asyncio.gather(*(person(n) for n in range(30)))
    finally:
        watcher.set()
        sampler.join()
    read = sum(p.ok for o in outcomes for p in o.pages.values())
    assert read >= 3, "some pages are read"
    assert 0 < peaks["reading"] <= MAX_READING
    assert 0 < peaks["held"] <= fetch.MAX_HELD_BYTES
    assert fetch.Held.total == 0 and not reading._reading
    for _ in range(600):  # the trim runs on the loop's executor once the last body is back
        if trims:
            break
        await asyncio.sleep(0.05)
    assert trims, "the last body given back led to a trim"
    assert resident_mb() - before <= 100


@pytest.fixture
def dns(monkeypatch):
    """Made-up names answer from ``answers``; any other name does not exist."""
    answers: dict[str, list[str]] = {}

    async def resolve(host: str, port: int, **kwargs: Any) -> list[Any]:
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in answers[host]]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(public_hosts, "_getaddrinfo", resolve)
    return answers


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/x",
        "http://[::1]:8080/x",
        "http://2130706433/x",
        "http://0x7f.1/x",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.5/x",
        "http://localhost/x",
        "http://reader.localhost/x",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://metadata/computeMetadata/v1/",
        "http://printer.local/",
        "http://router.home.arpa/",
        "http://loopback.example/x",  # resolves to 127.0.0.1
        "http://mixed.example/x",  # one public address, one private: a rebinding setup
        "http://gcp.example/x",  # resolves to the metadata address
        "file:///etc/passwd",
    ],
)
async def test_a_reader_is_not_asked_for_a_page_the_fetcher_would_refuse(dns, url):
    dns.update(
        {
            "loopback.example": ["127.0.0.1"],
            "mixed.example": [PUBLIC, "10.0.0.1"],
            "gcp.example": ["169.254.169.254"],
            "metadata.google.internal": ["169.254.169.254"],
        }
    )
    assert await host_refusal(url)


async def test_a_reader_is_asked_for_public_pages(dns):
    dns.update({"lattice.example": [PUBLIC], "wiki.corp.example": ["10.1.2.3"]})
    assert await host_refusal("https://lattice.example/qcd") == ""
    assert await host_refusal("http://8.8.8.8/") == ""
    # A name that resolves nowhere here may resolve inside the reader's network: refused,
    # unless read_unresolved says this server cannot resolve names (and then never internal).
    assert (
        await host_refusal("https://nowhere.example/") == "refused: the name does not resolve here"
    )
    assert await host_refusal("https://nowhere.example/", unresolved=True) == ""
    assert await host_refusal("http://metadata.google.internal/", unresolved=True)
    # fetch_allow_networks (a network whose results are wanted) is honoured, as for fetches.
    assert await host_refusal("http://wiki.corp.example/", ["10.0.0.0/8"]) == ""
    assert await host_refusal("http://wiki.corp.example/")
    # An internal name is refused even when it resolves nowhere here.
    assert await host_refusal("http://metadata.google.internal/")


class Hosts(Provider):
    """Results on every kind of host: one public page the reader holds, the rest internal."""

    name, label = "hosts", "Hosts"

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls

    async def search(self, request, ctx):
        return [
            WebResult(url=url, title="Lattice QCD", snippet="Lattice QCD on a grid.", rank=i)
            for i, url in enumerate(self.urls, start=1)
        ]


async def test_read_via_sends_only_public_pages_and_its_own_address_admits_no_result(
    brain, fake, dns, monkeypatch
):
    public = next(p.url for p in fake.pages if "lattice qcd" in (p.title or "").lower())
    reader_port = fake.url.rsplit(":", 1)[1]
    dns.update({public.split("/")[2]: [PUBLIC], "loopback.example": ["127.0.0.1"]})
    internal_names = [
        "http://loopback.example/lattice",
        "http://metadata.google.internal/computeMetadata/v1/lattice",
    ]
    literals = [
        f"http://127.0.0.1:{reader_port}/lattice",  # the reader's own address and port
        "http://localhost/lattice",
        "http://[::1]/lattice",
        "http://2130706433/lattice",
    ]
    with registered(Hosts([public, *internal_names, *literals])):
        # No fetch_allow_networks: the reader needs none, being named by read_via.
        ds = await web_datasette(brain, fake, providers=["hosts"], read_via=f"{fake.url}/reader/")
        pack = await web_pack(ds, "lattice qcd", read="10")
    asked = [r.path for r in fake.requests if r.provider == "reader"]
    assert asked == [f"/reader/{public}"]
    rows = {r["url"]: r for r in pack["external_evidence"]}
    assert rows[public]["depth"] == "page"
    # Literals on loopback (the reader's network included) never become rows at all.
    assert not [url for url in rows if "127.0.0.1" in url or "localhost" in url or "[::1]" in url]
    assert any(w["code"] == "external_url_not_public" for w in pack["warnings"])
    read = {r["url"]: r for r in pack["external_search"]["read"]}
    for url in internal_names:
        host = url.split("/")[2]  # (the row's URL is canonical: https)
        (entry,) = [r for u, r in read.items() if u.split("/")[2] == host]
        assert entry["read"] is False and entry["error"].startswith("refused: ")


def test_the_readers_origin_is_trusted_and_nothing_else():
    trusted = guarded_transport.origins("http://127.0.0.1:8002/reader/")
    assert trusted == frozenset({("127.0.0.1", 8002)})
    assert guarded_transport.origins("https://Reader.Example/r/") == frozenset(
        {("reader.example", 443)}
    )
    assert guarded_transport.origins("") == frozenset()
