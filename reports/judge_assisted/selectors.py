"""Reads for judge-assisted scores: a study's human consensus, its sampling plan, a run's labels.

The study is access-checked by ``reports.selectors.study_get_for_reports`` and the run must be
one that labelled the study's conversations (``judge_run_for_study``). Human consensus comes
from the study's consensus labels (main instrument only; an unresolved label is missing, never
guessed); calibration conversations are left out, as in every other report.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from dataclasses import dataclass

from django.db.models import Count, Max, Sum
from django.http import Http404

from annotation.models import ActivePlan, ConsensusLabel, SamplingPlan, Study
from corpus.models import InstrumentKind, Item, Scale
from judging.models import EnsembleLabel, JudgeLabel, JudgeRun
from judging.sources import run_conversations
from reports.selectors import judge_runs_for_study, study_data_version

YES_NO_SCALES = (Scale.YES_NO_NA, Scale.YES_NO, Scale.BOOLEAN)


def judge_run_for_study(study: Study, run_id: int | None) -> JudgeRun | None:
    """Return the chosen run (default: the study's plan run, else the newest) or None if there is none.

    Raises Http404 for a run that labelled none of the study's conversations.
    """
    runs = judge_runs_for_study(study)
    if run_id is None:
        plan = SamplingPlan.objects.filter(study=study).first()
        if plan is not None and runs.filter(pk=plan.judge_run_id).exists():
            return plan.judge_run
        return runs.first()
    run = runs.filter(pk=run_id).first()
    if run is None:
        raise Http404("no such judge run for this study")
    return run


def study_human_labels(study: Study, *, conversation_ids: Collection[int] | None = None) -> dict[int, dict[str, str | None]]:
    """Return the consensus per rated conversation: item -> label (None: unresolved); only these conversations if given."""
    main = study.study_conversations.filter(is_calibration=False)
    if conversation_ids is not None:
        main = main.filter(conversation_id__in=list(conversation_ids))
    main = main.values("conversation_id")
    out: dict[int, dict[str, str | None]] = {}
    rows = (
        ConsensusLabel.objects.filter(study=study, conversation_id__in=main)
        .exclude(item_key__startswith="section:")
        .values_list("conversation_id", "item_key", "label")
    )
    for cid, key, label in rows:
        out.setdefault(cid, {})[key] = label or None
    return out


@dataclass(frozen=True)
class StudyPlan:
    """The study's sampling plan as the estimators need it."""

    plan: SamplingPlan | None
    inclusion_prob: dict[int, float]  # conversation id -> π, main conversations that have one


def study_plan(study: Study) -> StudyPlan:
    plan = SamplingPlan.objects.filter(study=study).select_related("judge_run").first()
    probs = dict(
        study.study_conversations.filter(is_calibration=False, inclusion_prob__isnull=False).values_list(
            "conversation_id", "inclusion_prob"
        )
    )
    return StudyPlan(plan, probs)


def study_is_active(study: Study) -> bool:
    """Return whether the study's conversations were drawn by active sampling."""
    return ActivePlan.objects.filter(study=study).exists()


def same_population(run_a: JudgeRun, run_b: JudgeRun) -> bool:
    """Return whether two runs judged the same conversations (integrity-flagged ones aside)."""
    return run_a.pk == run_b.pk or set(run_conversations(run_a)) == set(run_conversations(run_b))


@dataclass(frozen=True)
class ScoreItem:
    key: str
    title: str


def score_items(study: Study) -> list[ScoreItem]:
    """Return the items whose yes-rate (checklists) or the dimensions (flows) a scorecard shows."""
    items = Item.objects.filter(instrument=study.instrument).order_by("position")
    if study.instrument.kind == InstrumentKind.FLOW:
        return [ScoreItem(d, d) for d in dict.fromkeys(i.domain for i in items if i.domain)]
    return [
        ScoreItem(i.key, f"{i.number}. {i.text}" if i.number else i.text)
        for i in items
        if i.scale in YES_NO_SCALES
    ]


def data_version(study: Study, run: JudgeRun) -> str:
    """Return a fingerprint of everything a judge-assisted scorecard depends on."""
    labels = JudgeLabel.objects.filter(result__run=run).aggregate(n=Count("id"), last=Max("result__finished_at"))
    ensemble = EnsembleLabel.objects.filter(run=run).aggregate(n=Count("id"))
    plan = study.study_conversations.aggregate(p=Sum("inclusion_prob"), n=Count("inclusion_prob"))
    blob = f"{study_data_version(study)}|{run.pk}|{run.status}|{labels}|{ensemble}|{plan}"
    return hashlib.sha256(blob.encode()).hexdigest()[:32]
