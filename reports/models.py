"""Cached report figures: computed once per change of the underlying data, not per page view."""

from __future__ import annotations

from django.db import models


class ReportCache(models.Model):
    key = models.CharField(max_length=200, unique=True)
    data_version = models.CharField(max_length=64)
    payload = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)
    seconds = models.FloatField(default=0.0, help_text="How long the computation took")

    def __str__(self) -> str:
        return self.key
