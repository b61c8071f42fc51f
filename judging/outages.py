"""Judgements behind a judge's breaker (core.outages): found and sent again.

The breaker of a judgement is its judge's (``judge:<id>``: one model endpoint). A waiting
judgement failed with an outage kind, in a run nobody cancelled, and has automatic retries
left; sent again, it starts anew (its labels go, as a person's retry does) and its run counts
it as open until it is stored.
"""

from __future__ import annotations

from core.outages import OUTAGE_KINDS, outage_answered, outage_failed, outage_summary, waiting_q
from judging.models import Judge, JudgeResult, JudgeRun, ResultStatus, RunStatus

PREFIX = "judge:"


def breaker_key(judge_id: int) -> str:
    return f"{PREFIX}{judge_id}"


def waiting(key: str, limit: int | None) -> list[int]:
    rows = JudgeResult.objects.filter(waiting_q(ResultStatus.FAILED), judge_id=int(key[len(PREFIX):])).exclude(
        run__status=RunStatus.CANCELLED
    ).order_by("finished_at", "pk").values_list("pk", flat=True)
    return list(rows[:limit] if limit is not None else rows)


def results_stored(outcomes: list[tuple[int, str, str, str]]) -> None:
    """After judgements were stored: (judge id, status, error kind, error) each.

    A judge that did not answer opens its breaker; one that answered closes it and its
    waiting judgements go again (judging.outage_retry registers how).
    """
    answered = {judge_id for judge_id, status, _, _ in outcomes if status == ResultStatus.DONE}
    # Opened even when another judgement of the judge answered meanwhile (a flaky provider):
    # closing it below then sends the failed ones again at once, within their retry limit.
    down = {judge_id: error for judge_id, status, kind, error in outcomes
            if status == ResultStatus.FAILED and kind in OUTAGE_KINDS}
    if down:
        names = dict(Judge.objects.filter(pk__in=down).values_list("pk", "name"))
        for judge_id, error in down.items():
            outage_failed(breaker_key(judge_id), names.get(judge_id, f"judge {judge_id}"), error)
    for judge_id in answered:
        outage_answered(breaker_key(judge_id))


def waiting_in_run(run: JudgeRun) -> int:
    """Count the run's judgements waiting for their provider to answer again."""
    return run.results.filter(waiting_q(ResultStatus.FAILED)).count()



def run_outage(run: JudgeRun) -> dict | None:
    """The run page's notice: how many judgements wait, for which judges, next check."""
    if run.status == RunStatus.CANCELLED:
        return None
    rows = run.results.filter(waiting_q(ResultStatus.FAILED))
    judges = set(rows.values_list("judge_id", flat=True))
    return outage_summary([breaker_key(j) for j in judges], len(rows)) if judges else None
