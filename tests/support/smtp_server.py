"""A real SMTP server on 127.0.0.1 for the email tests (aiosmtpd): messages are received, not mocked."""

from __future__ import annotations

import email
import socket
from email import policy
from email.message import EmailMessage
from types import TracebackType
from typing import Any

from aiosmtpd.controller import Controller


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Handler:
    def __init__(self, server: LocalSMTP) -> None:
        self.server = server

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:
        if self.server.refuse:
            return self.server.refuse
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=policy.default)
        self.server.received.append((list(envelope.rcpt_tos), message))  # type: ignore[arg-type]
        return "250 Message accepted for delivery"


class LocalSMTP:
    """An SMTP server on a free local port that keeps what it receives, or refuses every recipient.

    ``refuse``: the answer to every RCPT TO (e.g. ``"550 5.1.1 Mailbox unavailable"``); empty: accept.
    """

    def __init__(self, refuse: str = "") -> None:
        self.refuse = refuse
        self.received: list[tuple[list[str], EmailMessage]] = []
        self.port = _free_port()
        self._controller = Controller(_Handler(self), hostname="127.0.0.1", port=self.port)

    def settings(self) -> dict[str, Any]:
        """Return the Django settings that send through this server."""
        return {"EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend", "EMAIL_HOST": "127.0.0.1",
                "EMAIL_PORT": self.port, "EMAIL_USE_TLS": False, "EMAIL_USE_SSL": False,
                "EMAIL_HOST_USER": "", "EMAIL_HOST_PASSWORD": "", "EMAIL_TIMEOUT": 5}

    def body(self, message: EmailMessage) -> str:
        """Return the plain-text part of a received message."""
        part = message.get_body(preferencelist=("plain",))
        return part.get_content() if part is not None else ""

    def __enter__(self) -> LocalSMTP:
        self._controller.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._controller.stop()
