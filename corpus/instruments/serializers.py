from __future__ import annotations

from rest_framework import serializers

from corpus.models import Instrument, Item


class ItemSerializer(serializers.ModelSerializer):
    allowed_labels = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Item
        fields = [
            "key",
            "position",
            "number",
            "domain",
            "text",
            "scale",
            "categories",
            "scale_labels",
            "na_allowed",
            "required",
            "applicability",
            "help",
            "severity",
            "risk_type",
            "examples",
            "options",
            "allowed_labels",
        ]


class InstrumentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Instrument
        fields = ["id", "key", "version", "name", "kind", "description", "source", "is_builtin", "created_at"]


class InstrumentDetailSerializer(InstrumentSerializer):
    items = ItemSerializer(many=True)

    class Meta(InstrumentSerializer.Meta):
        fields = [*InstrumentSerializer.Meta.fields, "items", "flow"]


class InstrumentImportResponseSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField()
    instrument = serializers.IntegerField(allow_null=True)
    version = serializers.IntegerField(allow_null=True)
    created = serializers.BooleanField()
