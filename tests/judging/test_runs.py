"""Runs and tasks: idempotent tasks, cancel and retry, prompts immutable, commands."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import IntegrityError

from judging import services
from judging.errors import JudgingError
from judging.models import JudgeLabel, JudgeResult, PromptTemplate, ResultStatus, RunStatus
from judging.prompts import template_problems
from judging.tasks import judge_result_task
from tests.support.fake_llm import http_500

from .conftest import KEY_ENV, checklist_reply


def test_a_task_run_twice_does_no_harm(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt", [checklist_reply()])
    run = run_now([make_judge("gpt", amhart)], conversations[:1])
    result = run.results.get()

    assert judge_result_task(result.pk) == ResultStatus.DONE
    assert fake.calls_total == 1
    assert JudgeLabel.objects.filter(result=result).count() == 14
    with pytest.raises(IntegrityError):
        JudgeResult.objects.create(run=run, judge=result.judge, conversation=result.conversation, instance=0)


def test_a_server_error_is_retried_by_the_llm_layer(fake, amhart, conversations, make_judge, run_now):
    fake.script("gpt", [http_500(), checklist_reply()])
    run = run_now([make_judge("gpt", amhart)], conversations[:1])
    assert run.status == RunStatus.COMPLETED
    assert run.results.get().calls[0]["attempts"] == 2


def test_cancel_skips_pending_results_and_retry_schedules_failures_again(fake, amhart, conversations, make_judge, django_capture_on_commit_callbacks):
    judge = make_judge("gpt", amhart)
    run = services.judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conversations], start=False)
    run = services.judge_run_cancel(run=run)
    assert run.status == RunStatus.CANCELLED
    assert set(run.results.values_list("status", flat=True)) == {ResultStatus.SKIPPED}
    with pytest.raises(JudgingError):
        services.judge_run_cancel(run=run)

    fake.script("gpt", [checklist_reply()])
    with django_capture_on_commit_callbacks(execute=True):
        assert services.judge_run_retry_failed(run=run) == 2
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.n_done == 2


def test_a_run_needs_one_instrument_and_some_conversations(amhart, vera, conversations, make_judge):
    with pytest.raises(JudgingError, match="same instrument"):
        services.judge_run_create(judges=[make_judge("a", amhart), make_judge("b", vera)], conversation_ids=[conversations[0].pk])
    with pytest.raises(JudgingError, match="no conversation"):
        services.judge_run_create(judges=[make_judge("c", amhart)], conversation_ids=[])


def test_prompt_templates_are_immutable_and_checked(amhart, make_judge):
    judge = make_judge("gpt", amhart)
    prompt = judge.prompt
    assert prompt.is_builtin and prompt.key == "checklist-default"
    prompt.name = "changed"
    with pytest.raises(ValueError, match="immutable"):
        prompt.save()
    problems = template_problems(mode="flow", system="no transcript here", user="{question} {itmes}", retry="again")
    assert any("{itmes}" in p for p in problems)
    assert any("{transcript}" in p for p in problems)
    assert any("{options}" in p for p in problems)
    assert any("{error}" in p for p in problems)
    assert PromptTemplate.objects.count() == 1


def test_the_default_prompts_are_the_teams_own_text():
    from judging.prompts import DEFAULTS

    reference = (
        "/work/shared/vera-mh-v1.1/rubric_prompt_beginning.txt",
        "/work/shared/vera-mh-v1.1/question_prompt.txt",
    )
    for path in reference:
        try:
            text = open(path, encoding="utf-8").read()
        except OSError:
            pytest.skip("VERA-MH files not available")
        sentences = [s.strip() for s in text.replace("\n", " ").split(".") if len(s.strip()) > 30]
        for spec in DEFAULTS.values():
            joined = " ".join(spec.values())
            assert not any(s in joined for s in sentences)


def test_the_judge_command_creates_runs_and_waits(fake, amhart, conversations, django_capture_on_commit_callbacks):
    out = io.StringIO()
    call_command(
        "judge", "create", "--name", "gpt", "--instrument", "amhart", "--model", "openai/gpt",
        "--api-base", fake.base_url, "--api-key-env", KEY_ENV, stdout=out,
    )
    assert "checklist, openai/gpt (openai)" in out.getvalue()
    fake.script("gpt", [checklist_reply()])
    codes = ",".join(c.code for c in conversations)
    with django_capture_on_commit_callbacks(execute=True):  # eager tasks run on commit
        call_command("judge", "run", "--judges", "gpt", "--codes", codes, stdout=out, stderr=io.StringIO())
    run_id = JudgeResult.objects.first().run_id
    assert f"run {run_id}: 2 judgement(s) of 2 conversation(s)" in out.getvalue()
    progress, errors = io.StringIO(), io.StringIO()
    call_command("judge", "status", str(run_id), "--wait", stdout=progress, stderr=errors)
    assert "Completed; 2 done, 0 failed of 2" in progress.getvalue()
    # The bar is progress, not an error: on stdout (Django paints stderr red).
    assert "[##############################] 2/2" in progress.getvalue() and errors.getvalue() == ""

    export = io.StringIO()
    from contextlib import redirect_stdout

    with redirect_stdout(export):
        call_command("export_judge_labels", str(run_id), "--as", "long")
    lines = export.getvalue().splitlines()
    assert lines[0].startswith("run,conversation,judge,provider,model,instance,kind,item,label")
    assert len(lines) == 1 + 2 * 14


def test_conversations_are_chosen_by_batch_persona_set_study_or_codes(amhart):
    from annotation.models import Study, StudyConversation
    from judging.selectors import conversation_ids_for_judging

    from .conftest import make_conversation

    batch = [make_conversation(metadata={"batch_id": 7, "batch_code": "B-7"}) for _ in range(2)]
    flagged = make_conversation(metadata={"batch_id": 7}, integrity_ok=False)
    other = make_conversation(metadata={"batch_id": 8})

    ids, record = conversation_ids_for_judging(batch_ids=["7"])
    assert ids == sorted(c.pk for c in batch)
    assert (record["matched"], record["flagged_left_out"]) == (3, 1)
    assert conversation_ids_for_judging(batch_ids=["B-7"])[0] == ids
    assert flagged.pk in conversation_ids_for_judging(batch_ids=["7"], include_flagged=True)[0]
    assert conversation_ids_for_judging(persona_set_ids=[other.persona.persona_set_id])[0] == [other.pk]
    assert conversation_ids_for_judging(codes=[other.code, batch[0].code])[0] == sorted([other.pk, batch[0].pk])
    study = Study.objects.create(name="S", instrument=amhart)
    StudyConversation.objects.create(study=study, conversation=other)
    assert conversation_ids_for_judging(study_id=study.pk)[0] == [other.pk]
    with pytest.raises(JudgingError, match="unknown conversation code"):
        conversation_ids_for_judging(codes=["C-NOPE"])
    with pytest.raises(JudgingError, match="choose conversations"):
        conversation_ids_for_judging()


def test_calls_go_through_the_shared_limiter_of_the_judges_model(fake, amhart, conversations, make_judge, run_now, monkeypatch):
    from judging import calls
    from simulation.llm import LocalRateLimiter

    seen: list[tuple] = []
    acquired: list[str] = []

    class Spy(LocalRateLimiter):
        def acquire(self, key: str) -> None:
            acquired.append(key)
            super().acquire(key)

        def try_acquire(self, key: str) -> bool:  # the engine's calls never block on acquire
            granted = super().try_acquire(key)
            if granted:
                acquired.append(key)
            return granted

    def limiter_for(budget, max_concurrent, rpm):  # type: ignore[no-untyped-def]
        seen.append((budget, max_concurrent, rpm))
        return Spy(max_concurrent, rpm)

    monkeypatch.setattr(calls, "limiter_for", limiter_for)
    fake.script("gpt", [checklist_reply()])
    run_now([make_judge("gpt", amhart, max_concurrent=3, requests_per_minute=120)], conversations[:1])
    assert seen == [("judging", 3, 120)]
    assert acquired == [f"openai/gpt@{fake.base_url}"]

