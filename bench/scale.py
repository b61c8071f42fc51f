"""Benchmark the app at VERA-MH's scale on PostgreSQL + Redis with two real Celery workers (issue 32).

Workloads, in this order (``--only`` picks some; a workload's data prerequisites run with it):

1. ``import``: 10,000 conversations x 20 turns, written as an evalsite JSONL file and imported
   with ``manage.py import_conversations`` (the importer the upload page and the API call);
2. ``simulate``: 1,000 VERA-MH conversations x 20 messages against the fake LLM server
   (200 ms a call), through the workers;
3. ``study``: 2,000 of the imported conversations, 30 clinicians, k = 3: the assignment
   (``study_assign``), 6,000 ratings as a long-format CSV through ``manage.py import_ratings``,
   then the consensus as the app computes it (a background job the workers run);
4. ``judge``: 3 checklist judges (AMHART) over the 10,000 imported conversations (30,000
   judgements against the fake server), through the workers;
5. ``pages``: every report page cold (nothing cached: the page answers 202 while a worker
   computes it, and is asked again until it answers) and warm (the median of ``--repeat``
   requests), the drill-down lists, the review page, the study export and the publication
   bundle, by HTTP GET with Django's test Client logged in as the study's researcher, in a web
   process of their own (``bench/scale_pages.py``); then the bundle imported into a fresh
   database with ``manage.py import_bundle``;
6. ``memory``: the peak RSS (VmHWM) of the web process, each worker and each command.

``--scale F`` multiplies every count (conversations, raters, judged conversations; never the
20 turns); ``--scale 0.05`` is a quick run. Each workload prints ``RESULT workload=...`` lines
(bench/common.py) with ``wall_s``, its ``target``, ``goal=met|missed`` and, when missed,
``why``. The database (``--database-url``, default ``bench_scale`` on 127.0.0.1) and its
``_bundle`` copy are created afresh and dropped at the end (``--keep`` keeps them); the Redis
database is a free one of ``--redis-url``'s server, taken by lease (tests/support/redis_lease.py)
and flushed.

Run: nice -n 10 .venv/bin/python bench/scale.py [--scale 1.0] [--only import,study,pages]
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import FakeServer, Workers, postgres_database, result_line, wait_until  # noqa: E402
from bench.judge import CHECKLIST_JUDGES, FAKE_SETUP  # noqa: E402
from bench.scale_data import (  # noqa: E402
    KEY_ENV,
    MEMORY_GOAL_MB,
    NEEDS,
    TURNS,
    WORKLOADS,
    Counts,
    memory_line,
    peak_mb,
    run_measured,
    selected_workloads,
    verdict,
    write_conversations,
    write_ratings,
)
from bench.simulate import KEY_ENV as SIMULATION_KEY_ENV  # noqa: E402

# The fake server keeps no request: 50,000 of them would only grow its memory.
FORGET_REQUESTS = "class _Forget(list):\n    def append(self, item): pass\nfake._requests = _Forget()\n"
PASSWORD = "bench-Scale-passw0rd"


@dataclass
class Bench:
    args: argparse.Namespace
    counts: Counts
    env: dict[str, str]
    var: Path
    fake_url: str
    workers: Workers
    peaks: dict[str, float] = field(default_factory=dict)  # process: peak RSS in MB
    conversation_ids: list[int] = field(default_factory=list)
    study_id: int | None = None
    run_id: int | None = None
    users: dict[str, Any] = field(default_factory=dict)

    @property
    def concurrency(self) -> int:
        return self.args.concurrency

    def manage(self, name: str, *arguments: str, env: dict[str, str] | None = None) -> tuple[float, str]:
        """Run ``manage.py name arguments``; record its peak RSS; return (wall seconds, output)."""
        wall, peak, output = run_measured(["manage.py", name, *arguments], env or self.env)
        self.peaks[f"{name}_mb"] = max(peak, self.peaks.get(f"{name}_mb", 0.0))
        return wall, output


@functools.cache
def _password() -> str:
    from django.contrib.auth.hashers import make_password

    return make_password(PASSWORD)  # hashed once for every user: setup, not the benchmark


def _user(username: str, role: str) -> Any:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    user = get_user_model().objects.create(username=username, password=_password())
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def step_import(b: Bench) -> str:
    from corpus.models import Conversation, Message
    from corpus.personas.services import personas_import

    text = (ROOT / "tests/fixtures/vera/personas_small.tsv").read_text(encoding="utf-8")
    persona_set = personas_import(text=text, file="personas_small.tsv").persona_set
    keys = list(persona_set.personas.order_by("position").values_list("key", flat=True))
    path = b.var / "conversations.jsonl"
    write_conversations(path, b.counts.conversations, persona_set.key, keys)
    wall, _ = b.manage("import_conversations", str(path), "--format", "jsonl")
    imported = Conversation.objects.filter(source=Conversation.Source.IMPORTED, external_id__startswith="scale-")
    b.conversation_ids = list(imported.order_by("id").values_list("pk", flat=True))
    messages = Message.objects.filter(conversation__in=imported).count()
    rate = len(b.conversation_ids) / wall
    peak = b.peaks["import_conversations_mb"]
    why = []
    if rate < 100:
        why.append(f"{rate:.0f}_conversations/s")
    if peak > MEMORY_GOAL_MB:
        why.append(f"peak_{peak:.0f}MB")
    return result_line(
        "import", conversations=len(b.conversation_ids), messages=messages, turns=TURNS,
        file_mb=path.stat().st_size / 2**20, wall_s=wall, rate_per_s=rate, peak_rss_mb=peak,
        target=f"rate>=100/s,rss<={MEMORY_GOAL_MB:.0f}MB", **verdict(not why, ",".join(why)),
    )


def step_simulate(b: Bench) -> str:
    from django.db.models import Max, Sum
    from django.utils import timezone

    from bench.simulate import _plan
    from corpus.models import Message
    from simulation.batches import simulation_batch_resume
    from simulation.models import SimulationRun

    n = b.counts.simulated
    batch, run_ids = _plan(SimpleNamespace(concurrency=b.concurrency), b.fake_url, n, TURNS, dispatch=False)
    calls = n * TURNS
    ideal = calls * b.args.latency / b.concurrency
    cpu0 = b.workers.cpu()
    started_at, started = timezone.now(), time.perf_counter()
    simulation_batch_resume(batch_id=batch.pk)
    active = SimulationRun.objects.filter(pk__in=run_ids, status__in=SimulationRun.ACTIVE)
    done = wait_until(lambda: not active.exists(), max(ideal * 20, 600), every=0.5)
    cpu = b.workers.cpu() - cpu0
    runs = SimulationRun.objects.filter(pk__in=run_ids)
    last = runs.aggregate(last=Max("finished_at"))["last"]
    wall = (last - started_at).total_seconds() if last and done else time.perf_counter() - started
    counted = runs.aggregate(calls=Sum("calls"), failed_calls=Sum("failed_calls"))
    ratio = wall / ideal
    why = "" if done else "not_finished_in_time"
    failure = runs.filter(status="failed").exclude(error="").values_list("error", flat=True).first()
    if failure:
        why = f"failed:{failure[:80]}"
    if done and not failure and ratio > 1.25:
        why = f"cpu_{cpu:.0f}s_on_{os.cpu_count()}_cores_vs_ideal_{ideal:.0f}s" if cpu > ideal else "latency_or_queueing"
    return result_line(
        f"simulate-{n}x{TURNS}-c{b.concurrency}", conversations=n, done=f"{runs.filter(status='done').count()}/{n}",
        failed=runs.filter(status="failed").count(), calls=counted["calls"] or 0, errors=counted["failed_calls"] or 0,
        messages=Message.objects.filter(conversation__simulation_run__in=run_ids).count(),
        wall_s=wall, ideal_s=ideal, ratio=ratio, cpu_ms_per_call=cpu * 1000 / max(counted["calls"] or calls, 1),
        target="ratio<=1.25", **verdict(not why, why),
    )


def step_study(b: Bench) -> str:
    from annotation.consensus.jobs import ACTIVE, consensus_request
    from annotation.models import ConsensusJob, ConsensusLabel, Rating, Study
    from annotation.studies.services import study_add_member, study_assign, study_create
    from core.roles import Role
    from corpus.instruments.services import builtin_instruments_load

    c = b.counts
    coordinator, researcher = _user("scale-coord", Role.COORDINATOR), _user("scale-researcher", Role.RESEARCHER)
    raters = [_user(f"scale-rater{i:02d}", Role.CLINICIAN) for i in range(c.raters)]
    b.users.update(coordinator=coordinator, researcher=researcher)
    amhart, section = builtin_instruments_load()
    study = study_create(
        name=f"Scale study ({c.study} conversations)", instrument=amhart, section=section,
        conversation_ids=b.conversation_ids[: c.study], created_by=coordinator, coordinators=[coordinator],
        raters=[(r, "clinician") for r in raters], raters_per_conversation=c.k,
    )
    study_add_member(study=study, user=researcher, role="researcher", actor=coordinator)
    b.study_id = study.pk
    started = time.perf_counter()
    assigned = study_assign(study=study, actor=coordinator, seed=7)
    assign_s = time.perf_counter() - started
    path = b.var / "ratings.csv"
    keys = list(amhart.items.order_by("position").values_list("key", flat=True))
    n_rows = write_ratings(path, study, keys)
    import_s, _ = b.manage("import_ratings", str(path), "--study", str(study.pk), "--actor", coordinator.username)
    ratings = Rating.objects.filter(assignment__study=study, status="submitted").count()
    # The consensus as the app computes it: the page's POST records a job; a worker computes it.
    started = time.perf_counter()
    job = consensus_request(study=Study.objects.get(pk=study.pk), actor=coordinator)
    request_s = time.perf_counter() - started
    finished = wait_until(lambda: not ConsensusJob.objects.filter(pk=job.pk, status__in=ACTIVE).exists(), 1800, every=0.2)
    consensus_s = time.perf_counter() - started
    job.refresh_from_db()
    why = []
    for label, seconds, goal in (("assign", assign_s, 10), ("ratings_import", import_s, 60), ("consensus", consensus_s, 60)):
        if seconds > goal:
            why.append(f"{label}_{seconds:.0f}s>{goal}s")
    if request_s > 0.5:
        why.append(f"consensus_request_{request_s * 1000:.0f}ms")
    if not finished or job.status != "ready":
        why.append(f"consensus_{job.status}")
    peak = b.peaks["import_ratings_mb"]
    if peak > MEMORY_GOAL_MB:
        why.append(f"ratings_import_peak_{peak:.0f}MB")
    return result_line(
        "study", conversations=c.study, raters=c.raters, k=c.k, assignments=assigned["n_assignments"],
        csv_rows=n_rows, ratings=ratings, consensus_labels=ConsensusLabel.objects.filter(study=study).count(),
        consensus_status=job.status, assign_s=assign_s, ratings_import_s=import_s, ratings_import_rss_mb=peak,
        consensus_request_ms=request_s * 1000, consensus_s=consensus_s, wall_s=assign_s + import_s + consensus_s,
        target="assign<=10s,ratings_import<=60s,consensus_request<=500ms,consensus<=60s",
        **verdict(not why, ",".join(why)),
    )


def step_judge(b: Bench) -> str:
    from django.db.models import Max, Sum
    from django.utils import timezone

    from corpus.instruments.services import builtin_instruments_load
    from judging.judges import judge_create
    from judging.models import JudgeLabel, JudgeRun
    from judging.runs import judge_run_create

    amhart = builtin_instruments_load()[0]
    judges = [
        judge_create(name=name, instrument=amhart, model=f"openai/{name}", provider=provider, api_base=b.fake_url,
                     api_key_env=KEY_ENV, max_concurrent=b.concurrency)
        for name, provider in zip(CHECKLIST_JUDGES, ("openai", "anthropic", "google"), strict=True)
    ]
    ids = b.conversation_ids
    ideal = len(judges) * len(ids) * b.args.latency / b.concurrency
    cpu0 = b.workers.cpu()
    started_at, started = timezone.now(), time.perf_counter()
    run = judge_run_create(judges=judges, conversation_ids=ids, start=True, name="Scale: three judges",
                           created_by=b.users.get("researcher"))
    b.run_id = run.pk
    finished = wait_until(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, max(ideal * 20, 600), every=0.5)
    cpu = b.workers.cpu() - cpu0
    run = JudgeRun.objects.get(pk=run.pk)
    last = run.results.aggregate(last=Max("finished_at"))["last"]
    wall = (last - started_at).total_seconds() if last and finished else time.perf_counter() - started
    calls = run.n_calls
    ratio = wall / ideal
    why = "" if finished else "not_finished_in_time"
    if finished and ratio > 1.25:
        why = f"cpu_{cpu:.0f}s_on_{os.cpu_count()}_cores_vs_ideal_{ideal:.0f}s" if cpu > ideal else "latency_or_queueing"
    return result_line(
        f"judge-3x{len(ids)}-c{b.concurrency}", judges=len(judges), conversations=len(ids), results=run.results.count(),
        done=run.results.filter(status="done").count(), labels=JudgeLabel.objects.filter(result__run=run).count(),
        status=run.status, calls=calls, errors=run.n_failed_calls, failed=run.n_failed,
        duplicated=(run.results.aggregate(a=Sum("attempts"))["a"] or 0) - run.results.exclude(attempts=0).count(),
        wall_s=wall, ideal_s=ideal, ratio=ratio, cpu_ms_per_call=cpu * 1000 / max(calls, 1),
        target="ratio<=1.25", **verdict(not why, why),
    )


def step_pages(b: Bench) -> str:
    bundle = b.var / "bundle.zip"
    command = [str(ROOT / "bench" / "scale_pages.py"), "--study", str(b.study_id), "--run", str(b.run_id),
               "--researcher", b.users["researcher"].username, "--password", PASSWORD, "--repeat", str(b.args.repeat), "--bundle-out", str(bundle)]
    wall, peak, output = run_measured(command, b.env, check=False)
    b.peaks["web_mb"] = peak
    lines = [line for line in output.splitlines() if line.startswith("RESULT")]
    if not bundle.exists():
        print(output[-3000:], file=sys.stderr)
        return "\n".join(lines + [result_line("bundle-import", error="no-bundle-exported")])
    bundle_env = {**b.env, "DATABASE_URL": b.args.bundle_database_url}
    import_s, output = b.manage("import_bundle", str(bundle), env=bundle_env)
    peak = b.peaks["import_bundle_mb"]
    why = [f"{import_s:.0f}s>60s"] if import_s > 60 else []
    if peak > MEMORY_GOAL_MB:
        why.append(f"peak_{peak:.0f}MB")
    found = re.search(r"(\d+) conversation\(s\), (\d+) rating\(s\), (\d+) consensus label\(s\), (\d+) judge run", output)
    carried = dict(zip(("conversations", "ratings", "consensus_labels", "judge_runs"), found.groups(), strict=True)) if found else {"error": "no-summary-line"}
    lines.append(result_line(
        "bundle-import", wall_s=import_s, peak_rss_mb=peak, bundle_mb=bundle.stat().st_size / 2**20,
        **carried, target=f"<=60s,rss<={MEMORY_GOAL_MB:.0f}MB",
        **verdict(not why, ",".join(why)),
    ))
    return "\n".join(lines)


STEPS = {"import": step_import, "simulate": step_simulate, "study": step_study, "judge": step_judge, "pages": step_pages}


def reuse_state(b: Bench) -> None:
    """Read the earlier run's data: the imported conversations, the study, the judge run, the users."""
    from django.contrib.auth import get_user_model

    from annotation.models import Study
    from corpus.models import Conversation
    from judging.models import JudgeRun

    imported = Conversation.objects.filter(source=Conversation.Source.IMPORTED, external_id__startswith="scale-")
    b.conversation_ids = list(imported.order_by("id").values_list("pk", flat=True))
    b.study_id = Study.objects.filter(name__startswith="Scale study").order_by("-pk").values_list("pk", flat=True).first()
    b.run_id = JudgeRun.objects.filter(name="Scale: three judges").order_by("-pk").values_list("pk", flat=True).first()
    users = {u.username: u for u in get_user_model().objects.filter(username__in=["scale-coord", "scale-researcher"])}
    b.users.update(coordinator=users.get("scale-coord"), researcher=users.get("scale-researcher"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every count (0.05: a quick run)")
    parser.add_argument("--only", default="", help=f"comma-separated, of {', '.join(WORKLOADS)} (their prerequisites run too)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per fake LLM call")
    parser.add_argument("--concurrency", type=int, default=32, help="LLM calls in flight (split over the two workers)")
    parser.add_argument("--repeat", type=int, default=5, help="warm requests per page")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_scale")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379", help="the server; a free database is leased")
    parser.add_argument("--keep", action="store_true", help="keep the databases and the temporary folder")
    parser.add_argument("--reuse", action="store_true",
                        help="run only the --only workloads on the data an earlier run left in --database-url (kept, never dropped)")
    args = parser.parse_args()
    if args.scale <= 0:
        raise SystemExit("--scale must be positive")
    args.bundle_database_url = args.database_url + "_bundle"
    todo = selected_workloads(args.only, reuse=args.reuse)
    counts = Counts.at(args.scale)

    from tests.support import redis_lease

    own = redis_lease.url_db(args.redis_url)
    lease = redis_lease.acquire(args.redis_url, [db for db in range(15, 0, -1) if db != own])
    lease.flush()
    var = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    if not args.reuse:
        postgres_database(args.database_url)
    env = {
        **os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings.base", "DATABASE_URL": args.database_url,
        "REDIS_URL": lease.url, "EVALSITE_VAR_DIR": str(var), "DJANGO_DEBUG": "0", "EVALSITE_DEBUG": "0",
        "DJANGO_LOG_LEVEL": "WARNING", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1",
        # The fake LLM server's loopback port, allowed as an operator would allow a local model server.
        "EVALSITE_API_HOSTS": "127.0.0.1:*", KEY_ENV: "sk-bench-not-a-real-key", SIMULATION_KEY_ENV: "sk-bench-not-a-real-key",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    call_command("migrate", verbosity=0)
    connections.close_all()
    if args.reuse:  # an empty migrated database for the bundle's import
        postgres_database(args.bundle_database_url)
        run_measured(["manage.py", "migrate", "--noinput", "-v0"], {**os.environ, "DATABASE_URL": args.bundle_database_url})
    else:
        postgres_database(args.bundle_database_url, template=args.database_url.rpartition("/")[2])  # migrated, empty
    print(f"scale bench: scale {args.scale} ({counts.describe()}), workloads {','.join(todo)}, "
          f"{args.latency * 1000:.0f} ms per call, {args.concurrency} in flight over two workers; "
          f"PostgreSQL, Redis db {lease.db}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}", flush=True)
    fake = FakeServer(args.latency, setup=FAKE_SETUP + FORGET_REQUESTS)
    workers = Workers(dict(os.environ), var)
    workers.start(2, max(args.concurrency // 2, 1))
    bench = Bench(args, counts, dict(os.environ), var, fake.base_url, workers)
    if args.reuse:
        reuse_state(bench)
    failed: set[str] = set()
    started = time.perf_counter()
    try:
        for name in todo:
            missing = [need for need in NEEDS[name] if need in failed]
            if missing:
                failed.add(name)
                print(result_line(name, error=f"skipped:{'+'.join(missing)}-failed"), flush=True)
                continue
            try:
                print(STEPS[name](bench), flush=True)
            except Exception as exc:  # one workload's failure is its RESULT line; the others still run
                failed.add(name)
                print(result_line(name, error=f"{type(exc).__name__}:{str(exc)[:120]}".replace(" ", "_")), flush=True)
                print(workers.logs()[-3000:], file=sys.stderr)
        worker_peaks = {f"worker{i}_mb": peak_mb(p.pid) for i, p in enumerate(workers.procs)}
        print(memory_line({**worker_peaks, **bench.peaks}), flush=True)
        print(f"scale bench: done in {time.perf_counter() - started:.0f} s", flush=True)
    finally:
        workers.stop()
        fake.close()
        connections.close_all()
        lease.release()
        if not args.keep:
            if not args.reuse:
                postgres_database(args.database_url, drop_only=True)
            postgres_database(args.bundle_database_url, drop_only=True)
            shutil.rmtree(var, ignore_errors=True)
        else:
            print(f"kept: {args.database_url}, {args.bundle_database_url}, {var}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
