"""Serializers of the rater API. They read the blinded dataclasses of ``rater_selectors`` only.

Nothing here names a model field of a conversation, target or persona: what a rater gets is
limited to what those dataclasses carry.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotation.rating.selectors import RatingPage, study_title_for_raters


class QueueEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.IntegerField(source="study_id")
    study_name = serializers.CharField()
    conversation_code = serializers.CharField(source="code", help_text="Pseudonymous conversation code")
    sensitive = serializers.BooleanField(help_text="Discusses suicide or self-harm: warn before showing")
    is_calibration = serializers.BooleanField()
    position = serializers.IntegerField()
    status = serializers.CharField(help_text="not_started, in_progress or submitted")
    locked = serializers.BooleanField(help_text="A main assignment waiting for calibration to finish")


class BlindedMessageSerializer(serializers.Serializer):
    turn = serializers.IntegerField(help_text="1-based position among the user and chatbot messages")
    evidence_turn = serializers.IntegerField(
        help_text="The number to cite this message by in evidence: its 1-based position in the conversation"
    )
    role = serializers.CharField(help_text="user or assistant")
    content = serializers.CharField()


class BlindedConversationSerializer(serializers.Serializer):
    code = serializers.CharField()
    sensitive = serializers.BooleanField()
    messages = BlindedMessageSerializer(many=True)


class ChoiceSerializer(serializers.Serializer):
    value = serializers.CharField()
    label = serializers.CharField()


class RaterItemSerializer(serializers.Serializer):
    part = serializers.CharField(help_text="main (the instrument) or section (the study section)")
    key = serializers.CharField()
    number = serializers.CharField()
    domain = serializers.CharField()
    text = serializers.CharField()
    scale = serializers.CharField()
    choices = ChoiceSerializer(many=True)
    help = serializers.DictField(child=serializers.CharField(allow_blank=True))
    applicability = serializers.CharField()
    examples = serializers.CharField()
    required = serializers.BooleanField()


class FlowStepSerializer(serializers.Serializer):
    question = serializers.CharField()
    answer = serializers.CharField()


class FlowStateSerializer(serializers.Serializer):
    path = FlowStepSerializer(many=True)
    next_question = serializers.CharField(allow_null=True)
    finished = serializers.BooleanField()
    labels = serializers.DictField(child=serializers.CharField(), help_text="Dimension -> label")
    ended_by = serializers.CharField()
    error = serializers.CharField()
    position = serializers.IntegerField(help_text="The number of the question being asked (or of answered ones when finished)")
    left_min = serializers.IntegerField(help_text="The fewest questions still to answer, the current one included")
    left_max = serializers.IntegerField(help_text="The most questions still to answer, the current one included")
    progress_text = serializers.CharField(help_text='The count shown to the rater, e.g. "2 answered · 4 to 9 to go"')


class RevisionSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    reason = serializers.CharField()


class FeedbackSerializer(serializers.Serializer):
    item_key = serializers.CharField()
    yours = serializers.CharField()
    reference = serializers.CharField()
    match = serializers.BooleanField()
    explanation = serializers.CharField()


class AssignmentDetailSerializer(serializers.Serializer):
    """The blinded conversation, the form, the rater's answers and revision."""

    id = serializers.IntegerField()
    study = serializers.IntegerField()
    study_name = serializers.CharField()
    is_calibration = serializers.BooleanField()
    locked = serializers.BooleanField()
    position = serializers.IntegerField()
    total = serializers.IntegerField()
    next_assignment = serializers.IntegerField(allow_null=True)
    conversation = BlindedConversationSerializer()
    instrument_name = serializers.CharField()
    instrument_kind = serializers.CharField(help_text="checklist or flow")
    items = RaterItemSerializer(many=True)
    section_items = RaterItemSerializer(many=True)
    answers = serializers.JSONField(
        help_text='{"main": {key: {"value", "note", "evidence"}}, "section": {...}, "form_evidence": [turn, ...]}'
    )
    evidence_mode = serializers.CharField(help_text="off, per_item or whole_form: whether the rater cites turns")
    evidence_required = serializers.BooleanField(help_text="Submitting needs cited turns")
    revision = serializers.IntegerField()
    rating_status = serializers.CharField(help_text="draft or submitted")
    submitted_at = serializers.DateTimeField(allow_null=True)
    derived = serializers.JSONField(help_text="Question flows: path and dimension labels at submission")
    flow = FlowStateSerializer(allow_null=True)
    history = RevisionSerializer(many=True)
    feedback = FeedbackSerializer(many=True)

    @staticmethod
    def from_page(page: RatingPage) -> dict[str, Any]:
        """Return the plain data of a rating page for this serializer."""
        a = page.assignment
        return {
            "id": a.pk,
            "study": a.study_id,
            "study_name": study_title_for_raters(a.study),
            "is_calibration": a.is_calibration,
            "locked": page.queue.locked,
            "position": page.queue.position,
            "total": page.queue.total,
            "next_assignment": page.queue.next_id,
            "conversation": page.conversation,
            "instrument_name": page.instrument_name,
            "instrument_kind": page.instrument_kind,
            "items": page.main_items,
            "section_items": page.section_items,
            "answers": page.answers,
            "evidence_mode": page.evidence_mode,
            "evidence_required": page.evidence_required,
            "revision": page.revision,
            "rating_status": page.rating_status,
            "submitted_at": page.submitted_at,
            "derived": page.derived,
            "flow": page.flow.as_dict() if page.flow else None,
            "history": page.revisions,
            "feedback": page.feedback,
        }


class AnswerRequestSerializer(serializers.Serializer):
    part = serializers.ChoiceField(
        choices=[("main", "main"), ("section", "section"), ("form", "form")],
        help_text="main, section, or form: the whole form's evidence (studies that ask for it that way)",
    )
    item_key = serializers.CharField(max_length=80, required=False, default="", allow_blank=True)
    value = serializers.CharField(
        allow_blank=True, trim_whitespace=False, max_length=20000, required=False, allow_null=True, default=None,
        help_text="The answer; omit (or null) to keep the saved answer when saving evidence only",
    )
    note = serializers.CharField(
        required=False, allow_null=True, allow_blank=True, max_length=4000,
        help_text="Omit (or null) to keep the saved note; empty to remove it",
    )
    evidence = serializers.ListField(
        child=serializers.IntegerField(), required=False, allow_null=True, default=None, max_length=200,
        help_text=(
            "The turns that support the answer (or the whole form), each a message's 1-based position in the "
            "conversation (BlindedMessage.evidence_turn); replaces the saved ones, [] removes them, omit to keep them"
        ),
    )
    expected_revision = serializers.IntegerField(
        required=False, allow_null=True, min_value=0,
        help_text="The revision the client last saw; a different current revision answers 409",
    )
    elapsed_seconds = serializers.FloatField(
        required=False, default=0, min_value=0, help_text="Seconds since the previous save"
    )

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        if data.get("value") is None and data.get("evidence") is None:
            raise serializers.ValidationError("give a value, evidence (the cited turns), or both")
        if data["part"] != "form" and not data.get("item_key"):
            raise serializers.ValidationError({"item_key": "an answer names its item"})
        return data


class AnswerResponseSerializer(serializers.Serializer):
    revision = serializers.IntegerField()
    status = serializers.CharField()
    answers = serializers.JSONField()
    flow = FlowStateSerializer(allow_null=True)


class SubmitRequestSerializer(serializers.Serializer):
    expected_revision = serializers.IntegerField(required=False, allow_null=True, min_value=0)


class ReviseRequestSerializer(serializers.Serializer):
    changes = serializers.DictField(
        child=serializers.DictField(child=serializers.CharField(allow_blank=True)),
        help_text='{"main": {item_key: new value}, "section": {...}}',
    )
    reason = serializers.CharField(help_text="Why the submitted answer changes (kept in the history)")


class RatingSerializer(serializers.Serializer):
    assignment = serializers.IntegerField(source="assignment_id")
    status = serializers.CharField()
    revision = serializers.IntegerField()
    answers = serializers.JSONField()
    derived = serializers.JSONField()
    submitted_at = serializers.DateTimeField(allow_null=True)


class RaterErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    revision = serializers.IntegerField(required=False, help_text="409: the current revision")
    missing = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Required items still unanswered"
    )
    missing_evidence = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="Answers (or the form) still citing no turn, when the study requires evidence"
    )


class OpenResponseSerializer(serializers.Serializer):
    status = serializers.CharField(help_text="The assignment's status after opening")
    revision = serializers.IntegerField(help_text="The rating's revision: send it as expected_revision")
