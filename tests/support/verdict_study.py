"""A study whose judges' quality is known in advance: the verdict's test cases and screenshots.

``n_conversations`` AMHART conversations, four clinicians with three raters per conversation
(rater r skips conversation c when c % 4 == r), labels drawn around a latent answer per
(conversation, item). The judge run has an "always-yes" judge (a constant), a "coin-flip"
judge (random) and a "majority" judge (the majority of the human ratings: what the paper's
optimal jury is), with their ensemble. ``late_rater`` adds a fifth rater who rated a single
conversation, "yes" to everything: a pair sharing one conversation (issue 18, defect 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus, Study
from annotation.studies.services import study_create
from core.roles import Role
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation
from tests.support.report_study import _users

JUDGES = ("always-yes", "coin-flip", "majority")


@dataclass
class VerdictStudy:
    study: Study
    coordinator: Any
    raters: list[Any]
    run: Any
    ratings: list[tuple[str, str, str, str]]  # (conversation code, rater, item, label)
    judge_labels: list[tuple[str, str, str, str]]  # (conversation code, judge, item, label)


def build_verdict_study(*, n_conversations: int = 40, late_rater: bool = False, seed: int = 3, prefix: str = "vs",
                        judges: tuple[str, ...] = JUDGES, p_yes: float = 0.55) -> VerdictStudy:
    """Create the study, its ratings, consensus and judge run; return them with the raw labels."""
    rng = np.random.default_rng(seed)
    coordinator = _users(f"{prefix}coord", 1, Role.COORDINATOR)[0]
    raters = _users(f"{prefix}rater", 5 if late_rater else 4, Role.CLINICIAN)
    amhart, section = builtin_instruments_load()
    keys = list(amhart.items.order_by("position").values_list("key", flat=True))
    Conversation.objects.bulk_create(
        Conversation(code=f"{prefix.upper()}-{i:03d}", source="imported", content_hash=f"{prefix}{i:062d}", message_count=2)
        for i in range(n_conversations)
    )
    conversations = list(Conversation.objects.filter(code__startswith=f"{prefix.upper()}-").order_by("code"))
    study = study_create(
        name="Judges of known quality", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
        created_by=coordinator, coordinators=[coordinator], raters=[(r, "clinician") for r in raters], raters_per_conversation=3,
    )
    truth = {(c.code, key): ("yes" if rng.random() < p_yes else "no") for c in conversations for key in keys}
    now = timezone.now()
    ratings: list[tuple[str, str, str, str]] = []

    def rate(conversation: Conversation, rater: Any, answers: dict[str, str]) -> None:
        assignment = Assignment.objects.create(study=study, conversation=conversation, rater=rater,
                                               status=AssignmentStatus.SUBMITTED, submitted_at=now)
        Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, submitted_at=now, revision=1,
                              answers={"main": {k: {"value": v} for k, v in answers.items()}})
        ratings.extend((conversation.code, rater.username, k, v) for k, v in answers.items())

    for index, conversation in enumerate(conversations):
        for r, rater in enumerate(raters[:4]):
            if index % 4 == r:
                continue
            rate(conversation, rater, {
                key: truth[(conversation.code, key)] if rng.random() < 0.88 else ("no" if truth[(conversation.code, key)] == "yes" else "yes")
                for key in keys
            })
    if late_rater:
        rate(conversations[1], raters[4], dict.fromkeys(keys, "yes"))
    study_compute_consensus(study=study, actor=coordinator)
    votes: dict[tuple[str, str], list[str]] = {}
    for unit, _, item, label in ratings:
        votes.setdefault((unit, item), []).append(label)
    majority = {k: ("yes" if v.count("yes") * 2 > len(v) else "no") for k, v in votes.items()}
    labels_by_judge = {
        "always-yes": lambda unit, key: "yes",
        "coin-flip": lambda unit, key: "yes" if rng.random() < 0.5 else "no",
        "majority": lambda unit, key: majority[(unit, key)],
    }
    judge_labels = [(c.code, name, key, labels_by_judge[name](c.code, key)) for name in judges for c in conversations for key in keys]
    run = _judge_run(amhart, conversations, keys, judge_labels, judges, prefix)
    return VerdictStudy(study, coordinator, raters, run, ratings, judge_labels)


def _judge_run(amhart: Any, conversations: list[Conversation], keys: list[str], judge_labels: list[tuple[str, str, str, str]],
               names: tuple[str, ...], prefix: str) -> Any:
    from judging.ensemble import ensemble_compute
    from judging.judges import judge_create
    from judging.models import JudgeLabel, JudgeResult, LabelKind, ResultStatus
    from judging.runs import judge_run_create

    judges = [judge_create(name=name, instrument=amhart, model=f"openai/{prefix}-{name}") for name in names]
    run = judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations], start=False, name="Judges of known quality")
    results = {(r.conversation.code, r.judge.name): r for r in run.results.select_related("conversation", "judge")}
    position = {k: i for i, k in enumerate(keys)}
    JudgeLabel.objects.bulk_create(
        [JudgeLabel(result=results[(unit, name)], kind=LabelKind.ITEM, item_key=key, position=position[key], label=label)
         for unit, name, key, label in judge_labels],
        batch_size=2000,
    )
    now = timezone.now()
    JudgeResult.objects.filter(run=run).update(status=ResultStatus.DONE, finished_at=now, started_at=now)
    run.n_done = run.results.count()
    run.status = "completed"
    run.save(update_fields=["n_done", "status"])
    ensemble_compute(run=run, item_order=keys)
    return run
