"""The loopback HTTP server under ``server.FakeWeb``: each request read into an ``Incoming``
and answered with the fake's ``Reply`` (chunked when streamed, gzipped when asked), on daemon
threads whose connections ``stop()`` can cut, so a slow answer never hangs a test."""

from __future__ import annotations

import contextlib
import gzip
import select
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socket import IPPROTO_TCP, MSG_PEEK, SHUT_RDWR, TCP_NODELAY, socket
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .common import Incoming, Reply, json_reply


class Server(ThreadingHTTPServer):
    """Daemon handler threads, not joined on close: a slow handler must not hang ``stop()``."""

    daemon_threads = True
    block_on_close = False
    respond: Callable[[Incoming], Reply]  # the fake's answer to a request

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket] = set()
        self._connections_lock = threading.Lock()

    def track(self, connection: socket) -> None:
        with self._connections_lock:
            self._connections.add(connection)

    def untrack(self, connection: socket) -> None:
        with self._connections_lock:
            self._connections.discard(connection)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(SHUT_RDWR)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeweb/1.0"
    sys_version = ""
    server: Server

    def setup(self) -> None:
        """Headers and body go out in separate writes; without TCP_NODELAY each costs ~40 ms."""
        super().setup()
        self.connection.setsockopt(IPPROTO_TCP, TCP_NODELAY, 1)
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: tests and the demo print their own output."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        split = urlsplit(self.path)
        incoming = Incoming(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=body,
            hung_up=self._hung_up,
        )
        try:
            reply = self.server.respond(incoming)
        except Exception as exc:  # a bug in the fake must reach the test, not hang the client
            reply = json_reply(500, {"error": f"fakeweb internal error: {exc!r}"})
        try:
            self._write(reply, incoming.headers.get("accept-encoding", ""))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _hung_up(self) -> bool:
        """Whether the client has closed the connection (or ``stop()`` has): it is readable and
        at its end. Never blocks. ``poll``, not ``select``: a long test run holds more than
        1,024 descriptors, past which ``select`` refuses the socket."""
        try:
            poller = select.poll()
            poller.register(self.connection, select.POLLIN | select.POLLHUP | select.POLLERR)
            if not poller.poll(0):
                return False
            return self.connection.recv(1, MSG_PEEK) == b""
        except (OSError, ValueError):  # stop() closed the socket
            return True

    def _write(self, reply: Reply, accept_encoding: str) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.stream is not None:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for chunk in reply.stream:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")
            return
        body = reply.body
        if len(body) >= 1024 and "gzip" in accept_encoding.lower():
            body = gzip.compress(body, mtime=0)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
