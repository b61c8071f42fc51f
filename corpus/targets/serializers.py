from __future__ import annotations

from rest_framework import serializers

from core import call_budget
from corpus.models import Target


class TargetSerializer(serializers.ModelSerializer):
    class Meta:
        model = Target
        fields = [
            "id", "code", "name", "kind", "model", "api_base", "params", "max_concurrent", "requests_per_minute",
            "timeout_seconds", "retry_attempts", "retry_base_delay", "retry_max_delay",
        ]
        extra_kwargs = {name: {"help_text": text} for name, text in call_budget.HELP.items()}
