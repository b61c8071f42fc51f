"""Reads of the revise flow: what the page shows for (study, run, judge, item), and the revisions made from it.

Access: the study must be one the user reads reports of (``reports.selectors.study_get_for_reports``)
and the user must manage judging (``judging.selectors.can_manage_judging``: researchers, admins);
everyone else gets 404, as on every report and judging page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import Http404
from django.urls import reverse

from annotation.models import Study
from judging.guidance import GuidanceTarget, current_instruction, guidance_targets
from judging.judges import judge_clone_initial
from judging.models import Judge, JudgeRun
from judging.selectors import can_manage_judging
from judging.sources import run_panel
from reports.devset.selectors import split_current, study_run
from reports.models import HoldoutSplit
from reports.selectors import study_get_for_reports


@dataclass(frozen=True)
class RevisePlan:
    """Everything the revise page shows: the version revised, the item, its wording, the split."""

    study: Study
    split: HoldoutSplit | None
    run: JudgeRun
    judge: Judge
    target: GuidanceTarget
    current: str  # the wording this judge version gives the item (its own instruction, else the instrument's)
    edited: bool  # whether that wording is this version's own edit
    default_name: str
    revisions: list[JudgeRun]


def _int(value: Any) -> int | None:
    text = str(value or "").strip()
    return int(text) if text.isdigit() else None


def study_for_revision(user: Any, pk: int) -> Study:
    """Return the study if the user may revise its judges (reads its reports and manages judging), else 404."""
    study = study_get_for_reports(user, pk=pk)
    if not can_manage_judging(user):
        raise Http404("not found")
    return study


def revise_plan(study: Study, run_id: Any, judge_id: Any, item_key: Any) -> RevisePlan:
    """Return the plan for revising ``judge`` of ``run`` on ``item_key``; 404 for what the study does not hold."""
    pk, judge_pk = _int(run_id), _int(judge_id)
    run = study_run(study, pk) if pk is not None else None
    if run is None:
        raise Http404("no such judge run of this study")
    if judge_pk is None or judge_pk not in {jid for jid, _ in run_panel(run)}:
        raise Http404("no such judge in this run")
    judge = Judge.objects.select_related("instrument", "prompt", "cloned_from").get(pk=judge_pk)
    targets = guidance_targets(judge.instrument)
    target = targets.get(str(item_key or ""))
    if target is None:
        raise Http404("no such item in this judge's instrument")
    return RevisePlan(
        study=study, split=split_current(study), run=run, judge=judge, target=target,
        current=current_instruction(judge, target), edited=target.key in (judge.item_guidance or {}),
        default_name=judge_clone_initial(judge)["name"], revisions=revision_runs(study, run, judge, target.key),
    )


def revision_runs(study: Study, run: JudgeRun, judge: Judge, item_key: str) -> list[JudgeRun]:
    """Return the development-set runs revised from this judge of this run on this item, newest first."""
    return list(
        JudgeRun.objects.filter(
            selection__revision__study=study.pk, selection__revision__from_run=run.pk,
            selection__revision__from_judge=judge.pk, selection__revision__item=item_key,
        ).prefetch_related("judges").order_by("-created_at", "-id")[:20]
    )


def flips_url(run: JudgeRun) -> str | None:
    """Return the drift page comparing a revision run with the version it came from (None for other runs)."""
    revision = (run.selection or {}).get("revision")
    if not revision:
        return None
    query = urlencode({
        "a_run": revision["from_run"], "a_source": f"judge:{revision['from_judge']}",
        "b_run": run.pk, "b_source": f"judge:{revision['judge']}", "study": revision["study"],
        "item": revision["item"], "show": revision["item"],
    })
    return f"{reverse('reports:drift')}?{query}"
