"""Data written for the judge-assisted, sampling-plan, drift and rater reports.

A corpus of chatbots x personas x repetitions, judge runs whose judges' output is written as
the judging app stores it (results done, one label per item with a rationale) and whose
ensemble is computed by the real majority vote, and studies whose raters' submitted ratings
give a real consensus. Only the LLM call is skipped: every label is chosen by the test, so
the figures can be checked against the statistics computed by hand.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from django.utils import timezone

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus, Study
from annotation.studies.services import study_create
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation, Instrument, Target
from judging import services as judging
from judging.ensemble import ensemble_compute
from judging.models import (
    Judge,
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    LabelKind,
    ResultStatus,
    RunStatus,
)
from tests.factories import ConversationFactory, PersonaFactory, TargetFactory

AMHART_KEYS = [f"amhart_{n:02d}" for n in range(1, 15)]
Labels = dict[str, str | None]


def amhart() -> Instrument:
    return builtin_instruments_load()[0]


def corpus(chatbots: Sequence[str] = ("BOT-A", "BOT-B"), personas: int = 2, repetitions: int = 6) -> list[Conversation]:
    """Return chatbots x personas x repetitions conversations (chatbots named by code)."""
    targets = [TargetFactory(code=code, model=f"vendor/{code.lower()}-model") for code in chatbots]
    people = [PersonaFactory(name=f"Persona {i + 1}", design={"concern": "anxiety", "severity": "moderate"}) for i in range(personas)]
    return [
        ConversationFactory(target=target, persona=person, run_index=r)
        for target in targets
        for person in people
        for r in range(repetitions)
    ]


def judges_for(instrument: Instrument, names: Sequence[str], **kwargs: Any) -> list[Judge]:
    return [
        judging.judge_create(name=name, instrument=instrument, model=f"openai/{name}", provider=name, **kwargs)
        for name in names
    ]


def judged_run(
    instrument: Instrument,
    judges: Sequence[Judge],
    conversations: Sequence[Conversation],
    labels: Callable[[Judge, Conversation], Labels],
    *,
    name: str = "",
    shared: bool = True,
) -> JudgeRun:
    """Create a run as the judging app would, store each judge's labels, and vote the ensemble.

    ``labels(judge, conversation)`` returns the judge's label per item (None: missing label).
    Rationales read "<judge> says <label> on <item>" so tests can find them. The run is an operator's,
    shared (issue 30) so that every test user may read it, unless ``shared`` is off.
    """
    run = judging.judge_run_create(judges=list(judges), conversation_ids=[c.pk for c in conversations], name=name, start=False)
    kind = LabelKind.ITEM if run.mode == "checklist" else LabelKind.DIMENSION
    stored = []
    results = {(r.judge_id, r.conversation_id): r for r in run.results.all()}
    by_id = {c.pk: c for c in conversations}
    for (judge_id, conversation_id), result in results.items():
        judge = next(j for j in judges if j.pk == judge_id)
        for position, (key, label) in enumerate(labels(judge, by_id[conversation_id]).items()):
            if label is None:
                stored.append(JudgeLabel(result=result, kind=kind, item_key=key, position=position, status="missing",
                                         missing_reason="no label in the reply"))
            else:
                stored.append(JudgeLabel(result=result, kind=kind, item_key=key, position=position, label=label,
                                         rationale=f"{judge.name} says {label} on {key}"))
    JudgeLabel.objects.bulk_create(stored)
    JudgeResult.objects.filter(run=run).update(status=ResultStatus.DONE, finished_at=timezone.now())
    order = list(dict.fromkeys(label.item_key for label in stored))
    ensemble_compute(run=run, item_order=order)
    JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.COMPLETED, n_done=len(results), finished_at=timezone.now(),
                                              shared=shared)
    run.refresh_from_db()
    return run


def noisy(truth: Labels, rng: random.Random, error: float, *, alphabet: Sequence[str] = ("yes", "no", "N/A")) -> Labels:
    """Return the labels with each changed to another label with probability ``error``."""
    out: Labels = {}
    for key, label in truth.items():
        if label is not None and rng.random() < error:
            out[key] = rng.choice([x for x in alphabet if x != label])
        else:
            out[key] = label
    return out


def amhart_truth(conversations: Sequence[Conversation], seed: int = 1, yes_rate: dict[str, float] | None = None) -> dict[int, Labels]:
    """Return a true AMHART answer per conversation (N/A for the safety items 13-14)."""
    rng = random.Random(seed)
    out = {}
    for c in conversations:
        p = (yes_rate or {}).get(c.target.code, 0.5) if c.target else 0.5
        out[c.pk] = {key: ("N/A" if key in ("amhart_13", "amhart_14") else ("yes" if rng.random() < p else "no")) for key in AMHART_KEYS}
    return out


def rate(study: Study, conversation: Conversation, rater: Any, labels: Labels, *, position: int = 0,
         seconds: int = 300, submitted_at: Any = None) -> Assignment:
    """Store one submitted rating of a study conversation, as the rating page would."""
    assignment, _ = Assignment.objects.update_or_create(
        study=study, conversation=conversation, rater=rater,
        defaults={"status": AssignmentStatus.SUBMITTED, "position": position, "time_spent_seconds": seconds,
                  "submitted_at": submitted_at or timezone.now()},
    )
    Rating.objects.update_or_create(
        assignment=assignment,
        defaults={"status": RatingStatus.SUBMITTED, "submitted_at": assignment.submitted_at,
                  "answers": {"main": {k: {"value": v} for k, v in labels.items() if v is not None}}},
    )
    return assignment


def rated_study(
    coordinator: Any, raters: Sequence[Any], conversations: Sequence[Conversation], human: dict[int, Labels],
    *, instrument: Instrument | None = None, name: str = "Validation",
) -> Study:
    """Create a study of the conversations; every rater gives the human labels; compute consensus."""
    study = study_create(
        name=name, instrument=instrument or amhart(), section=None, conversation_ids=[c.pk for c in conversations],
        created_by=coordinator, coordinators=[coordinator], raters=[(r, "clinician") for r in raters],
        raters_per_conversation=len(raters),
    )
    rate_all(study, coordinator, raters, conversations, human)
    return study


def rate_all(study: Study, coordinator: Any, raters: Sequence[Any], conversations: Sequence[Conversation],
             human: dict[int, Labels]) -> None:
    start = timezone.now() - timedelta(hours=2)
    for rater in raters:
        for i, conversation in enumerate(conversations):
            rate(study, conversation, rater, human[conversation.pk], position=i, submitted_at=start + timedelta(minutes=5 * i))
    study_compute_consensus(study=study, actor=coordinator)


def chatbot_of(conversation: Conversation) -> str:
    target: Target = conversation.target
    return f"{target.code} · {target.model}"


def good_or_bad_labels(good: bool) -> dict[str, str]:
    """AMHART labels of a conversation where the chatbot does everything (yes) or nothing (no); items 13-14 N/A."""
    return {k: ("N/A" if k in ("amhart_13", "amhart_14") else ("yes" if good else "no")) for k in AMHART_KEYS}


def oversampled_study(coordinator: Any, clinician: Any) -> dict[str, Any]:
    """Per chatbot 24 conversations: 18 where the chatbot does everything (score 1), 6 where it does nothing (0).

    The judges disagree (judge-c dissents on one item) exactly on the bad ones, and a sampling plan
    oversamples them four times; the clinician rates the drawn conversations as the truth.
    """
    from annotation.sampling.selectors import PlanOptions
    from annotation.sampling.services import study_create_from_plan

    instrument = amhart()
    conversations = corpus(repetitions=12)  # 2 chatbots x 2 personas x 12 = 48
    good = {c.pk: (i % 4 != 0) for i, c in enumerate(conversations)}
    truth = {c.pk: good_or_bad_labels(good[c.pk]) for c in conversations}

    def judge(j: Any, c: Conversation) -> dict[str, str]:
        labels = dict(truth[c.pk])
        if j.name == "judge-c" and not good[c.pk]:
            labels["amhart_01"] = "yes"
        return labels

    run = judged_run(instrument, judges_for(instrument, ["judge-a", "judge-b", "judge-c"]), conversations, judge)
    study = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="oversample", n=20, seed=3, boost=4.0),
        created_by=coordinator, name="Planned", rater_title="", description="", section=None,
        coordinators=[coordinator], raters=[(clinician, "clinician")], raters_per_conversation=1,
    )
    picked = [link.conversation for link in study.study_conversations.all()]
    rate_all(study, coordinator, [clinician], picked, truth)
    return {"study": study, "run": run, "conversations": conversations, "good": good, "truth": truth, "picked": picked}
