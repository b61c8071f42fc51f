"""Issue 32: a judge whose provider stopped answering waits behind its breaker; the sweeper's probe
sends one judgement again, its success sends the rest; the run finishes by itself."""

from __future__ import annotations

from datetime import timedelta

from core.models import OutageState, ProviderOutage
from core.outages import outages_probe
from judging.models import ResultStatus, RunStatus
from judging.outages import breaker_key, waiting_in_run
from tests.conftest import client_for, make_user
from tests.support.fake_llm import http_500

from .conftest import checklist_reply


def test_a_judge_outage_ends_without_a_person(fake, amhart, conversations, make_judge, run_now,
                                              django_capture_on_commit_callbacks):
    judge = make_judge("gpt", amhart)
    fake.script("gpt", [http_500()])  # every attempt of every judgement: the provider is down
    run = run_now([judge], conversations[:3])
    assert run.status == RunStatus.RUNNING, run.status  # not finished: its judgements wait
    n = run.results.count()
    assert n >= 2 and run.results.filter(status=ResultStatus.FAILED, error_kind="server_error").count() == n
    assert waiting_in_run(run) == n
    breaker = ProviderOutage.objects.get(key=breaker_key(judge.pk))
    assert breaker.state == OutageState.OPEN and breaker.label == "gpt"
    page = client_for(make_user("ada", "admin", is_staff=True, is_superuser=True)).get(f"/judging/runs/{run.pk}/")
    notice = page.content.decode().split('id="outage-wait"', 1)[1].split("</div>", 1)[0]
    assert f"{n} judgements wait for gpt to answer again" in notice and "Send" in notice

    fake.script("gpt", [checklist_reply()])  # the provider is back
    with django_capture_on_commit_callbacks(execute=True):
        assert outages_probe(breaker.next_probe_at + timedelta(seconds=1)) == 1
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED and run.n_done == n and run.n_failed == 0
    assert list(run.results.values_list("auto_retries", flat=True)) == [1] * n
    assert run.results.filter(labels__isnull=False).distinct().count() == n
    breaker.refresh_from_db()
    assert breaker.state == OutageState.CLOSED


def test_a_bad_request_is_not_an_outage(fake, amhart, conversations, make_judge, run_now):
    from tests.support.fake_llm import http_400

    judge = make_judge("gpt", amhart)
    fake.script("gpt", [http_400()])
    run = run_now([judge], conversations[:1])
    assert run.status == RunStatus.FAILED and waiting_in_run(run) == 0
    assert not ProviderOutage.objects.exists()


def test_a_person_may_send_the_waiting_judgements_again_before_the_probe(
    fake, amhart, conversations, make_judge, run_now, django_capture_on_commit_callbacks
):
    from judging.runs import judge_run_retry_failed

    judge = make_judge("gpt", amhart)
    fake.script("gpt", [http_500()])
    run = run_now([judge], conversations[:2])
    assert run.status == RunStatus.RUNNING and waiting_in_run(run) == run.results.count()
    fake.script("gpt", [checklist_reply()])
    with django_capture_on_commit_callbacks(execute=True):
        assert judge_run_retry_failed(run=run) == run.results.count()
    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED
    assert ProviderOutage.objects.get(key=breaker_key(judge.pk)).state == OutageState.CLOSED
