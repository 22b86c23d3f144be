"""Connections that reach only the addresses they checked: an httpx transport for ``fetch``.

Every TCP connection goes through ``GuardedBackend``, which resolves the host itself, refuses
the lot if any address is not public (``public_hosts``), and connects to one of the addresses
it checked. The name is never resolved a second time by anything else, so there is no
DNS-rebinding window between the check and the connect, and the check covers the first request
and every redirect alike. TLS still uses the URL's host name for SNI and certificate
verification, because httpcore takes those from the request, not the socket.
"""

from __future__ import annotations

import contextlib
import functools
import os
import ssl
from collections.abc import Iterable
from urllib.parse import urlsplit

import anyio
import httpcore
import httpx

from .public_hosts import IPAddress, IPNetwork, host_key, permitted, resolve


class BlockedAddress(Exception):
    """The host resolves to an address this fetcher must not connect to."""


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves, checks and connects in one step, so the checked address is the one connected to.

    ``trusted`` holds ``(host, port)`` origins the configuration itself names (a page reader):
    connections to exactly those skip the address check, and nothing else does.
    """

    def __init__(
        self, allowed: tuple[IPNetwork, ...], trusted: frozenset[tuple[str, int]] = frozenset()
    ) -> None:
        self._allowed = allowed
        self._trusted = trusted
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        with anyio.fail_after(timeout):
            addresses = await resolve(host, port)
        # One bad answer refuses the host: a name that mixes public and private addresses is
        # exactly what a rebinding attack looks like.
        trusted = (host_key(host), port) in self._trusted
        if not trusted and not all(permitted(address, self._allowed) for address in addresses):
            raise BlockedAddress(f"refused to connect to {host}: it is not a public address")
        for address in addresses[:-1]:
            with contextlib.suppress(httpcore.ConnectError):
                return await self._connect(address, port, timeout, local_address, socket_options)
        return await self._connect(addresses[-1], port, timeout, local_address, socket_options)

    async def _connect(
        self,
        address: IPAddress,
        port: int,
        timeout: float | None,
        local_address: str | None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to an address literal, so nothing below here resolves a name again."""
        return await self._inner.connect_tcp(
            str(address),
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )


def origins(url: str) -> frozenset[tuple[str, int]]:
    """``{(host, port)}`` of ``url`` (the port its scheme implies when it names none)."""
    if not url:
        return frozenset()
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return frozenset()
    return frozenset({(host_key(parts.hostname or ""), port)}) if parts.hostname else frozenset()


@functools.lru_cache(maxsize=4)
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's TLS context for these ``SSL_CERT_FILE``/``SSL_CERT_DIR`` values, built once:
    loading the CA bundle costs ~35 ms, too much to pay on every page fetched."""
    return httpx.create_ssl_context()


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's own transport (and its exception mapping) over a pool on ``GuardedBackend``.

    httpx has no public way to choose the network backend (encode/httpx#3749), so the pool it
    builds is replaced; ``handle_async_request`` uses ``self._pool`` in every httpx 0.2x. If that
    ever stops being a connection pool this refuses to run rather than fetch unguarded.
    """

    def __init__(
        self, allowed: tuple[IPNetwork, ...], trusted: frozenset[tuple[str, int]] = frozenset()
    ) -> None:
        # Honours SSL_CERT_FILE/SSL_CERT_DIR like httpx does; proxy variables are not read.
        ssl_context = _ssl_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        super().__init__(verify=ssl_context, trust_env=False)
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError("this httpx version cannot take the address-checking backend")
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, network_backend=GuardedBackend(allowed, trusted)
        )
