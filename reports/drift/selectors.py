"""Reads for the drift page: the two versions asked for, and the study whose humans are the reference.

Judge runs are visible to researchers, coordinators and admins (``judging.selectors``); the
reference study must be one the user may read reports of, else 404.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from annotation.models import ConsensusLabel, Study
from judging.errors import JudgingError
from judging.models import JudgeRun
from judging.selectors import run_get_for_user, run_list_for_user
from judging.sources import LabelSource, label_source_get, run_label_sources
from reports.selectors import study_get_for_reports, study_list_for_reports


@dataclass(frozen=True)
class Version:
    run: JudgeRun
    source: LabelSource
    sources: list[LabelSource]


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def version_get(user: Any, run_id: str | None, source_key: str | None) -> Version | None:
    """Return a version (run and label source), None when no run is given; 404 for an unknown run.

    Raises JudgingError for a label source the run does not have.
    """
    pk = _int(run_id)
    if pk is None:
        return None
    run = run_get_for_user(user, pk=pk)
    return Version(run, label_source_get(run, source_key or None), run_label_sources(run))


def runs_for_picker(user: Any) -> list[JudgeRun]:
    return list(run_list_for_user(user)[:200])


def reference_study(user: Any, study_id: str | None, a: JudgeRun, b: JudgeRun) -> Study | None:
    """Return the asked study (404 if not readable), or the readable study with the most consensus
    labels on conversations both runs judged (None if there is none)."""
    pk = _int(study_id)
    if pk is not None:
        return study_get_for_reports(user, pk=pk)
    if study_id == "none":
        return None
    ids = a.results.filter(conversation_id__in=b.results.values("conversation_id")).values("conversation_id")
    # One grouped count over the consensus labels of the readable studies. (A count per study, as
    # a correlated subquery, took seconds on every visit of a large run: issue 19.)
    readable = study_list_for_reports(user).order_by().values("pk")
    best = (
        ConsensusLabel.objects.filter(study_id__in=readable, conversation_id__in=ids)
        .exclude(label="")
        .order_by()
        .values("study")
        .annotate(n=Count("pk"))
        .order_by("-n", "-study__created_at")
        .values_list("study", flat=True)
        .first()
    )
    return None if best is None else Study.objects.get(pk=best)


def studies_for_picker(user: Any) -> list[Study]:
    return list(study_list_for_reports(user)[:200])


__all__ = ["JudgingError", "Version", "reference_study", "runs_for_picker", "studies_for_picker", "version_get"]
