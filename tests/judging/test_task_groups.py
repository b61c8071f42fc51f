"""A lean worker path: one task message carries a group of results (core.enqueue)."""

from __future__ import annotations

from typing import Any

import pytest
from celery import current_app
from django.test import override_settings

from core.enqueue import split_groups
from judging import services
from judging.models import ResultStatus
from tests.judging.conftest import checklist_reply, make_conversation

pytestmark = pytest.mark.django_db


def test_groups_are_as_few_and_as_even_as_the_size_allows() -> None:
    ids = list(range(1, 21))
    assert split_groups(ids, 16) == [ids[:10], ids[10:]]
    assert [len(g) for g in split_groups(list(range(100)), 16)] == [15, 15, 14, 14, 14, 14, 14]
    assert split_groups([7], 16) == [[7]]
    assert split_groups([], 16) == []
    for n in (1, 5, 16, 17, 33, 192):
        for size in (1, 3, 16):
            groups = split_groups(list(range(n)), size)
            assert [pk for g in groups for pk in g] == list(range(n))  # every id once, in order
            assert max(map(len, groups)) <= size and max(map(len, groups)) - min(map(len, groups)) <= 1


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Record the messages sent for the grouped judge task (eager Celery still runs each)."""
    task = current_app.tasks["judging.tasks.judge_results_task"]
    messages: list[tuple[Any, ...]] = []
    original = task.apply_async

    def record(args: tuple[Any, ...] = (), *rest: Any, **kwargs: Any) -> Any:
        messages.append(tuple(args))
        return original(args, *rest, **kwargs)

    monkeypatch.setattr(task, "apply_async", record)
    return messages


@override_settings(EVALSITE_TASK_GROUP_SIZE=4)
def test_a_run_sends_one_message_per_group_of_results_and_judges_them_all(
    fake, amhart, make_judge, sent, django_capture_on_commit_callbacks
):
    fake.script("gpt", [checklist_reply()] * 10)
    conversations = [make_conversation() for _ in range(10)]
    with django_capture_on_commit_callbacks(execute=True):
        run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[c.pk for c in conversations])
    assert [len(args[0]) for args in sent] == [4, 3, 3]
    assert sorted(pk for args in sent for pk in args[0]) == sorted(run.results.values_list("pk", flat=True))
    assert set(run.results.values_list("status", flat=True)) == {ResultStatus.DONE}
    assert fake.calls_total == 10


def test_a_message_of_the_one_result_task_is_still_taken(fake, amhart, make_judge) -> None:
    """A message queued by a version that sent one result per message is judged as before."""
    from judging.tasks import judge_result_task

    fake.script("gpt", [checklist_reply()])
    run = services.judge_run_create(judges=[make_judge("gpt", amhart)], conversation_ids=[make_conversation().pk], start=False)
    assert judge_result_task.delay(run.results.get().pk).get() == ResultStatus.DONE
