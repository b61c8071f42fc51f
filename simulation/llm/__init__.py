"""The one place the app calls LLMs: simulation and judging both go through ``chat``.

    spec = ModelSpec(model="openai/gpt-4o", api_key_env="OPENAI_API_KEY", params={"temperature": 0})
    result = chat(spec, [{"role": "user", "content": "Hello"}], limiter=limiter_for("judging", 8, 500))

``achat`` is the same call on an event loop (the engine, ``simulation.llm.engine``). Importing
this package is cheap; litellm is imported on the first call.
"""

from simulation.llm.cache import DictCache, ResponseCache, request_hash
from simulation.llm.client import (
    DEFAULT_RETRY,
    NO_RETRY,
    ModelSpec,
    PreparedCall,
    RetryPolicy,
    achat,
    chat,
    prepare_call,
    retry_after_seconds,
)
from simulation.llm.ratelimit import (
    LocalRateLimiter,
    RateLimiter,
    RedisRateLimiter,
    limiter_for,
)
from simulation.llm.results import KINDS, LLMError, LLMResult

__all__ = [
    "DEFAULT_RETRY",
    "KINDS",
    "NO_RETRY",
    "DictCache",
    "LLMError",
    "LLMResult",
    "LocalRateLimiter",
    "ModelSpec",
    "RateLimiter",
    "RedisRateLimiter",
    "ResponseCache",
    "PreparedCall",
    "RetryPolicy",
    "achat",
    "chat",
    "prepare_call",
    "limiter_for",
    "request_hash",
    "retry_after_seconds",
]
