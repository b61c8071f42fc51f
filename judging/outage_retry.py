"""Sending again the judgements that waited for their judge's provider (core.outages)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.enqueue import enqueue_groups_on_commit
from core.outages import Family, register
from judging.models import JudgeLabel, JudgeResult, JudgeRun, ResultStatus, RunStatus
from judging.outages import PREFIX, waiting
from judging.store import judge_run_refresh

RESULTS_TASK = "judging.tasks.judge_results_task"


@transaction.atomic
def redispatch(result_ids: list[int]) -> int:
    """Queue the judgements again (one automatic retry each); their runs run again."""
    ids = list(JudgeResult.objects.select_for_update().filter(pk__in=result_ids, status=ResultStatus.FAILED)
               .values_list("pk", flat=True))
    if not ids:
        return 0
    run_ids = set(JudgeResult.objects.filter(pk__in=ids).values_list("run_id", flat=True))
    JudgeLabel.objects.filter(result_id__in=ids).delete()
    JudgeResult.objects.filter(pk__in=ids).update(
        status=ResultStatus.PENDING, error_kind="", error="", attempts=0, lease_owner="", lease_expires_at=None,
        queued_at=timezone.now(), finished_at=None, auto_retries=F("auto_retries") + 1,
    )
    for run in JudgeRun.objects.select_for_update().filter(pk__in=run_ids).exclude(status=RunStatus.CANCELLED):
        run.status, run.finished_at, run.error = RunStatus.RUNNING, None, ""
        run.save(update_fields=["status", "finished_at", "error", "updated_at"])
        judge_run_refresh(run_id=run.pk)  # the counters no longer include the rows sent again
    enqueue_groups_on_commit(RESULTS_TASK, ids)
    return len(ids)



register(Family(prefix=PREFIX, waiting=waiting, redispatch=redispatch))
