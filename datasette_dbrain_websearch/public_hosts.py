"""Which hosts a page may be read from: public addresses only, unless the config allows a network.

A URL comes from a search provider, a model or a user, so the server must not be tricked into
reading its own loopback, the cloud metadata endpoint or the LAN. Every check starts from one
form of the host, ``canonical_host``: the host as a WHATWG URL parser (a browser, a page reader
service) resolves it, so a host spelled ``127.0.0.①``, ``127.0.0.%E2%91%A0`` or
``metadata.google.ⓘnternal`` is judged as the address it reaches, and ``sendable_url`` is the
URL in that form, the only one sent on. ``public_host`` judges a host (IP literals in every
spelling a resolver accepts), ``host_refusal`` resolves a name and judges every address it has
(for a page reader asked on this server's behalf), and ``resolve`` is the one resolver the
guarded connections (``guarded_transport``) use too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit, urlunsplit

import anyio
import idna

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Ranges refused even where Python's ``is_global`` would let them through; its tables differ
# between Python versions, so the ones that matter most are spelled out.
_NEVER_PUBLIC = tuple(
    ipaddress.ip_network(cidr)
    for cidr in (
        "0.0.0.0/8",  # "this network"
        "100.64.0.0/10",  # carrier-grade NAT
        "192.0.0.0/24",  # IETF protocol assignments
        "198.18.0.0/15",  # benchmarking
        "64:ff9b:1::/48",  # local-use NAT64
        "2001::/23",  # IETF protocol assignments, Teredo included
        "2001:db8::/32",  # documentation
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


# What a host may hold once canonical: letters, digits and hyphens (and the underscore, which
# browsers accept and which spells no other address); anything else is refused.
_LABEL = re.compile(r"[a-z0-9_-]+")
_HEX = re.compile(r"[0-9a-f]+")
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")


class HostRefused(ValueError):
    """A host no URL parser reads as a name or an address (its message says why)."""


def canonical_host(host: str) -> str:
    """``host`` as a WHATWG URL parser reads it: percent-decoded, mapped by UTS #46 (NFKC and
    case folding: ``①`` is ``1``, ``ⓘ`` is ``i``, ``。`` is a dot), non-ASCII labels in
    punycode, an IPv4 address in any spelling (``0x7f.1``, ``2130706433``) as a dotted quad,
    an IPv6 address bracketed and compressed, no trailing dot. Raises ``HostRefused`` for a host
    with characters outside letters, digits and hyphens after that."""
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # a URL's hostname (``urls.NormalizedURL.domain``) has no brackets
    if host.startswith("["):
        if not host.endswith("]"):
            raise HostRefused("an unclosed IPv6 address")
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            raise HostRefused("an invalid IPv6 address") from None
    try:
        decoded = unquote(host, errors="strict")
        mapped = idna.uts46_remap(decoded, std3_rules=False, transitional=False)
    except (UnicodeError, idna.IDNAError):
        raise HostRefused("characters no host name may hold") from None
    labels = mapped.split(".")
    if len(labels) > 1 and not labels[-1]:
        labels.pop()  # "example.com." is example.com
    try:
        labels = [label if label.isascii() else idna.alabel(label).decode() for label in labels]
    except (UnicodeError, idna.IDNAError):
        raise HostRefused("characters no host name may hold") from None
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise HostRefused("characters no host name may hold")
    if _ends_in_a_number(labels):
        return _ipv4(labels)
    return ".".join(labels)


def _ends_in_a_number(labels: list[str]) -> bool:
    """WHATWG's "ends in a number": such a host is an IPv4 address or nothing."""
    last = labels[-1]
    return last.isdigit() or _ipv4_number(last) is not None


def _ipv4_number(part: str) -> int | None:
    """One part of an IPv4 address in WHATWG's spellings: decimal, ``0x`` hex, ``0`` octal."""
    if not part:
        return None
    if part.startswith("0x"):
        digits = part[2:]
        if not digits:
            return 0
        return int(digits, 16) if _HEX.fullmatch(digits) else None
    if len(part) > 1 and part.startswith("0"):
        return int(part[1:], 8) if set(part[1:]) <= set("01234567") else None
    return int(part) if part.isdigit() else None


def _ipv4(labels: list[str]) -> str:
    """The dotted quad an IPv4 host of up to four parts means (WHATWG's IPv4 parser)."""
    numbers = [_ipv4_number(label) for label in labels]
    if len(numbers) > 4 or any(n is None for n in numbers):
        raise HostRefused("an invalid IPv4 address")
    *leading, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in leading) or last >= 256 ** (5 - len(numbers)):
        raise HostRefused("an invalid IPv4 address")
    value = last + sum(n * 256 ** (3 - i) for i, n in enumerate(leading))
    return str(ipaddress.IPv4Address(value))


def sendable_url(url: str) -> str:
    """``url`` with its host canonical (``canonical_host``), the form checked and sent on;
    raises ``HostRefused`` for a URL that is not http(s) or whose host or port is invalid. It is
    read as WHATWG reads it: control characters and spaces trimmed, tabs and newlines dropped,
    ``\\`` a slash (``http://127.0.0.1\\@example.com/`` is on 127.0.0.1, not example.com)."""
    url = _TAB_OR_NEWLINE.sub("", url.strip(_C0_OR_SPACE)).replace("\\", "/")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise HostRefused("an invalid URL") from None
    if parts.scheme not in ("http", "https"):
        raise HostRefused("only http and https pages can be read")
    written = parts.netloc.rpartition("@")[2]
    if port is not None or written.endswith(":"):
        written = written.rpartition(":")[0]
    if not written:
        raise HostRefused("the URL has no host")
    host = canonical_host(written)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + host + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class LookupFailed(Exception):
    """The host name did not resolve; kept apart from OSError so it maps to ``dns_nxdomain``."""


def is_public_address(ip: IPAddress) -> bool:
    """True only for globally routable unicast addresses.

    IPv6 forms that carry an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by that IPv4
    address, since that is where the packets end up.
    """
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public_address(embedded)
        if ip.is_site_local:
            return False
    if any(ip in network for network in _NEVER_PUBLIC):
        return False
    return ip.is_global and not (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
    )


def parse_networks(cidrs: Iterable[str]) -> tuple[IPNetwork, ...]:
    """Parse ``allow_networks``; a typo there is a configuration bug, so it raises ValueError."""
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def permitted(ip: IPAddress, allowed: tuple[IPNetwork, ...]) -> bool:
    """Public, or inside an explicitly allowed network (IPv4-mapped addresses match IPv4 ranges)."""
    plain = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip
    if any(plain in network for network in allowed):
        return True
    return is_public_address(ip)


def host_key(host: str) -> str:
    """A host as written in a URL, compared the way a resolver would see it."""
    return host.strip("[]").rstrip(".").lower().split("%", 1)[0]


def public_host(host: str, allow_networks: Iterable[str] = ()) -> bool:
    """May a page on this host be shown as web evidence? False for ``localhost`` and for IP
    literals (in any form a resolver accepts: ``2130706433``, ``0x7f.1``, ``[::1]``) that are
    not public, unless inside ``allow_networks``. Other names pass: a name is resolved, and its
    addresses checked, when a promotion fetches the page or before a page reader is asked for it
    (``host_refusal``). A host judged is canonical first (``canonical_host``); one that cannot
    be is not public."""
    try:
        host = host_key(canonical_host(host))
    except HostRefused:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        host = "127.0.0.1"
    try:  # every IPv4 spelling is a dotted quad by now (``canonical_host``)
        ip: IPAddress = ipaddress.ip_address(host)
    except ValueError:
        return True
    return permitted(ip, parse_networks(allow_networks))


# Module-level so tests can stand in a resolver for names that do not exist offline.
_getaddrinfo = anyio.getaddrinfo


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, in resolver order, without duplicates."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = await _getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise LookupFailed(f"DNS lookup failed for {host}") from exc
    addresses: list[IPAddress] = []
    for *_, sockaddr in infos:
        address = ipaddress.ip_address(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise LookupFailed(f"DNS lookup failed for {host}")
    return addresses


# Names that only mean something inside a network: single labels (``metadata``, ``intranet``)
# and the suffixes set aside for private and local use. A name that does not resolve here but is
# one of these may well resolve inside a reader service's network (``metadata.google.internal``).
_INTERNAL_SUFFIXES = (
    ".localhost",
    ".local",
    ".localdomain",
    ".internal",
    ".intranet",
    ".lan",
    ".home",
    ".corp",
    ".private",
    ".home.arpa",
)


def internal_name(host: str) -> bool:
    """Is ``host`` a name only a private network can resolve (a single label, ``localhost``,
    or under ``.internal``, ``.local``, ``.lan``, ``.home.arpa`` and the like)?"""
    host = host_key(host)
    return "." not in host or host == "localhost" or host.endswith(_INTERNAL_SUFFIXES)


async def host_refusal(
    url: str,
    allow_networks: Iterable[str] = (),
    timeout: float = 5.0,
    unresolved: bool = False,
) -> str:
    """Why a page at ``url`` may not be fetched on this server's behalf by someone else (a page
    reader given its URL), or ``""`` when it may: the policy the fetcher applies to its own
    connections, applied before the request, to the host as the reader will read it
    (``canonical_host``: send it ``sendable_url(url)``).

    An IP literal must be public (or inside ``allow_networks``), as in ``public_host``. A name is
    resolved here and refused if any of its addresses is not. A name that does not resolve here
    is refused, since the reader may resolve it inside its own network
    (``127.0.0.1.nip.io`` where DNS answers, ``metadata.google.internal``); ``unresolved``
    (``read_unresolved``: an offline server, a reader with names of its own) passes it on
    unless it is an internal name (``internal_name``).
    """
    try:
        parts = urlsplit(sendable_url(url))
    except HostRefused as refused:
        return f"refused: {refused}"
    host = parts.hostname or ""
    if not public_host(host, allow_networks):
        return "refused: not a public address"
    try:
        ipaddress.ip_address(host_key(host))
        return ""  # a public (or allowed) literal; public_host has judged it
    except ValueError:
        pass
    allowed = parse_networks(allow_networks)
    try:
        with anyio.fail_after(timeout):
            addresses = await resolve(host_key(host), 443 if parts.scheme == "https" else 80)
    except LookupFailed:
        if internal_name(host):
            return "refused: a name internal to a network"
        return "" if unresolved else "refused: the name does not resolve here"
    except TimeoutError:
        return f"refused: the name did not resolve within {timeout:g} s"
    if not all(permitted(address, allowed) for address in addresses):
        return "refused: the name resolves to an address that is not public"
    return ""
