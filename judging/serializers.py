from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import call_budget
from corpus.models import Instrument
from judging.models import Judge, JudgeMode, JudgeRun, PromptTemplate, ReasoningEffort, RunStatus

STATUS_HELP = "One of: " + ", ".join(f"{value} ({label})" for value, label in RunStatus.choices)


class PromptTemplateSerializer(serializers.ModelSerializer):
    class Meta:
        model = PromptTemplate
        fields = [
            "id",
            "key",
            "version",
            "name",
            "mode",
            "description",
            "system_template",
            "user_template",
            "retry_template",
            "content_hash",
            "is_builtin",
            "created_at",
        ]
        read_only_fields = ["id", "version", "content_hash", "is_builtin", "created_at"]
        validators: list = []  # the service stores the next version or returns the identical one


class JudgeSerializer(serializers.ModelSerializer):
    instrument = serializers.PrimaryKeyRelatedField(queryset=Instrument.objects.all())
    prompt = serializers.PrimaryKeyRelatedField(queryset=PromptTemplate.objects.all(), required=False, allow_null=True)
    provider = serializers.CharField(max_length=60, required=False, allow_blank=True)
    mode = serializers.ChoiceField(choices=JudgeMode.choices, read_only=True)
    reasoning_effort = serializers.ChoiceField(choices=ReasoningEffort.choices, required=False, allow_blank=True)
    params = serializers.DictField(required=False, help_text="Other litellm parameters (never a key)")
    item_guidance = serializers.DictField(
        child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False,
        help_text="Edited item instructions of this version, {item key: text}: each replaces the item's definition "
        "in the prompt (a flow dimension's text is added to each of its questions)",
    )

    class Meta:
        model = Judge
        fields = [
            "id",
            "name",
            "mode",
            "instrument",
            "model",
            "provider",
            "api_base",
            "api_key_env",
            "temperature",
            "reasoning_effort",
            "params",
            "prompt",
            "structured_output",
            "format_retries",
            "timeout_seconds",
            "retry_attempts",
            "retry_base_delay",
            "retry_max_delay",
            "max_concurrent",
            "requests_per_minute",
            "notes",
            "item_guidance",
            "cloned_from",
            "created_at",
        ]
        read_only_fields = ["id", "mode", "cloned_from", "created_at"]
        # A duplicate name is a conflict the service reports (409), not a format error.
        extra_kwargs = {
            "name": {"validators": []},
            **{name: {"help_text": text} for name, text in call_budget.HELP.items()},
        }


class JudgeRunCreateSerializer(serializers.Serializer):
    judges = serializers.ListField(
        child=serializers.CharField(), min_length=1, help_text="Judge ids or names"
    )
    batch_ids = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    persona_set_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    study_id = serializers.IntegerField(required=False, allow_null=True, default=None)
    codes = serializers.ListField(child=serializers.CharField(), required=False, default=list)
    include_flagged = serializers.BooleanField(required=False, default=False)
    instances = serializers.IntegerField(min_value=1, max_value=10, default=1)
    independent_instances = serializers.BooleanField(required=False, default=False)
    use_cache = serializers.BooleanField(required=False, default=True)
    name = serializers.CharField(required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not (attrs["batch_ids"] or attrs["persona_set_ids"] or attrs["study_id"] or attrs["codes"]):
            raise serializers.ValidationError("choose conversations: batch_ids, persona_set_ids, study_id or codes")
        return attrs


class JudgeRunMemberSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    provider = serializers.CharField()
    model = serializers.CharField()
    prompt = serializers.CharField()


class JudgeRunSerializer(serializers.ModelSerializer):
    judges = serializers.SerializerMethodField()
    # A plain string: a second "status" enum would collide in the schema's enum names.
    status = serializers.CharField(read_only=True, help_text=STATUS_HELP)
    progress = serializers.FloatField(read_only=True)
    warnings = serializers.ListField(child=serializers.CharField(), read_only=True)
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6, read_only=True, coerce_to_string=False)

    class Meta:
        model = JudgeRun
        fields = [
            "id",
            "name",
            "instrument",
            "mode",
            "judges",
            "selection",
            "instances",
            "independent_instances",
            "use_cache",
            "warnings",
            "ensemble_rule",
            "status",
            "progress",
            "error",
            "n_total",
            "n_done",
            "n_failed",
            "n_calls",
            "n_failed_calls",
            "n_cached",
            "prompt_tokens",
            "completion_tokens",
            "cost_usd",
            "cost_unknown_calls",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(JudgeRunMemberSerializer(many=True))
    def get_judges(self, run: JudgeRun) -> list[dict[str, Any]]:
        """Return the run's judges as configured when it was created, in panel order."""
        snapshots = run.config.get("judges", {})
        return [
            {"id": int(pk), "name": s["name"], "provider": s["provider"], "model": s["model"], "prompt": s.get("prompt", "")}
            for pk, s in sorted(snapshots.items(), key=lambda kv: kv[1]["position"])
        ]


class JudgeRunProgressSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField(help_text=STATUS_HELP)
    progress = serializers.FloatField()
    n_total = serializers.IntegerField()
    n_done = serializers.IntegerField()
    n_failed = serializers.IntegerField()
    n_stalled = serializers.SerializerMethodField(
        help_text="Running results whose worker stopped answering (lease expired); retry takes them back"
    )
    n_calls = serializers.IntegerField(
        help_text="Every HTTP request made to the judges (failed attempts included) and every reply from the cache"
    )
    n_failed_calls = serializers.IntegerField(help_text="Of the calls, the attempts that failed (retried or not)")
    n_cached = serializers.IntegerField(help_text="Of the calls, the replies answered from the cache (free)")
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=12, decimal_places=6, coerce_to_string=False)
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.CharField()
    finished_at = serializers.DateTimeField(allow_null=True)


    def get_n_stalled(self, run: JudgeRun) -> int:
        from judging.selectors import run_stalled_count

        return run_stalled_count(run)


class RetryResponseSerializer(serializers.Serializer):
    scheduled = serializers.IntegerField()
