"""A loopback page server for reading and extraction tests and benchmarks: fixed bodies by
path prefix, among them a huge nested page (small nested blocks: what costs an extractor most,
its work growing with their square)."""

from __future__ import annotations

import contextlib
import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

UNIT = "<div><p><span><b><i>lattice qcd</i></b></span></p></div>"


def nested_page(megabytes: float) -> bytes:
    """``megabytes`` of small nested blocks in one HTML page."""
    count = int(megabytes * 1024 * 1024) // len(UNIT)
    return f"<html><head><title>t</title></head><body>{UNIT * count}</body></html>".encode()


class PageServer(ThreadingHTTPServer):
    """Serves ``pages`` (path prefix -> HTML body, the first prefix that matches), else
    ``default``, on ``host``; ``start()`` returns its base URL, ``stop()`` ends it."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str, pages: dict[str, bytes], default: bytes) -> None:
        self.pages, self.default = pages, default
        super().__init__((host, 0), _Handler)

    def server_bind(self) -> None:  # no reverse DNS lookup (getfqdn), which can stall offline
        socketserver.TCPServer.server_bind(self)
        host, self.server_port = self.server_address[:2]
        self.server_name = str(host)

    def body_for(self, path: str) -> bytes:
        return next((b for p, b in self.pages.items() if path.startswith(p)), self.default)

    def start(self) -> str:
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()
        return f"http://{self.server_name}:{self.server_port}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    server: PageServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = self.server.body_for(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)
