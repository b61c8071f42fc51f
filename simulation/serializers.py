"""Serializers of simulation batches, their runs and the user-agent prompt templates."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import call_budget
from corpus.models import Persona, PersonaSet, Target
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from simulation.selectors import (
    BATCH_STATE_LABELS,
    BatchProgress,
    batch_listed_state,
    batch_progress,
)


class SimulationPromptSerializer(serializers.ModelSerializer):
    class Meta:
        model = PromptTemplate
        fields = ["id", "kind", "key", "version", "name", "description", "text", "content_hash", "placeholders", "is_builtin", "created_at"]
        read_only_fields = fields


class SimulationPromptCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=PromptTemplate.Kind.choices)
    key = serializers.SlugField(max_length=80)
    name = serializers.CharField(max_length=200, required=False, default="")
    description = serializers.CharField(required=False, default="", allow_blank=True)
    text = serializers.CharField(trim_whitespace=False)


class SimulationPromptRefSerializer(serializers.ModelSerializer):
    class Meta:
        model = PromptTemplate
        fields = ["id", "kind", "key", "version", "content_hash"]


class UserAgentSerializer(serializers.Serializer):
    model = serializers.CharField(max_length=200, help_text="litellm model string of the user-agent")
    api_base = serializers.URLField(required=False, default="", allow_blank=True)
    api_key_env = serializers.CharField(
        max_length=100, required=False, default="", allow_blank=True,
        help_text="Name of the environment variable holding the key; never the key itself",
    )
    params = serializers.DictField(required=False, default=dict)
    max_concurrent = serializers.IntegerField(min_value=0, required=False, default=8)
    requests_per_minute = serializers.IntegerField(min_value=0, required=False, default=0)
    timeout_seconds = serializers.FloatField(
        min_value=call_budget.MIN_TIMEOUT, max_value=call_budget.MAX_TIMEOUT, required=False, default=60.0,
        help_text=call_budget.HELP["timeout_seconds"],
    )
    retry_attempts = serializers.IntegerField(
        min_value=1, max_value=call_budget.MAX_ATTEMPTS, required=False, default=call_budget.DEFAULT_ATTEMPTS,
        help_text=call_budget.HELP["retry_attempts"],
    )
    retry_base_delay = serializers.FloatField(
        min_value=0, max_value=call_budget.MAX_BASE_DELAY, required=False, default=call_budget.DEFAULT_BASE_DELAY,
        help_text=call_budget.HELP["retry_base_delay"],
    )
    retry_max_delay = serializers.FloatField(
        min_value=0, max_value=call_budget.MAX_MAX_DELAY, required=False, default=call_budget.DEFAULT_MAX_DELAY,
        help_text=call_budget.HELP["retry_max_delay"],
    )

    def validate(self, attrs: dict) -> dict:
        found = call_budget.budget_problems(retry_base_delay=attrs["retry_base_delay"], retry_max_delay=attrs["retry_max_delay"])
        if found:
            raise serializers.ValidationError(found)
        return attrs


class SimulationBatchCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    protocol = serializers.ChoiceField(choices=SimulationBatch.Protocol.choices)
    persona_set = serializers.PrimaryKeyRelatedField(queryset=PersonaSet.objects.all())
    personas = serializers.PrimaryKeyRelatedField(
        queryset=Persona.objects.all(), many=True, required=False, help_text="Persona ids; empty: every persona of the set"
    )
    targets = serializers.SlugRelatedField(queryset=Target.objects.all(), slug_field="code", many=True, help_text="Chatbot codes")
    repetitions = serializers.IntegerField(min_value=1, max_value=1000, default=1)
    user_agent = UserAgentSerializer()
    exchanges = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None, help_text="AMHART: user/chatbot pairs (default 10)")
    turns = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None, help_text="VERA-MH: messages, chatbot last (default 20)")
    first_speaker = serializers.ChoiceField(choices=SimulationBatch.Speaker.choices, default="user")
    word_cap = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    end_marker = serializers.CharField(max_length=100, required=False, default="", allow_blank=True)
    role_slide_check = serializers.BooleanField(default=True)
    persona_template = serializers.PrimaryKeyRelatedField(queryset=PromptTemplate.objects.all(), required=False, allow_null=True, default=None)
    reminder_template = serializers.PrimaryKeyRelatedField(queryset=PromptTemplate.objects.all(), required=False, allow_null=True, default=None)
    kickoff_template = serializers.PrimaryKeyRelatedField(queryset=PromptTemplate.objects.all(), required=False, allow_null=True, default=None)

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if user is not None:  # only what the user may read (core.visibility): others answer like unknown ones
            from core.visibility import visible

            sets = visible(PersonaSet.objects.all(), user)
            self.fields["persona_set"].queryset = sets
            self.fields["personas"].child_relation.queryset = Persona.objects.filter(persona_set__in=sets)
            self.fields["targets"].child_relation.queryset = visible(Target.objects.all(), user)

    def to_spec(self):  # type: ignore[no-untyped-def]
        from simulation.batch_spec import BatchSpec, UserAgent

        data = self.validated_data
        ua = data["user_agent"]

        def pk(name: str) -> int | None:
            return data[name].pk if data.get(name) is not None else None

        return BatchSpec(
            name=data["name"],
            protocol=data["protocol"],
            persona_set_id=data["persona_set"].pk,
            persona_ids=tuple(p.pk for p in data.get("personas") or []),
            target_ids=tuple(t.pk for t in data["targets"]),
            repetitions=data["repetitions"],
            user_agent=UserAgent(
                model=ua["model"], api_base=ua["api_base"], api_key_env=ua["api_key_env"], params=ua["params"],
                max_concurrent=ua["max_concurrent"], requests_per_minute=ua["requests_per_minute"],
                timeout_seconds=ua["timeout_seconds"], retry_attempts=ua["retry_attempts"],
                retry_base_delay=ua["retry_base_delay"], retry_max_delay=ua["retry_max_delay"],
            ),
            exchanges=data["exchanges"],
            turns=data["turns"],
            first_speaker=data["first_speaker"],
            word_cap=data["word_cap"],
            end_marker=data["end_marker"],
            role_slide_check=data["role_slide_check"],
            persona_template_id=pk("persona_template"),
            reminder_template_id=pk("reminder_template"),
            kickoff_template_id=pk("kickoff_template"),
        )


STATE_HELP = (
    "What the batch honestly is: running, cancelled, failed (every conversation failed), partial (finished "
    "with failures) or finished (every conversation done). `status` is only whether it is still going."
)


class BatchProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    queued = serializers.IntegerField()
    running = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    flagged = serializers.IntegerField(help_text="Finished conversations that failed an integrity check")
    stalled = serializers.IntegerField(help_text="Running, but the executor's claim has expired")
    finished = serializers.IntegerField()
    percent = serializers.IntegerField()
    state = serializers.ChoiceField(choices=list(BATCH_STATE_LABELS), help_text=STATE_HELP)
    state_label = serializers.CharField()
    messages = serializers.IntegerField()
    expected_messages = serializers.IntegerField()
    calls = serializers.IntegerField(help_text="Every HTTP request made to a model, failed attempts included")
    failed_calls = serializers.IntegerField(help_text="Of the calls, the attempts that failed (retried or not)")
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost_usd = serializers.FloatField()
    elapsed_seconds = serializers.FloatField()
    eta_seconds = serializers.FloatField(allow_null=True)


class SimulationRunSerializer(serializers.ModelSerializer):
    persona = serializers.CharField(source="persona.key")
    persona_name = serializers.CharField(source="persona.name")
    target = serializers.CharField(source="target.code")
    conversation = serializers.CharField(source="conversation.code", default=None, allow_null=True)
    integrity_ok = serializers.BooleanField(source="conversation.integrity_ok", default=None, allow_null=True)

    class Meta:
        model = SimulationRun
        fields = [
            "id", "persona", "persona_name", "target", "repetition", "status", "attempts", "messages_done",
            "calls", "failed_calls", "prompt_tokens", "completion_tokens", "cost_usd", "ended_early", "error", "error_kind",
            "conversation", "integrity_ok", "queued_at", "started_at", "finished_at",
        ]


class SimulationBatchSerializer(serializers.ModelSerializer):
    persona_set_key = serializers.CharField(source="persona_set.key")
    state = serializers.SerializerMethodField(help_text=STATE_HELP)
    state_label = serializers.SerializerMethodField()
    runs_total = serializers.IntegerField(read_only=True)
    runs_done = serializers.IntegerField(read_only=True)
    runs_failed = serializers.IntegerField(read_only=True)
    runs_active = serializers.IntegerField(read_only=True)

    class Meta:
        model = SimulationBatch
        fields = [
            "code", "name", "status", "state", "state_label", "protocol", "persona_set", "persona_set_key",
            "repetitions", "user_model", "turns", "exchanges", "runs_total", "runs_done", "runs_failed", "runs_active",
            "created_at", "started_at", "finished_at", "cancelled_at",
        ]

    @extend_schema_field(serializers.ChoiceField(choices=list(BATCH_STATE_LABELS)))
    def get_state(self, batch: SimulationBatch) -> str:
        return batch_listed_state(batch)

    def get_state_label(self, batch: SimulationBatch) -> str:
        return BATCH_STATE_LABELS[batch_listed_state(batch)]


class SimulationBatchDetailSerializer(serializers.ModelSerializer):
    persona_set_key = serializers.CharField(source="persona_set.key")
    targets = serializers.SlugRelatedField(slug_field="code", many=True, read_only=True)
    persona_template = SimulationPromptRefSerializer()
    reminder_template = SimulationPromptRefSerializer(allow_null=True)
    kickoff_template = SimulationPromptRefSerializer(allow_null=True)
    progress = serializers.SerializerMethodField()
    state = serializers.SerializerMethodField(help_text=STATE_HELP)
    state_label = serializers.SerializerMethodField()

    class Meta:
        model = SimulationBatch
        fields = [
            "code", "name", "status", "state", "state_label", "protocol", "persona_set", "persona_set_key", "targets", "repetitions",
            "user_model", "user_api_base", "user_api_key_env", "user_params", "user_max_concurrent",
            "user_requests_per_minute", "user_timeout_seconds", "user_retry_attempts", "user_retry_base_delay",
            "user_retry_max_delay", "turns", "exchanges", "first_speaker", "word_cap", "end_marker",
            "role_slide_check", "persona_template", "reminder_template", "kickoff_template", "config",
            "progress", "created_at", "started_at", "finished_at", "cancelled_at",
        ]

    def _progress(self, batch: SimulationBatch) -> BatchProgress:
        # One count per batch serialized, shared by progress and state.
        cached = getattr(batch, "_serialized_progress", None)
        if cached is None:
            cached = batch._serialized_progress = batch_progress(batch)  # type: ignore[attr-defined]
        return cached

    @extend_schema_field(BatchProgressSerializer)
    def get_progress(self, batch: SimulationBatch) -> dict:
        return self._progress(batch).as_dict()

    @extend_schema_field(serializers.ChoiceField(choices=list(BATCH_STATE_LABELS)))
    def get_state(self, batch: SimulationBatch) -> str:
        return self._progress(batch).state

    def get_state_label(self, batch: SimulationBatch) -> str:
        return self._progress(batch).state_label


class BatchResumeSerializer(serializers.Serializer):
    include_failed = serializers.BooleanField(default=False, help_text="Also retry conversations that failed")
