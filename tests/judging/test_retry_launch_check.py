"""Retrying a judge run's failures runs the launch check first, on the page, the API and the command,
for the judges whose judgements would be retried, as the run recorded them."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging.launch import run_retry_preflight
from judging.models import JudgeResult, JudgeRun, ResultStatus, RunStatus
from judging.services import judge_create, judge_run_create
from tests.conftest import client_for
from tests.judging.conftest import make_conversation

pytestmark = pytest.mark.django_db
UNSET = "TEST_RETRY_UNSET_API_KEY"


@pytest.fixture
def failed_run(amhart, make_judge, fake_llm, settings, monkeypatch, researcher):  # type: ignore[no-untyped-def]
    """A finished run of two judges: 'keyed' answers, 'unkeyed' has its key variable unset and failed."""
    settings.EVALSITE_PREFLIGHT = True
    monkeypatch.delenv(UNSET, raising=False)
    keyed = make_judge("keyed", amhart)
    unkeyed = judge_create(name="unkeyed", instrument=amhart, model="openai/unkeyed", provider="unkeyed",
                           api_base=fake_llm.base_url, api_key_env=UNSET)
    # Started by the researcher who retries it (only its creator, its study's members or an admin may).
    run = judge_run_create(judges=[keyed, unkeyed], conversation_ids=[make_conversation().pk], start=False, created_by=researcher)
    run.results.filter(judge=keyed).update(status=ResultStatus.DONE)
    run.results.filter(judge=unkeyed).update(status=ResultStatus.FAILED, error_kind="auth", error="no key")
    JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.PARTIAL)
    run.refresh_from_db()
    return run


def still_failed(run: JudgeRun) -> bool:
    return JudgeResult.objects.filter(run=run, status=ResultStatus.FAILED).exists()


def test_the_api_retry_refuses_with_the_checks(researcher, failed_run):
    response = client_for(researcher).post(f"/api/v1/judge-runs/{failed_run.pk}/retry/")
    assert response.status_code == 400
    body = response.json()
    assert body["detail"].startswith("the launch check failed, nothing was scheduled again")
    assert [c["used_by"] for c in body["preflight"]] == ["judge unkeyed"]  # only the judge whose work is retried
    assert body["preflight"][0]["kind"] == "auth" and "set the key variable" in body["preflight"][0]["hint"]
    assert still_failed(failed_run)


def test_the_page_and_the_command_refuse_too(researcher, failed_run):
    response = client_for(researcher).post(reverse("judging:run-retry", args=[failed_run.pk]), follow=True)
    assert "Not retried: judge unkeyed" in response.content.decode()
    with pytest.raises(CommandError, match="nothing was scheduled again"):
        call_command("judge", "retry", str(failed_run.pk))
    assert still_failed(failed_run)


def test_the_check_uses_the_judge_as_the_run_recorded_it(failed_run, monkeypatch):
    # The run's snapshot decides the retried calls: a later change to the judge row does not.
    failed_run.judges.filter(name="unkeyed").update(api_key_env="TEST_JUDGE_API_KEY")
    report = run_retry_preflight(failed_run)
    assert not report.ok and UNSET in report.failed[0].problem


def test_once_the_key_is_set_the_failures_are_scheduled_again(researcher, failed_run, monkeypatch):
    monkeypatch.setenv(UNSET, "sk-now-set-0123456789")
    response = client_for(researcher).post(f"/api/v1/judge-runs/{failed_run.pk}/retry/")
    assert response.status_code == 200 and response.json()["scheduled"] == 1


def test_a_running_run_is_refused_by_the_retry_without_a_call(researcher, failed_run, fake_llm):
    JudgeRun.objects.filter(pk=failed_run.pk).update(status=RunStatus.RUNNING)
    before = fake_llm.calls_total
    response = client_for(researcher).post(f"/api/v1/judge-runs/{failed_run.pk}/retry/")
    assert response.status_code == 409 and fake_llm.calls_total == before
