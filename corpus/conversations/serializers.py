from __future__ import annotations

from rest_framework import serializers

from corpus.models import Conversation, Message


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Message
        fields = ["turn_index", "role", "content"]


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


class ConversationImportResponseSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    total = serializers.IntegerField()
    created = serializers.ListField(child=serializers.CharField())
    duplicates = serializers.ListField(child=serializers.CharField())
    summary = serializers.CharField()
