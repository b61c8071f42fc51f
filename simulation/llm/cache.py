"""Response caches keyed by the hash of everything that decides an LLM's answer."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from simulation.llm.results import LLMResult


def request_hash(
    *,
    model: str,
    api_base: str,
    params: Mapping[str, Any],
    messages: list[dict[str, Any]],
    response_format: dict[str, Any] | None,
) -> str:
    """Return the sha256 of the canonical JSON of a request (the key is not part of it)."""
    canonical = json.dumps(
        {
            "model": model,
            "api_base": api_base,
            "params": dict(params),
            "messages": messages,
            "response_format": response_format,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache(Protocol):
    """Stores successful results by request hash; ``chat`` marks hits ``cached=True``."""

    def get(self, request_hash: str) -> LLMResult | None: ...

    def set(self, request_hash: str, result: LLMResult) -> None: ...


class DictCache:
    """An in-memory, thread-safe cache for tests and single-process runs."""

    def __init__(self) -> None:
        self._data: dict[str, LLMResult] = {}
        self._lock = threading.Lock()

    def get(self, request_hash: str) -> LLMResult | None:
        with self._lock:
            return self._data.get(request_hash)

    def set(self, request_hash: str, result: LLMResult) -> None:
        with self._lock:
            self._data[request_hash] = result

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
