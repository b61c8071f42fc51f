"""Benchmark the consensus: the request that asks for it, the worker's first computation, recomputes.

Data: ``tests.support.report_study`` (AMHART conversations with the study section, k raters
each, every rating submitted) on a fresh SQLite database in a temporary directory. For each
size it prints, as RESULT lines:

* ``consensus-request``: the POST of the consensus page, which only queues the job (Celery
  not in place; the message is not sent), against the computation the request did before
  (``ratio`` = request / computation);
* ``consensus-first``: the worker's job on a study without labels (every label written);
* ``consensus-unchanged``: the job again with nothing changed (no label written);
* ``consensus-ten-changed``: after ten ratings changed one answer each.

Figures are not pass/fail; on a shared 2-core machine read them as orders of magnitude.

Run: .venv/bin/python bench/consensus.py [--sizes 150,1000]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
VAR = tempfile.mkdtemp(prefix="evalsite-bench-")
os.environ["DJANGO_SETTINGS_MODULE"] = "evalsite.settings.base"
os.environ["EVALSITE_VAR_DIR"] = VAR
os.environ["DJANGO_DEBUG"] = "false"
os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

django.setup()
settings.ALLOWED_HOSTS = ["*"]

from celery import current_app  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402

from bench.common import result_line  # noqa: E402


def _timed(action) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def measure(n: int, k: int, raters: int) -> None:
    from annotation.consensus.jobs import consensus_job_run
    from annotation.consensus.services import consensus_compute_counted
    from annotation.models import ConsensusJob, ConsensusLabel, Rating
    from tests.support.report_study import build_report_study

    audit = build_report_study(n_conversations=n, n_raters=raters, k=k, n_judges=1, prefix=f"c{n}")
    study = audit.study
    ConsensusLabel.objects.filter(study=study).delete()
    labels = None

    # The request: only a job row and a message queued on commit (not sent here).
    current_app.conf.task_always_eager = False
    client = Client()
    client.force_login(audit.coordinator)
    url = f"/studies/{study.pk}/consensus/compute/"
    timings = []
    for _ in range(3):  # the first request warms the process up (imports, session): the last counts
        with transaction.atomic():  # on_commit callbacks are dropped with the rollback: nothing is sent
            timings.append(_timed(lambda: client.post(url)))
            transaction.set_rollback(True)
    request = timings[-1]
    current_app.conf.task_always_eager = True

    job = ConsensusJob.objects.create(study=study, requested_by=audit.coordinator)
    first = _timed(lambda: consensus_job_run(job_id=job.pk))
    labels = ConsensusLabel.objects.filter(study=study).count()
    print(result_line(f"consensus-request-n{n}", ratio=request / first, request_ms=request * 1000,
                      computation_ms=first * 1000, labels=labels))
    print(result_line(f"consensus-first-n{n}", seconds=first, ratings=Rating.objects.filter(assignment__study=study).count(),
                      written=ConsensusJob.objects.get(pk=job.pk).written))
    unchanged = _timed(lambda: consensus_compute_counted(study=study))
    print(result_line(f"consensus-unchanged-n{n}", ratio=unchanged / first, seconds=unchanged,
                      written=consensus_compute_counted(study=study).written))
    for rating in Rating.objects.filter(assignment__study=study).order_by("pk")[:10]:
        value = rating.answers["main"]["amhart_01"]["value"]
        rating.answers["main"]["amhart_01"]["value"] = "no" if value == "yes" else "yes"
        rating.save()
    result = {}
    changed = _timed(lambda: result.update(r=consensus_compute_counted(study=study)))
    print(result_line(f"consensus-ten-changed-n{n}", ratio=changed / first, seconds=changed, written=result["r"].written))


def main() -> None:
    sizes = [150, 1000]
    if "--sizes" in sys.argv:
        sizes = [int(s) for s in sys.argv[sys.argv.index("--sizes") + 1].split(",")]
    if len(sizes) > 1:  # one fresh database (and process) per size
        for n in sizes:
            subprocess.run([sys.executable, __file__, "--sizes", str(n)], check=True)
        shutil.rmtree(VAR, ignore_errors=True)
        return
    call_command("migrate", verbosity=0)
    current_app.conf.task_always_eager = True
    n = sizes[0]
    measure(n, k=2 if n <= 150 else 3, raters=4 if n <= 150 else 12)
    connection.close()
    shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
