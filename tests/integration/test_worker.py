"""A real worker on Redis and PostgreSQL runs a task end to end."""

from __future__ import annotations

import time

import pytest

from corpus.models import Conversation
from simulation.tasks import conversation_check_integrity_task
from tests.factories import ConversationFactory

pytestmark = pytest.mark.integration


def _wait_for(predicate, timeout: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_worker_checks_conversation_integrity_through_redis(celery_worker_process):
    good = ConversationFactory(integrity_ok=None)
    broken = ConversationFactory(
        integrity_ok=None, messages=[("user", "hello"), ("user", "anyone?"), ("assistant", " ")]
    )
    for conversation in (good, broken):
        conversation_check_integrity_task.delay(conversation.pk)
    assert _wait_for(lambda: not Conversation.objects.filter(pk__in=[good.pk, broken.pk], integrity_ok=None).exists())
    good.refresh_from_db()
    broken.refresh_from_db()
    assert good.integrity_ok is True
    assert broken.integrity_ok is False
    # The empty chatbot reply is a note (data, not a defect); the two user turns in a row fail.
    assert {f["code"] for f in broken.integrity_flags} == {"not_alternating", "empty_chatbot_reply"}
    assert next(f for f in broken.integrity_flags if f["code"] == "empty_chatbot_reply")["severity"] == "note"


def test_a_task_run_twice_does_no_harm(celery_worker_process):
    conversation = ConversationFactory(integrity_ok=None)
    conversation_check_integrity_task.delay(conversation.pk)
    conversation_check_integrity_task.delay(conversation.pk)
    assert _wait_for(lambda: Conversation.objects.get(pk=conversation.pk).integrity_ok is not None)
    time.sleep(1)
    conversation.refresh_from_db()
    assert conversation.integrity_ok is True
    assert conversation.integrity_flags == []
