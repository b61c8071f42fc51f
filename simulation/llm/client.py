"""One chat call through litellm, with our retries, rate limits, cache and a clean error.

litellm's own retries are off (``num_retries=0``): every retry, wait and log line is ours, so a
429's Retry-After is honoured once and the limiter slot is given back while we wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import os
import random
import re
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from email.utils import parsedate_to_datetime
from typing import Any

import simulation.llm.direct as direct
from core import call_budget, http_policy
from core.transient import backoff_delays, is_transient
from simulation.llm.cache import ResponseCache, request_hash
from simulation.llm.ratelimit import RateLimiter
from simulation.llm.results import LLMError, LLMResult

logger = logging.getLogger("simulation.llm")

# Arguments chat() sets itself; in params they would clash, or put a secret in the database.
RESERVED_PARAMS = frozenset(
    {
        "model",
        "messages",
        "api_base",
        "base_url",
        "api_key",
        "timeout",
        "num_retries",
        "max_retries",
        "response_format",
        "stream",
    }
)


@dataclass(frozen=True)
class ModelSpec:
    """What to call: a litellm model string, where, with which key variable and parameters."""

    model: str
    api_base: str = ""
    api_key_env: str = ""  # the NAME of the variable; the key is read at call time only
    params: Mapping[str, Any] = field(default_factory=dict, hash=False)
    timeout: float = 60.0

    def __post_init__(self) -> None:
        clashing = RESERVED_PARAMS.intersection(self.params)
        if clashing:
            raise ValueError(f"params may not set {', '.join(sorted(clashing))}")
        object.__setattr__(self, "params", dict(self.params))

    @property
    def rate_key(self) -> str:
        """Return the key rate limits apply to: one budget per model and endpoint."""
        return f"{self.model}@{self.api_base}"


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with equal jitter; a Retry-After is a floor, capped at 2 x max_delay.

    The default (``core.call_budget``: 8 attempts, 2 s doubling up to 30 s) waits 60 to 120 s in
    all before a call fails, so it rides out a provider outage of about a minute. Each wait is
    drawn between half and all of its ceiling, never near zero, so the least it rides out is
    known (``rides_out``).
    """

    max_attempts: int = call_budget.DEFAULT_ATTEMPTS
    base_delay: float = call_budget.DEFAULT_BASE_DELAY
    max_delay: float = call_budget.DEFAULT_MAX_DELAY
    jitter: bool = True

    @classmethod
    def of(cls, attempts: int | None, base_delay: float | None, max_delay: float | None) -> RetryPolicy:
        """Return the policy of a stored budget (a chatbot's, a judge's, a user-agent's); None: default."""
        return cls(
            max_attempts=attempts or call_budget.DEFAULT_ATTEMPTS,
            base_delay=call_budget.DEFAULT_BASE_DELAY if base_delay is None else float(base_delay),
            max_delay=call_budget.DEFAULT_MAX_DELAY if max_delay is None else float(max_delay),
        )

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Return the seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = call_budget.ceiling(attempt, self.base_delay, self.max_delay)
        wait = random.uniform(ceiling / 2, ceiling) if self.jitter else ceiling
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_delay * 2))
        return wait

    def rides_out(self) -> call_budget.RideOut:
        """Return the least and the most this policy waits in all before a call fails (no Retry-After)."""
        return call_budget.rides_out(self.max_attempts, self.base_delay, self.max_delay)


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(max_attempts=1)


@functools.cache
def _litellm() -> Any:
    # Importing litellm takes seconds and must not touch the network: do it on first use only.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout per error
    # litellm caches its HTTP clients, open keep-alive connections included. A forked child
    # (Celery prefork, a benchmark's processes) would share those sockets with its parent and
    # siblings: two processes writing one request stream is what made the fake server answer
    # "Body is not JSON" (400) and drop connections under load. Each child starts afresh.
    os.register_at_fork(after_in_child=_forget_inherited_clients)
    return litellm


def _forget_inherited_clients() -> None:
    direct.forget_clients()
    import litellm

    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    if cache is None:
        return
    # Drop the references without closing them: closing would shut the parent's sockets too.
    # Fresh locks: another thread of the parent may have held one at the moment of the fork.
    for name in ("_write_lock", "_increment_lock"):
        if hasattr(cache, name):
            setattr(cache, name, threading.Lock())
    for name in ("cache_dict", "ttl_dict", "expiration_heap"):
        store = getattr(cache, name, None)
        if isinstance(store, (dict, list)):
            store.clear()


@functools.cache
def _call_errors() -> tuple[type[BaseException], ...]:
    import httpx
    import openai

    return (openai.OpenAIError, httpx.HTTPError)


def _classify(exc: BaseException) -> tuple[str, bool, int | None]:
    """Return (kind, retryable, status code) for an exception raised by litellm."""
    import httpx
    import openai

    if isinstance(exc, http_policy.OutboundRefused):  # a redirect or a host the policy stopped
        return exc.kind, False, exc.status_code
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    if isinstance(exc, (openai.APITimeoutError, httpx.TimeoutException)):
        return "timeout", True, status
    if isinstance(exc, (openai.APIConnectionError, httpx.TransportError)) or _no_http_answer(exc):
        # No HTTP answer at all (litellm labels these 500): no status to report.
        return "server_error", True, None
    if isinstance(exc, openai.RateLimitError) or status == 429:
        return "rate_limited", True, 429
    # litellm reports a missing key as a 500; retrying cannot fix configuration.
    if "Missing credentials" in str(exc):
        return "auth", False, status
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)) or status in (
        401,
        403,
    ):
        return "auth", False, status
    if status is not None:
        if status == 408:
            return "timeout", True, status
        if status == 409 or status >= 500:
            return "server_error", True, status
        if 400 <= status < 500:
            return "bad_request", False, status
    if isinstance(exc, openai.BadRequestError):
        return "bad_request", False, status
    return "other", False, status


def _no_http_answer(exc: BaseException) -> bool:
    """Return whether the error's cause is a connection that failed before any HTTP answer.

    litellm reports a refused or dropped connection as an InternalServerError with status 500;
    the cause chain still holds the transport error. A real HTTP status on the way down means
    an answer did come (a retried connection error left in the chain as context).
    """
    import httpx
    import openai

    link: BaseException | None = exc.__cause__ or exc.__context__
    for _ in range(10):
        if link is None or isinstance(link, httpx.HTTPStatusError):
            return False
        if isinstance(link, (openai.APIConnectionError, httpx.TransportError)):
            return True
        link = link.__cause__ or link.__context__
    return False


def retry_after_seconds(exc: BaseException) -> float | None:
    """Read Retry-After (or OpenAI's retry-after-ms) from the response a litellm error carries.

    litellm keeps the provider's response on ``exc.response`` (an ``httpx.Response`` with the
    original headers) and also copies the headers to ``exc.litellm_response_headers``.
    """
    sources = [getattr(getattr(exc, "response", None), "headers", None)]
    sources.append(getattr(exc, "litellm_response_headers", None))
    for headers in sources:
        if not headers:
            continue
        lower = {str(k).lower(): str(v) for k, v in dict(headers).items()}
        try:
            if "retry-after-ms" in lower:
                return max(float(lower["retry-after-ms"]) / 1000.0, 0.0)
            if "retry-after" in lower:
                value = lower["retry-after"].strip()
                try:
                    return max(float(value), 0.0)
                except ValueError:
                    return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
        except (TypeError, ValueError):
            continue
    return None


_SECRETISH = re.compile(r"(Bearer\s+)\S+|\bsk-[A-Za-z0-9_\-]{8,}")


def _scrub(text: str, api_key: str | None) -> str:
    if api_key and len(api_key) >= 4:
        text = text.replace(api_key, "[redacted]")
    text = _SECRETISH.sub(lambda m: (m.group(1) or "") + "[redacted]", text)
    return text if len(text) <= 500 else text[:500] + "..."


def _api_key(spec: ModelSpec) -> str | None:
    if not spec.api_key_env:
        return None  # litellm falls back to the provider's usual variable (OPENAI_API_KEY...)
    key = os.environ.get(spec.api_key_env)
    if not key:
        raise LLMError(
            f"{spec.model}: environment variable {spec.api_key_env} is not set", kind="auth"
        )
    return key


def refuse_by_secrets_policy(spec: ModelSpec) -> None:
    """Refuse a key variable or host the secrets policy does not allow (the call-time check)."""
    # Imported here: the policy reads the database (admin-approved hosts), and this package must
    # stay importable without Django (a bare litellm loop in the benchmarks, the stats CLI).
    from core.secrets_policy import SecretsPolicyError, destination_enforce

    try:
        destination_enforce(api_base=spec.api_base, key_env=spec.api_key_env, params=spec.params)
    except SecretsPolicyError as exc:
        raise LLMError(f"{spec.model}: {exc}", kind="auth") from exc


def _cost(response: Any) -> float | None:
    hidden = getattr(response, "_hidden_params", None) or {}
    if "response_cost" in hidden:  # litellm already priced it (None: unknown model)
        cost = hidden["response_cost"]
    else:
        try:
            cost = _litellm().completion_cost(completion_response=response)
        except Exception:  # unknown model or price: a missing cost never fails a call
            cost = None
    return float(cost) if isinstance(cost, (int, float)) else None


@functools.lru_cache(maxsize=1024)
def has_known_price(model: str) -> bool:
    """Return whether litellm's cost map prices ``model`` (looked up once per model)."""
    try:
        info = _litellm().get_model_info(model=model)
    except Exception:  # litellm raises for a model it does not know
        return False
    return info.get("input_cost_per_token") is not None


# For a model litellm cannot price, its per-call cost lookup (model map, then every fallback
# generalization) is a fifth of its CPU per call and ends in "unknown" anyway. A zero custom
# price short-cuts it; the call record still says the cost is unknown (None), never 0.
_UNPRICED = {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0}


@dataclass(frozen=True)
class PreparedCall:
    """One request, resolved: the litellm arguments (key included), its hash, its rate key."""

    spec: ModelSpec
    kwargs: dict[str, Any]
    api_key: str | None
    request_hash: str
    params: dict[str, Any]
    priced: bool = True


def prepare_call(
    spec: ModelSpec,
    messages: list[dict[str, Any]],
    response_format: dict[str, Any] | None = None,
    *,
    known_hash: str = "",
) -> PreparedCall:
    """Resolve ``spec`` for one call: the only place a model spec becomes litellm arguments.

    The key is read from the environment here, at call time, and nowhere else; a check of
    which variables and endpoints a call may use is made here too.
    """
    refuse_by_secrets_policy(spec)
    params = dict(spec.params)
    rhash = known_hash or request_hash(
        model=spec.model,
        api_base=spec.api_base,
        params=params,
        messages=messages,
        response_format=response_format,
    )
    api_key = _api_key(spec)
    kwargs: dict[str, Any] = {**params, "model": spec.model, "messages": messages}
    kwargs.update(timeout=spec.timeout, num_retries=0)
    if spec.api_base:
        kwargs["api_base"] = spec.api_base
    if api_key:
        kwargs["api_key"] = api_key
    if response_format is not None:
        kwargs["response_format"] = response_format
    priced = "input_cost_per_token" in params or has_known_price(spec.model)
    if not priced:
        kwargs.update(_UNPRICED)
    return PreparedCall(spec, kwargs, api_key, rhash, params, priced)


def _reply(
    call: PreparedCall, response: Any, latency_ms: float, attempt: int, *, direct_call: bool = False
) -> LLMResult | LLMError:
    """Return the result of a reply, or the (retryable) error of an empty one (``direct_call``: the SDK's)."""
    spec = call.spec
    choice = response.choices[0] if response.choices else None
    content = (choice.message.content if choice is not None else None) or ""
    if not content.strip():
        return LLMError(
            f"{spec.model}: empty after {attempt} attempt(s): the reply had no content",
            kind="empty",
            retryable=True,
            attempts=attempt,
        )
    usage = getattr(response, "usage", None)
    result = LLMResult(
        content=content,
        model=str(getattr(response, "model", "") or spec.model),
        params=call.params,
        latency_ms=latency_ms,
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cost_usd=direct.cost(call, response) if direct_call else (_cost(response) if call.priced else None),
        attempts=attempt,
        cached=False,
        request_hash=call.request_hash,
    )
    if logger.isEnabledFor(logging.DEBUG):  # per call: DEBUG only, never formatted otherwise
        logger.debug(
            "llm call ok model=%s attempt=%d latency_ms=%.0f tokens=%d+%d",
            spec.model, attempt, latency_ms, result.prompt_tokens, result.completion_tokens,
        )
    return result


def _failure(call: PreparedCall, exc: BaseException, attempt: int) -> tuple[LLMError, float | None]:
    kind, retryable, status = _classify(exc)
    retry_after = retry_after_seconds(exc) if kind == "rate_limited" else None
    detail = _scrub(f"{type(exc).__name__}: {exc}", call.api_key)
    error = LLMError(
        f"{call.spec.model}: {kind} after {attempt} attempt(s): {detail}",
        kind=kind,
        retryable=retryable,
        attempts=attempt,
        status_code=status,
    )
    return error, retry_after


def _give_up_or_wait(
    call: PreparedCall, error: LLMError, attempt: int, latency_ms: float, retry: RetryPolicy, retry_after: float | None
) -> float:
    """Raise ``error`` when it is final; else return the seconds to wait before the next attempt."""
    if not error.retryable or attempt >= retry.max_attempts:
        logger.warning(
            "llm call failed model=%s attempt=%d kind=%s latency_ms=%.0f giving up",
            call.spec.model, attempt, error.kind, latency_ms,
        )
        raise error
    delay = retry.delay(attempt, retry_after)
    logger.warning(
        "llm call failed model=%s attempt=%d kind=%s latency_ms=%.0f retry_in=%.2fs",
        call.spec.model, attempt, error.kind, latency_ms, delay,
    )
    return delay


def _cached(call: PreparedCall, cache: ResponseCache | None) -> LLMResult | None:
    if cache is None:
        return None
    hit = cache.get(call.request_hash)
    if hit is None:
        return None
    logger.debug("llm cache hit model=%s request=%s", call.spec.model, call.request_hash[:12])
    return replace(hit, cached=True, latency_ms=0.0, attempts=0)


# Providers litellm serves on an event loop only: its blocking ``completion`` builds their request
# body from a coroutine it never awaits (the endpoint receives no JSON; issue 30, finding 4).
ASYNC_ONLY_PROVIDERS = frozenset({"aiohttp_openai"})


def is_async_only(model: str) -> bool:
    """Return whether ``model``'s provider works through ``achat`` only (``ASYNC_ONLY_PROVIDERS``)."""
    return model.strip().partition("/")[0].lower() in ASYNC_ONLY_PROVIDERS


_private_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_private_loop_lock = threading.Lock()


def _async_only_loop() -> asyncio.AbstractEventLoop:
    """Return this process's loop for async-only providers, running in a thread of its own.

    One loop for the life of the process: litellm keeps such a provider's HTTP session bound to
    the loop that opened it, so a loop per call would find it closed the second time.
    """
    global _private_loop
    with _private_loop_lock:
        if _private_loop is None or _private_loop[0] != os.getpid() or _private_loop[1].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="evalsite-async-only-calls", daemon=True).start()
            _private_loop = (os.getpid(), loop)
        return _private_loop[1]


def _on_a_private_loop(job: Awaitable[LLMResult]) -> LLMResult:
    """Run ``achat``'s coroutine to its end from blocking code, on the async-only providers' loop."""
    loop = _async_only_loop()
    context = contextvars.copy_context()  # the outbound policy's scope and the call's labels follow
    done: concurrent.futures.Future[LLMResult] = concurrent.futures.Future()

    async def run() -> LLMResult:
        return await job

    def settle(task: asyncio.Task[LLMResult]) -> None:
        if task.cancelled():
            done.cancel()
        elif task.exception() is not None:
            done.set_exception(task.exception())  # type: ignore[arg-type]
        else:
            done.set_result(task.result())

    loop.call_soon_threadsafe(lambda: loop.create_task(run(), context=context).add_done_callback(settle))
    return done.result()


def chat(
    spec: ModelSpec,
    messages: list[dict[str, Any]],
    *,
    response_format: dict[str, Any] | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    limiter: RateLimiter | None = None,
    cache: ResponseCache | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> LLMResult:
    """Send ``messages`` to ``spec`` and return the reply, retrying what can succeed later.

    Retries 429 (waiting at least its Retry-After), 5xx, timeouts, connection errors and empty
    content; raises ``LLMError`` at once for 400/401/403/404, or with the last kind once
    ``retry.max_attempts`` are spent. The limiter is held per attempt, not across waits.
    This is the blocking entry point (one OS thread per call in flight); the engine uses
    ``achat``, which behaves the same on an event loop. A provider litellm serves on an event
    loop only (``ASYNC_ONLY_PROVIDERS``) goes through ``achat`` on a private loop, under the
    same outbound policy.
    """
    if is_async_only(spec.model):
        return _on_a_private_loop(
            achat(spec, messages, response_format=response_format, retry=retry, limiter=limiter, cache=cache)
        )
    call = prepare_call(spec, messages, response_format)
    hit = _cached(call, cache)
    if hit is not None:
        return hit
    litellm = _litellm()
    call_errors = _call_errors()
    for attempt in range(1, retry.max_attempts + 1):
        retry_after: float | None = None
        if limiter is not None:
            limiter.acquire(spec.rate_key)
        started = time.perf_counter()
        try:
            response = http_policy.call(litellm.completion, **call.kwargs)
        except call_errors as exc:
            latency_ms = (time.perf_counter() - started) * 1000.0
            error, retry_after = _failure(call, exc, attempt)
        else:
            latency_ms = (time.perf_counter() - started) * 1000.0
            outcome = _reply(call, response, latency_ms, attempt)
            if isinstance(outcome, LLMResult):
                if cache is not None:
                    cache.set(call.request_hash, outcome)
                return outcome
            error = outcome
        finally:
            if limiter is not None:
                limiter.release(spec.rate_key)
        sleep(_give_up_or_wait(call, error, attempt, latency_ms, retry, retry_after))
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover


async def acquire_async(limiter: RateLimiter, key: str, poll_seconds: float = 0.01) -> None:
    """Take a slot of ``limiter`` for ``key`` without blocking the event loop.

    A limiter whose Redis does not answer is an outage, not a failure of the call: the wait
    goes on with backoff (``core.transient``) until Redis is back or the outage budget is spent.
    """
    waited = 0.0
    outage: Iterator[float] | None = None
    while True:
        try:
            if limiter.try_acquire(key):
                return
        except Exception as exc:
            if not is_transient(exc):
                raise
            outage = outage or backoff_delays()
            pause = next(outage, None)
            if pause is None:
                raise
            logger.warning("rate limiter: Redis does not answer (%s); again in %.1f s", exc, pause)
            await asyncio.sleep(pause)
            continue
        outage = None
        # Releases are not signalled across processes: poll, with jitter, backing off to 50 ms.
        delay = min(poll_seconds * (1.0 + waited), 0.05) * random.uniform(0.5, 1.0)
        await asyncio.sleep(delay)
        waited += delay


_first_calls: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], asyncio.Lock | None]] = (
    weakref.WeakKeyDictionary()
)


def _loop_aiohttp_session() -> Any:
    """Return the running loop's aiohttp session for async-only providers (one per loop).

    litellm keeps one session for such a provider, bound to the loop of its first call: on any
    other loop (the next worker task, the launch check's loop) it fails ("Event loop is
    closed"). Each loop gets its own here, kept on the loop so it goes with it.
    """
    import aiohttp

    loop = asyncio.get_running_loop()
    session = getattr(loop, "_evalsite_aiohttp_session", None)
    if session is None or session.closed:
        session = aiohttp.ClientSession()
        loop._evalsite_aiohttp_session = session  # type: ignore[attr-defined]
    return session


async def _acompletion_shared_client(litellm: Any, spec: ModelSpec, kwargs: dict[str, Any]) -> Any:
    """Call ``litellm.acompletion``; the first call to an endpoint on this loop goes alone.

    litellm builds its HTTP client for an endpoint on the first call and caches it per event
    loop: a hundred conversations starting at once would each build one (a stampede that cost
    seconds of CPU). The first call builds it while the others wait, then they all share it.
    """
    if is_async_only(spec.model):
        return await litellm.acompletion(**kwargs, client=_loop_aiohttp_session())
    gates = _first_calls.setdefault(asyncio.get_running_loop(), {})
    key = (spec.model.split("/", 1)[0], spec.api_base)
    gate = gates.get(key, False)
    if gate is None:  # the client exists
        return await litellm.acompletion(**kwargs)
    if gate is False:
        gate = gates[key] = asyncio.Lock()
    async with gate:
        if gates.get(key) is not None:  # still the first: build the client
            try:
                return await litellm.acompletion(**kwargs)
            finally:
                gates[key] = None
    return await litellm.acompletion(**kwargs)


async def achat(
    spec: ModelSpec,
    messages: list[dict[str, Any]],
    *,
    response_format: dict[str, Any] | None = None,
    retry: RetryPolicy = DEFAULT_RETRY,
    limiter: RateLimiter | None = None,
    cache: ResponseCache | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    known_hash: str = "",
    guard: Callable[[], Awaitable[None]] | None = None,
) -> LLMResult:
    """``chat`` on an event loop: ``litellm.acompletion``, waits that never block the loop.

    The same retries, limits, cache, call record and errors as ``chat``. ``cache`` is read and
    written synchronously: give it one that needs no database (``DictCache``, a preloaded
    view), or look up in a database step before calling (and pass the ``request_hash`` it
    computed as ``known_hash``, so a large prompt is hashed once).

    ``guard`` is awaited right before every request is sent (at the wire, after its rate-limit
    slot is taken and litellm has prepared it, so no wait or preparation can outlive a
    cancel): it raises to stop the call (the job was cancelled, or its work taken over), and
    nothing is sent.
    """
    call = prepare_call(spec, messages, response_format, known_hash=known_hash)
    hit = _cached(call, cache)
    if hit is not None:
        return hit
    litellm = _litellm()
    call_errors = _call_errors()
    direct_call = direct.eligible(call)  # an OpenAI-compatible server: the openai SDK, no litellm layer
    for attempt in range(1, retry.max_attempts + 1):
        retry_after: float | None = None
        if limiter is not None:
            await acquire_async(limiter, spec.rate_key)
        started = time.perf_counter()
        try:
            # The guard runs at the wire (core.http_policy), not here: between here and the send
            # lie litellm's preparation and the wait while the first call builds the shared
            # client, and a cancel recorded then must still stop this call.
            if direct_call:
                response = await http_policy.acall(direct.acomplete, call, guard=guard)
            else:
                response = await http_policy.acall(_acompletion_shared_client, litellm, spec, call.kwargs, guard=guard)
        except call_errors as exc:
            latency_ms = (time.perf_counter() - started) * 1000.0
            error, retry_after = _failure(call, exc, attempt)
        else:
            latency_ms = (time.perf_counter() - started) * 1000.0
            outcome = _reply(call, response, latency_ms, attempt, direct_call=direct_call)
            if isinstance(outcome, LLMResult):
                if cache is not None:
                    cache.set(call.request_hash, outcome)
                return outcome
            error = outcome
        finally:
            if limiter is not None:
                limiter.release(spec.rate_key)
        await sleep(_give_up_or_wait(call, error, attempt, latency_ms, retry, retry_after))
    raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover
