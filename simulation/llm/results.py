"""What a call gives back: a result with its call record, or an error that says what kind it is."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

KINDS = frozenset(
    {"rate_limited", "server_error", "timeout", "bad_request", "auth", "empty", "other"}
    # The outbound HTTP policy (core.http_policy) stopped the call: never retried.
    | {"redirect", "refused"}
)


@dataclass(frozen=True)
class LLMResult:
    content: str
    model: str  # as the provider returned it
    params: dict[str, Any]  # as sent, never the key
    latency_ms: float  # of the successful attempt; 0 for a cache hit
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None  # None when litellm does not know the model's price
    attempts: int
    cached: bool
    request_hash: str

    def as_meta(self) -> dict[str, Any]:
        """Return the call record stored on a simulated message or a judge label."""
        meta = asdict(self)
        del meta["content"]
        return meta


class LLMError(Exception):
    """A call that failed for good; ``kind`` is one of ``KINDS``. The message holds no key."""

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        retryable: bool = False,
        attempts: int = 0,
        status_code: int | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown LLMError kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.retryable = retryable
        self.attempts = attempts
        self.status_code = status_code

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_error,
            (str(self), self.kind, self.retryable, self.attempts, self.status_code),
        )


def _rebuild_error(
    message: str, kind: str, retryable: bool, attempts: int, status: int | None
) -> LLMError:
    return LLMError(message, kind=kind, retryable=retryable, attempts=attempts, status_code=status)
