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
