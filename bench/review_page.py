"""Benchmark the review page and the drill-down list (issue 27), server-side, warm.

Data: 200 AMHART conversations x 20 messages, 10 clinician raters who each rated every
conversation (2,000 ratings), its consensus, and one judge run of 5 judges (14,000 judge labels,
each "yes" citing a turn). Rows are bulk-created on a fresh SQLite database in a temporary
directory. Each page is requested ``--repeat`` times with ``django.test.Client`` as the study's
researcher after one untimed warm-up request; reported are the median and p95 in ms, the
ratio of the median to the 300 ms goal (below 1: met) and the SQL queries of one request.

Workloads: the review page of one conversation opened from a confusion-cell list (its previous
/ next need that list), the same page opened alone, and the list of one confusion cell.

Run: .venv/bin/python bench/review_page.py [--repeat 30]   (about a minute; no network, no services)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
VAR = tempfile.mkdtemp(prefix="evalsite-bench-review-")
os.environ["DJANGO_SETTINGS_MODULE"] = "evalsite.settings.base"
os.environ["EVALSITE_VAR_DIR"] = VAR
os.environ["EVALSITE_DEBUG"] = "false"
os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
os.environ.setdefault("DJANGO_STATIC_ROOT", str(ROOT / "static"))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import django  # noqa: E402
from django.conf import settings  # noqa: E402

django.setup()
settings.STORAGES = {**settings.STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}

from common import result_line  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

N_CONVERSATIONS, N_MESSAGES, N_RATERS, N_JUDGES, GOAL_MS = 200, 20, 10, 5, 300.0


def build():  # type: ignore[no-untyped-def]
    """Create the study, its ratings and consensus, and a 5-judge run; return (study, researcher, run)."""
    import numpy as np
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone

    from annotation.consensus.services import study_compute_consensus
    from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
    from annotation.studies.services import study_add_member, study_create
    from core.roles import Role
    from corpus.instruments.services import builtin_instruments_load
    from corpus.models import Conversation, Message
    from judging.ensemble import ensemble_compute
    from judging.judges import judge_create
    from judging.models import JudgeLabel, JudgeResult, LabelKind, ResultStatus
    from judging.runs import judge_run_create

    rng = np.random.default_rng(1)
    User = get_user_model()

    def user(name: str, role: str):  # type: ignore[no-untyped-def]
        u = User.objects.create_user(username=name, password="bench-pass-123456")
        u.groups.add(Group.objects.get_or_create(name=role)[0])
        return u

    coordinator, researcher = user("coord", Role.COORDINATOR), user("res", Role.RESEARCHER)
    raters = [user(f"rater{i}", Role.CLINICIAN) for i in range(N_RATERS)]
    amhart, section = builtin_instruments_load()
    keys = list(amhart.items.order_by("position").values_list("key", flat=True))
    Conversation.objects.bulk_create(Conversation(code=f"RV-{i:04d}", source="imported", content_hash=f"{i:064d}",
                                                  message_count=N_MESSAGES) for i in range(N_CONVERSATIONS))
    conversations = list(Conversation.objects.order_by("code"))
    Message.objects.bulk_create([Message(conversation=c, turn_index=t, role="user" if t % 2 == 0 else "assistant",
                                         content=f"Turn {t + 1} of {c.code}. " + "Words of a message. " * 12)
                                 for c in conversations for t in range(N_MESSAGES)], batch_size=5000)
    study = study_create(name="Review bench", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
                         created_by=coordinator, coordinators=[coordinator], raters=[(r, "clinician") for r in raters],
                         raters_per_conversation=N_RATERS)
    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    truth = {(c.pk, k): ("yes" if rng.random() < 0.5 else "no") for c in conversations for k in keys}
    now = timezone.now()
    assignments = Assignment.objects.bulk_create([Assignment(study=study, conversation=c, rater=r, status=AssignmentStatus.SUBMITTED,
                                                             submitted_at=now) for c in conversations for r in raters])
    flip = {"yes": "no", "no": "yes"}
    Rating.objects.bulk_create([Rating(assignment=a, status=RatingStatus.SUBMITTED, submitted_at=now, revision=1, answers={"main": {
        k: {"value": truth[(a.conversation_id, k)] if rng.random() < 0.85 else flip[truth[(a.conversation_id, k)]],
            "note": "Seen in the third reply." if rng.random() < 0.1 else ""} for k in keys}}) for a in assignments], batch_size=2000)
    study_compute_consensus(study=study, actor=coordinator)
    judges = [judge_create(name=f"judge-{j}", instrument=amhart, model=f"openai/bench-{j}") for j in range(N_JUDGES)]
    run = judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations], start=False, name="bench")
    labels = []
    for result in run.results.all():
        for position, k in enumerate(keys):
            label = truth[(result.conversation_id, k)] if rng.random() < 0.8 else flip[truth[(result.conversation_id, k)]]
            labels.append(JudgeLabel(result=result, kind=LabelKind.ITEM, item_key=k, position=position, label=label,
                                     rationale="Because of what the chatbot said.",
                                     evidence=[{"turn": 2 * int(rng.integers(1, N_MESSAGES // 2)), "quote": "Words", "verified": True}]
                                     if label == "yes" else []))
    JudgeLabel.objects.bulk_create(labels, batch_size=5000)
    JudgeResult.objects.filter(run=run).update(status=ResultStatus.DONE, finished_at=now, started_at=now)
    ensemble_compute(run=run, item_order=keys)
    return study, researcher, run


def timed(client: Client, url: str, repeat: int) -> tuple[float, float, int]:
    assert client.get(url).status_code == 200, url  # warm-up (report caches, templates)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], len(queries)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    try:
        call_command("migrate", verbosity=0)
        start = time.perf_counter()
        study, researcher, run = build()
        print(f"built in {time.perf_counter() - start:.1f} s", flush=True)
        client = Client()
        client.force_login(researcher)
        from reports import services
        from reports.review.links import judges_links

        data = judges_links(services.study_judges_vs_humans(study=study, run_id=run.pk, na="category"),
                            study_pk=study.pk, run_id=run.pk, na="category")
        comparison = data["groups"][0]["vs_consensus"][0]
        cell = comparison["matrix"]["links"][0][1]
        query = cell.split("?", 1)[1]
        code = "RV-0100"
        workloads = {
            "review-from-list": f"/reports/studies/{study.pk}/review/{code}/?{query}",
            "review-alone": f"/reports/studies/{study.pk}/review/{code}/?run={run.pk}",
            "confusion-cell-list": cell,
        }
        for name, url in workloads.items():
            median, p95, n_queries = timed(client, url, args.repeat)
            print(result_line(f"{name}-{N_RATERS}raters-{N_JUDGES}judges", ratio=median / GOAL_MS, median_ms=median, p95_ms=p95,
                              queries=n_queries, goal_ms=int(GOAL_MS), conversations=N_CONVERSATIONS), flush=True)
    finally:
        shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
