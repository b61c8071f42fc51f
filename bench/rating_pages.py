"""Benchmark the rater's dashboard, rating page and autosave on a large study, server-side.

Data: 10,000 conversations x 6 messages, 50 clinician raters, k=2 (20,000 assignments, 400
per rater; a third of each rater's queue submitted). Rows are bulk-created on a fresh SQLite
database in a temporary directory; the assignment itself goes through ``study_assign`` (the
balanced, rotated design). Each page is requested ~50 times with ``django.test.Client`` as
different raters, after one untimed warm-up request; reported are the median and p95 in ms
and the number of SQL queries of one request (which must not grow with the study).

Run: .venv/bin/python bench/rating_pages.py [--keep]   (under a minute; no network, no services;
--keep leaves the temporary database in place for profiling)
"""

from __future__ import annotations

import json
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
os.environ["EVALSITE_DEBUG"] = "false"
os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
os.environ.setdefault("DJANGO_STATIC_ROOT", str(ROOT / "static"))  # silences whitenoise's warning

import django  # noqa: E402
from django.conf import settings  # noqa: E402

django.setup()
# Without collectstatic the manifest storage cannot resolve {% static %}; plain storage instead.
settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}

from django.contrib.auth import get_user_model  # noqa: E402
from django.contrib.auth.hashers import make_password  # noqa: E402
from django.contrib.auth.models import Group  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

N_CONVERSATIONS, N_MESSAGES, N_RATERS, K, REQUESTS = 10_000, 6, 50, 2, 50


def build() -> tuple[list, list[int]]:
    """Create the study; return the raters and one in-progress assignment id per rater."""
    from annotation.models import Assignment, AssignmentStatus
    from annotation.studies.services import study_assign, study_create
    from core.roles import Role
    from corpus.instruments.services import builtin_instruments_load
    from corpus.models import Conversation, Message

    User = get_user_model()
    group, _ = Group.objects.get_or_create(name=Role.CLINICIAN)
    password = make_password("bench-password")
    User.objects.bulk_create(User(username=f"rater{i:02d}", password=password) for i in range(N_RATERS))
    raters = list(User.objects.filter(username__startswith="rater").order_by("username"))
    group.user_set.add(*raters)
    Conversation.objects.bulk_create(
        (
            Conversation(code=f"C-{i:06d}", source="imported", content_hash=f"{i:064x}", message_count=N_MESSAGES,
                         sensitive=i % 5 == 0)
            for i in range(N_CONVERSATIONS)
        ),
        batch_size=2000,
    )
    ids = list(Conversation.objects.values_list("id", flat=True))
    Message.objects.bulk_create(
        (
            Message(conversation_id=cid, turn_index=t, role="user" if t % 2 == 0 else "assistant",
                    content=("I have not slept properly for weeks and I feel like a burden to everyone. " * 3)
                    if t % 2 == 0 else ("That sounds exhausting. Thank you for telling me. " * 5))
            for cid in ids
            for t in range(N_MESSAGES)
        ),
        batch_size=5000,
    )
    amhart, section = builtin_instruments_load()
    study = study_create(
        name="Bench study", instrument=amhart, section=section, conversation_ids=ids, created_by=None,
        raters=[(r, "clinician") for r in raters], raters_per_conversation=K,
    )
    study_assign(study=study, actor=None, seed=1)
    # A third of every queue is done, so the dashboard shows a realistic mix.
    done = Assignment.objects.filter(study=study, position__lt=400 // 3)
    done.update(status=AssignmentStatus.SUBMITTED)
    current = []
    for rater in raters:
        current.append(
            Assignment.objects.filter(study=study, rater=rater, status=AssignmentStatus.NOT_STARTED)
            .order_by("position").values_list("id", flat=True).first()
        )
    return raters, current


def timed(label: str, calls: list) -> dict:  # list of (client, method, url, data)
    """Run each call once untimed, then time it; return median, p95 and one query count."""
    for client, method, url, data in calls:
        getattr(client, method)(url, **data)
    counted = []

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        counted.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client, method, url, data = calls[0]
        response = getattr(client, method)(url, **data)
    assert response.status_code == 200, (label, response.status_code)
    times = []
    for client, method, url, data in calls:
        started = time.perf_counter()
        response = getattr(client, method)(url, **data)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (label, response.status_code)
    times.sort()
    p95 = times[max(0, int(round(0.95 * len(times))) - 1)]
    return {"page": label, "n": len(times), "median_ms": statistics.median(times), "p95_ms": p95, "queries": len(counted)}


def main() -> None:
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    raters, current = build()
    built = time.perf_counter() - started
    clients = []
    for rater in raters:
        client = Client()
        client.force_login(rater)
        clients.append(client)
    n = min(REQUESTS, len(clients))
    dashboard = [(clients[i], "get", reverse("annotation:my-studies"), {}) for i in range(n)]
    rating = [(clients[i], "get", reverse("annotation:rate", args=[current[i]]), {}) for i in range(n)]
    for client, _, url, _ in rating:  # read past the content warning, once per session
        client.post(url + "continue/")
    answers = [
        (clients[i], "post", reverse("v1:my-assignment-answers", args=[current[i]]),
         {"data": json.dumps({"part": "main", "item_key": "amhart_01", "value": "yes" if j % 2 else "no"}),
          "content_type": "application/json"})
        for j in range(2) for i in range(n // 2)
    ]
    api_list = [(clients[i], "get", reverse("v1:my-assignment-list") + "?limit=100", {}) for i in range(n)]
    results = [
        timed("dashboard (400 assignments per rater)", dashboard),
        timed("rating page (resume)", rating),
        timed("autosave one answer (API)", answers),
        timed("API list of my assignments (page of 100)", api_list),
    ]
    from annotation.models import Assignment

    print(f"data: {N_CONVERSATIONS:,} conversations x {N_MESSAGES} messages, {N_RATERS} raters, k={K}, "
          f"{Assignment.objects.count():,} assignments; built in {built:.1f} s ({connection.vendor})")
    print(f"{'page':<44} {'n':>4} {'median ms':>10} {'p95 ms':>8} {'queries':>8}")
    for r in results:
        print(f"{r['page']:<44} {r['n']:>4} {r['median_ms']:>10.1f} {r['p95_ms']:>8.1f} {r['queries']:>8}")
    print(f"total {time.perf_counter() - started:.1f} s")
    connection.close()
    if "--keep" in sys.argv:
        print(f"database kept in {VAR}")
    else:
        shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
