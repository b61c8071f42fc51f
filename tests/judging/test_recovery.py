"""Judge results survive a lost worker: leases, stalled results, recovery, retry and cancel."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from judging import execute, leases, runs, services, store
from judging.models import JudgeLabel, JudgeResult, JudgeRun, ResultStatus, RunStatus
from judging.selectors import run_stalled_count
from judging.tasks import recover_stalled
from simulation.llm.engine import run_job
from tests.conftest import client_for

from .conftest import checklist_reply

pytestmark = pytest.mark.django_db


class Crash(BaseException):
    """Stands in for SIGKILL: nothing after it runs, no handler sees it."""


def _crash_mid_result(_monkeypatch: pytest.MonkeyPatch, result_id: int, owner: str) -> None:
    """Claim ``result_id`` as a worker would, then die during its LLM call."""

    async def dying_judge(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise Crash()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(execute, "_judge", dying_judge)
        with pytest.raises(Crash):
            run_job(lambda: execute.judge_result_job(result_id=result_id, owner=owner))


def _expire(result: JudgeResult) -> None:
    JudgeResult.objects.filter(pk=result.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))


def test_a_result_whose_worker_died_is_stalled_and_resumed_when_a_worker_starts(
    fake, amhart, conversations, make_judge, monkeypatch, django_capture_on_commit_callbacks
):
    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    victim, other = run.results.order_by("pk")
    _crash_mid_result(monkeypatch, victim.pk, owner="otherhost:1:worker:dead")
    assert services.judge_result_execute(result_id=other.pk) == ResultStatus.DONE, JudgeResult.objects.get(pk=other.pk).error
    victim.refresh_from_db()
    assert victim.status == ResultStatus.RUNNING and victim.lease_owner and victim.attempts == 1

    # While the lease is live the result is not stalled, and a second delivery leaves it alone.
    assert run_stalled_count(run) == 0 and leases.stalled_results(run.pk) == []
    assert services.judge_result_execute(result_id=victim.pk) == ResultStatus.RUNNING
    assert fake.calls_total == 1

    _expire(victim)
    run.refresh_from_db()
    assert run_stalled_count(run) == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert recover_stalled() == 1  # what a worker does when it starts (and periodically)
    run.refresh_from_db()
    victim.refresh_from_db()
    assert victim.status == ResultStatus.DONE and victim.attempts == 2 and victim.lease_owner == ""
    assert run.status == RunStatus.COMPLETED and (run.n_done, run.n_failed) == (2, 0)
    assert JudgeLabel.objects.filter(result=victim).count() == 14


def test_a_holder_that_is_a_dead_process_on_this_host_is_taken_over_at_once(fake, amhart, conversations, make_judge, monkeypatch):
    from simulation.run_state import new_owner

    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()
    dead = new_owner("dead").split(":")
    dead[1] = "999999999"  # no such pid
    _crash_mid_result(monkeypatch, result.pk, owner=":".join(dead))
    assert leases.stalled_results(run.pk) == [result.pk]
    assert services.judge_result_execute(result_id=result.pk) == ResultStatus.DONE


@override_settings(EVALSITE_JUDGE_MAX_ATTEMPTS=2)
def test_a_result_that_kills_its_worker_every_time_fails_after_the_retry_limit(fake, amhart, conversations, make_judge, monkeypatch):
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()
    for n in range(2):
        _crash_mid_result(monkeypatch, result.pk, owner=f"otherhost:1:worker:{n}")
        _expire(result)
    assert services.judge_result_execute(result_id=result.pk) == ResultStatus.FAILED
    result.refresh_from_db()
    run.refresh_from_db()
    assert result.error_kind == "worker_lost" and "gave up after 2 attempt(s)" in result.error
    assert run.status == RunStatus.FAILED and fake.calls_total == 0
    assert set(JudgeLabel.objects.filter(result=result).values_list("status", flat=True)) <= {"missing"}


def test_retry_takes_back_stalled_results_while_the_run_is_going(
    fake, amhart, conversations, make_judge, monkeypatch, django_capture_on_commit_callbacks
):
    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    first, second = run.results.order_by("pk")
    _crash_mid_result(monkeypatch, first.pk, owner="otherhost:1:worker:a")
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING
    with pytest.raises(services.JudgingError, match="no result is stalled"):
        services.judge_run_retry_failed(run=run)
    _expire(first)
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_run_retry_failed(run=run) == 1
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == ResultStatus.DONE and second.status == ResultStatus.PENDING


def test_cancel_stops_running_results_and_their_late_store_is_refused(fake, amhart, conversations, make_judge):
    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()
    owner = "thishost:1:worker:busy"

    async def judge_then_cancelled() -> str:
        from simulation.llm.engine import db

        claimed = await db(leases.claim, result.pk, owner)
        assert isinstance(claimed, JudgeResult)
        await db(services.judge_run_cancel, run=run)  # a researcher presses Cancel meanwhile
        caller = execute.Caller(execute.JudgeCallConfig.from_snapshot(run.config["judges"][str(result.judge_id)]), None)
        stored = await db(store.finish, claimed, owner, caller, [], ResultStatus.DONE, "", "", [], "")
        return "stored" if stored else "refused"

    assert run_job(judge_then_cancelled) == "refused"
    run.refresh_from_db()
    result.refresh_from_db()
    assert result.status == ResultStatus.SKIPPED and result.lease_owner == ""
    assert run.status == RunStatus.CANCELLED and run.is_finished
    assert not JudgeLabel.objects.filter(result=result).exists()


@override_settings(EVALSITE_JUDGE_STALE_SECONDS=0.3)
def test_a_worker_that_loses_its_lease_stops_calling(fake, amhart, conversations, make_judge):
    from tests.support.fake_llm import timeout

    fake.script("gpt", [timeout(3.0), checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()

    async def worker_then_taken_over() -> str:
        job = asyncio.ensure_future(execute.judge_result_job(result_id=result.pk, owner="thishost:1:worker:slow"))
        await asyncio.sleep(0.2)
        from simulation.llm.engine import db

        # Another worker took the row over (ours was presumed lost).
        await db(JudgeResult.objects.filter(pk=result.pk).update, lease_owner="otherhost:2:worker:new")
        return await job

    started = timezone.now()
    assert run_job(worker_then_taken_over) == ResultStatus.RUNNING
    assert (timezone.now() - started).total_seconds() < 2.5  # stopped before its 3 s call ended
    result.refresh_from_db()
    assert result.lease_owner == "otherhost:2:worker:new" and result.n_calls == 0


def test_the_run_page_shows_stalled_results_and_offers_to_resume_them(fake, amhart, conversations, make_judge, monkeypatch, researcher, coordinator):
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    JudgeRun.objects.filter(pk=run.pk).update(shared=True)  # an operator's run that others read (issue 30)
    result = run.results.get()
    _crash_mid_result(monkeypatch, result.pk, owner="otherhost:1:worker:a")
    _expire(result)
    page = client_for(researcher).get(f"/judging/runs/{run.pk}/progress/").content.decode()
    assert "1 judgement stalled" in page and "Resume 1 stalled" in page
    watcher = client_for(coordinator).get(f"/judging/runs/{run.pk}/progress/").content.decode()
    assert "1 judgement stalled" in watcher and "Resume 1 stalled" not in watcher
    api = client_for(researcher).get(f"/api/v1/judge-runs/{run.pk}/progress/").json()
    assert api["n_stalled"] == 1


# --- the sweeper (core.recovery): lost messages and gone workers -------------------------------


def _queued_long_ago(result_ids: list[int], seconds: float = 3600) -> None:
    JudgeResult.objects.filter(pk__in=result_ids).update(queued_at=timezone.now() - timedelta(seconds=seconds))


@override_settings(EVALSITE_RECOVERY_SECONDS=30)
def test_a_pending_result_whose_message_was_lost_is_dispatched_again_past_the_threshold(
    fake, amhart, conversations, make_judge, django_capture_on_commit_callbacks
):
    """Defect 1: a result whose message a killed worker had received stayed pending for ever."""
    from core import recovery

    fake.script("gpt", [checklist_reply()])
    # start=False: the rows exist but no message was ever sent (lost with a killed worker,
    # a Redis restarted without persistence, a broker down when the run was created).
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    lost, recent = run.results.order_by("pk")
    _queued_long_ago([lost.pk])
    with django_capture_on_commit_callbacks(execute=True):
        report = recovery.sweep()
    assert report.redispatched["judge results"] == 1  # the recent one may still be in the queue
    lost.refresh_from_db()
    recent.refresh_from_db()
    assert lost.status == ResultStatus.DONE and lost.attempts == 1
    assert recent.status == ResultStatus.PENDING
    assert fake.calls_total == 1


@override_settings(EVALSITE_RECOVERY_SECONDS=30, EVALSITE_TASK_GROUP_SIZE=1)
def test_unclaimed_results_that_the_queue_still_holds_messages_for_are_left_waiting(
    fake, amhart, conversations, make_judge, monkeypatch, django_capture_on_commit_callbacks
):
    """A long backlog is not lost work: only as many rows as the queue has no message for go again."""
    from core import recovery

    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    ids = list(run.results.order_by("pk").values_list("pk", flat=True))
    _queued_long_ago(ids)
    monkeypatch.setattr(recovery, "queue_depth", lambda: 2)  # a message for each: a backlog
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched.get("judge results", 0) == 0
    monkeypatch.setattr(recovery, "queue_depth", lambda: 1)  # one message is missing: the oldest goes
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched["judge results"] == 1
    assert list(run.results.order_by("pk").values_list("status", flat=True)) == [ResultStatus.DONE, ResultStatus.PENDING]


@override_settings(EVALSITE_RECOVERY_SECONDS=30, EVALSITE_TASK_GROUP_SIZE=2)
def test_a_queued_message_may_hold_a_whole_group_of_unclaimed_results(
    fake, amhart, conversations, make_judge, monkeypatch, django_capture_on_commit_callbacks
):
    """One message carries up to a group: a backlog of one message may hold both results."""
    from core import recovery

    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    _queued_long_ago(list(run.results.values_list("pk", flat=True)))
    monkeypatch.setattr(recovery, "queue_depth", lambda: 1)
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched.get("judge results", 0) == 0
    monkeypatch.setattr(recovery, "queue_depth", lambda: 0)  # the queue is empty: both were lost
    with django_capture_on_commit_callbacks(execute=True):
        assert recovery.sweep().redispatched["judge results"] == 2
    assert set(run.results.values_list("status", flat=True)) == {ResultStatus.DONE}


@override_settings(EVALSITE_RECOVERY_SECONDS=30)
def test_a_result_whose_worker_is_gone_is_dispatched_again_once_per_threshold(
    fake, amhart, conversations, make_judge, monkeypatch, django_capture_on_commit_callbacks
):
    from core import recovery

    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()
    _crash_mid_result(monkeypatch, result.pk, owner="otherhost:1:worker:gone")
    _expire(result)
    sent: list[list[int]] = []
    monkeypatch.setattr(runs, "_enqueue", lambda ids, **_: sent.append(list(ids)))
    assert recovery.sweep().lost["judge results"] == 1
    # Its message is on its way: the next sweeps (every few seconds) do not send it again...
    assert recovery.sweep().lost["judge results"] == 0
    assert sent == [[result.pk], []]
    # ...until a threshold has passed without a worker taking it.
    JudgeResult.objects.filter(pk=result.pk).update(queued_at=timezone.now() - timedelta(seconds=31))
    assert recovery.sweep().lost["judge results"] == 1


def test_a_holder_alive_in_this_process_keeps_its_result_past_its_lease(fake, amhart, conversations, make_judge):
    """A loop held up for a while (a loaded machine) must not have its results judged twice."""
    from simulation.run_state import new_owner, owner_finished, owner_started

    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()
    holder = new_owner("slow")
    owner_started(holder)
    assert isinstance(leases.claim(result.pk, holder), JudgeResult)
    _expire(result)
    assert leases.stalled_results(run.pk) == []
    assert leases.claim(result.pk, new_owner("duplicate")) == ResultStatus.RUNNING
    owner_finished(holder)  # its job ended without storing: an orphan, taken back at once
    assert leases.stalled_results(run.pk) == [result.pk]
    assert isinstance(leases.claim(result.pk, new_owner("next")), JudgeResult)


@pytest.mark.django_db(transaction=True)
def test_a_sweep_that_cannot_reach_the_broker_leaves_the_results_for_the_next_sweep(broker_down, amhart, conversations, make_judge):
    """Defect 4: a broker blip during a sweep failed the results it was sending again ("not queued")."""
    from core import recovery

    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    JudgeResult.objects.filter(run=run).update(queued_at=timezone.now() - timedelta(minutes=5))

    recovery.sweep()  # the broker refuses: logged, never raised

    assert set(run.results.values_list("status", "error_kind", "queued_at")) == {(ResultStatus.PENDING, "", None)}
    run.refresh_from_db()
    assert run.status == RunStatus.PENDING
