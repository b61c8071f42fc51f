"""Where LLM and chatbot calls may go: a list of host:port entries, allowed by default or by an administrator.

An entry names a host and, optionally, a port: ``api.openai.com`` (https on 443 only),
``llm.internal.example.org:8443``, ``*.openai.azure.com`` (a ``*`` stands within one DNS label),
``127.0.0.1:8765``, ``[::1]:11434``; ``host:*`` is any port of that host (for a test machine,
never for this machine in production). A base URL is allowed when its host *and* port match an
entry of ``EVALSITE_API_HOSTS`` (default: the major providers, ``DEFAULT_API_HOSTS``), of
``EVALSITE_API_HOSTS_EXTRA`` (set by the test settings for their local servers), or one an
administrator approved (``AllowedApiHost``; saving a chatbot, judge or batch that names it
approves it too).

This machine is not on the default list: a researcher's chatbot pointed at
``127.0.0.1:6379`` would turn the server into a port scanner of its own services (Redis,
PostgreSQL) and a proxy to them. A local model server's port is approved by an administrator;
``LOCAL_MODEL_SERVERS`` are the usual ones, offered as suggestions.

The outbound HTTP policy (``core.http_policy``) checks every request an LLM call makes against
the same list, also from a worker's event loop: there the administrators' entries come from a
snapshot at most ``SNAPSHOT_SECONDS`` old (the ORM may not run inside a running loop).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import ipaddress
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

DEFAULT_API_HOSTS = (
    "api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com", "openrouter.ai",
    "api.mistral.ai", "api.groq.com", "api.together.xyz", "api.deepseek.com", "api.x.ai",
    "api.cohere.com", "api.fireworks.ai", "api.perplexity.ai",
    "*.openai.azure.com", "*.cognitiveservices.azure.com", "*.services.ai.azure.com",
    "aiplatform.googleapis.com", "*-aiplatform.googleapis.com", "bedrock-runtime.*.amazonaws.com",
)
# Model servers people run on their own machine, offered to administrators as suggestions.
LOCAL_MODEL_SERVERS = (
    ("localhost:11434", "Ollama"),
    ("127.0.0.1:8000", "vLLM"),
    ("127.0.0.1:1234", "LM Studio"),
    ("127.0.0.1:8080", "llama.cpp server"),
    ("127.0.0.1:8765", "evalsite's offline model (manage.py offline_model)"),
)
DEFAULT_PORTS = {"http": 80, "https": 443}
SNAPSHOT_SECONDS = 10.0


@dataclass(frozen=True)
class HostEntry:
    """One allow-list entry: a host (``*`` wildcards allowed) and a port (None: the scheme's own; 0: any)."""

    host: str
    port: int | None = None

    def matches(self, host: str, port: int, scheme: str) -> bool:
        if "*" in self.host:
            if not _wildcard(self.host).fullmatch(host):
                return False
        elif host != self.host:
            return False
        if self.port == 0:
            return True
        if self.port is None:
            return scheme == "https" and port == DEFAULT_PORTS["https"]  # a bare host: https on 443 only
        return port == self.port

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port is None:
            return host
        return f"{host}:{'*' if self.port == 0 else self.port}"


@functools.lru_cache(maxsize=256)
def _wildcard(pattern: str) -> re.Pattern[str]:
    """Return the regex of a host pattern: each ``*`` stands for characters of one DNS label only.

    ``*.openai.azure.com`` matches ``myres.openai.azure.com``, never ``evil.x.openai.azure.com``;
    ``bedrock-runtime.*.amazonaws.com`` never ``bedrock-runtime.bucket.s3.amazonaws.com``.
    """
    labels = []
    for label in pattern.split("."):
        if label == "*":
            labels.append("[^.]+")
        else:
            labels.append("[^.]*".join(re.escape(part) for part in label.split("*")))
    return re.compile(r"\.".join(labels))


def plain_http_problem(where: Destination) -> str | None:
    """Return why a plain-http URL may not be used (a key would travel in clear text), or None.

    Plain http is for a model server on this machine or the local network (a private address),
    whose port an administrator approved or the settings list; every other host takes https.
    """
    if where.scheme != "http" or is_local_network(where.host):
        return None
    return (
        f"{where.host} is reached by plain http, which would send the key in clear text: use https "
        "(plain http only for a model server on this machine or the local network)"
    )


def is_local_network(host: str) -> bool:
    """Return whether ``host`` is this machine or a private, link-local address (never a name elsewhere)."""
    if is_loopback(host):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_private or address.is_link_local


_HOST_RE = re.compile(r"[a-z0-9*_-]+(\.[a-z0-9*_-]+)*\.?|[0-9a-f:.]*:[0-9a-f:.]*")


class HostEntryError(ValueError):
    """An allow-list entry that cannot be read."""


def parse_entry(text: str) -> HostEntry:
    """Read ``host``, ``host:port``, ``host:*``, ``[v6]:port`` or a bare IPv6 address as an entry."""
    raw = (text or "").strip().lower()
    if "://" in raw or "/" in raw:
        where = destination(raw if "://" in raw else f"https://{raw}")
        hint = f": enter {where.entry}" if where else " (e.g. llm.example.org:8443)"
        raise HostEntryError(f"'{text}' is a URL; give a host and port{hint}")
    port_text = ""
    if raw.startswith("["):
        host, _, rest = raw[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise HostEntryError(f"'{text}': write an IPv6 address as [address]:port")
            port_text = rest[1:]
    elif raw.count(":") >= 2:
        host = raw  # a bare IPv6 address: no port
    else:
        host, _, port_text = raw.partition(":")
    if not _HOST_RE.fullmatch(host):
        raise HostEntryError(f"'{text}': not a host name or address")
    if not host.replace("*", "").replace(".", ""):
        raise HostEntryError(f"'{text}': name a domain (e.g. *.example.org), not every host")
    port: int | None
    if port_text == "":
        port = None
    elif port_text == "*":
        port = 0
    elif port_text.isdigit() and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise HostEntryError(f"'{text}': the port must be a number from 1 to 65535 (or * for any port)")
    return HostEntry(host, port)


def _entries(texts: Iterable[str]) -> list[HostEntry]:
    entries = []
    for text in texts:
        try:
            entries.append(parse_entry(text))
        except HostEntryError:
            continue  # a malformed setting allows nothing (the admin form refuses such rows)
    return entries


@dataclass(frozen=True)
class Destination:
    """Where a URL points: its scheme, host (lower-case, IPv6 without brackets) and port."""

    scheme: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def entry(self) -> str:
        """Return the allow-list entry naming exactly this destination (no port when it is the scheme's)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if DEFAULT_PORTS.get(self.scheme) == self.port else f"{host}:{self.port}"

    @property
    def is_this_machine(self) -> bool:
        return is_loopback(self.host)


def destination(url: str) -> Destination | None:
    """Return where an http(s) ``url`` points, or None when it names no http(s) host and port."""
    try:
        parts = urlsplit((url or "").strip())
        host = (parts.hostname or "").lower()
        port = parts.port
    except ValueError:  # a port that is not a number, a bracket left open
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not host:
        return None
    return Destination(scheme, host, port if port is not None else DEFAULT_PORTS[scheme])


def is_loopback(host: str) -> bool:
    """Return whether ``host`` is this machine (localhost, 127.0.0.0/8, ::1, 0.0.0.0)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def configured_entries() -> list[HostEntry]:
    """Return the entries of the settings (``EVALSITE_API_HOSTS`` or the defaults, plus the extra ones)."""
    listed = tuple(getattr(settings, "EVALSITE_API_HOSTS", None) or DEFAULT_API_HOSTS)
    extra = tuple(getattr(settings, "EVALSITE_API_HOSTS_EXTRA", None) or ())
    return _entries((*listed, *extra))


# -- administrators' entries, readable from an event loop -------------------------------------

_snapshot_lock = threading.Lock()
_snapshot: tuple[float, tuple[str, ...]] | None = None
_loader: concurrent.futures.ThreadPoolExecutor | None = None


def _load_approved() -> tuple[str, ...]:
    from core.models import AllowedApiHost

    return tuple(AllowedApiHost.objects.values_list("host", flat=True))


def _load_approved_aside() -> tuple[str, ...]:
    """``_load_approved`` in the helper thread, which keeps no database connection between loads."""
    from django.db import connections

    try:
        return _load_approved()
    finally:
        connections.close_all()


def _in_running_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def approved_entries() -> list[HostEntry]:
    """Return the administrators' entries: read now, or (inside an event loop) a recent snapshot."""
    global _snapshot, _loader
    if not _in_running_loop():
        hosts = _load_approved()
        with _snapshot_lock:
            _snapshot = (time.monotonic(), hosts)
        return _entries(hosts)
    with _snapshot_lock:
        snapshot = _snapshot
    if snapshot is None or time.monotonic() - snapshot[0] > SNAPSHOT_SECONDS:
        # The ORM refuses to run inside a running loop: one helper thread reads it (briefly
        # blocking this loop, at most once per SNAPSHOT_SECONDS).
        with _snapshot_lock:
            if _loader is None:
                _loader = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="api-hosts")
            loader = _loader
        hosts = loader.submit(_load_approved_aside).result(timeout=30)
        with _snapshot_lock:
            _snapshot = snapshot = (time.monotonic(), hosts)
    return _entries(snapshot[1])


def forget_snapshot() -> None:
    """Drop the snapshot (an administrator changed the list in this process)."""
    global _snapshot
    with _snapshot_lock:
        _snapshot = None


def forget_snapshot_on_change(**kwargs: Any) -> None:
    """Drop the snapshot when an approved host is saved or deleted (a model signal's receiver)."""
    forget_snapshot()


# -- the rule --------------------------------------------------------------------------------


def destination_listed(where: Destination) -> bool:
    """Return whether calls may go to ``where`` (settings or an administrator's approval; https for remote hosts)."""
    if plain_http_problem(where):
        return False
    for entry in configured_entries():
        if entry.matches(where.host, where.port, where.scheme):
            return True
    return any(entry.matches(where.host, where.port, where.scheme) for entry in approved_entries())


def url_allowed(url: str) -> bool:
    """Return whether a request to ``url`` may be sent (the outbound HTTP policy's check)."""
    where = destination(url)
    return where is not None and destination_listed(where)


def not_listed_message(where: Destination) -> str:
    """Say in the app's words that ``where`` is not allowed, and who can allow it."""
    if (plain := plain_http_problem(where)) is not None:
        return plain
    if where.is_this_machine:
        return (
            f"{where} is a port on this server, and this server's ports are not allowed unless an administrator "
            "approves the port of a model server running here (Admin > Allowed API hosts, e.g. localhost:11434 for Ollama)"
        )
    return (
        f"the host {where.host} (port {where.port}) is not on the list of allowed API hosts; an administrator can "
        "approve it (Admin > Allowed API hosts) or add it to EVALSITE_API_HOSTS"
    )


def approve(*, url: str, actor: Any, note: str = "") -> None:
    """Record that an administrator approved the host and port of ``url`` (no-op when already allowed)."""
    from core.models import AllowedApiHost

    where = destination(url or "")
    if where is None or destination_listed(where):
        return
    AllowedApiHost.objects.get_or_create(host=where.entry, defaults={"added_by": actor, "note": note[:300]})
