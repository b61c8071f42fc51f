"""Benchmark the report pages on a 150-conversation study with three judges, server-side.

Data: ``tests.support.report_study`` (150 AMHART conversations, 4 clinicians with k=2, the study
section, consensus, a three-judge run with its ensemble) on a fresh SQLite database in a
temporary directory. For each report it prints the cold computation (what a worker does the
first time after the data changed, run in place here) and the cached answer of the page
(median and p95 of 20 requests after one warm-up), with the SQL queries of one cached request.
Figures are not pass/fail; they are measured on a shared 2-core machine, so read them as
orders of magnitude.

Run: .venv/bin/python bench/reports.py [--keep]
"""

from __future__ import annotations

import os
import shutil
import statistics
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
os.environ.setdefault("DJANGO_STATIC_ROOT", str(ROOT / "static"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

django.setup()
settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
settings.ALLOWED_HOSTS = ["*"]

from celery import current_app  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

REQUESTS = 20


def main() -> None:
    call_command("migrate", verbosity=0)
    current_app.conf.task_always_eager = True  # a cold report is computed in place, and timed
    from reports import services
    from reports.models import ReportCache
    from tests.support.report_study import build_report_study

    started = time.perf_counter()
    audit = build_report_study(n_conversations=150, prefix="bench")
    built = time.perf_counter() - started
    study, run = audit.study, audit.run
    cold = [
        ("reliability (N/A excluded)", lambda: services.study_reliability(study=study, na="exclude")),
        ("reliability (N/A a category)", lambda: services.study_reliability(study=study, na="category")),
        ("judges vs humans", lambda: services.study_judges_vs_humans(study=study, run_id=run.pk)),
        ("scorecard (consensus)", lambda: services.study_scorecard(study=study)),
        ("scorecard (judge run)", lambda: services.run_scorecard(run=run)),
        ("realism", lambda: services.study_realism(study=study)),
    ]
    print(f"data: 150 conversations, 4 raters (k=2), 3 judges; built in {built:.1f} s ({connection.vendor})")
    print(f"{'cold computation':<34} {'seconds':>8}")
    for label, compute in cold:
        ReportCache.objects.all().delete()
        t = time.perf_counter()
        compute()
        print(f"{label:<34} {time.perf_counter() - t:>8.2f}")
    client = Client()
    client.force_login(audit.coordinator)
    pages = [
        ("reliability page", f"/reports/studies/{study.pk}/reliability/"),
        ("reliability page, N/A a category", f"/reports/studies/{study.pk}/reliability/?na=category"),
        ("judges vs humans page", f"/reports/studies/{study.pk}/judges/?run={run.pk}"),
        ("scorecard page", f"/reports/studies/{study.pk}/scorecard/"),
        ("run scorecard page", f"/reports/runs/{run.pk}/scorecard/"),
        ("reliability API", f"/api/v1/reports/studies/{study.pk}/reliability/"),
    ]
    print(f"\n{'cached page':<34} {'median ms':>10} {'p95 ms':>8} {'queries':>8}")
    for label, url in pages:
        assert client.get(url).status_code == 200, url  # warm-up: computes and caches
        counted: list[str] = []

        def count(execute, sql, params, many, context, counted=counted):  # type: ignore[no-untyped-def]
            counted.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            client.get(url)
        times = []
        for _ in range(REQUESTS):
            t = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - t) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        times.sort()
        p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
        print(f"{label:<34} {statistics.median(times):>10.1f} {p95:>8.1f} {len(counted):>8}")
    connection.close()
    if "--keep" in sys.argv:
        print(f"database kept in {VAR}")
    else:
        shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
