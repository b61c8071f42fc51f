"""Rows the core layer owns: API hosts an administrator approved for keys to be sent to."""

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
