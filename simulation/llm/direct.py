"""OpenAI-compatible servers called with the openai SDK itself: the LLM path at its floor (issue 32).

litellm spends about 4.5 ms of CPU on each call where the openai SDK spends under 2 (profiled on
the app's calls: its per-call cost calculation, ``set_hidden_params`` and success logging, with
the model's price looked up several times per call). For a model string ``openai/<name>`` with
an ``api_base`` (a self-hosted or proxy server speaking OpenAI's chat API, the benchmarks' fake
server included) litellm does nothing but forward the request to the openai SDK, so ``achat``
calls the SDK directly: same request body, same exceptions (litellm's are subclasses of the
SDK's, which ``client._classify`` reads), same transport as litellm (httpx over litellm's
aiohttp transport), same outbound policy (``core.http_policy`` guards httpx's and aiohttp's
send, cancel fence included). Every other model keeps litellm.

The path is taken only when litellm would add nothing: the spec's parameters are plain chat
parameters (``DIRECT_PARAMS``; anything else, a litellm option, goes through litellm), and a key
is given (without one litellm reads the environment or refuses; the direct path never reads
the environment). ``EVALSITE_LLM_DIRECT=0`` turns it off.

Cost, from litellm's own price table (``cost``): for a priced model, prompt tokens times its
input price plus completion tokens times its output price, the prices looked up once per model;
where litellm's pricing has more to it (tiers above a context size, cached or audio tokens)
litellm's ``completion_cost`` computes it, so the figure always equals litellm's (tested).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import weakref
from typing import Any

import httpx

# A simulation.llm.client.PreparedCall (not imported: the client imports this module).
PreparedCall = Any

PREFIX = "openai/"
# Parameters OpenAI's chat API takes as they are (litellm passes them through unchanged).
DIRECT_PARAMS = frozenset({
    "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop", "presence_penalty",
    "frequency_penalty", "logit_bias", "user", "logprobs", "top_logprobs",
})
# litellm's custom price arguments: used for the cost, never sent.
PRICE_PARAMS = frozenset({"input_cost_per_token", "output_cost_per_token"})
# What prepare_call adds to litellm's arguments that is not part of the request body.
NOT_SENT = frozenset({"model", "api_base", "api_key", "timeout", "num_retries"}) | PRICE_PARAMS

_transports: weakref.WeakSet[Any] = weakref.WeakSet()  # the aiohttp transports made here, for the exit
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str, float], Any]] = (
    weakref.WeakKeyDictionary()
)


def enabled() -> bool:
    """Tell whether the direct path is on (``EVALSITE_LLM_DIRECT``, on unless 0/false/no/off)."""
    return os.environ.get("EVALSITE_LLM_DIRECT", "1").strip().lower() not in ("0", "false", "no", "off")


def eligible(call: PreparedCall) -> bool:
    """Tell whether this call goes to the openai SDK directly (module docstring: when)."""
    spec = call.spec
    return (
        enabled()
        and spec.model.startswith(PREFIX)
        and bool(spec.api_base)
        and bool(call.api_key)
        and set(spec.params) <= DIRECT_PARAMS | PRICE_PARAMS
    )


def _client(api_base: str, api_key: str, timeout: float) -> Any:
    """Return this event loop's SDK client for the endpoint (its connection pool is reused)."""
    import openai

    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    key = (api_base, api_key, float(timeout))
    client = per_loop.get(key)
    if client is None:
        # httpx's own client, as litellm gives the SDK (the SDK's default is its vendored copy,
        # httpx2, which core.http_policy does not guard), over litellm's aiohttp transport as
        # litellm itself sends: httpx's own connection pool costs 20 ms of CPU per call at 100
        # calls in flight (ratio 10.7 against 1.28 on aiohttp, docs/engine.md). Both send paths
        # are guarded by core.http_policy.
        transport = httpx.AsyncClient(timeout=timeout, transport=_aiohttp_transport())
        client = per_loop[key] = openai.AsyncOpenAI(base_url=api_base, api_key=api_key, max_retries=0, timeout=timeout,
                                                    http_client=transport)
    return client


def _aiohttp_transport() -> httpx.AsyncBaseTransport:
    """Return litellm's aiohttp transport for httpx, on a session with no connection limit."""
    import aiohttp
    from litellm.llms.custom_httpx.aiohttp_transport import LiteLLMAiohttpTransport

    def session() -> aiohttp.ClientSession:
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, limit_per_host=0))

    if not _transports:
        atexit.register(_dispose_at_exit)
    transport = LiteLLMAiohttpTransport(client=session)
    _transports.add(transport)
    return transport


def _dispose_at_exit() -> None:
    """Close the sessions still open when the process ends (a loop that was never closed).

    The engine closes its loop's clients (``aclose_clients``); what is left at exit (the
    async-only providers' loop lives as long as the process) is disposed the way aiohttp's own
    finalizer does, synchronously, before the interpreter tears modules down under it.
    """
    import aiohttp
    from litellm.llms.custom_httpx.aiohttp_transport import LiteLLMAiohttpTransport

    for transport in list(_transports):
        session = getattr(transport, "client", None)
        if isinstance(session, aiohttp.ClientSession) and not session.closed:
            LiteLLMAiohttpTransport._mark_connector_closed(session)
        transport._owns_session = False  # its finalizer has nothing left to close (and would fail at teardown)


async def aclose_clients() -> None:
    """Close the running loop's SDK clients and their sessions (before the loop closes)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.close()


def forget_clients() -> None:
    """Drop every cached client (a forked child must not share its parent's sockets, nor close them at its exit)."""
    _clients.clear()
    _transports.clear()


async def acomplete(call: PreparedCall) -> Any:
    """Send the call's chat request with the openai SDK; return its ``ChatCompletion``."""
    import openai
    from openai.types.chat import ChatCompletion

    spec = call.spec
    body = {k: v for k, v in call.kwargs.items() if k not in NOT_SENT}
    client = _client(spec.api_base, str(call.api_key), spec.timeout)
    try:
        # The SDK's documented low-level call: ``create`` first walks every message through its
        # TypedDict transform (7 of 17 s of a 32x20 simulation's profile, growing with the
        # transcript), which changes nothing in a body of plain JSON values like ours.
        return await client.post("/chat/completions", body={"model": spec.model[len(PREFIX):], **body},
                                 cast_to=ChatCompletion)
    except openai.APIConnectionError as exc:
        # The SDK knows its own httpx copy's timeouts only: httpx's arrive as a connection error.
        if isinstance(exc.__cause__, httpx.TimeoutException) and not isinstance(exc, openai.APITimeoutError):
            raise openai.APITimeoutError(request=exc.request) from exc.__cause__
        raise


@functools.lru_cache(maxsize=512)
def _prices(model: str) -> tuple[float, float] | None:
    """Return (input, output) price per token of a model litellm prices linearly, else None."""
    import litellm  # imported and configured by the client before any call

    try:
        info = litellm.get_model_info(model=model)
    except Exception:  # litellm raises for a model it does not know
        return None
    tiered = any(value for key, value in info.items() if "_above_" in key and "cost" in key)
    prices = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if tiered or prices[0] is None or prices[1] is None:
        return None
    return float(prices[0]), float(prices[1])


def _plain(usage: Any) -> bool:
    """Tell whether the usage has only prompt and completion tokens (nothing priced apart)."""
    for name in ("prompt_tokens_details", "completion_tokens_details"):
        details = getattr(usage, name, None)
        if details is None:
            continue
        for field in ("cached_tokens", "audio_tokens", "reasoning_tokens", "accepted_prediction_tokens",
                      "rejected_prediction_tokens"):
            if getattr(details, field, None):
                return False
    return True


def cost(call: PreparedCall, response: Any) -> float | None:
    """Return the call's cost in USD as litellm's price table gives it; None when it is not priced."""
    if not call.priced:
        return None
    usage = getattr(response, "usage", None)
    if usage is None:
        return None
    prompt, completion = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
    params = call.params
    if "input_cost_per_token" in params or "output_cost_per_token" in params:
        return prompt * float(params.get("input_cost_per_token") or 0.0) + completion * float(
            params.get("output_cost_per_token") or 0.0
        )
    prices = _prices(call.spec.model)
    if prices is not None and _plain(usage):
        return prompt * prices[0] + completion * prices[1]
    return _litellm_cost(call, response)


def _litellm_cost(call: PreparedCall, response: Any) -> float | None:
    """litellm's ``completion_cost`` of the reply (tiers, cached or audio tokens)."""
    import litellm  # imported and configured by the client before any call

    try:
        value = litellm.completion_cost(completion_response=litellm.ModelResponse(**response.model_dump()),
                                        model=call.spec.model)
    except Exception:  # unknown model or price: a missing cost never fails a call
        return None
    return float(value) if isinstance(value, (int, float)) else None
