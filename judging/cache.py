"""The database response cache, and the per-run view of it the judge calls use.

``DbCache`` implements ``simulation.llm.ResponseCache`` on ``LLMCacheEntry`` rows keyed by
``simulation.llm.request_hash`` (model, api_base, parameters, the exact messages and the
response format; never the key). ``RunCache`` wraps it for one judge result:

- instance salt: with independent instances, instances 1..n get their own cache key
  (sha256 of the request hash and the instance index). Without it every instance of an
  identical request shares one entry, so at temperature 0 instances 1..n are answered from the
  cache. Instance 0 is never salted, so it shares entries with single-instance runs. A shared
  instance 1..n that made its own call (it asked at the same time as instance 0, in this
  process or another) stores that reply under a key of its own, read before the shared one:
  a re-run replays each instance's own replies;
- deferred writes: ``chat`` stores every non-empty reply, but a reply that fails validation
  must not be replayed by a re-run, so writes wait until the caller ``commit``s the reply
  (the judge services do it in the transaction that stores the labels);
- the last accepted write wins: a later run that called again (``read=False``, a retry, an
  instance of its own) replaces what an earlier one stored, so a re-run from the cache
  replays the replies of the run it re-runs, format retries and retried results included;
- ``read=False`` makes fresh calls (and still stores what they return);
- own entries: a result's reply is also stored under a key of its conversation's, read first:
  two conversations with the same transcript that got different replies (asked at the same
  time) each replay their own in a re-run, while a new conversation with that transcript still
  finds the shared entry.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import asdict, fields

from judging.models import LLMCacheEntry
from simulation.llm import LLMResult

_RESULT_FIELDS = {f.name for f in fields(LLMResult)}


def _to_json(result: LLMResult) -> dict:
    return asdict(result)


def _from_json(data: dict) -> LLMResult:
    return LLMResult(**{k: v for k, v in data.items() if k in _RESULT_FIELDS})


class DbCache:
    """A ``ResponseCache`` in the database, shared by every worker."""

    def get(self, request_hash: str) -> LLMResult | None:
        row = LLMCacheEntry.objects.filter(key=request_hash).values_list("result", flat=True).first()
        return _from_json(row) if row is not None else None

    def set(self, request_hash: str, result: LLMResult) -> None:
        self.store(request_hash, result)

    def store(self, key: str, result: LLMResult) -> None:
        """Store ``result`` under ``key``; a concurrent identical write is ignored."""
        self.store_many([(key, result)])

    def store_many(self, entries: list[tuple[str, LLMResult]]) -> None:
        """Store (key, result) pairs in one statement; a key already stored takes the new reply.

        The last accepted reply wins (of the same key twice in ``entries``, the later): a
        re-run replays what the latest run accepted, not what the first one did.
        """
        latest = dict(entries)
        LLMCacheEntry.objects.bulk_create(
            [
                LLMCacheEntry(key=key, request_hash=result.request_hash, model=result.model[:200], result=_to_json(result))
                for key, result in latest.items()
            ],
            update_conflicts=True,
            unique_fields=["key"],
            update_fields=["request_hash", "model", "result"],
        )


def salted_key(request_hash: str, salt: str) -> str:
    """Return the cache key of a request under a salt (empty salt: the request hash itself)."""
    if not salt:
        return request_hash
    return hashlib.sha256(f"{request_hash}|{salt}".encode()).hexdigest()


class RunCache:
    """One judge result's view of the cache: instance salt, optional reads, deferred writes."""

    def __init__(self, base: DbCache, *, salt: str = "", read: bool = True, shared: bool = False, own: str = "") -> None:
        self.base = base
        self.salt = salt
        self.read = read
        # Read the unsalted entry when the salted one is missing (a shared instance 1..n).
        self.shared = shared and bool(salt)
        # The result's own entry ("conversation:<id>"), read first and written beside the key
        # every result with the same request shares: two conversations with the same transcript
        # that got different replies (asked at once) each replay their own in a re-run.
        self.own = own
        self._pending: dict[str, LLMResult] = {}
        self._lock = threading.Lock()

    def get(self, request_hash: str) -> LLMResult | None:
        if not self.read:
            return None
        return cache_get_many([(self, request_hash)])[0]

    def set(self, request_hash: str, result: LLMResult) -> None:
        with self._lock:
            self._pending[request_hash] = result

    def commit(self, request_hash: str) -> None:
        """Store the reply to ``request_hash`` now that the caller accepted it."""
        self.commit_many([request_hash])

    def commit_many(self, request_hashes: list[str]) -> None:
        """Store the replies to these requests (one insert) now that the caller accepted them."""
        entries = self.entries(request_hashes)
        if entries:
            self.base.store_many(entries)

    def entries(self, request_hashes: list[str]) -> list[tuple[str, LLMResult]]:
        """Return (cache key, reply) of these accepted requests, for the caller to store."""
        with self._lock:
            found = [(h, self._pending[h]) for h in request_hashes if h in self._pending]
        entries = [(salted_key(h, self.salt), result) for h, result in found]
        if self.own:
            entries += [(self.own_key(h), result) for h, result in found]
        return entries

    def key(self, request_hash: str) -> str:
        return salted_key(request_hash, self.salt)

    def own_key(self, request_hash: str) -> str | None:
        return salted_key(request_hash, f"{self.salt}|{self.own}") if self.own else None


def cache_get_many(items: list[tuple[RunCache, str]]) -> list[LLMResult | None]:
    """Look up many requests in one query (a batched database step of the engine).

    The result's own entry comes first (its conversation's), then its key, then, for a shared
    instance, the entry it shares with instance 0.
    """
    keys = [(cache.own_key(rhash), cache.key(rhash), rhash if cache.shared else None) for cache, rhash in items]
    wanted = {k for triple in keys for k in triple if k is not None}
    found = dict(LLMCacheEntry.objects.filter(key__in=wanted).values_list("key", "result"))
    out: list[LLMResult | None] = []
    for triple in keys:
        data = next((found[k] for k in triple if k is not None and k in found), None)
        out.append(_from_json(data) if data is not None else None)
    return out
