from __future__ import annotations

from rest_framework import serializers

from .models import Conversation, Message, Persona, PersonaSet, Target


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Message
        fields = ["turn_index", "role", "content"]


class TargetSerializer(serializers.ModelSerializer):
    class Meta:
        model = Target
        fields = ["id", "code", "name", "kind", "model", "api_base", "params"]


class ConversationSerializer(serializers.ModelSerializer):
    persona = serializers.CharField(source="persona.key", default=None)
    persona_set = serializers.CharField(source="persona.persona_set.key", default=None)
    target = serializers.CharField(source="target.code", default=None)
    target_model = serializers.CharField(source="target.model", default=None)

    class Meta:
        model = Conversation
        fields = [
            "code",
            "external_id",
            "persona_set",
            "persona",
            "target",
            "target_model",
            "source",
            "run_index",
            "message_count",
            "integrity_ok",
            "integrity_flags",
            "sensitive",
            "is_demo",
            "created_at",
        ]


class ConversationDetailSerializer(ConversationSerializer):
    messages = MessageSerializer(many=True)

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "metadata", "messages"]


class PersonaSerializer(serializers.ModelSerializer):
    class Meta:
        model = Persona
        fields = ["key", "name", "design", "profile", "opening_message"]


class PersonaSetSerializer(serializers.ModelSerializer):
    personas = PersonaSerializer(many=True)

    class Meta:
        model = PersonaSet
        fields = ["id", "key", "version", "name", "description", "format", "is_builtin", "created_at", "personas"]


class ProblemSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    column = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ImportRequestSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.ChoiceField(choices=["auto", "jsonl", "vera-mh", "yaml", "json"], default="auto")
    dry_run = serializers.BooleanField(default=False)
    key = serializers.SlugField(required=False)
    name = serializers.CharField(required=False, max_length=200)
    valid_only = serializers.BooleanField(default=False)


class ConversationImportResponseSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    total = serializers.IntegerField()
    created = serializers.ListField(child=serializers.CharField())
    duplicates = serializers.ListField(child=serializers.CharField())
    summary = serializers.CharField()


class PersonaImportResponseSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    persona_set = serializers.IntegerField(allow_null=True)
    created = serializers.BooleanField()
    total_rows = serializers.IntegerField()
    imported_rows = serializers.IntegerField()
    skipped = ProblemSerializer(many=True)
