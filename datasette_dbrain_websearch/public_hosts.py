"""Which hosts a page may be read from: public addresses only, unless the config allows a network.

A URL comes from a search provider, a model or a user, so the server must not be tricked into
reading its own loopback, the cloud metadata endpoint or the LAN. ``public_host`` judges a host
as written (IP literals in every form a resolver accepts), ``host_refusal`` resolves a name and
judges every address it has (for a page reader asked on this server's behalf), and ``resolve``
is the one resolver the guarded connections (``guarded_transport``) use too.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

import anyio

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
    (``host_refusal``)."""
    host = host_key(host)
    if host == "localhost" or host.endswith(".localhost"):
        host = "127.0.0.1"
    try:
        ip: IPAddress = ipaddress.ip_address(host)
    except ValueError:
        try:
            ip = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
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


async def host_refusal(url: str, allow_networks: Iterable[str] = (), timeout: float = 5.0) -> str:
    """Why a page at ``url`` may not be fetched on this server's behalf by someone else (a page
    reader given its URL), or ``""`` when it may: the policy the fetcher applies to its own
    connections, applied before the request.

    An IP literal must be public (or inside ``allow_networks``), as in ``public_host``. A name is
    resolved here and refused if any of its addresses is not; a name that does not resolve here
    is refused when it is an internal name (``internal_name``) and otherwise passed on, since the
    reader cannot find it either unless its network has names of its own.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "invalid URL"
    if parts.scheme not in ("http", "https"):
        return "only http and https pages can be read"
    if not host:
        return "the URL has no host"
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
        return "refused: a name internal to a network" if internal_name(host) else ""
    except TimeoutError:
        return f"refused: the name did not resolve within {timeout:g} s"
    if not all(permitted(address, allowed) for address in addresses):
        return "refused: the name resolves to an address that is not public"
    return ""
