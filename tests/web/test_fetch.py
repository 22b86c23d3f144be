"""fetch_page against real loopback HTTP(S) servers: extraction, caps, failure kinds and SSRF.

The page server listens on 127.0.0.2 and tests allow only ``127.0.0.2/32``, so anything else on
loopback stays forbidden. Decoy servers on 127.0.0.1 and [::1] record every TCP connection they
accept: a refused fetch must leave them empty, not merely get an error back.
"""

from __future__ import annotations

import ipaddress
import socket
import socketserver
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, quote

import pytest

from datasette_dbrain_websearch import guarded_transport, public_hosts
from datasette_dbrain_websearch.fetch import FetchResult, fetch_page
from datasette_dbrain_websearch.public_hosts import is_public_address

PAGE_HOST = "127.0.0.2"
ALLOW = (f"{PAGE_HOST}/32",)
HUGE_LIMIT = 64 * 1024 * 1024
CHUNK = b"<p>" + b"x" * (64 * 1024 - 3)

ARTICLE_HTML = """<!doctype html>
<html><head>
<title>Pulling a better espresso | Coffee Notes</title>
<meta name="description" content="How grind, dose and time shape an espresso shot.">
<meta property="og:site_name" content="Coffee Notes">
</head><body>
<nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/shop">Shop</a></nav>
<article>
<h1>Pulling a better espresso</h1>
<p>Espresso is brewed by forcing hot water through a puck of finely ground coffee at roughly
nine bars of pressure. The grind size decides how quickly the water finds its way through.</p>
<p>Dial in the grind until a double shot runs in about twenty-eight seconds, then taste it:
sour means under-extracted, bitter means over-extracted, and the dose is the next thing to move.</p>
<p>Keep the basket dry, distribute the grounds evenly and tamp level, because channelling
wastes the rest of the effort.</p>
</article>
<footer>Copyright 2026 Coffee Notes. All rights reserved. Subscribe to our newsletter.</footer>
</body></html>"""
EMPTY_HTML = """<html><head><title>Nothing here</title></head>
<body><div><img src="/cover.png"></div><script>var x = 1;</script></body></html>"""

# A TEST-ONLY self-signed certificate for "brain.test" (valid until 2126) and its throwaway key.
# Embedded so the TLS tests need no openssl or cryptography package; it protects nothing.
TEST_CERT = """-----BEGIN CERTIFICATE-----
MIIBwDCCAWWgAwIBAgIUTOsPAV0s4NX6F1W1/nE/q6/rgIIwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKYnJhaW4udGVzdDAgFw0yNjExMzAxMDIwMDBaGA8yMTI2MTEw
NjEwMjAwMFowFTETMBEGA1UEAwwKYnJhaW4udGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABJy8baEoPj5ASnUCzA5Z8KaMUX4LlHJEK+LrOHfe0cGsScHeN/77
ylBwBRf66A7Quh/mnpSG+cRcMeAu3hZ018+jgZAwgY0wHQYDVR0OBBYEFP+pur4w
eGfOF2aIpiEY4LfuNxC9MB8GA1UdIwQYMBaAFP+pur4weGfOF2aIpiEY4LfuNxC9
MA8GA1UdEwEB/wQFMAMBAf8wFQYDVR0RBA4wDIIKYnJhaW4udGVzdDAOBgNVHQ8B
Af8EBAMCAoQwEwYDVR0lBAwwCgYIKwYBBQUHAwEwCgYIKoZIzj0EAwIDSQAwRgIh
AKJSdFxNHs9Ul8amvfGgDj6oZbm2GFRFNMhxQoULnZzPAiEApKCdosAKU21vWrsz
ubVioFtZhYBHke9waHSaKPDp33c=
-----END CERTIFICATE-----
"""
TEST_KEY = """-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgBDW3Y8KknaWWWYTJ
Egn6wYTEbU5uDej97rr2eK1ksCahRANCAAScvG2hKD4+QEp1AswOWfCmjFF+C5Ry
RCvi6zh33tHBrEnB3jf++8pQcAUX+ugO0Lof5p6UhvnEXDHgLt4WdNfP
-----END PRIVATE KEY-----
"""


class RecordingServer(ThreadingHTTPServer):
    """A threaded HTTP server that records each accepted connection and each request."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str, family: socket.AddressFamily = socket.AF_INET) -> None:
        self.address_family = family
        self.connections: list[Any] = []
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.sent: dict[str, int] = {}
        self.finished = threading.Event()
        self.stop = threading.Event()
        super().__init__((host, 0), PageHandler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn), which can stall offline.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections.append(client_address)
        super().process_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Failed TLS handshakes are expected in the TLS tests; keep stderr quiet."""

    def reset(self) -> None:
        self.connections.clear()
        self.requests.clear()
        self.sent.clear()
        self.finished.clear()

    @property
    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


class PageHandler(BaseHTTPRequestHandler):
    server: RecordingServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_page(self, status: int, body: bytes, content_type: str | None, **headers: str) -> None:
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location: str) -> None:
        self.send_page(302, b"", "text/html", Location=location)

    def stream(self, limit: int) -> None:
        """Write body chunks until ``limit`` or until the client hangs up; record what was sent."""
        sent = 0
        try:
            while sent < limit and not self.server.stop.is_set():
                self.wfile.write(CHUNK)
                sent += len(CHUNK)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.server.sent[self.path] = sent
        self.server.finished.set()

    def do_GET(self) -> None:
        self.server.requests.append((self.path, dict(self.headers)))
        path, _, query = self.path.partition("?")
        params = {key: values[0] for key, values in parse_qs(query).items()}
        if path == "/article":
            self.send_page(200, ARTICLE_HTML.encode(), "text/html; charset=utf-8")
        elif path == "/empty":
            self.send_page(200, EMPTY_HTML.encode(), "text/html")
        elif path == "/plain":
            body = b"Plain notes about espresso.\nGrind finer if it runs fast.\n"
            self.send_page(200, body, "text/plain; charset=utf-8")
        elif path == "/latin1":
            body = "Café crème, s'il vous plaît".encode("latin-1")
            self.send_page(200, body, "text/plain; charset=iso-8859-1")
        elif path == "/pdf":
            self.send_page(200, b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "application/pdf")
        elif path == "/no-type":
            self.send_page(200, b"<p>What am I?</p>", None)
        elif path in ("/huge", "/huge-declared"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            if path == "/huge-declared":
                self.send_header("Content-Length", str(6 * 1024 * 1024))
            self.end_headers()
            self.stream(6 * 1024 * 1024 if path == "/huge-declared" else HUGE_LIMIT)
        elif path == "/slow":
            self.server.stop.wait(30)
            self.send_page(200, ARTICLE_HTML.encode(), "text/html")
        elif path == "/trickle":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            try:
                for _ in range(300):
                    if self.server.stop.wait(0.1):
                        break
                    self.wfile.write(b"<p>x</p>")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path.startswith("/status/"):
            status = int(path.removeprefix("/status/"))
            headers = {"cf_mitigated": "challenge"} if "cf" in params else {}
            if "server" in params:
                self.server_version = params["server"]
            self.send_page(status, b"<h1>No</h1>", "text/html", **headers)
        elif path.startswith("/hops/"):
            left = int(path.removeprefix("/hops/"))
            if left == 1:
                self.redirect("/article")
            elif left % 2:  # odd hops send an absolute Location, even ones a relative one
                self.redirect(f"http://{self.headers['Host']}/hops/{left - 1}")
            else:
                self.redirect(f"/hops/{left - 1}")
        elif path == "/to":
            self.redirect(params["url"])
        else:
            self.send_page(404, b"not found", "text/plain")


def start(host: str, family: socket.AddressFamily = socket.AF_INET) -> RecordingServer:
    server = RecordingServer(host, family)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def stop(server: RecordingServer) -> None:
    server.stop.set()
    server.shutdown()
    server.server_close()


def free_port(host: str) -> int:
    """A port with nothing listening on it (bound, then released)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def servers() -> Iterator[SimpleNamespace]:
    page = start(PAGE_HOST)
    decoy = start("127.0.0.1")
    try:
        decoy6: RecordingServer | None = start("::1", socket.AF_INET6)
    except OSError:  # no IPv6 loopback here: the [::1] targets are still refused, just unwatched
        decoy6 = None
    yield SimpleNamespace(page=page, decoy=decoy, decoy6=decoy6)
    for server in (page, decoy, decoy6):
        if server is not None:
            stop(server)


@pytest.fixture
def site(servers: SimpleNamespace) -> SimpleNamespace:
    for server in (servers.page, servers.decoy, servers.decoy6):
        if server is not None:
            server.reset()
    servers.base = f"http://{PAGE_HOST}:{servers.page.server_port}"
    servers.decoy_url = f"http://127.0.0.1:{servers.decoy.server_port}/"
    port6 = servers.decoy6.server_port if servers.decoy6 else 80
    servers.decoy6_url = f"http://[::1]:{port6}/"
    return servers


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every address the guarded backend actually opened a TCP connection to."""
    seen: list[str] = []
    original = guarded_transport.GuardedBackend._connect

    async def spy(self: Any, address: Any, *args: Any) -> Any:
        seen.append(str(address))
        return await original(self, address, *args)

    monkeypatch.setattr(guarded_transport.GuardedBackend, "_connect", spy)
    return seen


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A resolver for made-up ``*.test`` names; each name answers from a queue (last repeats)."""
    answers: dict[str, list[list[str]]] = {}
    lookups: list[str] = []
    real = public_hosts._getaddrinfo

    async def fake(host: str, port: int, **kwargs: Any) -> list[Any]:
        lookups.append(host)
        if host in answers:
            queue = answers[host]
            addresses = queue.pop(0) if len(queue) > 1 else queue[0]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]
        if host.endswith(".test"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return await real(host, port, **kwargs)

    monkeypatch.setattr(public_hosts, "_getaddrinfo", fake)
    return SimpleNamespace(answers=answers, lookups=lookups)


def assert_failed(result: FetchResult, kind: str) -> None:
    assert result.ok is False, result
    assert result.failure_kind == kind, result
    assert result.error
    assert (result.title, result.description, result.site_name, result.text) == ("", "", "", "")


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("1.1.1.1", True),
        ("2606:4700:4700::1111", True),
        ("::ffff:8.8.8.8", True),
        ("64:ff9b::808:808", True),  # NAT64 of a public address
        ("127.0.0.1", False),
        ("127.255.255.254", False),
        ("::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("::ffff:169.254.169.254", False),
        ("::127.0.0.1", False),  # deprecated IPv4-compatible form
        ("64:ff9b::a00:1", False),  # NAT64 of 10.0.0.1
        ("2002:7f00:1::1", False),  # 6to4 of 127.0.0.1
        ("2001::1", False),  # Teredo
        ("0.0.0.0", False),
        ("0.1.2.3", False),
        ("::", False),
        ("10.0.0.1", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("100.64.0.1", False),
        ("100.127.255.254", False),
        ("169.254.169.254", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("fd12:3456::1", False),
        ("fec0::1", False),  # deprecated site-local
        ("224.0.0.1", False),
        ("239.255.255.250", False),
        ("ff02::1", False),
        ("ff0e::1", False),
        ("240.0.0.1", False),
        ("255.255.255.255", False),
        ("192.0.0.8", False),
        ("192.0.2.1", False),
        ("198.18.0.1", False),
        ("2001:db8::1", False),
    ],
)
def test_is_public_address(address: str, public: bool) -> None:
    assert is_public_address(ipaddress.ip_address(address)) is public


async def test_article_is_extracted_without_boilerplate(site: SimpleNamespace) -> None:
    url = f"{site.base}/article"
    result = await fetch_page(url, allow_networks=ALLOW)
    assert result.ok, result
    assert (result.url, result.final_url, result.status) == (url, url, 200)
    assert result.content_type == "text/html"
    assert result.title == "Pulling a better espresso"
    assert result.description == "How grind, dose and time shape an espresso shot."
    assert result.site_name == "Coffee Notes"
    assert "nine bars of pressure" in result.text
    assert "twenty-eight seconds" in result.text
    for boilerplate in ("About us", "Shop", "All rights reserved", "newsletter"):
        assert boilerplate not in result.text
    assert (result.error, result.failure_kind) == ("", "")
    assert site.page.requests[0][1]["User-Agent"] == "datasette-dbrain-websearch"


async def test_user_agent_is_configurable(site: SimpleNamespace) -> None:
    result = await fetch_page(f"{site.base}/plain", allow_networks=ALLOW, user_agent="brain/2")
    assert result.ok
    assert site.page.requests[0][1]["User-Agent"] == "brain/2"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/plain", "Plain notes about espresso.\nGrind finer if it runs fast."),
        ("/latin1", "Café crème, s'il vous plaît"),
    ],
)
async def test_plain_text_is_the_body(site: SimpleNamespace, path: str, text: str) -> None:
    result = await fetch_page(f"{site.base}{path}", allow_networks=ALLOW)
    assert result.ok, result
    assert result.content_type == "text/plain"
    assert result.text == text
    assert (result.title, result.description, result.site_name) == ("", "", "")


async def test_page_without_main_text_is_ok_and_empty(site: SimpleNamespace) -> None:
    result = await fetch_page(f"{site.base}/empty", allow_networks=ALLOW)
    assert result.ok, result
    assert result.text == ""
    assert result.title == "Nothing here"
    assert result.failure_kind == ""


@pytest.mark.parametrize(("path", "content_type"), [("/pdf", "application/pdf"), ("/no-type", "")])
async def test_other_content_types_are_unsupported(
    site: SimpleNamespace, path: str, content_type: str
) -> None:
    result = await fetch_page(f"{site.base}{path}", allow_networks=ALLOW)
    assert_failed(result, "unsupported_file")
    assert result.status == 200
    assert result.content_type == content_type
    assert result.final_url == f"{site.base}{path}"


async def test_streamed_body_over_the_cap_stops_being_read(site: SimpleNamespace) -> None:
    result = await fetch_page(f"{site.base}/huge", allow_networks=ALLOW)
    assert_failed(result, "unsupported_file")
    assert "larger than" in result.error
    assert result.status == 200
    # The server offers 64 MB; reading stopped just past 5 MB (plus what socket buffers took).
    assert site.page.finished.wait(60)  # (a guard against a hang: the client has hung up)
    assert site.page.sent["/huge"] < 32 * 1024 * 1024


async def test_declared_length_over_the_cap_is_refused(site: SimpleNamespace) -> None:
    result = await fetch_page(f"{site.base}/huge-declared", allow_networks=ALLOW)
    assert_failed(result, "unsupported_file")
    result = await fetch_page(f"{site.base}/article", allow_networks=ALLOW, max_bytes=500)
    assert_failed(result, "unsupported_file")
    assert "500 bytes" in result.error


async def test_slow_answer_times_out(site: SimpleNamespace) -> None:
    # The page stalls 30 s, then answers: a timeout (not the page) says the stall was cut.
    result = await fetch_page(f"{site.base}/slow", allow_networks=ALLOW, timeout=0.5)
    assert_failed(result, "timeout")
    assert result.error == "timed out after 0.5 s"


async def test_total_timeout_covers_a_trickling_body(site: SimpleNamespace) -> None:
    """Each read arrives well within the timeout; only the overall budget can stop this one."""
    # The body trickles for 30 s: a timeout (not the page) says the budget cut it.
    result = await fetch_page(f"{site.base}/trickle", allow_networks=ALLOW, timeout=0.6)
    assert_failed(result, "timeout")
    assert result.status == 200
    assert result.final_url == f"{site.base}/trickle"


@pytest.mark.parametrize(
    ("path", "status", "kind"),
    [
        ("/status/404", 404, "http_gone"),
        ("/status/410", 410, "http_gone"),
        ("/status/401", 401, "http_access_denied"),
        ("/status/403", 403, "http_access_denied"),
        ("/status/500", 500, "http_5xx"),
        ("/status/503", 503, "http_5xx"),
        ("/status/418", 418, "fetch_failed"),
        ("/status/429", 429, "fetch_failed"),
        ("/status/403?cf=1", 403, "cloudflare_edge"),
        ("/status/522?server=cloudflare", 522, "cloudflare_edge"),
        ("/status/522", 522, "http_5xx"),
    ],
)
async def test_http_errors_map_to_dbrain_kinds(
    site: SimpleNamespace, path: str, status: int, kind: str
) -> None:
    result = await fetch_page(f"{site.base}{path}", allow_networks=ALLOW)
    assert_failed(result, kind)
    assert result.status == status
    assert result.final_url == f"{site.base}{path}"
    assert str(status) in result.error


@pytest.mark.parametrize("hops", [3, 5])
async def test_redirect_chain_is_followed(site: SimpleNamespace, hops: int) -> None:
    result = await fetch_page(f"{site.base}/hops/{hops}", allow_networks=ALLOW)
    assert result.ok, result
    assert result.final_url == f"{site.base}/article"
    assert result.url == f"{site.base}/hops/{hops}"
    assert result.title == "Pulling a better espresso"
    expected = [f"/hops/{n}" for n in range(hops, 0, -1)] + ["/article"]
    assert site.page.paths == expected


async def test_too_many_redirects_are_refused(site: SimpleNamespace) -> None:
    result = await fetch_page(f"{site.base}/hops/6", allow_networks=ALLOW)
    assert_failed(result, "fetch_failed")
    assert result.error == "more than 5 redirects"
    assert (result.status, result.final_url) == (302, f"{site.base}/hops/1")
    assert site.page.paths == [f"/hops/{n}" for n in range(6, 0, -1)]
    result = await fetch_page(f"{site.base}/hops/1", allow_networks=ALLOW, max_redirects=0)
    assert_failed(result, "fetch_failed")


@pytest.mark.parametrize(
    "target",
    [
        "decoy",
        "decoy6",
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://0x7f000001/",
    ],
)
async def test_redirect_to_a_private_address_is_refused(
    site: SimpleNamespace, connects: list[str], target: str
) -> None:
    """The first hop is allowed by allow_networks; the redirect target is not, and never opened."""
    target = {"decoy": site.decoy_url, "decoy6": site.decoy6_url}.get(target, target)
    result = await fetch_page(f"{site.base}/to?url={quote(target, safe='')}", allow_networks=ALLOW)
    assert_failed(result, "fetch_failed")
    assert "not a public address" in result.error
    assert result.final_url == target
    assert result.status is None
    assert site.page.paths == [f"/to?url={quote(target, safe='')}"]
    assert connects == [PAGE_HOST]
    assert site.decoy.connections == []
    assert site.decoy6 is None or site.decoy6.connections == []


@pytest.mark.parametrize("target", ["ftp://127.0.0.2/file", "file:///etc/passwd"])
async def test_redirect_to_another_scheme_is_refused(
    site: SimpleNamespace, connects: list[str], target: str
) -> None:
    result = await fetch_page(f"{site.base}/to?url={quote(target, safe='')}", allow_networks=ALLOW)
    assert_failed(result, "fetch_failed")
    assert "only http and https" in result.error
    assert connects == [PAGE_HOST]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "[::ffff:127.0.0.1]"])
async def test_loopback_is_refused_before_connecting(
    site: SimpleNamespace, connects: list[str], host: str
) -> None:
    result = await fetch_page(f"http://{host}:{site.decoy.server_port}/")
    assert_failed(result, "fetch_failed")
    assert "not a public address" in result.error
    assert (result.final_url, result.status) == ("", None)
    assert connects == []
    assert site.decoy.connections == []


async def test_ipv6_loopback_is_refused_before_connecting(
    site: SimpleNamespace, connects: list[str]
) -> None:
    result = await fetch_page(site.decoy6_url)
    assert_failed(result, "fetch_failed")
    assert connects == []
    if site.decoy6 is not None:
        assert site.decoy6.connections == []
        result = await fetch_page(site.decoy6_url, allow_networks=("::1/128",))
        assert result.failure_kind == "http_gone"  # reachable once allowed: the decoy is live
        assert len(site.decoy6.connections) == 1


async def test_allow_networks_is_exact(site: SimpleNamespace, connects: list[str]) -> None:
    """Allowing 127.0.0.2 does not open the rest of loopback."""
    result = await fetch_page(site.decoy_url, allow_networks=ALLOW)
    assert_failed(result, "fetch_failed")
    assert connects == []
    assert site.decoy.connections == []
    result = await fetch_page(site.decoy_url, allow_networks=("127.0.0.0/8",))
    assert result.ok is False  # the decoy answers 404 for "/", but it was reached
    assert result.failure_kind == "http_gone"
    assert len(site.decoy.connections) == 1


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/file.txt",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,<p>hi</p>",
        "example.com/no-scheme",
        "http://",
        "http://[::1",
        "",
    ],
)
async def test_bad_urls_are_refused(connects: list[str], url: str) -> None:
    result = await fetch_page(url)
    assert_failed(result, "fetch_failed")
    assert result.url == url
    assert connects == []


async def test_dns_failure(dns: SimpleNamespace) -> None:
    result = await fetch_page("http://no-such-host.test/page")
    assert_failed(result, "dns_nxdomain")
    assert result.error == "DNS lookup failed for no-such-host.test"
    assert dns.lookups == ["no-such-host.test"]


async def test_connection_refused(connects: list[str]) -> None:
    port = free_port(PAGE_HOST)
    result = await fetch_page(f"http://{PAGE_HOST}:{port}/", allow_networks=ALLOW)
    assert_failed(result, "connectivity")
    assert result.error == "connection failed: Connection refused"
    assert connects == [PAGE_HOST]


async def test_connects_to_the_address_it_checked(
    site: SimpleNamespace, dns: SimpleNamespace, connects: list[str]
) -> None:
    """brain.test only exists in the checked answer, so success means that answer was used."""
    dns.answers["brain.test"] = [[PAGE_HOST]]
    port = site.page.server_port
    result = await fetch_page(f"http://brain.test:{port}/article", allow_networks=ALLOW)
    assert result.ok, result
    assert result.final_url == f"http://brain.test:{port}/article"
    assert site.page.requests[0][1]["Host"] == f"brain.test:{port}"
    assert dns.lookups == ["brain.test"]
    assert connects == [PAGE_HOST]


async def test_rebinding_between_hops_is_caught(
    site: SimpleNamespace, dns: SimpleNamespace, connects: list[str]
) -> None:
    """Each new connection is resolved and checked again: a name that turns private is refused.

    The HTTP/1.0 server closes every connection, so the second hop needs a new one.
    """
    dns.answers["rebind.test"] = [[PAGE_HOST], ["10.0.0.1"]]
    port = site.page.server_port
    result = await fetch_page(f"http://rebind.test:{port}/hops/1", allow_networks=ALLOW)
    assert_failed(result, "fetch_failed")
    assert result.final_url == f"http://rebind.test:{port}/article"
    assert site.page.paths == ["/hops/1"]
    assert connects == [PAGE_HOST]
    assert dns.lookups == ["rebind.test", "rebind.test"]


async def test_any_private_answer_refuses_the_host(
    site: SimpleNamespace, dns: SimpleNamespace, connects: list[str]
) -> None:
    dns.answers["mixed.test"] = [[PAGE_HOST, "10.0.0.1"]]
    result = await fetch_page(f"http://mixed.test:{site.page.server_port}/", allow_networks=ALLOW)
    assert_failed(result, "fetch_failed")
    assert connects == []
    assert site.page.connections == []


async def test_next_checked_address_is_tried_when_one_refuses(
    site: SimpleNamespace, dns: SimpleNamespace, connects: list[str]
) -> None:
    dns.answers["multi.test"] = [["127.0.0.3", PAGE_HOST]]
    allow = ("127.0.0.3/32", *ALLOW)
    url = f"http://multi.test:{site.page.server_port}/plain"
    result = await fetch_page(url, allow_networks=allow)
    assert result.ok, result
    assert connects == ["127.0.0.3", PAGE_HOST]


@pytest.mark.parametrize("cidr", ["10.0.0.0/33", "not-a-network"])
async def test_invalid_allow_networks_is_a_configuration_error(cidr: str) -> None:
    with pytest.raises(ValueError):
        await fetch_page("http://example.com/", allow_networks=(cidr,))


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    cert.write_text(TEST_CERT)
    key.write_text(TEST_KEY)
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.sni_callback = lambda _sock, name, _ctx: names.append(name)
    server = RecordingServer(PAGE_HOST)
    server.socket = context.wrap_socket(
        server.socket, server_side=True, do_handshake_on_connect=False
    )
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield SimpleNamespace(server=server, cert=cert, names=names, port=server.server_port)
    stop(server)


@pytest.fixture
def trust_test_cert(monkeypatch: pytest.MonkeyPatch, tls_server: SimpleNamespace) -> Path:
    monkeypatch.setenv("SSL_CERT_FILE", str(tls_server.cert))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    tls_server.names.clear()
    tls_server.server.reset()
    return tls_server.cert


async def test_tls_uses_the_host_name_while_connecting_to_the_checked_address(
    tls_server: SimpleNamespace, trust_test_cert: Path, dns: SimpleNamespace, connects: list[str]
) -> None:
    dns.answers["brain.test"] = [[PAGE_HOST]]
    url = f"https://brain.test:{tls_server.port}/article"
    result = await fetch_page(url, allow_networks=ALLOW)
    assert result.ok, result
    assert result.title == "Pulling a better espresso"
    assert tls_server.names == ["brain.test"]
    assert connects == [PAGE_HOST]


async def test_certificate_for_another_name_is_refused(
    tls_server: SimpleNamespace, trust_test_cert: Path
) -> None:
    """The certificate names brain.test, so the bare address must not verify."""
    result = await fetch_page(f"https://{PAGE_HOST}:{tls_server.port}/", allow_networks=ALLOW)
    assert_failed(result, "tls_certificate")
    assert tls_server.server.requests == []


async def test_untrusted_certificate_is_refused(
    tls_server: SimpleNamespace, dns: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    tls_server.server.reset()
    dns.answers["brain.test"] = [[PAGE_HOST]]
    result = await fetch_page(f"https://brain.test:{tls_server.port}/", allow_networks=ALLOW)
    assert_failed(result, "tls_certificate")
    assert result.error == "TLS handshake or certificate verification failed"
    assert tls_server.server.requests == []
