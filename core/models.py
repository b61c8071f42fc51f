"""Rows the core layer owns: approved API hosts, and checked uploads waiting for "Import now"."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AllowedApiHost(models.Model):
    """A host (or ``*.domain`` pattern) that LLM and chatbot calls may go to, with who approved it.

    Hosts named in ``EVALSITE_API_HOSTS`` are allowed without a row; a row is added when an
    administrator approves a host in the admin or saves a chatbot, judge or batch that uses it.
    """

    host = models.CharField(max_length=253, unique=True, help_text="e.g. llm.internal.example.org or *.openai.azure.com")
    note = models.CharField(max_length=300, blank=True)
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["host"]
        verbose_name = "allowed API host"

    def __str__(self) -> str:
        return self.host

    def save(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.host = self.host.strip().lower()
        super().save(*args, **kwargs)


class StagedUpload(models.Model):
    """A file that passed a dry run, kept for a short time so "Import now" needs no second upload.

    Kept in the database, not on a web server's disk, so any web process (on any machine) finds
    it. The token that names it is stored only as its SHA-256; the row is bound to the user who
    uploaded it and to one import target, and expires (``core.staged_uploads``).
    """

    token_hash = models.CharField(max_length=64, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    target = models.CharField(max_length=120, help_text="Which import: e.g. conversations, ratings:study-12")
    name = models.CharField(max_length=255, help_text="The uploaded file's name")
    data = models.BinaryField()
    size = models.PositiveBigIntegerField()
    options = models.JSONField(default=dict, blank=True, help_text="The form's other fields, as checked")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["user", "target"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.target}, user {self.user_id})"


class ThrottleHit(models.Model):
    """One request counted against a limit (password-reset requests by address and by email).

    Kept in the database so every web process counts the same; rows older than the longest
    window are deleted as new ones come in.
    """

    key = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["key", "created_at"])]

    def __str__(self) -> str:
        return f"{self.key} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class WorkerHeartbeat(models.Model):
    """A Celery worker's latest sign of life, written every few seconds by the worker itself.

    The status page and ``manage.py status`` read it: which workers were seen in the last
    minute, with the queues they consume, without asking the broker.
    """

    hostname = models.CharField(max_length=255, unique=True)
    queues = models.JSONField(default=list, blank=True)
    pid = models.PositiveIntegerField(default=0)
    concurrency = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    last_seen = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["hostname"]

    def __str__(self) -> str:
        return self.hostname


class EmailPurpose(models.TextChoices):
    REMINDER = "reminder", "Reminder to a rater"
    FLAG_NOTICE = "flag_notice", "Flag notice to a coordinator"
    PASSWORD_RESET = "password_reset", "Password-reset link"
    OTHER = "other", "Other"


class EmailOutcome(models.TextChoices):
    """What the configured email backend did with a message: only ``sent`` left the machine."""

    SENT = "sent", "sent"
    FAILED = "failed", "failed"
    PRINTED = "printed", "printed to the server's console"
    WRITTEN = "written", "written to a file on the server"
    KEPT = "kept", "kept in memory (test backend)"
    DISCARDED = "discarded", "discarded (dummy backend)"


class EmailRecord(models.Model):
    """One message the app tried to send, with what became of it (``core.emails.email_send``).

    ``study_id`` names the annotation study a message was about: a plain number, not a foreign
    key, because core sits below the annotation app and must not refer to its tables. A record
    outlives its study and its recipient (the log of what was sent stays true).
    """

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    purpose = models.CharField(max_length=30, choices=EmailPurpose.choices)
    study_id = models.PositiveIntegerField(null=True, blank=True, help_text="The study the message was about, if any")
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="+")
    address = models.CharField(max_length=254)
    subject = models.CharField(max_length=300)
    outcome = models.CharField(max_length=20, choices=EmailOutcome.choices)
    backend = models.CharField(max_length=200, help_text="The email backend's dotted path at the time")
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study_id", "purpose", "created_at"])]

    def __str__(self) -> str:
        return f"{self.purpose} to {self.address}: {self.outcome}"


class PasswordChangeRequired(models.Model):
    """An account whose password someone else set (initial passwords, an administrator): its owner
    must choose their own before anything else (``core.first_login``). Gone once they have."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="+")
    set_at = models.DateTimeField(auto_now_add=True)
    set_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"password change required: {self.user_id}"


class OutageState(models.TextChoices):
    OPEN = "open", "Not answering"
    PROBING = "probing", "Being checked"
    CLOSED = "closed", "Answering again"


class ProviderOutage(models.Model):
    """A circuit breaker per model endpoint (a chatbot's, a judge's): open while it does not answer.

    Work that failed because the endpoint was down (server errors, refused connections,
    timeouts past the budget) waits here instead of needing a person: the sweeper sends one
    piece of it again as a probe once ``next_probe_at`` has passed (backing off while it keeps
    failing); the first success closes the breaker and sends the rest again (core.outages).
    """

    key = models.CharField(max_length=120, unique=True)  # "target:12", "judge:5"
    label = models.CharField(max_length=200)  # what pages show (a chatbot's code, a judge's name)
    state = models.CharField(max_length=10, choices=OutageState.choices, default=OutageState.OPEN)
    failures = models.PositiveIntegerField(default=0, help_text="Outage failures since it last answered")
    opened_at = models.DateTimeField(null=True, blank=True)
    next_probe_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["key"]
        indexes = [models.Index(fields=["state", "next_probe_at"])]

    def __str__(self) -> str:
        return f"{self.key}: {self.state}"
