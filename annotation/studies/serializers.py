"""Serializers of the coordinators' API: studies, assignments, rotation, progress, consensus."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.models import Assignment, ConsensusLabel, EvidenceMode, MemberRole, Study, TiePolicy
from annotation.studies.forms import calibration_labels, reference_label
from annotation.studies.selectors import conversations_by_codes, rater_candidates
from corpus.models import Instrument, InstrumentKind


class RaterMembershipSerializer(serializers.Serializer):
    user = serializers.IntegerField(source="user_id")
    username = serializers.CharField(source="user.username")
    label = serializers.CharField(source="rater_label")
    is_senior = serializers.BooleanField()
    active = serializers.BooleanField()


class StudySerializer(serializers.ModelSerializer):
    raters = serializers.SerializerMethodField()
    n_conversations = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "id", "name", "description", "instrument", "section", "raters_per_conversation", "composition",
            "tie_policy", "min_ratings_for_consensus", "alt_test_epsilon", "calibration_required", "selection", "sample_seed",
            "assignment_seed",
            "blinding_lifted", "evidence_mode", "evidence_required", "is_demo", "created_at", "n_conversations",
            "raters",
        ]

    @extend_schema_field(RaterMembershipSerializer(many=True))
    def get_raters(self, study: Study) -> list[dict[str, Any]]:
        if "memberships" in getattr(study, "_prefetched_objects_cache", {}):
            members = [m for m in study.memberships.all() if m.role == MemberRole.RATER]
        else:
            members = list(study.memberships.filter(role=MemberRole.RATER).select_related("user"))
        return RaterMembershipSerializer(members, many=True).data

    def get_n_conversations(self, study: Study) -> int:
        return getattr(study, "n_conversations", None) or study.study_conversations.count()


class SelectionSerializer(serializers.Serializer):
    persona_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    target_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    batch_ids = serializers.ListField(child=serializers.IntegerField(), required=False, default=list)
    codes = serializers.ListField(
        child=serializers.CharField(), required=False, default=list,
        help_text="App codes or source ids of imported conversations; an id that matches nothing is a 400 naming it",
    )
    keep_codes = serializers.ListField(
        child=serializers.CharField(), required=False, default=list,
        help_text="Flagged conversations to keep on purpose (codes or source ids)",
    )
    exclude_flagged = serializers.BooleanField(required=False, default=True)
    sample_size = serializers.IntegerField(required=False, allow_null=True, min_value=1, default=None)
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0, default=None)


class RaterInputSerializer(serializers.Serializer):
    user = serializers.IntegerField(help_text="id of a user in the clinician group")
    label = serializers.CharField(required=False, default="clinician", max_length=60)


class ReferenceSerializer(serializers.Serializer):
    label = serializers.CharField()
    explanation = serializers.CharField(required=False, default="", allow_blank=True)


class CalibrationInputSerializer(serializers.Serializer):
    conversation = serializers.CharField(help_text="conversation code")
    reference = serializers.DictField(child=ReferenceSerializer(), help_text="{item key: {label, explanation}}")


class StudyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, default="", allow_blank=True)
    instrument = serializers.PrimaryKeyRelatedField(queryset=Instrument.objects.exclude(kind=InstrumentKind.SECTION))
    section = serializers.PrimaryKeyRelatedField(
        queryset=Instrument.objects.filter(kind=InstrumentKind.SECTION), required=False, allow_null=True, default=None
    )
    selection = SelectionSerializer(required=False, default=dict)
    raters = RaterInputSerializer(many=True)
    raters_per_conversation = serializers.IntegerField(min_value=1, max_value=20, default=2)
    composition = serializers.DictField(child=serializers.IntegerField(min_value=0), required=False, default=dict)
    tie_policy = serializers.ChoiceField(choices=TiePolicy.choices, default=TiePolicy.ADJUDICATION)
    min_ratings_for_consensus = serializers.IntegerField(
        min_value=1, max_value=20, default=None, allow_null=True,
        help_text="an item with fewer ratings has no consensus; null: 2, or 1 when each conversation has one rater"
    )
    senior_rater = serializers.IntegerField(required=False, allow_null=True, default=None, help_text="user id")
    calibration = CalibrationInputSerializer(many=True, required=False, default=list)

    def validate_raters(self, value: list[dict[str, Any]]) -> list[tuple[Any, str]]:
        users = {u.pk: u for u in rater_candidates().filter(pk__in=[r["user"] for r in value])}
        unknown = [r["user"] for r in value if r["user"] not in users]
        if unknown:
            raise serializers.ValidationError(f"not users of the clinician group: {unknown}")
        return [(users[r["user"]], r["label"].strip() or "clinician") for r in value]

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        senior_id = data.get("senior_rater")
        data["senior"] = next((u for u, _ in data["raters"] if u.pk == senior_id), None)
        if senior_id is not None and data["senior"] is None:
            raise serializers.ValidationError({"senior_rater": "the senior rater must be one of the raters"})
        data["calibration_map"] = self._calibration(data["instrument"], data.get("calibration") or [])
        return data

    def _calibration(self, instrument: Instrument, entries: list[dict[str, Any]]) -> dict[int, dict]:
        codes = conversations_by_codes([e["conversation"] for e in entries])
        items = calibration_labels(instrument)
        result: dict[int, dict] = {}
        errors = []
        for entry in entries:
            if entry["conversation"] not in codes:
                errors.append(f"unknown conversation code '{entry['conversation']}'")
                continue
            for key, ref in entry["reference"].items():
                try:
                    label = reference_label(items, key, ref["label"])
                except ValueError as exc:
                    errors.append(f"{entry['conversation']}: {exc}")
                    continue
                result.setdefault(codes[entry["conversation"]], {})[key] = {"label": label, "explanation": ref["explanation"]}
        if errors:
            raise serializers.ValidationError({"calibration": errors})
        return result


class AssignRequestSerializer(serializers.Serializer):
    seed = serializers.IntegerField(required=False, allow_null=True, min_value=0, default=None)


class RaterLoadSerializer(serializers.Serializer):
    rater = serializers.IntegerField()
    username = serializers.CharField()
    label = serializers.CharField()
    active = serializers.BooleanField()
    load = serializers.IntegerField()
    calibration = serializers.IntegerField()


class PairOverlapSerializer(serializers.Serializer):
    rater_a = serializers.CharField()
    rater_b = serializers.CharField()
    shared = serializers.IntegerField()
    too_few = serializers.BooleanField(help_text="too few shared conversations to estimate pairwise agreement")


class DesignSerializer(serializers.Serializer):
    seed = serializers.IntegerField(allow_null=True)
    n_assignments = serializers.IntegerField()
    min_overlap = serializers.IntegerField()
    load = RaterLoadSerializer(many=True)
    overlap = PairOverlapSerializer(many=True)


class AssignmentSerializer(serializers.ModelSerializer):
    conversation = serializers.CharField(source="conversation.code")
    rater_username = serializers.CharField(source="rater_name", help_text="username, or an external rater's label")
    external_rater = serializers.BooleanField(source="is_external", read_only=True)

    class Meta:
        model = Assignment
        fields = [
            "id", "conversation", "conversation_id", "rater", "rater_username", "external_rater", "is_calibration", "position",
            "status", "started_at", "submitted_at", "last_activity_at", "time_spent_seconds",
        ]


class RaterAddSerializer(serializers.Serializer):
    user = serializers.IntegerField(help_text="id of a user in the clinician group")
    label = serializers.CharField(max_length=60, default="clinician")
    reason = serializers.CharField(required=False, default="", allow_blank=True)
    rebalance = serializers.BooleanField(default=True)


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(help_text="recorded in the study's audit trail")


class RemoveRaterSerializer(ReasonSerializer):
    redistribute = serializers.BooleanField(
        default=True, help_text="move the rater's unstarted work to other raters now (false: it waits for a decision)",
    )


class RemovedWorkRowSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment.pk")
    conversation = serializers.CharField(source="assignment.conversation.code")
    rater = serializers.IntegerField(source="assignment.rater_id")
    rater_username = serializers.CharField(source="rater_name")
    status = serializers.CharField(source="assignment.status")
    kept = serializers.BooleanField(help_text="a coordinator decided the removed rater finishes it")
    answers_saved = serializers.IntegerField(source="n_answers")
    last_activity_at = serializers.DateTimeField(source="assignment.last_activity_at", allow_null=True)
    move_targets = serializers.SerializerMethodField(help_text="active raters who do not hold this conversation")

    def get_move_targets(self, row: Any) -> list[dict[str, Any]]:
        return [{"rater": uid, "username": name} for uid, name in row.move_targets]


class RemovedWorkDecideSerializer(ReasonSerializer):
    decision = serializers.ChoiceField(
        choices=["keep", "move", "discard"],
        help_text="keep: the removed rater finishes it; move: to another rater; discard: withdrawn, one rating fewer",
    )
    assignments = serializers.ListField(
        child=serializers.IntegerField(), required=False, default=list,
        help_text="assignment ids; empty: every assignment of removed raters awaiting a decision",
    )
    to_rater = serializers.IntegerField(
        required=False, allow_null=True, default=None,
        help_text="move: user id of an active rater who does not hold the conversation; empty: the least loaded eligible one",
    )


class RemovedWorkResultSerializer(serializers.Serializer):
    kept = serializers.IntegerField()
    moved = serializers.IntegerField()
    discarded = serializers.IntegerField()
    removed_work = RemovedWorkRowSerializer(many=True, help_text="what removed raters still hold afterwards")


class ReassignSerializer(ReasonSerializer):
    new_rater = serializers.IntegerField(help_text="user id of an active rater of the study")


class MovedSerializer(serializers.Serializer):
    moved = AssignmentSerializer(many=True)


class RaterProgressSerializer(serializers.Serializer):
    rater = serializers.IntegerField(source="membership.user_id")
    username = serializers.CharField(source="membership.user.username")
    label = serializers.CharField(source="membership.rater_label")
    active = serializers.BooleanField(source="membership.active")
    assigned = serializers.IntegerField()
    submitted = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    not_started = serializers.IntegerField()
    stale = serializers.IntegerField()
    moved_away = serializers.IntegerField()
    total_seconds = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    # The coordinator's day: last activity, pace over the last 14 days, the finish it gives.
    last_activity_at = serializers.DateTimeField(source="last_activity", allow_null=True)
    submitted_per_day = serializers.FloatField(source="pace.per_day", allow_null=True, default=None)
    expected_finish = serializers.DateTimeField(source="pace.finish", allow_null=True, default=None)
    expected_finish_text = serializers.CharField(source="pace.text", default="", help_text='"about 3 days", "done" or "not enough activity yet"')
    reminders = serializers.SerializerMethodField()

    def get_reminders(self, row) -> str:  # type: ignore[no-untyped-def]
        """Return "on", "off" (the rater opted out) or "" (an external rater: no account)."""
        return "" if row.external_label else ("off" if row.reminders_off else "on")


class CellSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment.pk")
    rater = serializers.CharField(source="username")
    label = serializers.CharField(source="rater_label")
    status = serializers.CharField(source="assignment.status")
    stale = serializers.BooleanField()
    time_spent_seconds = serializers.IntegerField(source="assignment.time_spent_seconds")


class ConversationProgressSerializer(serializers.Serializer):
    conversation = serializers.CharField(source="conversation.code")
    is_calibration = serializers.BooleanField()
    n_submitted = serializers.IntegerField()
    assignments = CellSerializer(source="cells", many=True)


class ProgressSerializer(serializers.Serializer):
    stale_hours = serializers.IntegerField()
    expected_finish = serializers.DateTimeField(source="finish.finish", allow_null=True, default=None)
    expected_finish_text = serializers.CharField(source="finish.text", default="")
    totals = serializers.DictField(child=serializers.IntegerField())
    raters = RaterProgressSerializer(many=True)
    conversations = ConversationProgressSerializer(many=True)


class ConsensusJobSerializer(serializers.Serializer):
    job = serializers.IntegerField(help_text="the job's id")
    pending = serializers.BooleanField(help_text="true while queued or computing")
    status = serializers.ChoiceField(choices=["queued", "computing", "ready", "failed"])
    progress = serializers.FloatField(help_text="0 to 1")
    stage = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="labels per provenance, once ready")
    written = serializers.IntegerField(help_text="labels created, changed or removed, once ready")
    queued_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True)


class ConsensusCountsSerializer(serializers.Serializer):
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="labels per provenance (empty while the job is pending)"
    )
    job = ConsensusJobSerializer(help_text="the background job computing it (202 while pending)")


class ConsensusStateSerializer(serializers.Serializer):
    job = ConsensusJobSerializer(allow_null=True, help_text="the job waiting or running, or the latest if it failed")
    computed_at = serializers.DateTimeField(allow_null=True, help_text="when the stored labels were last computed")
    computed_by = serializers.CharField(allow_blank=True)
    up_to_date = serializers.BooleanField(
        allow_null=True, help_text="false once ratings, assignments or rules changed since; null when unknown"
    )


class ConsensusLabelSerializer(serializers.ModelSerializer):
    conversation = serializers.CharField(source="conversation.code")
    adjudicated_by = serializers.CharField(source="adjudicated_by.username", allow_null=True, default=None)

    class Meta:
        model = ConsensusLabel
        fields = [
            "id", "conversation", "item_key", "label", "provenance", "votes", "n_ratings", "n_expected",
            "provisional", "disagreement", "adjudicated_by", "reason", "updated_at",
        ]


class AdjudicateSerializer(ReasonSerializer):
    label = serializers.CharField(help_text="the final label")


class EvidenceSettingSerializer(serializers.Serializer):
    evidence_mode = serializers.ChoiceField(
        choices=EvidenceMode.choices, help_text="off, per_item (turns per answer) or whole_form (turns for the whole rating)"
    )
    evidence_required = serializers.BooleanField(
        default=False, help_text="Submitting needs cited turns (ignored when the mode is off)"
    )
