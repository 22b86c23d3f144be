"""Hosts spelled to slip past a check: every path judges the host a URL parser reads.

A page reader (``read_via``), a browser and httpx all read a URL as WHATWG does: the host is
percent-decoded, mapped by UTS #46 (``①`` is ``1``, ``ⓘ`` is ``i``, fullwidth digits and ``。``
are ASCII), and a host ending in a number is an IPv4 address in any of its spellings. So a host
is checked only in that form (``public_hosts.canonical_host``) and sent on only in it
(``sendable_url``). The table below spells internal addresses and names in more than a hundred
ways (the attack's own, and WHATWG's URL test data where it applies) and asks every path that
may reach a page: provider results, pages read (direct URLs and search results, through a
reader), pro research's reads, and the fetcher that promotion uses.
"""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import quote

import pytest

from datasette_dbrain_websearch import guarded_transport, public_hosts, reading
from datasette_dbrain_websearch.config import WebSettings
from datasette_dbrain_websearch.deep_pro import READ, Known, Step, refusal
from datasette_dbrain_websearch.fetch import fetch_page
from datasette_dbrain_websearch.merge import DomainPolicy
from datasette_dbrain_websearch.providers import WebResult
from datasette_dbrain_websearch.public_hosts import HostRefused, canonical_host, sendable_url
from datasette_dbrain_websearch.reading import PageReader
from datasette_dbrain_websearch.urls import try_normalize_url
from datasette_dbrain_websearch.web_hits import normalize_hits

from ..helpers import actor_cookies, make_datasette, web_config

CIRCLED = dict(zip("0123456789", "⓪①②③④⑤⑥⑦⑧⑨", strict=True))
FULLWIDTH = {c: chr(0xFF10 + int(c)) for c in "0123456789"} | {".": "．"}
BOLD = {c: chr(0x1D7CE + int(c)) for c in "0123456789"}  # mathematical bold digits


def _spell(address: str, table: dict[str, str], last_only: bool = False) -> str:
    head, _, last = address.rpartition(".")
    if last_only:
        return f"{head}." + "".join(table.get(c, c) for c in last)
    return "".join(table.get(c, c) for c in address)


def _octal(address: str) -> str:
    return ".".join(f"0{int(p):o}" for p in address.split("."))


def _hex_parts(address: str) -> str:
    return ".".join(f"0x{int(p):x}" for p in address.split("."))


def _number(address: str) -> int:
    return int.from_bytes(socket.inet_aton(address), "big")


def address_spellings(address: str) -> list[str]:
    """Twelve spellings of one IPv4 address that a WHATWG parser reads as it."""
    circled = _spell(address, CIRCLED, last_only=True)
    a, b, c, d = address.split(".")
    return [
        circled,
        quote(circled, safe="."),
        _spell(address, CIRCLED),
        _spell(address, FULLWIDTH),
        _spell(address, BOLD),
        address.replace(".", "。"),
        "".join(f"%{ord(ch):02X}" for ch in address),
        str(_number(address)),
        hex(_number(address)),
        _octal(address),
        _hex_parts(address),
        f"{a}.{b}.{int(c) * 256 + int(d)}",  # three parts: the last fills two bytes
        f"{address}.",
    ]


INTERNAL_ADDRESSES = [
    "127.0.0.1",
    "169.254.169.254",
    "10.0.0.1",
    "192.168.0.1",
    "172.16.0.1",
    "100.64.0.1",
    "0.0.0.0",
    "127.0.0.53",
]
IPV6 = [
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[0000::0001]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::ffff:169.254.169.254]",
    "[::ffff:a9fe:a9fe]",
    "[fe80::1]",
    "[fc00::1]",
    "[64:ff9b::7f00:1]",  # NAT64 of 127.0.0.1
    "[2002:7f00:1::]",  # 6to4 of 127.0.0.1
    "[::]",
]
LOCALHOST = [
    "localhost",
    "LOCALHOST",
    "ⓛⓞⓒⓐⓛⓗⓞⓢⓣ",
    "ｌｏｃａｌｈｏｓｔ",
    "local\u00adhost",  # a soft hyphen, which UTS #46 drops
    "loc\u200dalhost",  # a zero-width joiner, likewise
    "localhost.",
    "%6c%6f%63%61%6c%68%6f%73%74",
    "Local%C2%ADHost",
    "reader.localhost",
    "ⓡⓔⓐⓓⓔⓡ.localhost",
]
LITERALS = (
    [spelling for address in INTERNAL_ADDRESSES for spelling in address_spellings(address)]
    + IPV6
    + LOCALHOST
)
# Names only a network resolves: refused wherever a page would be read or fetched.
INTERNAL_NAMES = [
    "metadata.google.internal",
    "metadata.google.ⓘnternal",
    "METADATA.GOOGLE.INTERNAL",
    "metadata.google.internal.",
    "metadata.google.%E2%93%98nternal",
    "metadata。google。internal",
    "ｍｅｔａｄａｔａ.google.internal",
    "metadata",
    "ⓜⓔⓣⓐⓓⓐⓣⓐ",
    "printer.local",
    "printer.ⓛocal",
    "router.home.arpa",
    "intranet.corp",
    "nas.lan",
]
# Names a resolver answers with an internal address (``127.0.0.1.nip.io`` where DNS works).
REBOUND = {"127.0.0.1.nip.io": "127.0.0.1", "metadata.example": "169.254.169.254"}
REBOUND_SPELLINGS = [
    "127.0.0.1.nip.io",
    "127.0.0.①.nip.io",
    "ⓜetadata.example",
    "metadata.example.",
]


def test_the_table_is_large():
    assert len(LITERALS) + len(INTERNAL_NAMES) + len(REBOUND_SPELLINGS) >= 100
    assert len(set(LITERALS)) == len(LITERALS)


@pytest.mark.parametrize(
    ("host", "canonical"),
    [
        # The attack's spellings.
        ("127.0.0.①", "127.0.0.1"),
        ("169.254.169.②⑤④", "169.254.169.254"),
        ("metadata.google.ⓘnternal", "metadata.google.internal"),
        ("127.0.0.１", "127.0.0.1"),
        ("127.0.0.%E2%91%A0", "127.0.0.1"),
        ("169.254.169.%E2%91%A1%E2%91%A4%E2%91%A3", "169.254.169.254"),
        # WHATWG's URL test data (urltestdata.json), host parsing.
        ("%30%78%63%30%2e%30%32%35%30.01", "192.168.0.1"),
        ("%30%78%63%30%2e%30%32%35%30.01%2e", "192.168.0.1"),
        ("０Ｘｃ０．０２５０．０１", "192.168.0.1"),
        ("4294967295", "255.255.255.255"),
        ("0x.0x.0", "0.0.0.0"),
        ("ｇｏｏ.com", "goo.com"),
        ("GOO\u200b\u2060\ufeffgoo.com", "googoo.com"),
        ("www.foo。bar.com", "www.foo.bar.com"),
        ("%41.com", "a.com"),
        ("Go.com", "go.com"),
        ("09.com", "09.com"),
        ("[0:0:0:0:0:0:13.1.68.3]", "[::d01:4403]"),
        ("[::127.0.0.1]", "[::7f00:1]"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("example.com.", "example.com"),
    ],
)
def test_a_host_is_read_as_a_whatwg_parser_reads_it(host, canonical):
    assert canonical_host(host) == canonical


@pytest.mark.parametrize(
    "host",
    [
        # WHATWG's URL test data: hosts that are no host at all.
        "0x100000000",
        "256.256.256.256",
        "192.168.0.257",
        "0xffffffff1",
        "1.2.3.4.5",
        "foo.09",
        "foo.0x4",
        "0..0x300",
        "%ef%bc%85%ef%bc%94%ef%bc%91.com",  # a fullwidth "%41": a "%" once mapped
        "%zz%66%a.com",
        "%ff.com",
        "a b.com",
        "ex*ample.com",
        "a<b.com",
        "[::1",
        "[::1.2.3.]",
        "\u0000.com",
        "a..b",
    ],
)
def test_a_host_no_parser_reads_is_refused(host):
    with pytest.raises(HostRefused):
        canonical_host(host)


def test_the_url_sent_is_the_url_checked():
    # "\\" is a slash to a WHATWG parser: the host is 127.0.0.1, not public.example.
    assert (
        sendable_url("http://127.0.0.1\\@public.example/x") == "http://127.0.0.1/@public.example/x"
    )
    assert (
        sendable_url("http://u:p@Bücher.DE.:8080/a?b#c") == "http://u:p@xn--bcher-kva.de:8080/a?b#c"
    )
    assert sendable_url(" http://exa\tmple.com/\n") == "http://example.com/"
    for url in ("ftp://example.com/", "http:///x", "http://x:99999/", "http://ex%ample.com/"):
        with pytest.raises(HostRefused):
            sendable_url(url)


def urls_for(host: str) -> list[str]:
    """The URL as given, and as dbrain normalizes it (what results and URL questions carry)."""
    raw = f"http://{host}:9101/secret"
    normalized = try_normalize_url(raw)
    return [raw] + ([normalized.canonical_url] if normalized else [])


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A resolver that knows only ``REBOUND``; every other name does not resolve."""
    lookups: list[str] = []

    async def resolve(host: str, port: int, **kwargs: Any) -> list[Any]:
        lookups.append(host)
        if host in REBOUND:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (REBOUND[host], port))]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(public_hosts, "_getaddrinfo", resolve)
    return lookups


@pytest.fixture
def fetched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every URL the page reader would send to the fetcher (and so to ``read_via``)."""
    sent: list[str] = []

    async def never(url: str, **kwargs: Any) -> Any:
        sent.append(url)
        raise AssertionError(f"{url} was sent on")

    monkeypatch.setattr(reading, "fetch_page", never)
    return sent


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address the guarded fetcher opened a connection to."""
    seen: list[str] = []

    async def spy(self: Any, address: Any, *args: Any) -> Any:
        seen.append(str(address))
        raise OSError("no connection in this test")

    monkeypatch.setattr(guarded_transport.GuardedBackend, "_connect", spy)
    return seen


@pytest.mark.parametrize("host", LITERALS)
def test_results_on_an_internal_address_never_become_rows(host):
    results = [WebResult(url=url, title="t", rank=1) for url in urls_for(host)]
    hits, _, _ = normalize_hits("brave", results, False)
    assert hits == []


@pytest.mark.parametrize("unresolved", [False, True], ids=["default", "read_unresolved"])
@pytest.mark.parametrize("host", LITERALS + INTERNAL_NAMES + REBOUND_SPELLINGS)
async def test_a_reader_is_never_sent_an_internal_host(dns, fetched, host, unresolved):
    settings = WebSettings(read_via="http://127.0.0.1:9/reader/", read_unresolved=unresolved)
    for url in urls_for(host):
        outcome = await PageReader(settings, None).read([url], 10.0)
        page = outcome.pages[url]
        assert page.ok is False and page.error.startswith("refused"), (url, page)
    assert fetched == []


@pytest.mark.parametrize("host", LITERALS)
def test_pro_research_may_not_read_an_internal_address(host):
    for url in urls_for(host):
        normalized = try_normalize_url(url)
        known = [Known("ext:1", normalized.canonical_url if normalized else url, "t", False)]
        assert refusal(Step(READ, url=url), [], known, 3, DomainPolicy()) != ""


@pytest.mark.parametrize("host", LITERALS + INTERNAL_NAMES + REBOUND_SPELLINGS)
async def test_the_fetcher_connects_to_no_internal_host(dns, connects, host):
    for url in urls_for(host):
        result = await fetch_page(url, timeout=10.0)
        assert result.ok is False, url
    assert connects == []


async def test_a_url_question_on_an_internal_host_reaches_no_reader(brain, fake):
    """End to end, as the attack asked: the page a URL question names is on loopback, spelled
    with a circled digit; the reader (the fake's, on loopback) is never asked for it."""
    config = web_config(fake, read_via=f"{fake.url}/reader/", read_unresolved=True)
    ds = make_datasette([str(brain[0])], plugin_config=config)
    await ds.invoke_startup()
    port = fake.url.rsplit(":", 1)[1]
    for host in ("127.0.0.①", "127.0.0.%E2%91%A0", "127.0.0.１", "metadata.google.ⓘnternal"):
        response = await ds.client.get(
            "/-/research.json",
            params={"q": f"http://{host}:{port}/secret", "external": "always"},
            cookies=actor_cookies(ds, "root"),
        )
        assert response.status_code == 200, response.text
        pack = response.json()
        assert pack["external_evidence"] == []
        assert "direct_url_not_read" in [w["code"] for w in pack["warnings"]]
    assert [r for r in fake.requests if r.provider == "reader"] == []
