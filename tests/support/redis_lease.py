"""A Redis database held by one test run at a time: two checkouts on one server never flush each other.

A run takes a database by an atomic lease: ``SET evalsite:test-run-lease <token> NX PX <ttl>``
in that database, refreshed by a thread while the run lives and deleted at its end (a run
killed outright lets it expire within ``LEASE_SECONDS``). The lease lives in the database it
guards, so one Lua script checks it and flushes: a run never flushes a database it does not
hold, and a flush keeps the lease. Which database:

- ``EVALSITE_TEST_REDIS_URL`` with a database (``redis://host:port/N``): N, on that server;
- else ``EVALSITE_TEST_REDIS_DB``: that database of ``REDIS_URL``'s server;
- else the first free one of the server named (``EVALSITE_TEST_REDIS_URL`` without a database,
  or ``REDIS_URL``), from 15 down to 1, never ``REDIS_URL``'s own.

A database named explicitly and held by another run is refused with who holds it, never shared.
"""

from __future__ import annotations

import atexit
import os
import socket
import threading
import uuid
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

LEASE_KEY = "evalsite:test-run-lease"
LEASE_SECONDS = 60.0

_REFRESH = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end"
_FLUSH = (
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end "
    "redis.call('FLUSHDB') redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1"
)
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end"


class LeaseUnavailable(RuntimeError):
    """No database could be taken: the one named is held by another run, or every candidate is."""


def on_db(url: str, db: int) -> str:
    """Return ``url`` (host, port, password) on database ``db``."""
    return urlsplit(url)._replace(path=f"/{db}").geturl()


def url_db(url: str) -> int | None:
    """Return the database a Redis URL names, or None when it names none."""
    path = urlsplit(url).path.strip("/")
    return int(path) if path.isdigit() else None


class RedisLease:
    """One database of one server, held by this process until ``release``."""

    def __init__(self, server_url: str, db: int, token: str) -> None:
        import redis

        self.db = db
        self.url = on_db(server_url, db)
        self.token = token
        self.client = redis.Redis.from_url(self.url, socket_connect_timeout=5, socket_timeout=10)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def _ttl_ms(self) -> int:
        return int(LEASE_SECONDS * 1000)

    def held(self) -> bool:
        return self.client.get(LEASE_KEY) == self.token.encode()

    def refresh(self) -> bool:
        """Extend the lease; False when it is no longer ours (expired and taken, or flushed by a run without leases)."""
        return bool(self.client.eval(_REFRESH, 1, LEASE_KEY, self.token, self._ttl_ms))

    def flush(self) -> None:
        """Empty the database, keeping the lease; refuse when the lease is not ours."""
        if not self.client.eval(_FLUSH, 1, LEASE_KEY, self.token, self._ttl_ms):
            raise LeaseUnavailable(f"Redis database {self.db} is no longer this run's (lease lost): not flushed")

    def keep(self) -> RedisLease:
        """Refresh the lease from a daemon thread until ``release``; release it at exit too."""
        def loop() -> None:
            while not self._stop.wait(LEASE_SECONDS / 4):
                try:
                    self.refresh()
                except Exception:  # noqa: S110 (a blip: the next refresh tries again)
                    pass

        self._thread = threading.Thread(target=loop, name=f"redis-lease-{self.db}", daemon=True)
        self._thread.start()
        atexit.register(self.release)
        return self

    def release(self) -> None:
        self._stop.set()
        try:
            self.client.eval(_RELEASE, 1, LEASE_KEY, self.token)
        except Exception:  # noqa: S110 (the server is gone: the lease expires on its own)
            pass


def holder() -> str:
    """Describe this run for whoever finds the database taken: host, process, checkout."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.getcwd()}:{uuid.uuid4().hex[:8]}"


def acquire(server_url: str, databases: Iterable[int], *, explicit: bool = False) -> RedisLease:
    """Take the first of ``databases`` no other run holds; keep it refreshed until released."""
    import redis

    token = holder()
    busy: list[str] = []
    for db in databases:
        client = redis.Redis.from_url(on_db(server_url, db), socket_connect_timeout=5, socket_timeout=10)
        try:
            if client.set(LEASE_KEY, token, nx=True, px=int(LEASE_SECONDS * 1000)):
                return RedisLease(server_url, db, token).keep()
            busy.append(f"{db} (held by {(client.get(LEASE_KEY) or b'?').decode(errors='replace')})")
        finally:
            client.close()
    what = "the Redis database named" if explicit else "every candidate Redis database"
    raise LeaseUnavailable(f"{what} is held by another test run: {', '.join(busy)}")


def candidates(env: Mapping[str, str]) -> tuple[str, list[int], bool]:
    """Return (server URL, databases to try in order, whether they were named explicitly) from ``env``."""
    whole = env.get("EVALSITE_TEST_REDIS_URL", "")
    base = env.get("REDIS_URL") or "redis://127.0.0.1:6379"  # not a service location: the documented default
    if whole and url_db(whole) is not None:
        return whole, [url_db(whole) or 0], True
    if env.get("EVALSITE_TEST_REDIS_DB"):
        return base, [int(env["EVALSITE_TEST_REDIS_DB"])], True
    server = whole or base
    own = url_db(base) or 0
    return server, [db for db in range(15, 0, -1) if db != own], False


def acquire_from_env(env: Mapping[str, str] | None = None) -> RedisLease:
    """Take this run's database as the environment says (see the module's docstring)."""
    server, databases, explicit = candidates(os.environ if env is None else env)
    return acquire(server, databases, explicit=explicit)


_current: RedisLease | None = None


def set_current(lease: RedisLease | None) -> None:
    global _current
    _current = lease


def flush_test_redis() -> None:
    """Flush this run's leased database (the integration tests' broker), never another run's."""
    if _current is None:
        raise LeaseUnavailable("this run holds no Redis database: nothing is flushed")
    _current.flush()
