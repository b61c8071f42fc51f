"""With no DATABASE_URL or REDIS_URL, a real worker runs tasks through the filesystem broker.

Everything runs in subprocesses with the default settings, as a newcomer's first command does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_embedded_worker_runs_a_task_with_no_external_service(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env["EVALSITE_VAR_DIR"] = str(tmp_path)
    _run(["manage.py", "migrate", "--noinput", "-v0"], env)
    _run(["manage.py", "seed_demo", "--quiet-logins"], env)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=solo", "--loglevel=INFO"],
        cwd=ROOT, env=env, stdout=open(tmp_path / "worker.log", "w"), stderr=subprocess.STDOUT,
    )
    try:
        enqueue = (
            "from simulation.models import Conversation\n"
            "from simulation.tasks import conversation_check_integrity_task\n"
            "from evalsite.celery import ensure_broker_folders\n"
            "ensure_broker_folders()\n"
            "Conversation.objects.update(integrity_ok=None)\n"
            "for pk in Conversation.objects.values_list('pk', flat=True):\n"
            "    conversation_check_integrity_task.delay(pk)\n"
        )
        _run(["manage.py", "shell", "-c", enqueue], env)
        count = "from simulation.models import Conversation; print(Conversation.objects.filter(integrity_ok=None).count(), Conversation.objects.count())"
        deadline = time.monotonic() + 90
        pending = total = None
        while time.monotonic() < deadline:
            pending, total = map(int, _run(["manage.py", "shell", "-c", count], env).split()[-2:])
            if pending == 0:
                break
            time.sleep(1)
        assert total and total >= 12
        assert pending == 0, (tmp_path / "worker.log").read_text()[-3000:]
        # The worker said it is alive: `manage.py status` lists it with its queue.
        shown = subprocess.run([sys.executable, "manage.py", "status", "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        report = json.loads(shown.stdout)
        assert report["database"]["ok"] and report["broker"]["ok"], shown.stdout
        assert [w["queues"] for w in report["workers"]] == [["celery"]], shown.stdout
    finally:
        worker.terminate()
        worker.wait(timeout=30)


def test_the_embedded_broker_gives_kombu_no_reason_to_warn(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env["EVALSITE_VAR_DIR"] = str(tmp_path)
    code = "from celery import current_app; current_app.connection_for_write()._info(); print('connected')"
    done = subprocess.run([sys.executable, "manage.py", "shell", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "connected" in done.stdout, done.stderr
    assert "No hostname was supplied" not in done.stderr
