"""A study where clinicians and two judges cite turns: the evidence agreement page's tests and screenshots.

Cited turns are stored as the rating form stores them (``annotation.rating.selectors.rating_evidence_by_item``):
``answers["main"][key]["evidence"]``, no key when nothing was cited. ``rater_rows`` are what the
report should read: every answered item of a rating that cites at least one turn.

``n_conversations`` AMHART conversations of 8 turns, three clinicians on each, two items. Each
clinician cites the turns around a latent "key turn" of (conversation, item), sometimes one
more or one fewer; the "careful" judge cites the key turn, the "wrong-turns" judge a turn
nobody cites. Both judges give the same label, so only their evidence tells them apart.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils import timezone

from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus, Study
from annotation.studies.services import study_add_member, study_create
from core.roles import Role
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation
from tests.support.report_study import _users

JUDGES = ("careful", "wrong-turns")


@dataclass
class EvidenceStudy:
    study: Study
    coordinator: Any
    researcher: Any
    raters: list[Any]
    run: Any
    conversations: list[Conversation]
    keys: list[str]
    rater_rows: list[tuple[str, str, str, list[int]]]  # (conversation, rater, item, turns)
    judge_rows: list[tuple[str, str, str, list[int]]]  # (conversation, judge, item, turns)


def build_evidence_study(*, n_conversations: int = 8, seed: int = 11, prefix: str = "ev", cite: bool = True) -> EvidenceStudy:
    """Create the study, its ratings with cited turns (``cite=False``: answers without turns) and a judge run."""
    rng = np.random.default_rng(seed)
    coordinator = _users(f"{prefix}coord", 1, Role.COORDINATOR)[0]
    researcher = _users(f"{prefix}research", 1, Role.RESEARCHER)[0]
    raters = _users(f"{prefix}rater", 3, Role.CLINICIAN)
    amhart, section = builtin_instruments_load()
    keys = list(amhart.items.order_by("position").values_list("key", flat=True))[:2]
    Conversation.objects.bulk_create(
        Conversation(code=f"{prefix.upper()}-{i:03d}", source="imported", content_hash=hashlib.sha256(f"{prefix}-{i}".encode()).hexdigest(), message_count=8)
        for i in range(n_conversations)
    )
    conversations = list(Conversation.objects.filter(code__startswith=f"{prefix.upper()}-").order_by("code"))
    study = study_create(
        name="Evidence of two judges", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
        created_by=coordinator, coordinators=[coordinator], raters=[(r, "clinician") for r in raters], raters_per_conversation=3,
    )
    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    if cite:
        Study.objects.filter(pk=study.pk).update(evidence_mode="per_item")
        study.refresh_from_db()
    key_turn = {(c.code, k): int(rng.integers(2, 7)) for c in conversations for k in keys}
    now = timezone.now()
    rater_rows: list[tuple[str, str, str, list[int]]] = []
    for conversation in conversations:
        for rater in raters:
            answers = {}
            cited: dict[str, list[int]] = {}
            for key in keys:
                turn = key_turn[(conversation.code, key)]
                turns = {turn} if rng.random() < 0.8 else set()
                if rng.random() < 0.4:
                    turns.add(turn + 1)
                entry: dict[str, Any] = {"value": "yes"}
                if cite and turns:  # the storage format: no key when nothing was cited
                    entry["evidence"] = sorted(turns)
                cited[key] = sorted(turns) if cite else []
                answers[key] = entry
            if any(cited.values()):  # a rating citing no turn at all is no rater of evidence
                rater_rows.extend((conversation.code, rater.username, key, turns) for key, turns in cited.items())
            assignment = Assignment.objects.create(study=study, conversation=conversation, rater=rater,
                                                   status=AssignmentStatus.SUBMITTED, submitted_at=now)
            Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, submitted_at=now, revision=1,
                                  answers={"main": answers})
    judge_rows = [(c.code, name, key, [key_turn[(c.code, key)]] if name == "careful" else [1])
                  for name in JUDGES for c in conversations for key in keys]
    run = _judge_run(amhart, conversations, keys, judge_rows, prefix)
    return EvidenceStudy(study, coordinator, researcher, raters, run, conversations, keys, rater_rows, judge_rows)


def _judge_run(amhart: Any, conversations: list[Conversation], keys: list[str],
               judge_rows: list[tuple[str, str, str, list[int]]], prefix: str) -> Any:
    from judging.judges import judge_create
    from judging.models import JudgeLabel, JudgeResult, LabelKind, ResultStatus
    from judging.runs import judge_run_create

    judges = [judge_create(name=f"{prefix}-{name}", instrument=amhart, model=f"openai/{prefix}-{name}") for name in JUDGES]
    run = judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations], start=False, name="Evidence judges")
    results = {(r.conversation.code, r.judge.name): r for r in run.results.select_related("conversation", "judge")}
    position = {k: i for i, k in enumerate(keys)}
    JudgeLabel.objects.bulk_create([
        JudgeLabel(result=results[(unit, f"{prefix}-{name}")], kind=LabelKind.ITEM, item_key=key, position=position[key],
                   label="yes", evidence=[{"turn": t, "quote": "…", "verified": True} for t in turns])
        for unit, name, key, turns in judge_rows
    ])
    now = timezone.now()
    JudgeResult.objects.filter(run=run).update(status=ResultStatus.DONE, finished_at=now, started_at=now)
    run.status = "completed"
    run.n_done = run.results.count()
    run.save(update_fields=["n_done", "status"])
    return run
