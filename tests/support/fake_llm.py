"""A local OpenAI-compatible server so tests and benchmarks never reach the internet.

Standard library only: a ``ThreadingHTTPServer`` on 127.0.0.1 with a random port, served from a
background thread. Clients (litellm, the openai SDK, plain urllib) talk real HTTP to it.

    with FakeLLM() as fake:
        fake.script("judge", ['{"label": "yes"}', http_500(), "ok"])
        spec = ModelSpec(model="openai/judge", api_base=fake.base_url, api_key_env="FAKE_API_KEY")

Replies are scripted per model name as the server receives it (litellm strips the ``openai/``
provider prefix, so ``script("openai/judge", ...)`` and ``script("judge", ...)`` are the same).
Each scripted reply is consumed in order and the last one repeats; a reply is the content
string, a callable ``(request_json) -> str | Fault``, or a :class:`Fault`.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Fault:
    """A scripted misbehaviour: an HTTP error, a delay, or a 200 with odd content.

    ``status`` other than 200 answers with ``body`` (dict -> JSON) and ``headers``. With status
    200, ``content`` (when not None) replaces the reply content. ``delay`` sleeps first.
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content: str | None = None


def _error_body(message: str, type_: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def http_429(retry_after: float = 1.0) -> Fault:
    """Answer 429 with ``Retry-After`` (whole seconds, rounded up) and ``retry-after-ms``."""
    return Fault(
        status=429,
        body=_error_body("Rate limit reached (fake)", "requests", "rate_limit_exceeded"),
        headers={
            "Retry-After": str(math.ceil(retry_after)),
            "retry-after-ms": str(int(retry_after * 1000)),
        },
    )


def http_500() -> Fault:
    return Fault(status=500, body=_error_body("The server had an error (fake)", "server_error"))


def http_400(message: str = "Invalid request (fake)") -> Fault:
    return Fault(status=400, body=_error_body(message, "invalid_request_error"))


def timeout(seconds: float) -> Fault:
    """Sleep ``seconds`` before a normal reply (longer than the client timeout to time out)."""
    return Fault(delay=seconds)


def empty_content() -> Fault:
    return Fault(content="")


def malformed_json() -> Fault:
    """Content that looks like the start of a JSON verdict but does not parse."""
    return Fault(content='{"label": "yes", "rationale": "cut off')


def raw(
    status: int, body: str | bytes | dict[str, Any], headers: Mapping[str, str] | None = None
) -> Fault:
    return Fault(status=status, body=body, headers=dict(headers or {}))


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server saw it; header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float = field(default_factory=time.time)  # when the server began handling it

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))


def _words(text: Any) -> int:
    if isinstance(text, list):  # content parts
        return sum(_words(part.get("text", "")) for part in text if isinstance(part, dict))
    return len(str(text or "").split())


def _last_user_message(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content or "")
    return ""


def _strip_provider(model: str) -> str:
    return model.removeprefix("openai/")


class FakeLLM:
    """An OpenAI-compatible chat-completions server with scripted replies and counters."""

    def __init__(self, latency: float = 0.0) -> None:
        self.latency = latency
        self._model_latency: dict[str, float] = {}
        self._scripts: dict[str, list[Any]] = {}
        self._lock = threading.Lock()
        self._requests: list[ReceivedRequest] = []
        self._calls_by_model: dict[str, int] = {}
        self._in_flight = 0
        self._max_in_flight = 0
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        if self._server is not None:
            return self
        handler = type("FakeLLMHandler", (_Handler,), {"fake": self})
        server = _Server(("127.0.0.1", 0), handler)
        # Handler threads may be asleep in a timeout fault; never wait for them on stop.
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeLLM is not started"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------------
    def script(self, model: str, replies: list[Any]) -> None:
        """Queue ``replies`` for ``model``: consumed in order, then the last one repeats."""
        if not replies:
            raise ValueError("script needs at least one reply")
        with self._lock:
            self._scripts[_strip_provider(model)] = list(replies)

    def set_latency(self, seconds: float, model: str | None = None) -> None:
        """Delay every reply (or only ``model``'s) by ``seconds``."""
        with self._lock:
            if model is None:
                self.latency = seconds
            else:
                self._model_latency[_strip_provider(model)] = seconds

    def reset(self) -> None:
        """Forget scripts, per-model latencies, recorded requests and counters."""
        with self._lock:
            self._scripts.clear()
            self._model_latency.clear()
            self._requests.clear()
            self._calls_by_model.clear()
            self._max_in_flight = self._in_flight

    # -- observations ------------------------------------------------------------------------
    @property
    def requests(self) -> list[ReceivedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def calls_total(self) -> int:
        with self._lock:
            return sum(self._calls_by_model.values())

    @property
    def calls_by_model(self) -> dict[str, int]:
        with self._lock:
            return dict(self._calls_by_model)

    def calls(self, model: str) -> int:
        with self._lock:
            return self._calls_by_model.get(_strip_provider(model), 0)

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    # -- request handling (called from handler threads) --------------------------------------
    def _begin(self, request: ReceivedRequest) -> tuple[Any, float]:
        model = request.model
        with self._lock:
            self._requests.append(request)
            self._calls_by_model[model] = self._calls_by_model.get(model, 0) + 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)
            queue = self._scripts.get(model)
            reply: Any = None
            if queue:
                reply = queue.pop(0) if len(queue) > 1 else queue[0]
            latency = self._model_latency.get(model, self.latency)
        return reply, latency

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        prompt_tokens = sum(_words(m.get("content")) for m in body.get("messages") or [])
        completion_tokens = _words(content)
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _models(self) -> dict[str, Any]:
        with self._lock:
            names = sorted(set(self._scripts) | set(self._calls_by_model))
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "fake"} for n in names]
        return {"object": "list", "data": data}


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) drops the SYNs of a burst of new connections (100
    # conversations starting at once), and each dropped one costs the client a 1 s retransmit.
    request_queue_size = 1024


class _Handler(BaseHTTPRequestHandler):
    fake: FakeLLM
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse connections like with a real API
    # Headers and body leave in one segment; without these, Nagle plus the client's delayed ACK
    # add ~40 ms to every keep-alive response.
    disable_nagle_algorithm = True
    wbufsize = -1

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # quiet test output

    def _send(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        if isinstance(body, (dict, list)):
            payload = json.dumps(body).encode()
            content_type = "application/json"
        else:
            payload = body.encode() if isinstance(body, str) else (body or b"")
            content_type = "application/json" if payload[:1] in (b"{", b"[") else "text/plain"
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout fault): nothing to answer

    def do_GET(self) -> None:  # noqa: N802
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, self.fake._models())
        else:
            self._send(404, _error_body(f"No route {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        raw_body = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, _error_body(f"No route {self.path}", "invalid_request_error"))
            return
        try:
            body = json.loads(raw_body or b"{}")
        except json.JSONDecodeError:
            self._send(400, _error_body("Body is not JSON", "invalid_request_error"))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = ReceivedRequest("POST", self.path, headers, body)
        reply, latency = self.fake._begin(request)
        try:
            self._answer(body, reply, latency)
        finally:
            self.fake._end()

    def _answer(self, body: dict[str, Any], reply: Any, latency: float) -> None:
        if callable(reply):
            reply = reply(body)
        if reply is None:
            reply = f"[{body.get('model', '')}] reply to: {_last_user_message(body)[:60]}"
        fault = reply if isinstance(reply, Fault) else Fault(content=str(reply))
        if latency or fault.delay:
            time.sleep(latency + fault.delay)
        if fault.status != 200:
            self._send(fault.status, fault.body if fault.body is not None else b"", fault.headers)
            return
        content = fault.content
        if content is None:  # a delay-only fault answers like an unscripted model
            content = f"[{body.get('model', '')}] reply to: {_last_user_message(body)[:60]}"
        self._send(200, self.fake._completion(body, content), fault.headers)
