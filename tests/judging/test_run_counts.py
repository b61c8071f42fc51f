"""Issue 19: before Start, the new-run page counts the judgements and the LLM calls they make."""

from __future__ import annotations

from django.urls import reverse

from corpus.models import Item, Scale
from tests.conftest import client_for

from .conftest import make_conversation


def _ask(client, **data):  # type: ignore[no-untyped-def]
    return client.get(reverse("judging:run-count"), data).content.decode()


def test_the_run_form_counts_judgements_and_calls_before_start(researcher, amhart, make_judge, settings):
    settings.EVALSITE_PREFLIGHT = True
    conversations = [make_conversation() for _ in range(5)]
    judges = [make_judge("gpt", amhart), make_judge("claude", amhart)]
    client = client_for(researcher)
    page = client.get(reverse("judging:run-create")).content.decode()
    assert reverse("judging:run-count") in page and 'id="launch-counts"' in page
    codes = " ".join(c.code for c in conversations)
    body = _ask(client, judges=[j.pk for j in judges], codes=codes, instances=1, use_cache="on")
    assert "10 judgements" in body and "5 conversations × 2 judges" in body
    assert "10 LLM calls" in body and "2 launch-check calls" in body
    # Three instances from the cache: still 10 calls; independent instances: 30.
    cached = _ask(client, judges=[j.pk for j in judges], codes=codes, instances=3, use_cache="on")
    assert "30 judgements" in cached and "10 LLM calls" in cached
    fresh = _ask(client, judges=[j.pk for j in judges], codes=codes, instances=3, use_cache="on", independent_instances="on")
    assert "30 LLM calls" in fresh


def test_a_question_flow_counts_at_most_one_call_per_question(researcher, vera, make_judge):
    conversations = [make_conversation() for _ in range(3)]
    judge = make_judge("flowy", vera)
    questions = Item.objects.filter(instrument=vera, scale=Scale.FLOW_QUESTION).count()
    body = _ask(client_for(researcher), judges=[judge.pk], codes=" ".join(c.code for c in conversations), instances=1)
    assert "3 judgements" in body and f"At most <strong>{3 * questions:,} LLM calls" in body


def test_the_count_says_what_is_missing(researcher, amhart, make_judge):
    judge = make_judge("gpt", amhart)
    client = client_for(researcher)
    assert "Choose one or more judges" in _ask(client, codes="x")
    assert "Choose conversations" in _ask(client, judges=[judge.pk])
    assert "Unknown conversation code(s): NOPE" in _ask(client, judges=[judge.pk], codes="NOPE")


def test_only_those_who_start_runs_may_count(coordinator, outsider, clinician):
    for user in (coordinator, outsider, clinician):
        assert client_for(user).get(reverse("judging:run-count")).status_code == 404


def test_a_going_run_says_its_time_left_in_minutes_from_the_recent_pace(researcher, amhart, make_judge):
    from datetime import timedelta

    from django.utils import timezone

    from judging import services
    from judging.models import JudgeRun, ResultStatus, RunStatus

    conversations = [make_conversation() for _ in range(20)]
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations], start=False)
    JudgeRun.objects.filter(pk=run.pk).update(shared=True)  # an operator's run, read by a researcher (issue 30)
    now = timezone.now()
    done = list(run.results.order_by("id")[:10])
    # Half done in the last five minutes, after half an hour queued: about five minutes left.
    run.results.filter(pk__in=[r.pk for r in done]).update(status=ResultStatus.DONE, finished_at=now - timedelta(minutes=2))
    JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, n_done=10, started_at=now - timedelta(minutes=35))
    body = client_for(researcher).get(reverse("judging:run-progress", args=[run.pk])).content.decode()
    assert "about 5 minutes left" in body
