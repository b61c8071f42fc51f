"""Response caches keyed by the hash of everything that decides an LLM's answer."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from simulation.llm.results import LLMResult


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


# A judge sends the same (cached, never modified) response_format object with every call of a
# conversation shape: its canonical text is computed once per object.
_formats: dict[int, tuple[dict[str, Any], str]] = {}


def _canonical_format(response_format: dict[str, Any] | None) -> str:
    if response_format is None:
        return "null"
    found = _formats.get(id(response_format))
    if found is not None and found[0] is response_format:
        return found[1]
    text = _canonical(response_format)
    if len(_formats) > 1024:
        _formats.clear()
    _formats[id(response_format)] = (response_format, text)
    return text


def request_hash(
    *,
    model: str,
    api_base: str,
    params: Mapping[str, Any],
    messages: list[dict[str, Any]],
    response_format: dict[str, Any] | None,
) -> str:
    """Return the sha256 of the canonical JSON of a request (the key is not part of it).

    The canonical JSON is the object {api_base, messages, model, params, response_format} with
    sorted keys and no spaces, written part by part (the same bytes as one ``json.dumps``).
    """
    canonical = (
        '{"api_base":' + _canonical(api_base)
        + ',"messages":' + _canonical(messages)
        + ',"model":' + _canonical(model)
        + ',"params":' + _canonical(dict(params))
        + ',"response_format":' + _canonical_format(response_format)
        + "}"
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
