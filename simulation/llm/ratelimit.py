"""Concurrency and requests-per-minute limits per model, shared by every worker.

A limiter applies its limits separately to each ``key`` passed to ``acquire`` (``chat`` passes
``ModelSpec.rate_key``: model and api_base). ``release`` must be called by the thread that
acquired, once per ``acquire``.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol


class RateLimiter(Protocol):
    def acquire(self, key: str) -> None:
        """Block until a call to ``key`` may start."""

    def try_acquire(self, key: str) -> bool:
        """Start a call to ``key`` if the limits allow it now; never blocks."""

    def release(self, key: str) -> None:
        """Mark the calling thread's call to ``key`` as finished."""


@dataclass
class _KeyState:
    in_flight: int = 0
    starts: deque[float] = field(default_factory=deque)  # monotonic start times, last 60 s


class LocalRateLimiter:
    """Threading limiter for the embedded mode (one worker process, many threads)."""

    def __init__(self, max_concurrent: int = 0, requests_per_minute: int = 0) -> None:
        self.max_concurrent = max_concurrent
        self.requests_per_minute = requests_per_minute
        self._cond = threading.Condition()
        self._keys: dict[str, _KeyState] = {}

    def acquire(self, key: str) -> None:
        with self._cond:
            state = self._keys.setdefault(key, _KeyState())
            while True:
                wait = self._wait_needed(state)
                if wait == 0.0:
                    break
                self._cond.wait(timeout=wait)
            self._take(state)

    def try_acquire(self, key: str) -> bool:
        with self._cond:
            state = self._keys.setdefault(key, _KeyState())
            if self._wait_needed(state) != 0.0:
                return False
            self._take(state)
            return True

    def _take(self, state: _KeyState) -> None:
        state.in_flight += 1
        if self.requests_per_minute:
            state.starts.append(time.monotonic())

    def _wait_needed(self, state: _KeyState) -> float | None:
        """Return 0 when a call may start, seconds to wait, or None to wait for a release."""
        if self.max_concurrent and state.in_flight >= self.max_concurrent:
            return None
        if self.requests_per_minute:
            now = time.monotonic()
            while state.starts and state.starts[0] <= now - 60.0:
                state.starts.popleft()
            if len(state.starts) >= self.requests_per_minute:
                return max(state.starts[0] + 60.0 - now, 0.001)
        return 0.0

    def release(self, key: str) -> None:
        with self._cond:
            state = self._keys[key]
            state.in_flight = max(state.in_flight - 1, 0)
            self._cond.notify_all()


# KEYS[1]: leases (zset lease id -> expiry ms), KEYS[2]: starts in the last minute (zset id -> ms).
# ARGV: lease id, max concurrent (0 = no cap), requests per minute (0 = no cap), lease ms.
# Returns {1, 0} when granted, else {0, ms worth waiting before the next try}. Redis TIME is the
# one clock all workers share.
_ACQUIRE_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local max_c = tonumber(ARGV[2])
local rpm = tonumber(ARGV[3])
local lease_ms = tonumber(ARGV[4])
if max_c > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if redis.call('ZCARD', KEYS[1]) >= max_c then
    local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    return {0, tonumber(first[2]) - now}
  end
end
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
  if redis.call('ZCARD', KEYS[2]) >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
    return {0, tonumber(oldest[2]) + 60000 - now}
  end
  redis.call('ZADD', KEYS[2], now, ARGV[1])
  redis.call('PEXPIRE', KEYS[2], 61000)
end
if max_c > 0 then
  redis.call('ZADD', KEYS[1], now + lease_ms, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], lease_ms + 1000)
end
return {1, 0}
"""


class RedisRateLimiter:
    """Limits shared by every process that uses the same Redis and ``prefix``.

    Concurrency is a sorted set of lease ids scored by their expiry time: a worker that dies
    holding a lease frees its slot after ``lease_seconds`` (keep it above the call timeout).
    The per-minute limit is a sliding-window log: a sorted set of the starts of the last 60 s.
    Both checks and both writes happen in one Lua script, so grants are atomic.
    """

    def __init__(
        self,
        redis_url: str,
        max_concurrent: int = 0,
        requests_per_minute: int = 0,
        lease_seconds: float = 300.0,
        *,
        prefix: str = "evalsite:ratelimit",
        poll_seconds: float = 0.02,
    ) -> None:
        import redis

        self.max_concurrent = max_concurrent
        self.requests_per_minute = requests_per_minute
        self.lease_ms = int(lease_seconds * 1000)
        self.prefix = prefix
        self.poll_seconds = poll_seconds
        self._redis = redis.Redis.from_url(redis_url)
        self._acquire_script = self._redis.register_script(_ACQUIRE_LUA)
        self._held = threading.local()  # key -> stack of this thread's lease ids

    def _keys(self, key: str) -> list[str]:
        # The hash tag keeps both keys in one slot should Redis ever run as a cluster.
        return [f"{self.prefix}:{{{key}}}:leases", f"{self.prefix}:{{{key}}}:starts"]

    def acquire(self, key: str) -> None:
        while True:
            wait_ms = self._attempt(key)
            if wait_ms is None:
                return
            # Releases are not signalled, so poll; jitter keeps waiting workers from lock-step.
            wait = min(max(wait_ms, 1) / 1000.0, self.poll_seconds)
            time.sleep(wait * random.uniform(0.5, 1.0))

    def try_acquire(self, key: str) -> bool:
        return self._attempt(key) is None

    def _attempt(self, key: str) -> int | None:
        """Take a lease and return None, or return the milliseconds worth waiting."""
        lease_id = uuid.uuid4().hex
        args: list[Any] = [lease_id, self.max_concurrent, self.requests_per_minute, self.lease_ms]
        granted, wait_ms = self._acquire_script(keys=self._keys(key), args=args)
        if not granted:
            return int(wait_ms)
        self._stack(key).append(lease_id)
        return None

    def release(self, key: str) -> None:
        stack = self._stack(key)
        if stack:
            self._redis.zrem(self._keys(key)[0], stack.pop())

    def _stack(self, key: str) -> list[str]:
        held: dict[str, list[str]] = self._held.__dict__.setdefault("leases", {})
        return held.setdefault(key, [])

    def in_flight(self, key: str) -> int:
        """Return the number of unexpired leases for ``key`` (for dashboards and tests)."""
        leases = self._keys(key)[0]
        seconds, micros = self._redis.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        return int(self._redis.zcount(leases, f"({now_ms}", "+inf"))

    def clear(self, key: str) -> None:
        self._redis.delete(*self._keys(key))


_limiters: dict[tuple[str, int, int], RateLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(
    key: str, max_concurrent: int, rpm: int, *, lease_seconds: float = 300.0
) -> RateLimiter:
    """Return the process-wide limiter named ``key`` (Redis when REDIS_URL is set, else local).

    ``key`` names the budget (e.g. "simulation" or "judging"); within it, limits apply per
    model key passed to ``acquire``. The same arguments always return the same instance.
    """
    from django.conf import settings

    redis_url = getattr(settings, "REDIS_URL", "") if settings.configured else ""
    cache_key = (key, max_concurrent, rpm)
    with _limiters_lock:
        limiter = _limiters.get(cache_key)
        if limiter is None:
            if redis_url:
                limiter = RedisRateLimiter(
                    redis_url,
                    max_concurrent,
                    rpm,
                    lease_seconds,
                    prefix=f"evalsite:ratelimit:{key}",
                )
            else:
                limiter = LocalRateLimiter(max_concurrent, rpm)
            _limiters[cache_key] = limiter
    return limiter
