"""A worker SIGKILLed in the middle of a judge run on Redis + PostgreSQL: nothing stays running.

The worker holds several results at once (threads pool, every result on its engine thread).
After the kill their rows say "running" with a lease nobody renews; their broker messages sit
unacknowledged until Redis's visibility timeout (an hour). The next worker to start takes them
back at once (their holder is a dead process on this host), and results whose task the killed
worker had received but not yet claimed (still pending) are sent again by the sweeper after
the recovery threshold, so the run completes and no result is left running or pending.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpus.instruments.services import builtin_instruments_load
from judging import services
from judging.models import JudgeLabel, JudgeResult, JudgeRun, ResultStatus, RunStatus
from tests.judging.conftest import KEY_ENV, SECRET, checklist_reply, make_conversation
from tests.support.fake_llm import FakeLLM
from tests.support.redis_lease import flush_test_redis
from tests.support.services import worker_database_url

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _wait_for(predicate, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def start_worker(transactional_db, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    from django.conf import settings

    from evalsite.celery import app

    monkeypatch.setenv(KEY_ENV, SECRET)
    flush_test_redis()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "evalsite.settings.integration",
        "DATABASE_URL": worker_database_url(),
        "REDIS_URL": settings.CELERY_BROKER_URL,
        "EVALSITE_VAR_DIR": str(tmp_path),
        "EVALSITE_JUDGE_STALE_SECONDS": "3",
        # A task the killed worker had received but not claimed stays pending (its message
        # unacknowledged in Redis for an hour): the sweeper sends it again after this.
        "EVALSITE_RECOVERY_SECONDS": "3",
    }
    procs: list[subprocess.Popen] = []

    def start() -> subprocess.Popen:
        n = len(procs)
        log = open(tmp_path / f"worker{n}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=threads", "--concurrency=3",
             "--loglevel=INFO", f"--hostname=judgecrash{n}-{os.getpid()}@%h"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        procs.append(proc)
        name = f"judgecrash{n}-{os.getpid()}@"
        ok = _wait_for(lambda: any(name in k for r in (app.control.ping(timeout=0.5) or []) for k in r), 60)
        if not ok or proc.poll() is not None:
            pytest.fail(f"worker {n} did not start:\n" + (tmp_path / f"worker{n}.log").read_text())
        return proc

    start.logs = lambda: "\n".join(p.read_text()[-3000:] for p in sorted(tmp_path.glob("worker*.log")))  # type: ignore[attr-defined]
    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    flush_test_redis()


def test_a_worker_killed_mid_run_leaves_no_result_running(start_worker):
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    conversations = [make_conversation() for _ in range(6)]
    with FakeLLM(latency=1.5) as fake:
        fake.script("gpt", [checklist_reply()])
        judge = services.judge_create(
            name="gpt", instrument=amhart, model="openai/gpt", provider="openai",
            api_base=fake.base_url, api_key_env=KEY_ENV,
        )
        first = start_worker()
        run = services.judge_run_create(judges=[judge], conversation_ids=[c.pk for c in conversations])
        results = JudgeResult.objects.filter(run=run)
        assert _wait_for(lambda: results.filter(status=ResultStatus.RUNNING).count() >= 2, 45), start_worker.logs()
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        victims = list(results.filter(status=ResultStatus.RUNNING).values_list("pk", flat=True))
        assert victims

        start_worker()
        finished = _wait_for(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, 90)
        assert finished, [(r.pk, r.status, r.attempts) for r in results] + [start_worker.logs()]

    run.refresh_from_db()
    assert run.status == RunStatus.COMPLETED, run.error
    assert not results.exclude(status=ResultStatus.DONE).exists()
    assert set(results.filter(pk__in=victims).values_list("attempts", flat=True)) == {2}
    assert JudgeLabel.objects.filter(result__run=run).count() == 6 * 14
    assert (run.n_done, run.n_failed) == (6, 0)
