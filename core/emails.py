"""Send one email through Django's email framework and record what became of it.

Every message the app sends (reminders, flag notices, password-reset links) goes through
``email_send``, which writes one ``EmailRecord``: recipient, purpose, time and outcome. The
outcome is decided by the configured backend (``EMAIL_BACKEND``), not assumed: only the SMTP
backend (or another delivering backend) records ``sent``; the console backend records
``printed`` and the file backend ``written`` (no message left the machine); a message the
backend raised on records ``failed`` with the reason in plain words. Pages and commands read
``backend_info`` to say in words where email goes.

The recorder lives in core because password resets (``core.passwords``) send email too and
core cannot import the apps above it; the apps pass the study a message is about as a number.
"""

from __future__ import annotations

import logging
import smtplib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.backends import console, dummy, filebased, locmem, smtp
from django.utils.module_loading import import_string

from core.models import EmailOutcome, EmailRecord

logger = logging.getLogger("core.emails")

NO_MAIL_SERVER = "no mail server is configured (EVALSITE_EMAIL_BACKEND / EMAIL_HOST)"
CONFIGURE_HINT = ("To deliver email, set EMAIL_HOST (and EMAIL_PORT, EMAIL_HOST_USER, EMAIL_HOST_PASSWORD) or "
                  "EVALSITE_EMAIL_BACKEND; .env.example lists them.")
MAX_ERROR = 500


@dataclass(frozen=True)
class EmailBackendInfo:
    """Where the configured backend puts a message, in words, and what a message becomes there."""

    path: str
    outcome: str  # an EmailOutcome: what a message the backend accepts is recorded as
    words: str  # "SMTP via smtp.example.org:587 (STARTTLS)"
    hint: str = ""

    @property
    def delivers(self) -> bool:
        """Whether a message accepted by this backend leaves the machine."""
        return self.outcome == EmailOutcome.SENT


def backend_info() -> EmailBackendInfo:
    """Describe the configured email backend (``EMAIL_BACKEND``) without connecting to anything."""
    path = str(settings.EMAIL_BACKEND)
    try:
        cls = import_string(path)
    except ImportError as exc:
        return EmailBackendInfo(path, EmailOutcome.FAILED, f"the backend {path} cannot be loaded ({exc})",
                                "Correct EVALSITE_EMAIL_BACKEND: console, file, smtp or a backend's dotted path.")
    # The file backend is a kind of console backend: it must be asked first.
    if issubclass(cls, filebased.EmailBackend):
        return EmailBackendInfo(path, EmailOutcome.WRITTEN,
                                f"written to files on the server (in {settings.EMAIL_FILE_PATH}): "
                                f"none leaves the machine, {NO_MAIL_SERVER}", CONFIGURE_HINT)
    if issubclass(cls, console.EmailBackend):
        return EmailBackendInfo(path, EmailOutcome.PRINTED,
                                f"printed to the server's console: none leaves the machine, {NO_MAIL_SERVER}",
                                CONFIGURE_HINT)
    if issubclass(cls, smtp.EmailBackend):
        security = "implicit TLS" if settings.EMAIL_USE_SSL else "STARTTLS" if settings.EMAIL_USE_TLS else "unencrypted"
        return EmailBackendInfo(path, EmailOutcome.SENT, f"SMTP via {settings.EMAIL_HOST}:{settings.EMAIL_PORT} ({security})")
    if issubclass(cls, locmem.EmailBackend):
        return EmailBackendInfo(path, EmailOutcome.KEPT, "kept in memory (the test backend): none leaves the machine",
                                CONFIGURE_HINT)
    if issubclass(cls, dummy.EmailBackend):
        return EmailBackendInfo(path, EmailOutcome.DISCARDED, "discarded (the dummy backend): none leaves the machine",
                                CONFIGURE_HINT)
    return EmailBackendInfo(path, EmailOutcome.SENT, f"handed to the {path} backend")


def email_error_text(exc: BaseException) -> str:
    """Return why a message was not sent, in one line (the mail server's answer when it gave one)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        # The address is recorded beside the error: the answer alone reads the same for every recipient.
        refused = "; ".join(dict.fromkeys(_smtp_answer(code, text) for code, text in exc.recipients.values()))
        text = f"the mail server refused the recipient ({refused})"
    elif isinstance(exc, smtplib.SMTPResponseException):
        text = f"the mail server answered {_smtp_answer(exc.smtp_code, exc.smtp_error)}"
    elif isinstance(exc, smtplib.SMTPServerDisconnected):
        text = f"the mail server closed the connection ({exc or 'no reason given'})"
    elif isinstance(exc, TimeoutError):
        text = f"the mail server at {settings.EMAIL_HOST}:{settings.EMAIL_PORT} did not answer in time"
    elif isinstance(exc, OSError):
        text = f"could not reach the mail server at {settings.EMAIL_HOST}:{settings.EMAIL_PORT} ({exc.strerror or exc})"
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split())[:MAX_ERROR]


def _smtp_answer(code: int, text: bytes | str) -> str:
    return f"{code} {text.decode(errors='replace') if isinstance(text, bytes) else text}".strip()


def email_send(*, purpose: str, address: str, subject: str, body: str, recipient: Any = None,
               study_id: int | None = None, html_body: str | None = None, from_email: str | None = None) -> EmailRecord:
    """Send one message to one address and record its outcome; never raises for a refused message.

    ``recipient`` is the user the address belongs to (None for an address alone).
    """
    info = backend_info()
    outcome, error = info.outcome, ""
    if outcome == EmailOutcome.FAILED:
        error = info.words
    else:
        message = EmailMultiAlternatives(subject, body, from_email, [address])
        if html_body:
            message.attach_alternative(html_body, "text/html")
        try:
            if not message.send(fail_silently=False):
                outcome, error = EmailOutcome.FAILED, "the email backend accepted no message"
        except Exception as exc:  # noqa: BLE001  # a refused message is recorded, never lost in a traceback
            logger.warning("%s email to %s failed: %s", purpose, address, email_error_text(exc))
            outcome, error = EmailOutcome.FAILED, email_error_text(exc)
    return EmailRecord.objects.create(
        purpose=purpose, study_id=study_id, recipient=recipient, address=address[:254],
        subject=" ".join(subject.split())[:300], outcome=outcome, backend=info.path[:200], error=error,
    )
