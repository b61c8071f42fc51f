"""Outages that end without a person (issue 32): a conversation that failed because its chatbot
did not answer waits behind the chatbot's breaker; the sweeper sends one again as a probe when
its time comes; the first success sends the others; each is retried automatically at most
EVALSITE_OUTAGE_RETRIES times. Through litellm's real HTTP path to the fake server."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import OutageState, ProviderOutage
from core.outages import outages_probe
from corpus.personas.services import builtin_personas_load
from simulation.batches import simulation_batch_cancel, simulation_batch_create
from simulation.models import SimulationBatch, SimulationRun
from simulation.outages import breaker_key, waiting_in_batch
from simulation.tasks import simulation_run_task
from tests.conftest import client_for, make_user
from tests.simulation.sim_setup import amhart_spec, make_target, simulation_environment  # noqa: F401
from tests.support.fake_llm import http_500

pytestmark = pytest.mark.django_db

DOWN = [http_500(), http_500(), http_500()]  # the retry budget: three attempts


@pytest.fixture
def batch(fake_llm):  # type: ignore[no-untyped-def]
    """A planned AMHART batch of two conversations (two personas) with one chatbot."""
    persona_set = builtin_personas_load()
    target = make_target(fake_llm)
    ids = tuple(persona_set.personas.order_by("pk").values_list("pk", flat=True)[:2])
    return simulation_batch_create(spec=amhart_spec(fake_llm, persona_set, [target], persona_ids=ids), dispatch=False)


def _fail_both(fake_llm, batch):  # type: ignore[no-untyped-def]
    fake_llm.script("chatbot", DOWN)
    for run in batch.runs.order_by("pk"):
        assert simulation_run_task.delay(run.pk).get() == "failed"
    return list(batch.runs.order_by("pk"))


def test_a_chatbot_outage_opens_its_breaker_and_the_first_answer_sends_every_waiting_conversation(
    fake_llm, batch, django_capture_on_commit_callbacks
):
    runs = _fail_both(fake_llm, batch)
    key = breaker_key(runs[0].target_id)
    breaker = ProviderOutage.objects.get(key=key)
    assert breaker.state == OutageState.OPEN and breaker.label == "T-BOT" and breaker.failures == 2
    assert "after 3 attempt(s)" in breaker.last_error
    assert all(r.status == SimulationRun.Status.FAILED and r.error_kind == "server_error" for r in runs)
    batch.refresh_from_db()
    # Not finished: its conversations wait for the chatbot, and the batch can still be cancelled.
    assert batch.status == SimulationBatch.Status.RUNNING and waiting_in_batch(batch) == 2
    # Admins see the whole corpus (least privilege across studies may narrow a researcher's view).
    page = client_for(make_user("ada", "admin", is_staff=True, is_superuser=True)).get(f"/corpus/simulations/{batch.code}/")
    notice = page.content.decode().split('id="outage-wait"', 1)[1].split("</p>", 1)[0]
    assert "2 conversations wait for T-BOT to answer again" in notice and "nobody needs to resume the batch" in notice

    fake_llm.script("chatbot", ["Back again.", "Second.", "Third."])
    now = timezone.now()
    assert outages_probe(now) == 0  # not yet time to check
    calls_before = fake_llm.calls_total
    with django_capture_on_commit_callbacks(execute=True):
        assert outages_probe(breaker.next_probe_at + timedelta(seconds=1)) == 1  # one probe, no extra call
    for run in runs:
        run.refresh_from_db()
        assert run.status == SimulationRun.Status.DONE, (run.pk, run.error)
        assert run.auto_retries == 1
    # The probe was the first conversation itself; its success sent the second one.
    assert fake_llm.calls_total > calls_before
    breaker.refresh_from_db()
    assert breaker.state == OutageState.CLOSED and breaker.closed_at is not None
    batch.refresh_from_db()
    assert batch.status == SimulationBatch.Status.FINISHED and waiting_in_batch(batch) == 0


def test_a_probe_that_fails_again_backs_off_and_the_limit_leaves_it_to_a_person(
    fake_llm, batch, django_capture_on_commit_callbacks, settings
):
    settings.EVALSITE_OUTAGE_RETRIES = 2
    runs = _fail_both(fake_llm, batch)
    breaker = ProviderOutage.objects.get(key=breaker_key(runs[0].target_id))
    first_delay = (breaker.next_probe_at - breaker.updated_at).total_seconds()
    with django_capture_on_commit_callbacks(execute=True):
        assert outages_probe(breaker.next_probe_at + timedelta(seconds=1)) == 1
    breaker.refresh_from_db()
    assert breaker.state == OutageState.OPEN and breaker.failures == 3
    assert (breaker.next_probe_at - timezone.now()).total_seconds() > first_delay * 1.9  # backed off (doubled)
    probed = SimulationRun.objects.get(pk=runs[0].pk)
    assert probed.status == SimulationRun.Status.FAILED and probed.auto_retries == 1
    for _ in range(3):  # the limit: each conversation goes twice by itself, then waits for a person
        with django_capture_on_commit_callbacks(execute=True):
            outages_probe(ProviderOutage.objects.get(pk=breaker.pk).next_probe_at + timedelta(seconds=1))
    assert sorted(SimulationRun.objects.filter(batch=batch).values_list("auto_retries", flat=True)) == [2, 2]
    batch.refresh_from_db()
    assert waiting_in_batch(batch) == 0 and batch.status == SimulationBatch.Status.FINISHED
    breaker.refresh_from_db()
    # The next check finds nothing left to try: the breaker closes, the runs stay failed for a person.
    assert outages_probe(breaker.next_probe_at + timedelta(seconds=1)) == 0
    breaker.refresh_from_db()
    assert breaker.state == OutageState.CLOSED
    assert set(SimulationRun.objects.filter(batch=batch).values_list("status", flat=True)) == {"failed"}


def test_a_cancelled_batch_is_never_sent_again(fake_llm, batch, django_capture_on_commit_callbacks):
    runs = _fail_both(fake_llm, batch)
    simulation_batch_cancel(batch_id=batch.pk)
    breaker = ProviderOutage.objects.get(key=breaker_key(runs[0].target_id))
    fake_llm.script("chatbot", ["Fine now."])
    with django_capture_on_commit_callbacks(execute=True):
        assert outages_probe(breaker.next_probe_at + timedelta(seconds=1)) == 0
    assert set(SimulationRun.objects.filter(batch=batch).values_list("auto_retries", flat=True)) == {0}


def test_the_status_page_names_the_provider_that_does_not_answer(fake_llm, batch):
    _fail_both(fake_llm, batch)
    page = client_for(make_user("ada", "admin", is_staff=True, is_superuser=True)).get("/status/").content.decode()
    listed = page.split('id="outages"', 1)[1].split("</ul>", 1)[0]
    assert "T-BOT" in listed and "not answering since" in listed and "2 failures" in listed
