"""A judge run started while the task queue is down: one line with the cause, and no run left pending."""

from __future__ import annotations

import pytest

from core import cli
from judging.models import JudgeRun, ResultStatus, RunStatus


@pytest.mark.django_db(transaction=True)
def test_judge_run_with_the_queue_down_prints_one_line_and_fails_the_run(broker_down, amhart, conversations, make_judge, capsys, monkeypatch):
    make_judge("gpt", amhart)
    monkeypatch.setattr("django.conf.settings.EVALSITE_PREFLIGHT", False)
    codes = ",".join(c.code for c in conversations)

    status = cli.main(["manage.py", "judge", "run", "--judges", "gpt", "--codes", codes])

    err = capsys.readouterr().err
    assert status == 1
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("evalsite: The task queue does not answer") and "REDIS_URL" in err
    run = JudgeRun.objects.get()
    assert run.status == RunStatus.FAILED  # not "Pending 0 / 2" for good
    assert set(run.results.values_list("status", "error_kind")) == {(ResultStatus.FAILED, "queue")}
