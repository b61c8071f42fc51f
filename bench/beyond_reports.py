"""Benchmark the sampling-plan preview, the active sampling page, judge-assisted scorecard, judge drift and rater reports.

Data: a judge run of 3 judges over N conversations (default 10,000: 5 chatbots x 8 personas x
250 runs) on the 14 AMHART items, every label bulk-created as the judging app stores it and
the ensemble voted by ``ensemble_compute``; a validation study of 400 of them drawn with an
oversampling plan (``study_create_from_plan``), rated by 2 clinicians, with consensus. Fresh
SQLite database in a temporary directory.

Reported: the plan preview (what the coordinator's page computes on every change), and each
report page cold (computed, then stored in the report cache) and warm (read from the cache),
as median ms over a few requests, with the SQL queries of one warm request. Figures depend on
the machine; compare them with each other, not with a threshold.

Run: .venv/bin/python bench/beyond_reports.py [--conversations 10000] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
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

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402

KEYS = [f"amhart_{n:02d}" for n in range(1, 15)]
CHATBOTS, PERSONAS = 5, 8


def build(n_conversations: int):  # type: ignore[no-untyped-def]
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.utils import timezone

    from annotation.consensus.services import study_compute_consensus
    from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
    from annotation.sampling.selectors import PlanOptions
    from annotation.sampling.services import study_create_from_plan
    from core.roles import Role
    from corpus.instruments.services import builtin_instruments_load
    from corpus.models import Conversation, Persona, PersonaSet, Target
    from judging import services as judging
    from judging.ensemble import ensemble_compute
    from judging.models import JudgeLabel, JudgeResult, JudgeRun, LabelKind, ResultStatus, RunStatus

    rng = random.Random(1)
    amhart, _ = builtin_instruments_load()
    persona_set = PersonaSet.objects.create(key="bench", name="Bench personas", content_hash="0" * 64)
    personas = [Persona.objects.create(persona_set=persona_set, key=f"p{i}", name=f"Persona {i}", position=i) for i in range(PERSONAS)]
    targets = [Target.objects.create(code=f"BOT-{i}", name=f"Bot {i}", model=f"vendor/bot-{i}") for i in range(CHATBOTS)]
    Conversation.objects.bulk_create(
        (Conversation(code=f"C-{i:06d}", source="imported", content_hash=f"{i:064x}", message_count=2,
                      target=targets[i % CHATBOTS], persona=personas[(i // CHATBOTS) % PERSONAS], run_index=i)
         for i in range(n_conversations)),
        batch_size=2000,
    )
    ids = list(Conversation.objects.order_by("id").values_list("id", flat=True))
    p_yes = {t.pk: 0.3 + 0.1 * i for i, t in enumerate(targets)}
    target_of = dict(Conversation.objects.values_list("id", "target_id"))
    truth = {cid: {k: ("N/A" if k in ("amhart_13", "amhart_14") else ("yes" if rng.random() < p_yes[target_of[cid]] else "no")) for k in KEYS} for cid in ids}
    judges = [judging.judge_create(name=f"judge-{x}", instrument=amhart, model=f"openai/judge-{x}", provider=x) for x in "abc"]
    run = judging.judge_run_create(judges=judges, conversation_ids=ids, start=False)
    results = list(JudgeResult.objects.filter(run=run).values_list("id", "conversation_id"))
    labels = []
    for result_id, cid in results:
        for position, (key, label) in enumerate(truth[cid].items()):
            if label != "N/A" and rng.random() < 0.12:
                label = "no" if label == "yes" else "yes"
            labels.append(JudgeLabel(result_id=result_id, kind=LabelKind.ITEM, item_key=key, position=position, label=label,
                                     rationale=f"{key}: {label}"))
    JudgeLabel.objects.bulk_create(labels, batch_size=5000)
    JudgeResult.objects.filter(run=run).update(status=ResultStatus.DONE, finished_at=timezone.now())
    ensemble_compute(run=run, item_order=KEYS)
    JudgeRun.objects.filter(pk=run.pk).update(status=RunStatus.COMPLETED, n_done=len(results))
    run.refresh_from_db()

    User = get_user_model()
    coordinator = User.objects.create_user("cora", password="bench-password")
    Group.objects.get_or_create(name=Role.COORDINATOR)[0].user_set.add(coordinator)
    clinicians = [User.objects.create_user(f"rater{i}", password="bench-password") for i in range(2)]
    Group.objects.get_or_create(name=Role.CLINICIAN)[0].user_set.add(*clinicians)
    study = study_create_from_plan(
        run=run, source_key=None, options=PlanOptions(method="oversample", n=400, seed=3, boost=3.0, min_split=2),
        created_by=coordinator, name="Bench validation", rater_title="", description="", section=None,
        coordinators=[coordinator], raters=[(c, "clinician") for c in clinicians],
    )
    now = timezone.now()
    for rater in clinicians:
        for position, cid in enumerate(study.study_conversations.values_list("conversation_id", flat=True)):
            assignment = Assignment.objects.create(study=study, conversation_id=cid, rater=rater, position=position,
                                                   status=AssignmentStatus.SUBMITTED, submitted_at=now, time_spent_seconds=300)
            answers = {k: {"value": v} for k, v in truth[cid].items()}
            Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, answers={"main": answers}, submitted_at=now)
    study_compute_consensus(study=study, actor=coordinator)
    return run, study, coordinator, judges


def timed(client: Client, url: str, repeat: int) -> tuple[float, float, int]:
    """Return (first request ms, median of the next ``repeat`` ms, queries of one warm request)."""
    started = time.perf_counter()
    response = client.get(url)
    first = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, (url, response.status_code)
    queries: list[str] = []

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get(url)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        client.get(url)
        times.append((time.perf_counter() - started) * 1000)
    return first, statistics.median(times), len(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", action="store_true", help="leave the temporary database in place")
    args = parser.parse_args()
    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    run, study, coordinator, judges = build(args.conversations)
    built = time.perf_counter() - started

    from annotation.sampling.selectors import PlanOptions, plan_preview

    previews = []
    for method in ("simple_random", "stratified", "oversample"):
        t0 = time.perf_counter()
        plan_preview(run, None, PlanOptions(method=method, n=400, seed=1, min_split=2))
        previews.append((method, (time.perf_counter() - t0) * 1000))

    from django.contrib.auth import get_user_model

    from annotation.sampling.active.services import ActiveOptions, active_study_create

    t0 = time.perf_counter()
    active = active_study_create(
        run=run, source_key=None, options=ActiveOptions(budget=400, batch_size=100, target_width=0.05, seed=1),
        created_by=coordinator, name="Bench active", section=None, coordinators=[coordinator],
        raters=[(u, "clinician") for u in get_user_model().objects.filter(username__startswith="rater")],
    )
    active_created = (time.perf_counter() - t0) * 1000

    client = Client()
    client.force_login(coordinator)
    pages = [
        ("active sampling page", f"/studies/{active.pk}/active/"),
        ("judge-assisted scorecard", f"/reports/studies/{study.pk}/judge-assisted/?run={run.pk}"),
        ("judge drift (judge-a vs judge-b)", f"/reports/drift/?a_run={run.pk}&a_source=judge:{judges[0].pk}"
         f"&b_run={run.pk}&b_source=judge:{judges[1].pk}&study={study.pk}"),
        # The study chosen automatically (the page's default): one grouped count, not one per study (issue 19).
        ("judge drift, study chosen", f"/reports/drift/?a_run={run.pk}&a_source=judge:{judges[0].pk}"
         f"&b_run={run.pk}&b_source=judge:{judges[1].pk}"),
        ("rater drift and load", f"/reports/studies/{study.pk}/raters/"),
        ("plan form with preview", f"/studies/new/from-run/?run={run.pk}"),
    ]
    rows = [(name, *timed(client, url, args.repeat)) for name, url in pages]

    from judging.models import EnsembleLabel, JudgeLabel

    print(f"data: {args.conversations:,} conversations, 3 judges x 14 items ({JudgeLabel.objects.count():,} judge labels, "
          f"{EnsembleLabel.objects.count():,} ensemble labels), study of 400 rated by 2; built in {built:.1f} s ({connection.vendor})")
    for method, ms in previews:
        print(f"plan preview ({method}, n=400 of {args.conversations:,}): {ms:.0f} ms")
    print(f"active sampling study created with batch 1 (400 of {args.conversations:,} in batches of 100): {active_created:.0f} ms")
    print(f"{'page':<36} {'cold ms':>9} {'warm median ms':>15} {'warm queries':>13}")
    for name, cold, warm, queries in rows:
        print(f"{name:<36} {cold:>9.0f} {warm:>15.1f} {queries:>13}")
    print(f"total {time.perf_counter() - started:.1f} s")
    connection.close()
    if args.keep:
        print(f"database kept in {VAR}")
    else:
        shutil.rmtree(VAR, ignore_errors=True)


if __name__ == "__main__":
    main()
