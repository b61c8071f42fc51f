from __future__ import annotations

from rest_framework import serializers

from core.serializers import ProblemSerializer
from corpus.models import Persona, PersonaSet


class PersonaSerializer(serializers.ModelSerializer):
    class Meta:
        model = Persona
        fields = ["key", "name", "design", "profile", "opening_message"]


class PersonaSetSerializer(serializers.ModelSerializer):
    personas = PersonaSerializer(many=True)

    class Meta:
        model = PersonaSet
        fields = ["id", "key", "version", "name", "description", "format", "is_builtin", "created_at", "personas"]


class PersonaImportResponseSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    persona_set = serializers.IntegerField(allow_null=True)
    created = serializers.BooleanField()
    total_rows = serializers.IntegerField()
    imported_rows = serializers.IntegerField()
    skipped = ProblemSerializer(many=True)
