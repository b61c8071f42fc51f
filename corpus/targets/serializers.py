from __future__ import annotations

from rest_framework import serializers

from corpus.models import Target


class TargetSerializer(serializers.ModelSerializer):
    class Meta:
        model = Target
        fields = ["id", "code", "name", "kind", "model", "api_base", "params"]
