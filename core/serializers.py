"""Serializers every importer's API shares: the upload request and the problem list."""

from __future__ import annotations

from rest_framework import serializers


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
