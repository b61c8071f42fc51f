"""Issue 22, small lies and gaps in judging: calls count every HTTP request, failed attempts included."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from judging.models import ResultStatus
from tests.conftest import client_for
from tests.judging.conftest import checklist_reply
from tests.support.fake_llm import http_500

pytestmark = pytest.mark.django_db


def test_judge_calls_count_failed_attempts_and_the_cache_apart(researcher, amhart, conversations, make_judge, run_now, fake):
    """Two results: one answered on its second attempt, one failing all 3: 5 requests, 4 failed."""
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

