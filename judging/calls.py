"""One judge result's LLM calls: spec, limiter, cache, and a record of every call.

Everything goes through ``simulation.llm.achat`` (retries with Retry-After, shared limits),
awaited by a judge result's coroutine on the engine (``simulation.llm.engine``).
The record survives a failure, so a run's tokens and cost include the calls of failed results.
A reply answered from the cache costs nothing and is counted as cached.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from judging.cache import DbCache, RunCache, cache_get_many
from simulation.llm import (
    DEFAULT_RETRY,
    LLMError,
    LLMResult,
    ModelSpec,
    RetryPolicy,
    achat,
    limiter_for,
    request_hash,
)
from simulation.llm.client import refuse_by_secrets_policy
from simulation.llm.engine import db_batch

# One policy for every judge call instead of each judge's own budget; tests shorten the waits
# between retried calls by setting it. None: each judge's budget (``Judge.retry_*``).
RETRY_POLICY: RetryPolicy | None = None
LIMITER_BUDGET = "judging"


@dataclass(frozen=True)
class JudgeCallConfig:
    """What calling one judge needs, read from the run's snapshot of the judge."""

    model: str
    api_base: str
    api_key_env: str
    params: dict[str, Any]
    timeout: float
    max_concurrent: int
    requests_per_minute: int
    structured_output: bool
    format_retries: int
    retry: RetryPolicy = DEFAULT_RETRY  # the judge's budget (runs created before it: the default)

    @classmethod
    def from_snapshot(cls, snapshot: dict[str, Any]) -> JudgeCallConfig:
        return cls(
            model=snapshot["model"],
            api_base=snapshot.get("api_base", ""),
            api_key_env=snapshot.get("api_key_env", ""),
            params=dict(snapshot.get("params") or {}),
            timeout=float(snapshot.get("timeout_seconds") or 120),
            max_concurrent=int(snapshot.get("max_concurrent") or 0),
            requests_per_minute=int(snapshot.get("requests_per_minute") or 0),
            structured_output=bool(snapshot.get("structured_output", True)),
            format_retries=int(snapshot.get("format_retries", 2)),
            retry=RetryPolicy.of(
                snapshot.get("retry_attempts"), snapshot.get("retry_base_delay"), snapshot.get("retry_max_delay")
            ),
        )

    def spec(self) -> ModelSpec:
        return ModelSpec(
            model=self.model,
            api_base=self.api_base,
            api_key_env=self.api_key_env,
            params=self.params,
            timeout=self.timeout,
        )


@dataclass
class Caller:
    """Make a judge's calls and keep a record of each one.

    Calls are coroutines for the engine: the cache lookup is a database step, the call itself
    ``achat`` on the event loop. Replies are cached by *chain*: every reply of a question (or
    of the one checklist call) is kept until the chain ends; when its last reply is accepted,
    all of them are stored (``commit_accepted``), the invalid ones that led to a format retry
    included. A cached re-run then replays the same replies, builds the same retry prompts and
    reaches exactly the same labels without a single HTTP call.
    """

    config: JudgeCallConfig
    cache: RunCache | None
    records: list[dict[str, Any]] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    chain: list[str] = field(default_factory=list)
    # Awaited right before each attempt is sent; raises when the result is no longer ours
    # (the run was cancelled, or another worker took it over): no call leaves then.
    guard: Callable[[], Awaitable[None]] | None = None

    @classmethod
    def for_result(
        cls, config: JudgeCallConfig, *, instance: int, independent: bool, use_cache: bool, conversation_id: int | None = None
    ) -> Caller:
        own = f"conversation:{conversation_id}" if conversation_id is not None else ""
        if instance > 0 and independent:
            return cls(config, RunCache(DbCache(), salt=f"instance:{instance}", read=use_cache, own=own))
        if instance > 0:  # shares instance 0's entries; a reply of its own is kept under its own key
            return cls(config, RunCache(DbCache(), salt=f"shared-instance:{instance}", read=use_cache, shared=True, own=own))
        return cls(config, RunCache(DbCache(), read=use_cache, own=own))

    def begin(self) -> None:
        """Start a new chain (a question, or the checklist call): earlier replies stay out of it."""
        self.chain = []

    async def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
        purpose: str = "",
    ) -> LLMResult:
        """Send one request; raise ``LLMError`` once ``achat`` gives up (recorded too)."""
        spec = self.config.spec()
        refuse_by_secrets_policy(spec)  # before anything, cached or not, is looked up or sent
        result: LLMResult | None = None
        rhash = ""
        if self.cache is not None:
            rhash = request_hash(
                model=spec.model, api_base=spec.api_base, params=spec.params,
                messages=messages, response_format=response_format,
            )
            result = await db_batch(cache_get_many, (self.cache, rhash)) if self.cache.read else None
        if result is None:
            limiter = limiter_for(
                LIMITER_BUDGET, self.config.max_concurrent, self.config.requests_per_minute
            )
            try:
                result = await achat(
                    spec, messages, response_format=response_format, retry=RETRY_POLICY or self.config.retry, limiter=limiter,
                    known_hash=rhash, guard=self.guard,
                )
            except LLMError as exc:
                self.records.append(
                    {"purpose": purpose, "error": exc.kind, "attempts": exc.attempts, "cached": False}
                )
                raise
            if self.cache is not None:
                self.cache.set(rhash, result)
        else:
            result = replace(result, cached=True, latency_ms=0.0, attempts=0)
        self.chain.append(result.request_hash)
        meta = result.as_meta()
        meta.pop("params", None)  # the same on every call; kept once in the run's config
        meta["purpose"] = purpose
        if result.cached:
            meta["cost_usd"] = 0.0  # a cache hit is free
        self.records.append(meta)
        return result

    def accept(self, result: LLMResult) -> None:
        """Let a re-run replay this chain: its last reply passed validation (stored at commit)."""
        if self.cache is not None:
            self.accepted.extend(self.chain)
        self.chain = []

    def commit_accepted(self) -> None:
        """Store the replies of the accepted chains in the cache (in the caller's transaction)."""
        if self.cache is not None:
            self.cache.commit_many(self.accepted)
        self.accepted.clear()

    def accepted_entries(self) -> list[tuple[str, LLMResult]]:
        """Return the accepted chains' (cache key, reply) pairs for a batched insert.

        Nothing is forgotten here: a store that rolls back is tried again with the same entries.
        """
        return self.cache.entries(self.accepted) if self.cache is not None else []

    def totals(self) -> dict[str, Any]:
        """Return calls, failed and cached calls, tokens, cost and calls of unknown price.

        A call is an HTTP request (each attempt of a retried call, the failed ones included) or
        a reply the cache answered; a call that failed for good is all failed attempts.
        """
        ok = [r for r in self.records if "error" not in r]
        requests = [int(r.get("attempts") or 0) for r in self.records if not r.get("cached")]
        failed = sum(int(r.get("attempts") or 0) for r in self.records if "error" in r) + sum(
            max(int(r.get("attempts") or 1) - 1, 0) for r in ok if not r.get("cached")
        )
        return {
            "n_calls": sum(requests) + sum(1 for r in ok if r.get("cached")),
            "n_failed_calls": failed,
            "n_cached": sum(1 for r in ok if r.get("cached")),
            "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in ok if not r.get("cached")),
            "completion_tokens": sum(
                int(r.get("completion_tokens") or 0) for r in ok if not r.get("cached")
            ),
            "cost_usd": sum(float(r.get("cost_usd") or 0.0) for r in ok),
            "cost_unknown_calls": sum(
                1 for r in ok if not r.get("cached") and r.get("cost_usd") is None
            ),
        }
