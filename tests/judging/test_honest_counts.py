"""Issue 22, small lies and gaps in judging: calls count every HTTP request, failed attempts included."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from core.enqueue import BrokerUnavailable
from corpus.instruments.flow import Flow
from judging import checklist, execute, services
from judging.execute import judge_result_execute
from judging.material import checklist_items
from judging.models import JudgeResult, JudgeRun, LabelStatus, ResultStatus
from simulation.llm import ratelimit
from tests.conftest import client_for
from tests.judging.conftest import checklist_reply
from tests.support.fake_llm import http_500

pytestmark = pytest.mark.django_db


def test_judge_calls_count_failed_attempts_and_the_cache_apart(researcher, amhart, conversations, make_judge, run_now, fake, settings):
    """Two results: one answered on its second attempt, one failing all 3: 5 requests, 4 failed."""
    settings.EVALSITE_OUTAGE_RETRIES = 0  # no automatic retry after the outage (core.outages): counts as they stand
    judge = make_judge("flaky-judge", amhart)
    fake.script("flaky-judge", [http_500(), checklist_reply(), http_500()])
    run = run_now([judge], conversations)
    assert fake.calls_total == 5
    statuses = sorted(run.results.values_list("status", flat=True))
    assert statuses == [ResultStatus.DONE, ResultStatus.FAILED]
    assert (run.n_calls, run.n_failed_calls, run.n_cached) == (5, 4, 0)
    assert sorted(run.results.values_list("n_calls", "n_failed_calls")) == [(2, 1), (3, 3)]
    client = APIClient()
    client.force_authenticate(researcher)
    progress = client.get(f"/api/v1/judge-runs/{run.pk}/progress/").json()
    assert (progress["n_calls"], progress["n_failed_calls"]) == (5, 4)
    page = client_for(researcher).get(reverse("judging:run-detail", args=[run.pk])).content.decode()
    assert "Calls: 5, of which 4 failed attempts." in page
    assert "<td class=\"num\">5 (4, 0)</td>" in page
    # A cached re-run makes no request: its calls are the cache's replies.
    judged = run.results.get(status=ResultStatus.DONE).conversation
    again = run_now([judge], [judged])
    assert fake.calls_total == 5
    assert (again.n_calls, again.n_failed_calls, again.n_cached) == (1, 0, 1)
    page = client_for(researcher).get(reverse("judging:run-detail", args=[again.pk])).content.decode()
    assert "Calls: 1, of which 1 from the cache (free)." in page


# -- a reason for every kind of failure: no judgement ends without a label for each of its items ---


def _labels_of(result):  # type: ignore[no-untyped-def]
    return list(result.labels.order_by("kind", "position").values_list("item_key", "status", "missing_reason"))


def _assert_every_item_missing(run, amhart, why: str):  # type: ignore[no-untyped-def]
    items = [spec.key for spec in checklist_items(amhart)]
    for result in run.results.all():
        assert result.status == ResultStatus.FAILED
        labels = _labels_of(result)
        assert [key for key, _, _ in labels] == items  # every item, in order, once
        assert {status for _, status, _ in labels} == {LabelStatus.MISSING}
        assert all(why in reason for _, _, reason in labels), labels[0]


def test_a_redis_failure_stores_missing_labels_with_the_reason(amhart, conversations, make_judge, run_now, fake, settings, monkeypatch, redis_url):
    """The shared rate limiter's Redis refuses (here: a database index it does not have)."""
    settings.REDIS_URL = urlsplit(redis_url)._replace(path="/99").geturl()  # this checkout's Redis, an index it lacks
    monkeypatch.setattr(ratelimit, "_limiters", {})  # no limiter made before with another Redis
    judge = make_judge("limited-judge", amhart, max_concurrent=2)
    fake.script("limited-judge", [checklist_reply()])
    run = run_now([judge], conversations)
    assert fake.calls_total == 0  # the call never started: the limiter failed first
    _assert_every_item_missing(run, amhart, "DB index is out of range")
    assert set(run.results.values_list("error_kind", flat=True)) == {"internal"}


def test_an_internal_error_stores_missing_labels_with_the_reason(amhart, conversations, make_judge, run_now, fake, monkeypatch):
    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug in reading the reply")

    monkeypatch.setattr(checklist, "validate_reply", broken)
    judge = make_judge("buggy-judge", amhart)
    fake.script("buggy-judge", [checklist_reply()])
    run = run_now([judge], conversations)
    _assert_every_item_missing(run, amhart, "internal: RuntimeError: a bug in reading the reply")


def test_a_result_whose_worker_was_lost_every_time_stores_missing_labels(amhart, conversations, make_judge, fake, settings):
    judge = make_judge("lost-judge", amhart)
    run = services.judge_run_create(judges=[judge], conversation_ids=[conversations[0].pk], start=False)
    result = run.results.get()
    # Its workers died holding it as often as the retry limit allows: the next claim gives up.
    JudgeResult.objects.filter(pk=result.pk).update(attempts=settings.EVALSITE_JUDGE_MAX_ATTEMPTS)
    assert judge_result_execute(result_id=result.pk) == ResultStatus.FAILED
    assert fake.calls_total == 0
    run.refresh_from_db()
    _assert_every_item_missing(run, amhart, "worker_lost: gave up after")


@pytest.mark.django_db(transaction=True)
def test_a_result_the_queue_refused_stores_missing_labels(broker_down, amhart, conversations, make_judge, fake):
    judge = make_judge("queued-judge", amhart)
    with pytest.raises(BrokerUnavailable):
        services.judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conversations])
    run = JudgeRun.objects.get()
    _assert_every_item_missing(run, amhart, "queue: not queued: the task queue did not answer")


def test_a_question_flow_that_fails_inside_stores_a_missing_label_per_dimension(vera, conversations, make_judge, run_now, fake, monkeypatch):
    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug in the walk")

    monkeypatch.setattr(execute, "judge_flow", broken)
    judge = make_judge("flow-judge", vera, structured_output=False)
    run = run_now([judge], conversations[:1])
    result = run.results.get()
    flow = Flow.from_dict(vera.flow)
    assert _labels_of(result) == [
        (dimension, LabelStatus.MISSING, "internal: RuntimeError: a bug in the walk") for dimension in flow.dimensions
    ]
