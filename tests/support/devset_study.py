"""A study for judge development: chatbots x personas x repetitions, rated by four clinicians, two judge versions.

``n_reps`` conversations per (chatbot, persona) cell, three raters per conversation (rater r
skips conversation c when c % 4 == r), labels around a latent answer per (conversation, item).
Two judge runs: run 1 holds "careful" version 1; run 2 holds "careful" version 2 (a clone of
version 1, ``cloned_from``) and a "contrarian" judge, with their ensemble. "careful" v2 copies
the human majority on every conversation; "careful" v1 copies it with some noise; "contrarian"
answers the opposite of the majority. ``overfit=True`` makes "careful" v2 copy the majority
only on conversations listed in ``tuned_on`` (the development set, once known) and answer the
opposite elsewhere: a judge tuned on the development set that fails on held-out data.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus, Study
from annotation.studies.services import study_add_member, study_create
from core.roles import Role
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation, Persona, PersonaSet, Target
from tests.support.report_study import _users

CHATBOTS = (("DV-A", "vendor-a/chat-large"), ("DV-B", "vendor-b/assistant-2"), ("DV-C", "vendor-c/helper-mini"))


@dataclass
class DevsetStudy:
    study: Study
    coordinator: Any
    researcher: Any
    raters: list[Any]
    conversations: list[Conversation]
    keys: list[str]
    majority: dict[tuple[str, str], str]
    judge_v1: Any
    judge_v2: Any
    contrarian: Any
    run_v1: Any
    run_v2: Any


def build_devset_study(*, n_personas: int = 4, n_reps: int = 3, seed: int = 5, prefix: str = "dv") -> DevsetStudy:
    """Create the study with its ratings, consensus and two judge runs; return them."""
    rng = np.random.default_rng(seed)
    coordinator = _users(f"{prefix}coord", 1, Role.COORDINATOR)[0]
    researcher = _users(f"{prefix}research", 1, Role.RESEARCHER)[0]
    raters = _users(f"{prefix}rater", 4, Role.CLINICIAN)
    amhart, section = builtin_instruments_load()
    keys = list(amhart.items.order_by("position").values_list("key", flat=True))
    targets = [Target.objects.get_or_create(code=f"{code}-{prefix}", defaults={"model": model})[0] for code, model in CHATBOTS]
    persona_set = PersonaSet.objects.create(key=f"{prefix}-cards", name="Cards", content_hash=prefix * 32)
    personas = [Persona.objects.create(persona_set=persona_set, key=f"p{i}", name=f"{prefix}-persona-{i}", position=i)
                for i in range(n_personas)]
    n = len(targets) * n_personas * n_reps
    Conversation.objects.bulk_create(
        Conversation(code=f"{prefix.upper()}-{i:03d}", source="imported", content_hash=f"{prefix}{i:062d}", message_count=2,
                     target=targets[i % len(targets)], persona=personas[(i // len(targets)) % n_personas])
        for i in range(n)
    )
    conversations = list(Conversation.objects.filter(code__startswith=f"{prefix.upper()}-").order_by("code"))
    study = study_create(
        name="Judge development study", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
        created_by=coordinator, coordinators=[coordinator], raters=[(r, "clinician") for r in raters], raters_per_conversation=3,
    )
    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    truth = {(c.code, key): ("yes" if rng.random() < 0.55 else "no") for c in conversations for key in keys}
    now = timezone.now()
    votes: dict[tuple[str, str], list[str]] = {}
    for index, conversation in enumerate(conversations):
        for r, rater in enumerate(raters):
            if index % 4 == r:
                continue
            answers = {key: truth[(conversation.code, key)] if rng.random() < 0.88 else
                       ("no" if truth[(conversation.code, key)] == "yes" else "yes") for key in keys}
            assignment = Assignment.objects.create(study=study, conversation=conversation, rater=rater,
                                                   status=AssignmentStatus.SUBMITTED, submitted_at=now)
            Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, submitted_at=now, revision=1,
                                  answers={"main": {k: {"value": v} for k, v in answers.items()}})
            for k, v in answers.items():
                votes.setdefault((conversation.code, k), []).append(v)
    study_compute_consensus(study=study, actor=coordinator)
    majority = {k: ("yes" if v.count("yes") * 2 > len(v) else "no") for k, v in votes.items()}
    from judging.judges import judge_create

    judge_v1 = judge_create(name=f"{prefix}-careful", instrument=amhart, model=f"openai/{prefix}-careful")
    judge_v2 = judge_create(name=f"{prefix}-careful-2", instrument=amhart, model=f"openai/{prefix}-careful", cloned_from=judge_v1)
    contrarian = judge_create(name=f"{prefix}-contrarian", instrument=amhart, model=f"openai/{prefix}-contrarian")
    flip = {"yes": "no", "no": "yes"}
    v1 = {(c.code, k): majority[(c.code, k)] if rng.random() < 0.8 else flip[majority[(c.code, k)]] for c in conversations for k in keys}
    run_v1 = judge_run_with_labels(amhart, conversations, keys, {judge_v1.name: v1}, [judge_v1], name="careful v1")
    run_v2 = judge_run_with_labels(
        amhart, conversations, keys,
        {judge_v2.name: dict(majority), contrarian.name: {k: flip[v] for k, v in majority.items()}},
        [judge_v2, contrarian], name="careful v2 + contrarian",
    )
    return DevsetStudy(study, coordinator, researcher, raters, conversations, keys, majority, judge_v1, judge_v2, contrarian,
                       run_v1, run_v2)


def overfit_labels(d: DevsetStudy, tuned_on: Collection[str]) -> dict[tuple[str, str], str]:
    """Return labels equal to the human majority on ``tuned_on`` conversations and the opposite elsewhere."""
    flip = {"yes": "no", "no": "yes"}
    return {(c.code, k): d.majority[(c.code, k)] if c.code in tuned_on else flip[d.majority[(c.code, k)]]
            for c in d.conversations for k in d.keys}


def judge_run_with_labels(instrument: Any, conversations: list[Conversation], keys: list[str],
                          labels: dict[str, dict[tuple[str, str], str]], judges: list[Any], *, name: str) -> Any:
    """Create a finished judge run whose judges gave these labels ({judge name: {(code, item): label}})."""
    from judging.ensemble import ensemble_compute
    from judging.models import JudgeLabel, JudgeResult, LabelKind, ResultStatus
    from judging.runs import judge_run_create

    run = judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations], start=False, name=name)
    results = {(r.conversation.code, r.judge.name): r for r in run.results.select_related("conversation", "judge")}
    position = {k: i for i, k in enumerate(keys)}
    JudgeLabel.objects.bulk_create(
        [JudgeLabel(result=results[(code, judge)], kind=LabelKind.ITEM, item_key=key, position=position[key], label=label)
         for judge, by_pair in labels.items() for (code, key), label in by_pair.items()],
        batch_size=2000,
    )
    now = timezone.now()
    JudgeResult.objects.filter(run=run).update(status=ResultStatus.DONE, finished_at=now, started_at=now)
    run.n_done = run.results.count()
    run.status = "completed"
    run.save(update_fields=["n_done", "status"])
    if len(judges) > 1:
        ensemble_compute(run=run, item_order=keys)
    return run
