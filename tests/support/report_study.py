"""A realistic study for the report pages: 150 AMHART conversations, four clinicians (k=2), three
judges with their ensemble, the study section, and the human consensus.

Used by the report tests, the browser screenshots and ``bench/reports.py``. Labels are drawn
from a seeded generator: each conversation has a latent answer per item, raters and judges
agree with it most of the time (judges a little less), items 13-14 are N/A when the persona
presents no risk. ``ratings="one"`` stores a single rating (a pilot); ``open_assignments``
leaves that many assignments unsubmitted (a study still running).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Group
from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus, Study
from annotation.studies.services import study_assign, study_create
from core.roles import Role
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation, Message, Persona, PersonaSet, Target

CHATBOTS = (("CB-A", "vendor-a/chat-large"), ("CB-B", "vendor-b/assistant-2"), ("CB-C", "vendor-c/helper-mini"))
PASSWORD = "a-Long-test-passw0rd"


@dataclass
class ReportStudy:
    study: Study
    coordinator: Any
    raters: list[Any]
    run: Any | None


def _users(prefix: str, n: int, role: str) -> list[Any]:
    User = get_user_model()
    group, _ = Group.objects.get_or_create(name=role)
    users = [User.objects.create(username=f"{prefix}{i}", password=make_password(PASSWORD)) for i in range(1, n + 1)]
    group.user_set.add(*users)
    return users


def _personas() -> list[Persona]:
    persona_set = PersonaSet.objects.create(key="report-cards", name="Report cards", content_hash="r" * 64)
    personas = []
    for i, (sex, concern, severity) in enumerate(
        (s, c, v) for s in ("female", "male") for c in ("anxiety", "depression") for v in ("moderate", "severe")
    ):
        risk = "High" if severity == "severe" and concern == "depression" else "None"
        personas.append(Persona.objects.create(
            persona_set=persona_set, key=f"p{i}", name=f"{sex[0].upper()}-{concern[:3]}-{severity[:3]}", position=i,
            design={"sex": sex, "concern": concern, "severity": severity, "risk": risk,
                    "disclosure": "High" if risk == "High" else "Not applicable"},
        ))
    return personas


def build_report_study(
    *,
    n_conversations: int = 150,
    n_raters: int = 4,
    k: int = 2,
    n_judges: int = 3,
    ratings: str = "all",
    open_assignments: int = 0,
    seed: int = 11,
    prefix: str = "rs",
) -> ReportStudy:
    """Create the study and everything around it; return it with its coordinator, raters and run."""
    rng = np.random.default_rng(seed)
    coordinator = _users(f"{prefix}coord", 1, Role.COORDINATOR)[0]
    raters = _users(f"{prefix}rater", n_raters, Role.CLINICIAN)
    amhart, section = builtin_instruments_load()
    keys = list(amhart.items.order_by("position").values_list("key", flat=True))
    targets = [Target.objects.get_or_create(code=code, defaults={"model": model})[0] for code, model in CHATBOTS]
    personas = _personas()
    conversations = Conversation.objects.bulk_create(
        Conversation(
            code=f"{prefix.upper()}-{i:04d}", source="imported", content_hash=f"{prefix}{i:062d}", message_count=2,
            target=targets[i % len(targets)], persona=personas[(i // len(targets)) % len(personas)], run_index=i // 24,
            metadata={"user_model": "openai/user-agent-x"},
        )
        for i in range(n_conversations)
    )
    conversations = list(Conversation.objects.filter(code__startswith=f"{prefix.upper()}-").order_by("code"))
    Message.objects.bulk_create(
        Message(conversation=c, turn_index=t, role="user" if t % 2 == 0 else "assistant",
                content="I can't sleep and school feels pointless." if t % 2 == 0 else "That sounds hard. Can you tell me more?")
        for c in conversations for t in range(2)
    )
    study = study_create(
        name="Chatbot audit (150 conversations)", instrument=amhart, section=section,
        conversation_ids=[c.pk for c in conversations], created_by=coordinator, coordinators=[coordinator],
        raters=[(r, "clinician") for r in raters], raters_per_conversation=k,
    )
    study_assign(study=study, actor=coordinator, seed=seed)
    # The latent answer of each conversation and item; chatbot A does more, C less.
    p_yes = {targets[0].pk: 0.7, targets[1].pk: 0.5, targets[2].pk: 0.3}
    truth: dict[tuple[int, str], str] = {}
    for c in conversations:
        risky = c.persona.design["risk"] != "None"
        for key in keys:
            if key in ("amhart_13", "amhart_14") and not risky:
                truth[(c.pk, key)] = "N/A"
            else:
                truth[(c.pk, key)] = "yes" if rng.random() < p_yes[c.target_id] else "no"

    def noisy(label: str, accuracy: float, key: str) -> str:
        if rng.random() < accuracy:
            return label
        options = ["yes", "no", "N/A"] if key in ("amhart_13", "amhart_14") else ["yes", "no"]
        return str(rng.choice([o for o in options if o != label]))

    assignments = list(Assignment.objects.filter(study=study, is_calibration=False).select_related("conversation__persona").order_by("conversation__code", "rater__username"))
    if ratings == "one":
        assignments = assignments[:1]
    elif open_assignments:
        assignments = assignments[: len(assignments) - open_assignments]
    now = timezone.now()
    risk_words = {"None": "None", "High": "High"}
    for a in assignments:
        c = a.conversation
        main = {key: {"value": noisy(truth[(c.pk, key)], 0.88, key)} for key in keys}
        design_risk = risk_words[c.persona.design["risk"]]
        section_answers = {
            "realism_user": {"value": str(int(np.clip(rng.normal(3.8, 0.8), 1, 5).round()))},
            "realism_clinical": {"value": str(int(np.clip(rng.normal(3.5, 0.9), 1, 5).round()))},
            "perceived_risk": {"value": design_risk if rng.random() < 0.8 else str(rng.choice(["None", "Low", "High", "Imminent"]))},
            "perceived_disclosure": {"value": "N/A" if design_risk == "None" else str(rng.choice(["Low", "Moderate", "High"]))},
            "broke_role": {"value": "no" if rng.random() < 0.95 else "yes"},
        }
        Rating.objects.create(assignment=a, status=RatingStatus.SUBMITTED, submitted_at=now, revision=1,
                              answers={"main": main, "section": section_answers})
        Assignment.objects.filter(pk=a.pk).update(status=AssignmentStatus.SUBMITTED, submitted_at=now,
                                                  time_spent_seconds=int(rng.integers(240, 900)))
    study_compute_consensus(study=study, actor=coordinator)
    run = _judge_run(amhart, conversations, keys, truth, n_judges, rng, prefix) if n_judges else None
    return ReportStudy(study, coordinator, raters, run)


def _judge_run(amhart: Any, conversations: list[Conversation], keys: list[str], truth: dict, n_judges: int,
               rng: np.random.Generator, prefix: str) -> Any:
    from judging.ensemble import ensemble_compute
    from judging.judges import judge_create
    from judging.models import JudgeLabel, JudgeResult, LabelKind, ResultStatus
    from judging.runs import judge_run_create

    providers = ("openai", "anthropic", "gemini")
    judges = [
        judge_create(name=f"{prefix}-judge-{providers[i % 3]}", instrument=amhart, model=f"{providers[i % 3]}/judge-model-{i}")
        for i in range(n_judges)
    ]
    run = judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations], start=False, name="Three-judge panel")
    labels = []
    accuracy = {j.pk: a for j, a in zip(judges, (0.84, 0.8, 0.76), strict=False)}
    for result in run.results.all():
        for position, key in enumerate(keys):
            label = truth[(result.conversation_id, key)]
            if rng.random() > accuracy.get(result.judge_id, 0.8):
                # Judges spell answers their own way: the normaliser makes "Yes" and "yes" one label.
                label = {"yes": "No", "no": "Yes", "N/A": "no"}[label]
            elif rng.random() < 0.2:
                label = label.upper() if label != "N/A" else "n/a"
            labels.append(JudgeLabel(result=result, kind=LabelKind.ITEM, item_key=key, position=position, label=label))
    JudgeLabel.objects.bulk_create(labels, batch_size=2000)
    now = timezone.now()
    JudgeResult.objects.filter(run=run).update(status=ResultStatus.DONE, finished_at=now, started_at=now)
    run.n_done = run.results.count()
    run.status = "completed"
    run.save(update_fields=["n_done", "status"])
    ensemble_compute(run=run, item_order=keys)
    return run
