"""Issue 22: a judge's timeout and retry budget, set through the API and the page, validated and used."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from judging import calls
from judging.models import Judge, ResultStatus
from tests.conftest import client_for
from tests.judging.conftest import KEY_ENV
from tests.support.fake_llm import http_500

pytestmark = pytest.mark.django_db


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _payload(amhart, fake, **extra):  # type: ignore[no-untyped-def]
    return {"name": "patient-judge", "instrument": amhart.pk, "model": "openai/patient-judge",
            "api_base": fake.base_url, "api_key_env": KEY_ENV, **extra}


def test_a_judges_budget_is_set_and_read_through_the_api(researcher, amhart, fake):
    client = _api(researcher)
    made = client.post("/api/v1/judges/", _payload(amhart, fake, timeout_seconds=30, retry_attempts=5,
                                                   retry_base_delay=1, retry_max_delay=20), format="json")
    assert made.status_code == 201, made.json()
    body = made.json()
    assert (body["timeout_seconds"], body["retry_attempts"], body["retry_base_delay"], body["retry_max_delay"]) == (30, 5, 1.0, 20.0)
    default = client.post("/api/v1/judges/", _payload(amhart, fake, name="default-judge"), format="json").json()
    assert (default["retry_attempts"], default["retry_base_delay"], default["retry_max_delay"]) == (8, 2.0, 30.0)


@pytest.mark.parametrize(("change", "words"), [
    ({"retry_attempts": 21}, "attempts must be between 1 and 20"),
    ({"retry_base_delay": 10, "retry_max_delay": 5}, "may not be shorter than the first"),
    ({"timeout_seconds": 7200}, "timeout must be between"),
])
def test_a_bad_judge_budget_is_refused(researcher, amhart, fake, change, words):
    refused = _api(researcher).post("/api/v1/judges/", _payload(amhart, fake, **change), format="json")
    assert refused.status_code == 400 and words in str(refused.json())
    assert not Judge.objects.exists()


def test_the_judge_form_takes_the_budget(researcher, amhart, fake):
    client = client_for(researcher)
    form = {"name": "form-judge", "instrument": amhart.pk, "model": "openai/form-judge", "api_base": fake.base_url,
            "api_key_env": KEY_ENV, "params": "{}", "format_retries": 2, "timeout_seconds": 90,
            "max_concurrent": 8, "requests_per_minute": 0, "structured_output": "on"}
    assert 'name="retry_max_delay"' in client.get(reverse("judging:judge-create")).content.decode()
    bad = client.post(reverse("judging:judge-create"), {**form, "retry_base_delay": 9, "retry_max_delay": 3})
    assert "may not be shorter than the first" in bad.content.decode() and not Judge.objects.exists()
    client.post(reverse("judging:judge-create"), {**form, "retry_attempts": 3})
    judge = Judge.objects.get(name="form-judge")
    assert (judge.timeout_seconds, judge.retry_attempts, judge.retry_max_delay) == (90, 3, 30.0)
    page = client.get(reverse("judging:judge-detail", args=[judge.pk])).content.decode()
    assert "3 attempts per call" in page


def test_a_judges_own_budget_decides_its_attempts(amhart, conversations, make_judge, run_now, fake, monkeypatch):
    monkeypatch.setattr(calls, "RETRY_POLICY", None)  # no override: the judge's own budget
    judge = make_judge("down-judge", amhart, retry_attempts=4, retry_base_delay=0.01, retry_max_delay=0.02)
    fake.script("down-judge", [http_500()])
    run = run_now([judge], conversations[:1])
    snapshot = run.config["judges"][str(judge.pk)]
    assert (snapshot["retry_attempts"], snapshot["retry_base_delay"], snapshot["retry_max_delay"]) == (4, 0.01, 0.02)
    result = run.results.get()
    assert result.status == ResultStatus.FAILED and "after 4 attempt(s)" in result.error
    assert fake.calls("down-judge") == 4 and (result.n_calls, result.n_failed_calls) == (4, 4)
