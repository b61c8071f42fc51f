"""Concurrency and requests-per-minute limits per model, shared by every worker.

A limiter applies its limits separately to each ``key`` passed to ``acquire`` (``chat`` passes
``ModelSpec.rate_key``: model and api_base). ``release`` must be called by the thread that
acquired, once per ``acquire``.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.transient import backoff_delays, is_transient

logger = logging.getLogger("simulation.llm")


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


# KEYS: lease sets; ARGV[1]: lease ms; then per key, its count of ids and the ids. Pushes
# the expiry of leases still present (XX: a lease already released stays released).
_RENEW_LUA = """
local t = redis.call('TIME')
local until_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local i = 2
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  for j = 1, n do
    redis.call('ZADD', KEYS[k], 'XX', until_ms, ARGV[i + j])
  end
  if n > 0 then redis.call('PEXPIRE', KEYS[k], tonumber(ARGV[1]) + 1000) end
  i = i + n + 1
end
return 1
"""


def process_id() -> str:
    """Return this process's identity in lease ids: host, pid and its start (clock ticks since boot)."""
    pid = os.getpid()
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            started = stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        started = ""
    return f"{socket.gethostname()}|{pid}@{started}"


def process_gone(identity: str) -> bool:
    """Return whether the process named by ``identity`` (``process_id``) is known dead (this host only)."""
    host, _, process = identity.partition("|")
    pid_text, _, started = process.partition("@")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid_text}/stat", "rb") as stat:
            now_started = stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return False
    return bool(started) and now_started != started


class RedisRateLimiter:
    """Limits shared by every process that uses the same Redis and ``prefix``.

    Concurrency is a sorted set of lease ids scored by their expiry time. A lease is tied to
    the living process that holds it: a thread of that process renews every lease it holds
    every third of ``lease_seconds`` (a short time, 30 s by default), so a call may last as
    long as it needs, and a process that dies (SIGKILL, out of memory) frees its slots within
    ``lease_seconds``; on its own host at once, when a worker's sweep calls
    ``release_dead_holders`` (lease ids name the process). The per-minute limit is a
    sliding-window log: a sorted set of the starts of the last 60 s. Both checks and both
    writes happen in one Lua script, so grants are atomic.

    Redis going away briefly is an outage, not a failure of the call: ``acquire`` waits
    through it with backoff, and a release that could not be sent is sent with the next grant
    (meanwhile the lease, no longer renewed, runs out).
    """

    def __init__(
        self,
        redis_url: str,
        max_concurrent: int = 0,
        requests_per_minute: int = 0,
        lease_seconds: float | None = None,
        *,
        prefix: str = "evalsite:ratelimit",
        poll_seconds: float = 0.02,
    ) -> None:
        import redis

        self.max_concurrent = max_concurrent
        self.requests_per_minute = requests_per_minute
        self.lease_ms = int((lease_seconds or rate_lease_seconds()) * 1000)
        self.prefix = prefix
        self.poll_seconds = poll_seconds
        self._redis = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)
        self._acquire_script = self._redis.register_script(_ACQUIRE_LUA)
        self._renew_script = self._redis.register_script(_RENEW_LUA)
        self._lock = threading.Lock()
        self._held: dict[str, list[str]] = {}  # key -> lease ids this process holds
        self._unreleased: list[tuple[str, str]] = []  # (key, lease id) a Redis outage kept us from releasing
        self._identity = process_id()
        self._identity_pid = os.getpid()

    def _keys(self, key: str) -> list[str]:
        # The hash tag keeps both keys in one slot should Redis ever run as a cluster.
        return [f"{self.prefix}:{{{key}}}:leases", f"{self.prefix}:{{{key}}}:starts"]

    def acquire(self, key: str) -> None:
        outage = None
        while True:
            try:
                wait_ms = self._attempt(key)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                outage = outage or backoff_delays()
                delay = next(outage, None)
                if delay is None:
                    raise
                logger.warning("rate limiter: Redis does not answer (%s); again in %.1f s", exc, delay)
                time.sleep(delay)
                continue
            outage = None
            if wait_ms is None:
                return
            # Releases are not signalled, so poll; jitter keeps waiting workers from lock-step.
            wait = min(max(wait_ms, 1) / 1000.0, self.poll_seconds)
            time.sleep(wait * random.uniform(0.5, 1.0))

    def try_acquire(self, key: str) -> bool:
        return self._attempt(key) is None

    def _lease_id(self) -> str:
        if self._identity_pid != os.getpid():  # a forked child is a process of its own
            self._identity, self._identity_pid = process_id(), os.getpid()
        return f"{self._identity}|{uuid.uuid4().hex}"

    def _attempt(self, key: str) -> int | None:
        """Take a lease and return None, or return the milliseconds worth waiting."""
        self._release_unreleased()
        lease_id = self._lease_id()
        args: list[Any] = [lease_id, self.max_concurrent, self.requests_per_minute, self.lease_ms]
        granted, wait_ms = self._acquire_script(keys=self._keys(key), args=args)
        if not granted:
            return int(wait_ms)
        if self.max_concurrent:
            with self._lock:
                self._held.setdefault(key, []).append(lease_id)
            _renewer.watch(self)
        return None

    def release(self, key: str) -> None:
        with self._lock:
            stack = self._held.get(key)
            lease_id = stack.pop() if stack else None
        if lease_id is None:
            return
        try:
            self._redis.zrem(self._keys(key)[0], lease_id)
        except Exception as exc:
            if not is_transient(exc):
                raise
            logger.warning("rate limiter: Redis does not answer (%s); the slot is given back later", exc)
            with self._lock:
                self._unreleased.append((key, lease_id))

    def _release_unreleased(self) -> None:
        with self._lock:
            pending, self._unreleased = self._unreleased, []
        for n, (key, lease_id) in enumerate(pending):
            try:
                self._redis.zrem(self._keys(key)[0], lease_id)
            except Exception:
                with self._lock:
                    self._unreleased.extend(pending[n:])
                raise

    def renew(self) -> None:
        """Push the expiry of every lease this process holds (the renewer thread calls it)."""
        with self._lock:
            held = [(key, list(ids)) for key, ids in self._held.items() if ids]
        if not held:
            return
        keys = [self._keys(key)[0] for key, _ in held]
        args: list[Any] = [self.lease_ms]
        for _, ids in held:
            args += [len(ids), *ids]
        self._renew_script(keys=keys, args=args)

    def in_flight(self, key: str) -> int:
        """Return the number of unexpired leases for ``key`` (for dashboards and tests)."""
        leases = self._keys(key)[0]
        seconds, micros = self._redis.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        return int(self._redis.zcount(leases, f"({now_ms}", "+inf"))

    def clear(self, key: str) -> None:
        self._redis.delete(*self._keys(key))


def rate_lease_seconds() -> float:
    """Return how long a rate-limit slot outlives the process holding it (renewed while it lives)."""
    from django.conf import settings

    configured = getattr(settings, "EVALSITE_RATE_LEASE_SECONDS", None) if settings.configured else None
    return float(configured or os.environ.get("EVALSITE_RATE_LEASE_SECONDS") or 30)


class _Renewer:
    """One daemon thread per process: renews the leases of every Redis limiter that holds some."""

    def __init__(self) -> None:
        self._limiters: weakref.WeakSet[RedisRateLimiter] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def watch(self, limiter: RedisRateLimiter) -> None:
        with self._lock:
            self._limiters.add(limiter)
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._main, name="evalsite-rate-leases", daemon=True)
                self._thread.start()

    def _main(self) -> None:
        while True:
            with self._lock:
                limiters = list(self._limiters)
            every = min((limiter.lease_ms for limiter in limiters), default=30000) / 3000.0
            time.sleep(max(every, 0.05))
            for limiter in limiters:
                try:
                    limiter.renew()
                except Exception as exc:  # Redis away: the leases run out, as for a dead process
                    logger.warning("rate limiter: could not renew leases (%s)", exc)


_renewer = _Renewer()


def release_dead_holders(redis_url: str = "", prefix: str = "evalsite:ratelimit") -> int:
    """Free the rate-limit slots that dead processes of this host held; return how many.

    Every worker's sweep calls it (when it starts, then periodically), so a restarted worker
    finds the slots of the one that was killed free at once. Without Redis there is nothing
    shared to free.
    """
    from django.conf import settings

    redis_url = redis_url or getattr(settings, "REDIS_URL", "")
    if not redis_url:
        return 0
    import redis

    client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)
    removed = 0
    try:
        for leases in client.scan_iter(f"{prefix}:*:leases", count=500):
            for member in client.zrange(leases, 0, -1):
                lease_id = member.decode() if isinstance(member, bytes) else str(member)
                identity = lease_id.rpartition("|")[0]
                if identity and process_gone(identity):
                    removed += int(client.zrem(leases, member))
    finally:
        client.close()
    return removed


_limiters: dict[tuple[str, int, int], RateLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(
    key: str, max_concurrent: int, rpm: int, *, lease_seconds: float | None = None
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
