"""The publication bundle's data version: a fingerprint of everything a study's bundle holds.

A built bundle is kept as a file named by this fingerprint (``reports.bundle.build``) and served
only while the fingerprint is unchanged, so a stale bundle is never downloaded. It is made of the
fingerprints the reports already keep for their own caches (ratings and consensus, the raters'
assignments and times, each judge run's labels, ensemble and status with the study's inclusion
probabilities) and of what only the bundle carries: the study's own settings, the conversations
it uses and their messages, the open work in assignments.csv, the failure codes, the sampling and
active plans, the development/test split with its declarations and looks, and how the bundle is
made (its format, the app's version, chart images on or off, the reliability target width).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.db.models import Count, Max, Min, Q, Sum

from annotation.models import (
    ActiveBatch,
    ActivePlan,
    ActiveUnit,
    Assignment,
    AssignmentStatus,
    SamplingPlan,
    Study,
)
from corpus.models import Message
from judging.models import JudgeRun
from reports import selectors
from reports.bundle import layout
from reports.judge_assisted.selectors import data_version as judge_assisted_version
from reports.methods.software import software_versions
from reports.models import FailureCategory, FailureCode, FinalDeclaration, HoldoutLook, HoldoutSplit
from reports.raters.selectors import data_version as raters_version
from reports.reliability import target_width


def _rows(queryset: Any) -> str:
    """Return a digest of a small table's rows (every column), in id order."""
    return hashlib.sha256(repr(list(queryset.order_by("pk").values_list())).encode()).hexdigest()


def bundle_fingerprint(study: Study) -> str:
    """Return a fingerprint that changes whenever anything a study's publication bundle holds changes."""
    runs = list(selectors.judge_runs_for_study(study).order_by("pk"))
    used = selectors.study_used_conversation_ids(study)
    messages = Message.objects.filter(conversation_id__in=used).aggregate(n=Count("id"), last=Max("id"), first=Min("id"))
    # assignments.csv lists the open work too (status, start, time so far): the raters' fingerprint counts submitted work only.
    work = Assignment.objects.filter(study=study).aggregate(
        n=Count("id"), started=Max("started_at"), seconds=Sum("time_spent_seconds"), last=Max("id"),
        open=Count("id", filter=~Q(status=AssignmentStatus.SUBMITTED)), calibration=Count("id", filter=Q(is_calibration=True)))
    parts = [
        f"format={layout.BUNDLE_FORMAT}", f"software={sorted(software_versions().items())}",
        f"images={bool(getattr(settings, 'EVALSITE_BUNDLE_IMAGES', True))}", f"width={target_width()}",
        _rows(Study.objects.filter(pk=study.pk)),
        raters_version(study),  # ratings, consensus, the reliability threshold, submitted assignments and times
        *(judge_assisted_version(study, run) for run in runs),  # each run's labels, ensemble and status, inclusion probs
        _rows(JudgeRun.objects.filter(pk__in=[run.pk for run in runs])),
        hashlib.sha256(repr(used).encode()).hexdigest(), str(messages), str(work),
        _rows(study.study_conversations.all()),
        _rows(FailureCode.objects.filter(study=study)), _rows(FailureCategory.objects.filter(study=study)),
        _rows(SamplingPlan.objects.filter(study=study)), _rows(ActivePlan.objects.filter(study=study)),
        _rows(ActiveBatch.objects.filter(plan__study=study)), _rows(ActiveUnit.objects.filter(batch__plan__study=study)),
        _rows(HoldoutSplit.objects.filter(study=study)), _rows(FinalDeclaration.objects.filter(study=study)),
        _rows(HoldoutLook.objects.filter(study=study)),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:32]

