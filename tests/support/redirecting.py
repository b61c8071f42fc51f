"""Two local HTTP servers for redirect tests: one answers every request with a redirect to the other, which records.

The recording server is where a leaked key or transcript would arrive: a test asserts it
received nothing. Standard library only, random loopback ports, stopped by the context manager.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    """One request as a server saw it (header names lower-case)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Server:
    def __init__(self, answer: Any) -> None:
        self.received: list[Received] = []
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with lock:
                    outer.received.append(Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status, headers, payload = answer(self.path)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _any

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class RedirectPair:
    """``redirector`` answers ``status`` with ``Location`` on ``recorder`` (same path); ``recorder`` answers 200 {}."""

    def __init__(self, status: int = 307) -> None:
        self.status = status

    def __enter__(self) -> RedirectPair:
        self.recorder = Server(lambda path: (200, {"Content-Type": "application/json"}, b"{}"))
        target = self.recorder.origin
        self.redirector = Server(lambda path: (self.status, {"Location": target + path}, b""))
        return self

    def __exit__(self, *exc: object) -> None:
        self.redirector.stop()
        self.recorder.stop()
