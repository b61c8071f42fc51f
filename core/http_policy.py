"""One policy for every request an LLM or chatbot call sends: no redirect followed, only allowed host:port.

A provider that answers 307 with another host in ``Location`` must not receive our key or the
transcript there. litellm builds its HTTP clients in many places, most of them following
redirects: OpenAI SDK clients (``openai/``, ``azure/``, OpenAI-compatible servers), its own
cached ``HTTPHandler``/``AsyncHTTPHandler`` (``anthropic/``, ``gemini/``, ``vertex_ai/``,
``mistral/``, ``bedrock/``, ``ollama/``), an aiohttp transport under httpx, raw aiohttp
sessions (``aiohttp_openai/``). httpx drops ``Authorization`` on a cross-origin redirect but
not ``x-api-key`` (Anthropic) or ``x-goog-api-key`` (Gemini), and every client re-sends the body.

Chasing each place a client is built breaks with the next litellm release; every request does
pass through ``httpx.Client.send``, ``httpx.AsyncClient.send`` or ``aiohttp.ClientSession._request``.
``install()`` wraps those three once. Outside ``outbound_scope()`` they behave exactly as
before (other libraries are not affected). Inside it (``simulation.llm.chat``/``achat`` and the
HTTP chatbot client open one around each call):

- a redirect is never followed: the request is sent with redirects off and a 3xx answer ends
  the call (``OutboundRefused``, kind ``redirect``), so no second host is ever contacted;
- every request must go to an allowed host and port (``core.api_hosts``), checked before it is
  sent (``OutboundRefused``, kind ``refused``): a token endpoint or region a provider derives
  from the environment is held to the same list as the base URL;
- an async scope's ``guard`` (is the job still running, not cancelled?) is awaited at the wire,
  right before each request is handed to httpx or aiohttp: after litellm's own preparation and
  any wait for a shared client, so a cancel recorded while a call was being prepared stops it
  (the exception the guard raised comes out of ``acall`` as it is, however litellm wrapped it).

The scope is a context variable: it follows the call into the coroutines and executor threads
litellm starts (``contextvars.copy_context``); tests/security/test_redirects.py drives each
provider family, sync and async, against a local server that redirects to a recording one.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

T = TypeVar("T")


class OutboundRefused(httpx.HTTPError):
    """A request the outbound policy stopped: a redirect (not followed) or a host:port not allowed.

    The message is in the app's own words: the status and host:port, never the remote body
    or the redirect's ``Location`` (it may carry anything the remote side chose).
    """

    def __init__(self, message: str, *, kind: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status_code = status_code


@dataclass
class Scope:
    """One call under the policy: the first refusal seen, so the caller reports it as such."""

    label: str = ""
    refusal: OutboundRefused | None = None
    requests: int = field(default=0)
    guard: Callable[[], Awaitable[None]] | None = None
    stopped: BaseException | None = None  # what the guard raised: the call was not sent

    async def check(self) -> None:
        """Await the guard right before a request leaves; remember what stopped it."""
        if self.guard is None:
            return
        try:
            await self.guard()
        except BaseException as exc:
            self.stopped = exc
            raise

    def refuse(self, refusal: OutboundRefused) -> OutboundRefused:
        if self.refusal is None:
            self.refusal = refusal
        return refusal


_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("evalsite_outbound_scope", default=None)


def current_scope() -> Scope | None:
    """Return the policy scope of the running call, or None outside one."""
    return _scope.get()


@contextlib.contextmanager
def outbound_scope(label: str = "", guard: Callable[[], Awaitable[None]] | None = None) -> Iterator[Scope]:
    """Put every request sent inside the block under the policy (installing the hooks if needed)."""
    install()
    scope = Scope(label, guard=guard)
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


def _where(url: Any) -> str:
    try:
        parsed = httpx.URL(str(url))
        host = parsed.host
        port = parsed.port or {"http": 80, "https": 443}.get(parsed.scheme, 0)
    except Exception:  # an unparseable URL: name nothing of it
        return "an address that is not a valid URL"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}"


def _check_destination(scope: Scope, url: Any) -> None:
    from core.api_hosts import url_allowed

    scope.requests += 1
    if not url_allowed(str(url)):
        raise scope.refuse(OutboundRefused(
            f"a request to {_where(url)} was not sent: that host and port are not on the list of allowed API hosts",
            kind="refused",
        ))


def _redirect_refusal(scope: Scope, status: int, url: Any) -> OutboundRefused:
    return scope.refuse(OutboundRefused(
        f"the endpoint at {_where(url)} answered HTTP {status}, a redirect; evalsite does not follow redirects "
        "from model endpoints (nothing was sent to the address it named): set the base URL to the final address",
        kind="redirect",
        status_code=status,
    ))


def _is_redirect(status: int) -> bool:
    return 300 <= status < 400 and status != 304


_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Wrap httpx's and aiohttp's send paths once per process (no effect outside a scope)."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        _wrap_httpx()
        _wrap_aiohttp()
        _installed = True


def _wrap_httpx() -> None:
    sync_send = httpx.Client.send
    async_send = httpx.AsyncClient.send

    @functools.wraps(sync_send)
    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        scope = _scope.get()
        if scope is None:
            return sync_send(self, request, **kwargs)
        _check_destination(scope, request.url)
        kwargs["follow_redirects"] = False
        response = sync_send(self, request, **kwargs)
        if _is_redirect(response.status_code):
            response.close()
            raise _redirect_refusal(scope, response.status_code, request.url)
        return response

    @functools.wraps(async_send)
    async def asend(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        scope = _scope.get()
        if scope is None:
            return await async_send(self, request, **kwargs)
        _check_destination(scope, request.url)
        kwargs["follow_redirects"] = False
        await scope.check()
        response = await async_send(self, request, **kwargs)
        if _is_redirect(response.status_code):
            await response.aclose()
            raise _redirect_refusal(scope, response.status_code, request.url)
        return response

    send.__evalsite_policy__ = True  # type: ignore[attr-defined]
    asend.__evalsite_policy__ = True  # type: ignore[attr-defined]
    httpx.Client.send = send  # type: ignore[method-assign]
    httpx.AsyncClient.send = asend  # type: ignore[method-assign]


def _wrap_aiohttp() -> None:
    try:
        import aiohttp
    except ImportError:  # not installed: nothing sends through it
        return
    original = aiohttp.ClientSession._request

    @functools.wraps(original)
    async def _request(self: Any, method: str, str_or_url: Any, *args: Any, **kwargs: Any) -> Any:
        scope = _scope.get()
        if scope is None:
            return await original(self, method, str_or_url, *args, **kwargs)
        _check_destination(scope, str_or_url)
        kwargs["allow_redirects"] = False
        await scope.check()
        response = await original(self, method, str_or_url, *args, **kwargs)
        if _is_redirect(response.status):
            response.release()
            raise _redirect_refusal(scope, response.status, str_or_url)
        return response

    _request.__evalsite_policy__ = True  # type: ignore[attr-defined]
    aiohttp.ClientSession._request = _request  # type: ignore[method-assign]


def is_installed() -> bool:
    """Return whether the send paths are wrapped (and still are: nobody replaced them since)."""
    return _installed and getattr(httpx.Client.send, "__evalsite_policy__", False) and getattr(
        httpx.AsyncClient.send, "__evalsite_policy__", False
    )


def call(fn: Callable[..., T], /, *args: Any, label: str = "", **kwargs: Any) -> T:
    """Call ``fn`` under the policy; a refusal inside it is raised as ``OutboundRefused``, however wrapped."""
    with outbound_scope(label) as scope:
        try:
            return fn(*args, **kwargs)
        except OutboundRefused:
            raise
        except Exception as exc:
            if scope.refusal is not None:
                raise scope.refusal from exc
            raise


async def acall(
    fn: Callable[..., Awaitable[T]], /, *args: Any, label: str = "", guard: Callable[[], Awaitable[None]] | None = None,
    **kwargs: Any,
) -> T:
    """``call`` for a coroutine function; ``guard`` is awaited right before each request is sent."""
    with outbound_scope(label, guard) as scope:
        try:
            return await fn(*args, **kwargs)
        except OutboundRefused:
            raise
        except Exception as exc:
            if scope.stopped is not None and scope.stopped is not exc:
                raise scope.stopped from exc  # the guard stopped it; the SDK wrapped that up
            if scope.refusal is not None:
                raise scope.refusal from exc
            raise
