"""Cached report figures: computed once per change of the underlying data, not per page view.

A row is one report (its ``key``: kind and parameters) at one ``data_version``. A cold report
is computed by a Celery task (``reports.tasks``) while the page shows ``progress`` and
``stage``; in eager mode (tests, one-off scripts) it is computed in place.
"""

from __future__ import annotations

from django.db import models


class ReportStatus(models.TextChoices):
    READY = "ready", "Ready"
    COMPUTING = "computing", "Computing"
    FAILED = "failed", "Failed"


class ReportCache(models.Model):
    key = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=40, blank=True)
    params = models.JSONField(default=dict, blank=True)
    data_version = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=20, choices=ReportStatus.choices, default=ReportStatus.READY)
    progress = models.FloatField(default=0.0, help_text="0..1 while computing")
    stage = models.CharField(max_length=200, blank=True, help_text="What the computation is doing now")
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    computed_at = models.DateTimeField(auto_now=True)
    seconds = models.FloatField(default=0.0, help_text="How long the computation took")

    def __str__(self) -> str:
        return self.key
