"""Benchmark the simulator against the fake LLM server: wall time vs the ideal, CPU and memory.

Workload: ``--conversations`` VERA-MH conversations of ``--messages`` messages (both sides
through litellm's real HTTP path to the local fake server, ``--latency`` seconds per call),
``--concurrency`` conversations in flight, every message written to the database as it comes.

Modes (``--modes``, comma-separated; each runs in a fresh child process on a fresh database):

- ``inprocess``: the engine in this process (``simulation_runs_execute_inline``), the same
  coroutine a worker runs, minus the broker; ``--processes N`` forks N such processes that
  share the conversations (a stand-in for N worker processes).
- ``worker``: real Celery workers started as the README starts them (``celery -A evalsite
  worker --pool threads --concurrency C/N``, N = ``--processes``), the batch dispatched through
  the embedded filesystem broker.
- ``worker-redis``: the same through Redis (``--redis-url``, default db 14), whose limits are
  then shared by the workers through Redis as in production.
- ``bare``: litellm alone on the same fake server, same calls and concurrency
  (``bare-acompletion`` on one event loop, ``bare-completion`` on one thread per conversation).

Database: a SQLite file (WAL) in a temporary folder, or ``--database-url postgres://...``
(dropped and created afresh for each mode). Prints one ``RESULT`` line per mode (see
bench/common.py); ``BENCH_PROFILE=file`` writes a cProfile of the in-process run.

Run: .venv/bin/python bench/simulate.py --conversations 32 --concurrency 32
     .venv/bin/python bench/simulate.py --conversations 100 --concurrency 100 --processes 2
     .venv/bin/python bench/simulate.py --database-url postgres://postgres@127.0.0.1:5432/simbench --modes inprocess,worker-redis
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    FakeServer,
    Workers,
    against_floor,
    bare_loop,
    cpu_seconds,
    floors,
    postgres_database,
    result_line,
    rss_mb,
    spread,
    wait_until,
)

KEY_ENV = "BENCH_LLM_API_KEY"


def _child_environment(args: argparse.Namespace, mode: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="evalsite.settings.base",
        DJANGO_DEBUG="0",  # DEBUG would keep every SQL query in memory
        DJANGO_LOG_LEVEL="WARNING",
        EVALSITE_VAR_DIR=tempfile.mkdtemp(prefix=f"simbench-{mode}-"),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        HF_HUB_OFFLINE="1",
        REDIS_URL=args.redis_url if mode == "worker-redis" else "",
        # The fake LLM server listens on a loopback port: this machine's ports are allowed only
        # when listed (core.api_hosts), as an operator would approve a local model server's.
        EVALSITE_API_HOSTS="127.0.0.1:*",
    )
    env[KEY_ENV] = "sk-bench-not-a-real-key"
    if args.database_url:
        env["DATABASE_URL"] = args.database_url
    else:
        env.pop("DATABASE_URL", None)
    return env


# -- the child: one mode on a fresh database ---------------------------------------------------


def _plan(args: argparse.Namespace, fake_url: str, conversations: int, messages: int, dispatch: bool):  # type: ignore[no-untyped-def]
    from corpus.models import PersonaSet, Target
    from corpus.personas.services import personas_import
    from simulation.batch_spec import BatchSpec, UserAgent
    from simulation.batches import simulation_batch_create

    persona_set = PersonaSet.objects.filter(key__isnull=False).first()
    if persona_set is None:
        text = (ROOT / "tests/fixtures/vera/personas_small.tsv").read_text(encoding="utf-8")
        persona_set = personas_import(text=text, file="personas_small.tsv").persona_set
    n_personas = persona_set.personas.count()
    target, _ = Target.objects.get_or_create(
        code="T-BENCH",
        defaults=dict(
            model="openai/bench-chatbot", api_base=fake_url, api_key_env=KEY_ENV, params={"temperature": 1.0},
            system_prompt="Be supportive.", max_concurrent=args.concurrency,
        ),
    )
    spec = BatchSpec(
        protocol="vera-mh", persona_set_id=persona_set.pk, target_ids=(target.pk,),
        repetitions=-(-conversations // n_personas),
        user_agent=UserAgent(
            model="openai/bench-user", api_base=fake_url, api_key_env=KEY_ENV,
            params={"temperature": 1.0}, max_concurrent=args.concurrency,
        ),
        turns=messages,
    )
    batch = simulation_batch_create(spec=spec, dispatch=False)
    run_ids = list(batch.runs.order_by("id").values_list("pk", flat=True))[:conversations]
    batch.runs.exclude(pk__in=run_ids).delete()
    if dispatch:
        from simulation.batches import simulation_batch_resume

        simulation_batch_resume(batch_id=batch.pk)  # queues every queued run (on commit)
    return batch, run_ids


def _inprocess_chunk(run_ids: list[int], concurrency: int) -> dict:
    from django.db import connections

    from simulation.simulate import simulation_runs_execute_inline

    connections.close_all()
    cpu0 = cpu_seconds()
    if os.environ.get("BENCH_PROFILE"):
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
        outcomes = simulation_runs_execute_inline(run_ids=run_ids, threads=concurrency)
        profile.disable()
        profile.dump_stats(os.environ["BENCH_PROFILE"])
    else:
        outcomes = simulation_runs_execute_inline(run_ids=run_ids, threads=concurrency)
    return {"cpu": cpu_seconds() - cpu0, "rss": rss_mb(), "outcomes": [o.status for o in outcomes.values()]}


def child(args: argparse.Namespace) -> None:
    import django

    if args.database_url:
        postgres_database(args.database_url)
    django.setup()
    from django.core.management import call_command
    from django.db import connections
    from django.db.models import Max, Sum

    from corpus.models import Message
    from simulation.models import SimulationRun

    call_command("migrate", verbosity=0)
    mode, fake_url = args.child, args.fake_url
    calls = args.conversations * args.messages
    ideal = calls * args.latency / args.concurrency
    db_name = "postgresql" if args.database_url else "sqlite"
    workload = f"simulate-{args.conversations}x{args.messages}-c{args.concurrency}"
    extra: dict = {}
    if mode == "inprocess":
        # Warm-up outside the timing: litellm's import, its lazy imports and the cost map.
        _warm, warm_ids = _plan(args, fake_url, 2, 2, dispatch=False)
        from simulation.simulate import simulation_runs_execute_inline

        simulation_runs_execute_inline(run_ids=warm_ids, threads=2)
        _batch, run_ids = _plan(args, fake_url, args.conversations, args.messages, dispatch=False)
        connections.close_all()
        started = time.perf_counter()
        if args.processes == 1:
            results = [_inprocess_chunk(run_ids, args.concurrency)]
        else:
            import multiprocessing

            chunks = [run_ids[i :: args.processes] for i in range(args.processes)]
            with multiprocessing.get_context("fork").Pool(args.processes) as pool:
                results = pool.starmap(_inprocess_chunk, [(c, max(args.concurrency // args.processes, 1)) for c in chunks])
        wall = time.perf_counter() - started
        cpu = sum(r["cpu"] for r in results)
        rss = [r["rss"] for r in results]
    else:
        workers = Workers(os.environ.copy(), Path(os.environ["EVALSITE_VAR_DIR"]))
        workers.start(args.processes, max(args.concurrency // args.processes, 1))
        try:
            warm, warm_ids = _plan(args, fake_url, 2 * args.processes, 2, dispatch=True)
            ok = wait_until(lambda: not SimulationRun.objects.filter(pk__in=warm_ids, status__in=SimulationRun.ACTIVE).exists(), 120)
            if not ok:
                raise SystemExit("the workers did not run the warm-up batch:\n" + workers.logs())
            batch, run_ids = _plan(args, fake_url, args.conversations, args.messages, dispatch=False)
            cpu0 = workers.cpu()
            cpu_each0, tasks0 = workers.cpu_each(), workers.task_counts()
            from django.utils import timezone

            started_at = timezone.now()
            started = time.perf_counter()
            from simulation.batches import simulation_batch_resume

            simulation_batch_resume(batch_id=batch.pk)
            done = wait_until(
                lambda: not SimulationRun.objects.filter(pk__in=run_ids, status__in=SimulationRun.ACTIVE).exists(),
                max(ideal * 20, 120),
            )
            polled = time.perf_counter() - started
            cpu = workers.cpu() - cpu0
            rss = workers.rss()
            last = SimulationRun.objects.filter(pk__in=run_ids).aggregate(last=Max("finished_at"))["last"]
            wall = (last - started_at).total_seconds() if last and done else polled
            if not done:
                print(workers.logs(), file=sys.stderr)
            if args.processes > 1:
                extra.update(spread(workers, tasks0, cpu_each0))
        finally:
            workers.stop()
        results = []
    runs = SimulationRun.objects.filter(pk__in=run_ids)
    counted = runs.aggregate(calls=Sum("calls"), failed_calls=Sum("failed_calls"))
    calls_made = counted["calls"] or calls
    not_done = [(r.pk, r.status, r.error[:200]) for r in runs.exclude(status="done")[:3]]
    messages = Message.objects.filter(conversation__simulation_run__in=run_ids).count()
    extra["done"] = f"{runs.filter(status='done').count()}/{len(run_ids)}"
    # Every failed attempt (retried or not) the runs recorded, and the conversations that failed.
    extra["errors"] = counted["failed_calls"] or 0
    extra["failed"] = runs.filter(status="failed").count()
    # Work done twice: a conversation claimed more than once (a redelivered or duplicated message
    # that got past the claim), or more messages stored than planned.
    extra["duplicated"] = (runs.aggregate(a=Sum("attempts"))["a"] or 0) - runs.exclude(attempts=0).count()
    extra["extra_messages"] = max(messages - len(run_ids) * args.messages, 0)
    print(
        result_line(
            workload, mode=mode if args.processes == 1 else f"{mode}x{args.processes}", db=db_name,
            ratio=wall / ideal, cpu_ms_per_call=cpu * 1000 / calls_made,
            rss_mb="/".join(f"{r:.0f}" for r in rss), wall_s=wall, ideal_s=ideal, calls=calls_made,
            messages=messages, **extra,
        ),
        flush=True,
    )
    if not_done:
        print(f"  not done: {not_done}", file=sys.stderr)


# -- the parent: every mode, side by side -------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=32)
    parser.add_argument("--messages", type=int, default=20, help="messages per conversation (even)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per fake LLM call")
    parser.add_argument("--concurrency", type=int, default=32, help="conversations in flight")
    parser.add_argument("--processes", type=int, default=1, help="split them over this many processes/workers")
    parser.add_argument("--modes", default="bare,inprocess,worker,worker-redis")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--fail-every", type=int, default=0, help="the fake server answers every K-th request with a 500")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--fake-url", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    fake = FakeServer(args.latency, fail_every_k=args.fail_every)
    print(
        f"simulate bench: {args.conversations} conversations x {args.messages} messages, "
        f"{args.latency * 1000:.0f} ms per call, {args.concurrency} in flight over {args.processes} process(es), "
        f"{'PostgreSQL' if args.database_url else 'SQLite'}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    floor_walls: dict[str, float] = {}
    try:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            workload = f"simulate-{args.conversations}x{args.messages}-c{args.concurrency}"
            if mode == "bare":
                os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                try:
                    bare = bare_loop(
                        fake.base_url, conversations=args.conversations, messages=args.messages,
                        concurrency=args.concurrency, latency=args.latency, workload=workload,
                    )
                    floor_walls.update(floors(bare))
                    print(bare, flush=True)
                except Exception as exc:  # a mode that cannot finish still says so, and the others run
                    print(result_line(workload, mode="bare", error=type(exc).__name__), flush=True)
                    print(f"bare: {exc}", file=sys.stderr)
                continue
            if mode == "worker-redis":
                import redis

                redis.Redis.from_url(args.redis_url).flushdb()  # this benchmark's own Redis db
            command = [sys.executable, __file__, "--child", mode, "--fake-url", fake.base_url]
            for name in ("conversations", "messages", "latency", "concurrency", "processes", "database_url", "redis_url"):
                command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
            done = subprocess.run(command, env=_child_environment(args, mode), capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
            print("\n".join(against_floor(lines, floor_walls)) if lines else result_line(workload, mode=mode, error=f"exit-{done.returncode}-see-below"), flush=True)
            if done.returncode != 0 or not lines:
                print(done.stderr[-3000:], file=sys.stderr)
            elif any("not done" in line for line in done.stderr.splitlines()):
                print("\n".join(line for line in done.stderr.splitlines() if "not done" in line), file=sys.stderr)
    finally:
        fake.close()
    print(json.dumps({"note": "ratio = wall / (calls x latency / concurrency); figures on a shared machine are provisional"}))


if __name__ == "__main__":
    main()
