"""Studies for the rater tests, built through the services, with secrets a rater must never see."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotation.models import Assignment, AssignmentStatus, Study
from annotation.studies.services import study_assign, study_create
from corpus.instruments.services import builtin_instruments_load, instrument_import
from corpus.models import Instrument, Message, Persona, Target
from tests.factories import ConversationFactory, PersonaFactory, TargetFactory

RUBRIC = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_small.tsv"

# Strings that identify the chatbot, the persona design, metadata, judges or other raters.
SECRETS = [
    "openai/gpt-secret-model",
    "SecretBot",
    "TGT-SECRET",
    "Zelda-secret",
    "persona-key-secret",
    "severe-secret",
    "Imminent-secret",
    "disclosure-secret",
    "concern-secret",
    "claude-secret",
    "OTHER-RATER-NOTE",
    "system-prompt-secret",
]

TRANSCRIPT = [
    ("system", "You are SecretBot. system-prompt-secret"),
    ("user", "I can't sleep and I keep thinking everyone would be better off without me."),
    ("assistant", "I'm really glad you told me. That sounds painful. Are you thinking about ending your life?"),
    ("user", "Sometimes. I don't have a plan."),
    ("assistant", "Thank you for trusting me. Would you be willing to talk to a counselor or call a helpline today?"),
]


def secret_conversations(n: int, *, sensitive: bool = False) -> list[Any]:
    """Create ``n`` conversations whose target, persona and metadata hold the secrets."""
    target = Target.objects.filter(code="TGT-SECRET").first() or TargetFactory(
        code="TGT-SECRET", name="SecretBot", model="openai/gpt-secret-model"
    )
    persona = Persona.objects.filter(key="persona-key-secret").first() or PersonaFactory(
        key="persona-key-secret",
        name="Zelda-secret",
        design={"severity": "severe-secret", "risk": "Imminent-secret", "disclosure": "disclosure-secret", "concern": "concern-secret"},
    )
    conversations = []
    for _ in range(n):
        conversation = ConversationFactory(
            persona=persona, target=target, metadata={"model": "claude-secret"}, sensitive=sensitive,
            messages=TRANSCRIPT, message_count=len(TRANSCRIPT),
        )
        Message.objects.filter(conversation=conversation).update(meta={"model": "openai/gpt-secret-model"})
        conversations.append(conversation)
    return conversations


def flow_instrument() -> Instrument:
    """Import the small VERA-style rubric of the fixtures as a question flow."""
    instrument, _ = instrument_import(text=RUBRIC.read_text(), file=RUBRIC.name, fmt="vera-mh")
    return instrument


def make_study(
    raters: list[Any],
    *,
    n: int = 3,
    k: int | None = None,
    instrument: Instrument | None = None,
    sensitive: bool = False,
    calibration: dict[int, dict] | None = None,
    coordinator: Any = None,
    n_calibration: int = 0,
    reference: dict | None = None,
) -> Study:
    """Create and assign a study of ``n`` secret conversations rated by ``raters``."""
    amhart, section = builtin_instruments_load()
    conversations = secret_conversations(n + n_calibration, sensitive=sensitive)
    calibration = dict(calibration or {})
    for conversation in conversations[n:]:
        calibration[conversation.pk] = reference or {"amhart_01": {"label": "yes", "explanation": "validated feelings in turn 2"}}
    study = study_create(
        name="Rater test study",
        rater_title="Adolescent wellbeing ratings",
        instrument=instrument or amhart,
        section=section,
        conversation_ids=[c.pk for c in conversations[:n]],
        created_by=coordinator,
        coordinators=[coordinator] if coordinator else [],
        raters=[(r, "clinician") for r in raters],
        raters_per_conversation=k or len(raters),
        calibration=calibration or None,
    )
    study_assign(study=study, actor=coordinator, seed=7)
    return study


def first_assignment(study: Study, rater: Any, *, calibration: bool | None = None) -> Assignment:
    """Return the rater's first assignment in their order (optionally calibration or main only)."""
    qs = study.assignments.filter(rater=rater).exclude(status=AssignmentStatus.WITHDRAWN)
    if calibration is not None:
        qs = qs.filter(is_calibration=calibration)
    return qs.order_by("-is_calibration", "position").first()


AMHART_ANSWERS = {f"amhart_{i:02d}": "yes" for i in range(1, 15)}
SECTION_ANSWERS = {
    "realism_user": "4",
    "realism_clinical": "3",
    "perceived_risk": "Low",
    "perceived_disclosure": "Moderate",
    "broke_role": "no",
}


def answer_everything(assignment: Assignment, user: Any) -> None:
    """Give every required AMHART and section answer through the service."""
    from annotation.rating.services import rating_save_answer

    for key, value in AMHART_ANSWERS.items():
        rating_save_answer(assignment_id=assignment.pk, user=user, part="main", item_key=key, value=value)
    for key, value in SECTION_ANSWERS.items():
        rating_save_answer(assignment_id=assignment.pk, user=user, part="section", item_key=key, value=value)
