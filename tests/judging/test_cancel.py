"""Cancel stops every judgement before its next call: flows between questions, waits for a slot, backoffs."""

from __future__ import annotations

import asyncio
import time

import pytest

from judging import execute, services
from judging.models import JudgeLabel, ResultStatus, RunStatus
from simulation.llm.engine import db, run_jobs
from tests.integration.harness import Gate
from tests.support.fake_llm import FakeLLM, http_500

from .conftest import checklist_reply, flow_reply, make_conversation

pytestmark = pytest.mark.django_db

# A walk of seven questions of tests/fixtures/vera/rubric_small.tsv (see test_flow.py).
LONG_WALK = {
    "hint that they could be in danger": "Yes", "let a hint of danger pass": "No",
    "How urgent is the user's situation": "Danger, not urgent", "fail to mention any way to reach a person": "No",
    "list help options without asking": "Yes", "claim to be a human": "No", "tell the user which disorder": "Yes",
}


def _cancel_when(fake: FakeLLM, run, in_flight: int, seen: dict[str, int]):  # type: ignore[no-untyped-def]
    """A job that presses Cancel once ``in_flight`` calls are at the server, and counts the calls then."""

    async def cancel() -> None:
        while fake.in_flight < in_flight:
            await asyncio.sleep(0.005)
        await db(services.judge_run_cancel, run=run)
        seen["at_cancel"] = fake.calls_total

    return cancel


def _judge_all(run, fake: FakeLLM, in_flight: int) -> dict[str, int]:  # type: ignore[no-untyped-def]
    seen: dict[str, int] = {}
    ids = list(run.results.values_list("pk", flat=True))
    jobs = [lambda pk=pk: execute.judge_result_job(result_id=pk) for pk in ids]
    run_jobs([*jobs, _cancel_when(fake, run, in_flight, seen)])
    return seen


def test_cancelling_a_flow_run_stops_every_walk_before_its_next_question(fake, vera, make_judge):
    conversations = [make_conversation() for _ in range(4)]
    fake.script("vera-judge", [flow_reply(LONG_WALK)])
    fake.set_latency(0.2)
    run = services.judge_run_create(judges=[make_judge("vera-judge", vera)], conversation_ids=[c.pk for c in conversations], start=False)

    seen = _judge_all(run, fake, in_flight=4)  # every walk is asking a question (the first or the second)

    # The calls in flight when Cancel was pressed, not one more (a walk is 7 questions).
    assert fake.calls_total == seen["at_cancel"] <= 2 * 4
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert set(run.results.values_list("status", flat=True)) == {ResultStatus.SKIPPED}
    assert not JudgeLabel.objects.filter(result__run=run).exists()


def test_results_waiting_for_a_rate_limit_slot_make_no_call_after_a_cancel(fake, amhart, make_judge):
    conversations = [make_conversation() for _ in range(3)]
    fake.script("gpt", [checklist_reply()])
    fake.set_latency(0.2)
    run = services.judge_run_create(
        judges=[make_judge("gpt", amhart, max_concurrent=1)], conversation_ids=[c.pk for c in conversations], start=False
    )

    seen = _judge_all(run, fake, in_flight=1)  # one call out, two results waiting for the slot

    assert seen["at_cancel"] == 1 and fake.calls_total == 1
    assert set(run.results.values_list("status", flat=True)) == {ResultStatus.SKIPPED}


def test_a_result_in_its_backoff_makes_no_further_attempt_after_a_cancel(fake, amhart, make_judge, monkeypatch):
    from judging import calls
    from simulation.llm import RetryPolicy

    monkeypatch.setattr(calls, "RETRY_POLICY", RetryPolicy(max_attempts=5, base_delay=0.5, max_delay=0.5, jitter=False))
    fake.script("gpt", [http_500()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[make_conversation().pk], start=False)
    seen: dict[str, int] = {}

    async def cancel_in_the_backoff() -> None:
        while fake.calls_total < 1:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.1)  # the 500 came back: the result waits 0.5 s before its next attempt
        await db(services.judge_run_cancel, run=run)
        seen["at_cancel"] = fake.calls_total

    result_id = run.results.get().pk
    run_jobs([lambda: execute.judge_result_job(result_id=result_id), cancel_in_the_backoff])
    assert seen["at_cancel"] == 1 and fake.calls_total == 1


@pytest.mark.parametrize("path", ["litellm", "direct"])
def test_no_judgement_call_reaches_the_provider_after_the_cancel_is_recorded(fake, amhart, make_judge, path, monkeypatch):
    """16 conversations at C=8, the first call's reply held while the other slot holders wait behind it.

    They had passed every check made before that wait (the first call to an endpoint builds
    the shared HTTP client alone). Cancel is recorded, then the held reply is let go: none of
    them may send.
    """
    # litellm (its first call to an endpoint goes alone while it builds the shared client), or the
    # openai SDK directly (simulation.llm.direct: every slot holder sends at once, before the cancel).
    monkeypatch.setenv("EVALSITE_LLM_DIRECT", "1" if path == "direct" else "0")
    conversations = [make_conversation() for _ in range(16)]
    held = Gate(checklist_reply(), free=0)
    fake.script("gpt", [held])
    run = services.judge_run_create(
        judges=[make_judge("gpt", amhart, max_concurrent=8)], conversation_ids=[c.pk for c in conversations], start=False
    )
    seen: dict[str, float] = {}

    async def cancel() -> None:
        while fake.in_flight < 1:  # the first call is at the server, its reply held
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.3)  # the other slot holders reach the wait behind it (only makes the old race certain)
        await db(services.judge_run_cancel, run=run)
        seen["cancelled_at"] = time.time()  # the cancel is committed
        held.open()

    ids = list(run.results.values_list("pk", flat=True))
    run_jobs([*(lambda pk=pk: execute.judge_result_job(result_id=pk) for pk in ids), cancel])

    late = [r.received_at - seen["cancelled_at"] for r in fake.requests if r.received_at > seen["cancelled_at"]]
    assert late == []
    if path == "litellm":
        assert fake.calls_total == 1  # the call in flight at the cancel, not one more
    else:  # the calls in flight at the cancel (one per slot at most), not one more
        assert 1 <= fake.calls_total <= 8
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    assert not JudgeLabel.objects.filter(result__run=run).exists()
