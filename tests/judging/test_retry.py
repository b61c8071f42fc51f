"""Retrying failed judgements works in workers and inline, and one result's store never takes others down."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from judging import leases, services
from judging.models import JudgeLabel, JudgeResult, LabelStatus, ResultStatus, RunStatus
from tests.support.fake_llm import http_500

from .conftest import checklist_reply


@pytest.fixture(autouse=True)
def no_automatic_retry(settings):  # type: ignore[no-untyped-def]
    """These tests are about a person's retry: no automatic retry after an outage (core.outages)."""
    settings.EVALSITE_OUTAGE_RETRIES = 0

pytestmark = pytest.mark.django_db


def _failed_run(fake, amhart, conversations, make_judge, run_now):  # type: ignore[no-untyped-def]
    """A finished run whose every judgement failed on a server error: MISSING labels stored."""
    fake.script("gpt", [http_500()])
    run = run_now([make_judge("gpt", amhart)], conversations)
    assert run.status == RunStatus.FAILED
    assert JudgeLabel.objects.filter(result__run=run, status=LabelStatus.MISSING).count() == 2 * 14
    return run


def _stray_label(result: JudgeResult) -> None:
    """Leave a label of the result's first item behind: storing its labels breaks judge_label_unique."""
    key = result.run.instrument.items.order_by("position").values_list("key", flat=True).first()
    JudgeLabel.objects.create(result=result, kind="item", item_key=key, label="no", status=LabelStatus.OK)


def test_retrying_failed_judgements_replaces_their_missing_labels(
    fake, amhart, conversations, make_judge, run_now, django_capture_on_commit_callbacks
):
    run = _failed_run(fake, amhart, conversations, make_judge, run_now)
    fake.script("gpt", [checklist_reply()])
    with django_capture_on_commit_callbacks(execute=True):  # the tasks, as a worker runs them
        assert services.judge_run_retry_failed(run=run) == 2
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and (run.n_done, run.n_failed) == (2, 0)
    assert not JudgeResult.objects.filter(run=run).exclude(status=ResultStatus.DONE).exists()
    labels = JudgeLabel.objects.filter(result__run=run)
    assert labels.count() == 2 * 14 and set(labels.values_list("status", flat=True)) == {LabelStatus.OK}


def test_judge_retry_inline_completes_the_failed_judgements(fake, amhart, conversations, make_judge, run_now):
    run = _failed_run(fake, amhart, conversations, make_judge, run_now)
    fake.script("gpt", [checklist_reply()])
    out, err = io.StringIO(), io.StringIO()
    call_command("judge", "retry", str(run.pk), "--inline", stdout=out, stderr=err)
    assert "2 judgement(s) scheduled again" in out.getvalue()
    assert f"run {run.pk}: Completed; 2 done, 0 failed of 2" in out.getvalue()
    assert not JudgeResult.objects.filter(run=run, status__in=[ResultStatus.RUNNING, ResultStatus.PENDING]).exists()
    assert JudgeLabel.objects.filter(result__run=run, status=LabelStatus.OK).count() == 2 * 14


def test_a_result_that_cannot_be_stored_fails_alone_and_never_stays_running(fake, amhart, conversations, make_judge):
    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    bad, good = run.results.order_by("pk")
    _stray_label(bad)

    # Both results finish in the same engine turn and are stored in one batched step.
    services.judge_run_execute_in_process(run_id=run.pk, concurrency=2)

    bad.refresh_from_db()
    good.refresh_from_db()
    run.refresh_from_db()
    assert good.status == ResultStatus.DONE and JudgeLabel.objects.filter(result=good).count() == 14
    assert bad.status == ResultStatus.FAILED and bad.error_kind == "internal" and "IntegrityError" in bad.error
    assert bad.lease_owner == "" and run.status == RunStatus.PARTIAL and (run.n_done, run.n_failed) == (1, 1)
    assert fake.calls_total == 2  # nothing was called twice


def test_a_store_that_fails_is_not_left_to_the_sweeper(fake, amhart, conversations, make_judge, monkeypatch):
    """Even a failure of the failure record leaves the row for a worker, not 'running' on a live owner."""
    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()
    _stray_label(result)
    assert services.judge_result_execute(result_id=result.pk) == ResultStatus.FAILED
    assert leases.stalled_results(run.pk) == []
    result.refresh_from_db()
    assert result.status == ResultStatus.FAILED
