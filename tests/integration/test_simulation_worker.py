"""A real worker on Redis + PostgreSQL runs a batch; SIGKILLed mid-conversation, nothing is lost.

The worker runs with ``--pool=solo`` so one SIGKILL ends the process that holds the
conversation (with prefork the parent would requeue the task itself). Its broker message then
sits unacknowledged until Redis's visibility timeout (an hour); the new worker does not wait for
that: on start it queues again every run a dead executor left running, and the run's lease
lets it resume after the last saved message.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus.models import Message, Target
from corpus.personas.services import builtin_personas_load
from simulation.batch_spec import BatchSpec, UserAgent
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch, SimulationRun
from tests.support.fake_llm import FakeLLM
from tests.support.redis_lease import flush_test_redis
from tests.support.services import worker_database_url

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
KEY_ENV = "ITEST_SIM_API_KEY"


def _wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


class Workers:
    """Start solo-pool workers against the test database and Redis; kill or stop them."""

    def __init__(self, tmp_path: Path) -> None:
        from django.conf import settings
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "evalsite.settings.integration",
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.CELERY_BROKER_URL,
            "EVALSITE_VAR_DIR": str(tmp_path),
            "EVALSITE_SIMULATION_LEASE_SECONDS": "4",
            KEY_ENV: "sk-itest-not-a-real-key",
        }
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen] = []

    def start(self) -> subprocess.Popen:
        from evalsite.celery import app

        n = len(self.procs)
        log = open(self.tmp_path / f"worker{n}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=solo", "--loglevel=INFO",
             f"--hostname=simtest{n}-{os.getpid()}@%h"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        name = f"simtest{n}-{os.getpid()}@"
        ok = _wait_for(lambda: any(name in k for r in (app.control.ping(timeout=0.5) or []) for k in r), 60)
        if not ok or proc.poll() is not None:
            pytest.fail(f"worker {n} did not start:\n" + (self.tmp_path / f"worker{n}.log").read_text())
        return proc

    def logs(self) -> str:
        return "\n".join(p.read_text() for p in sorted(self.tmp_path.glob("worker*.log")))

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()


@pytest.fixture
def workers(transactional_db, tmp_path) -> Iterator[Workers]:  # type: ignore[no-untyped-def]
    flush_test_redis()  # this run's own (leased) Redis database: no stale or unacked task from a past run
    pool = Workers(tmp_path)
    yield pool
    pool.stop_all()
    flush_test_redis()


def test_a_worker_killed_mid_conversation_loses_nothing_and_duplicates_nothing(workers, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-itest-not-a-real-key")
    with FakeLLM(latency=0.3) as fake:
        persona_set = builtin_personas_load()
        target = Target.objects.create(
            code="T-ITEST", model="openai/chatbot", api_base=fake.base_url, api_key_env=KEY_ENV,
            params={"temperature": 1.0}, system_prompt="Be supportive.", timeout_seconds=10, max_concurrent=4,
        )
        spec = BatchSpec(
            protocol=SimulationBatch.Protocol.AMHART,
            persona_set_id=persona_set.pk,
            persona_ids=tuple(persona_set.personas.order_by("position").values_list("pk", flat=True)[:3]),
            target_ids=(target.pk,),
            user_agent=UserAgent(model="openai/persona-agent", api_base=fake.base_url, api_key_env=KEY_ENV, params={"temperature": 1.0}),
            exchanges=4,
        )
        first = workers.start()
        # litellm's import takes seconds (45 s seen on a loaded machine): the wait below is for the
        # conversation, not for the worker's warm-up.
        engine_ready = lambda: "engine ready" in (workers.tmp_path / "worker0.log").read_text(errors="replace")  # noqa: E731
        assert _wait_for(engine_ready, 180), workers.logs()
        batch = simulation_batch_create(spec=spec)  # autocommit: the tasks are queued at once
        runs = SimulationRun.objects.filter(batch=batch)

        def mid_conversation() -> SimulationRun | None:
            return runs.filter(status=SimulationRun.Status.RUNNING, messages_done__gte=3).first()

        assert _wait_for(lambda: mid_conversation() is not None, 45), workers.logs()
        victim = mid_conversation()
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        victim.refresh_from_db()
        saved = list(Message.objects.filter(conversation=victim.conversation_id).order_by("turn_index").values_list("turn_index", "role", "content"))
        assert victim.status == SimulationRun.Status.RUNNING and len(saved) >= 3

        workers.start()
        finished = _wait_for(
            lambda: SimulationBatch.objects.get(pk=batch.pk).status == SimulationBatch.Status.FINISHED, 60
        )
        assert finished, [(r.pk, r.status, r.messages_done) for r in runs] + [workers.logs()[-3000:]]

    for run in runs.select_related("conversation"):
        indexes = list(Message.objects.filter(conversation=run.conversation).order_by("turn_index").values_list("turn_index", flat=True))
        assert run.status == SimulationRun.Status.DONE, run.error
        assert indexes == list(range(8)), (run.pk, indexes)
        assert run.conversation.message_count == 8 and run.conversation.integrity_ok is True, run.conversation.integrity_flags
    victim.refresh_from_db()
    after = list(Message.objects.filter(conversation=victim.conversation_id).order_by("turn_index").values_list("turn_index", "role", "content"))
    assert after[: len(saved)] == saved  # what was saved before the kill is kept as it was
    assert victim.attempts == 2
