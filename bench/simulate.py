"""Benchmark the simulator: 64 conversations x 20 messages against FakeLLM at 200 ms per call.

How it runs: in-process, a pool of 16 threads each calling the task's service function
(``simulation_run_execute``) on one planned conversation at a time, exactly what a Celery
worker with 16 threads would run, minus the broker. Every call goes through litellm's real HTTP
path to the local fake server; every message is written to the database as it arrives.

Database: a fresh SQLite file (WAL) in a temporary folder by default, or PostgreSQL with
``--database-url postgres://...`` (the database is created if missing and emptied first).
Rate limits: local (in-process) unless ``--redis-url`` is given, then shared through Redis.

Reports: wall time; the ideal (calls x latency / concurrency) and the ratio; the process's
resident memory; and the per-call overhead the app adds on top of litellm (time inside a
conversation not spent in ``litellm.completion``: prompts, claim, lease, message writes, limiter),
plus litellm's own overhead over the server's 200 ms.

Run: .venv/bin/python bench/simulate.py [--conversations 64] [--messages 20] [--latency 0.2]
     [--concurrency 16] [--database-url postgres://postgres@127.0.0.1:5432/simbench] [--redis-url ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _fake_server:
    """Run FakeLLM in its own process so its threads do not share this process's GIL."""

    def __init__(self, latency: float) -> None:
        self.latency = latency

    def __enter__(self) -> _fake_server:
        import subprocess

        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from tests.support.fake_llm import FakeLLM\n"
            f"fake = FakeLLM(latency={self.latency!r}).start(); print(fake.base_url, flush=True)\n"
            "sys.stdin.read()\n"
        )
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = self.proc.stdout.readline().strip()
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def _setup_environment(args: argparse.Namespace) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "evalsite.settings.base"
    os.environ["DJANGO_DEBUG"] = "0"  # DEBUG would keep every SQL query in memory
    os.environ["DJANGO_LOG_LEVEL"] = "WARNING"
    os.environ["EVALSITE_VAR_DIR"] = tempfile.mkdtemp(prefix="simbench-")
    os.environ["BENCH_LLM_KEY"] = "sk-bench-not-a-real-key"
    os.environ["REDIS_URL"] = args.redis_url or ""
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
        _ensure_postgres_database(args.database_url)
    else:
        os.environ.pop("DATABASE_URL", None)


def _ensure_postgres_database(url: str) -> None:
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def _execute_chunk(run_ids: list[int], threads: int) -> dict:
    """Run conversations on a thread pool in this process; return timings, CPU and memory."""
    from django.db import connections

    from simulation.simulate import new_owner, simulation_run_execute


    cpu_before = _cpu_seconds()
    durations: dict[int, float] = {}

    def one(run_id: int) -> str:
        started = time.perf_counter()
        try:
            outcome = simulation_run_execute(run_id=run_id, owner=new_owner("bench"))
        finally:
            connections.close_all()
        durations[run_id] = time.perf_counter() - started
        return outcome.status

    from simulation.simulate import simulation_runs_execute_inline

    started = time.perf_counter()
    if os.environ.get("BENCH_PROFILE"):
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.enable()
        res = simulation_runs_execute_inline(run_ids=run_ids, threads=threads)
        prof.disable()
        prof.dump_stats(os.environ["BENCH_PROFILE"])
        pstats.Stats(prof).sort_stats("cumulative").print_stats(60)
    else:
        res = simulation_runs_execute_inline(run_ids=run_ids, threads=threads)
    outcomes = [o.status for o in res.values()]
    durations = {r: time.perf_counter() - started for r in run_ids}
    return {
        "durations": durations,
        "outcomes": outcomes,
        "cpu": _cpu_seconds() - cpu_before,
        "rss": _rss_mb(),
        "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=64)
    parser.add_argument("--messages", type=int, default=20, help="messages per conversation (even)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per fake LLM call")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--processes", type=int, default=1, help="split the threads over this many processes")
    parser.add_argument("--database-url", default="")
    parser.add_argument("--redis-url", default="")
    args = parser.parse_args()
    _setup_environment(args)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from corpus.models import Message, Target
    from corpus.personas.services import personas_import
    from simulation.batches import BatchSpec, UserAgent, simulation_batch_create
    from simulation.models import SimulationRun

    call_command("migrate", verbosity=0)
    personas_text = (ROOT / "tests/fixtures/vera/personas_small.tsv").read_text(encoding="utf-8")
    persona_set = personas_import(text=personas_text, file="personas_small.tsv").persona_set
    n_personas = persona_set.personas.count()
    repetitions = -(-args.conversations // n_personas)

    with _fake_server(args.latency) as fake:
        target = Target.objects.create(
            code="T-BENCH", model="openai/bench-chatbot", api_base=fake.base_url, api_key_env="BENCH_LLM_KEY",
            params={"temperature": 1.0}, system_prompt="Be supportive.", max_concurrent=args.concurrency,
        )
        spec = BatchSpec(
            protocol="vera-mh", persona_set_id=persona_set.pk, target_ids=(target.pk,), repetitions=repetitions,
            user_agent=UserAgent(
                model="openai/bench-user", api_base=fake.base_url, api_key_env="BENCH_LLM_KEY",
                params={"temperature": 1.0}, max_concurrent=args.concurrency,
            ),
            turns=args.messages,
        )
        batch = simulation_batch_create(spec=spec, dispatch=False)
        run_ids = list(batch.runs.order_by("id").values_list("pk", flat=True))[: args.conversations]
        batch.runs.exclude(pk__in=run_ids).delete()

        # Warm up litellm (import, client, cost map) outside the timed part.
        from simulation.llm import ModelSpec, chat

        chat(ModelSpec(model="openai/warmup", api_base=fake.base_url, api_key_env="BENCH_LLM_KEY"), [{"role": "user", "content": "hi"}])
        rss_before = _rss_mb()
        connections.close_all()  # children must not share the parent's database connection
        started = time.perf_counter()
        if args.processes == 1:
            results = [_execute_chunk(run_ids, args.concurrency)]
        else:
            import multiprocessing

            chunks = [run_ids[i :: args.processes] for i in range(args.processes)]
            threads = max(args.concurrency // args.processes, 1)
            with multiprocessing.get_context("fork").Pool(args.processes) as pool:
                results = pool.starmap(_execute_chunk, [(chunk, threads) for chunk in chunks])
        wall = time.perf_counter() - started

    durations = {k: v for r in results for k, v in r["durations"].items()}
    outcomes = [o for r in results for o in r["outcomes"]]
    cpu = sum(r["cpu"] for r in results)
    rss_after = [r["rss"] for r in results]
    peak = [r["peak"] for r in results]
    metas = list(Message.objects.filter(conversation__simulation_run__in=run_ids).values_list("meta", flat=True))
    latencies = [m["latency_ms"] / 1000 for m in metas if "latency_ms" in m]
    calls = len(latencies)
    done = sum(1 for o in outcomes if o == "done")
    ideal = calls * args.latency / args.concurrency
    app_overhead = (sum(durations.values()) - sum(latencies)) / calls
    litellm_overhead = statistics.mean(latencies) - args.latency
    messages = Message.objects.filter(conversation__simulation_run__in=run_ids).count()
    failed = SimulationRun.objects.filter(pk__in=run_ids).exclude(status="done").count()
    engine = "PostgreSQL" if args.database_url else "SQLite (WAL file)"
    print(f"simulate bench: {len(run_ids)} conversations x {args.messages} messages, {args.latency * 1000:.0f} ms per call, "
          f"{args.concurrency} threads in {args.processes} process(es), {engine}, {'Redis' if args.redis_url else 'local'} rate limiter")
    print(f"  conversations done     {done}/{len(run_ids)} ({failed} not done), messages stored {messages}, LLM calls {calls}")
    for run in SimulationRun.objects.filter(pk__in=run_ids).exclude(status="done")[:5]:
        print(f"  not done: run {run.pk} {run.status}: {run.error[:300]}")
    print(f"  wall time              {wall:8.2f} s")
    print(f"  ideal                  {ideal:8.2f} s  (calls x latency / concurrency)")
    print(f"  ratio                  {wall / ideal:8.2f}  (aim <= 1.2)")
    print(f"  app overhead per call  {app_overhead * 1000:8.1f} ms  (conversation time outside litellm.completion)")
    print(f"  litellm per call       {litellm_overhead * 1000:8.1f} ms  (mean call time over the server's {args.latency * 1000:.0f} ms)")
    print(f"  CPU of the app         {cpu * 1000 / calls:8.1f} ms per call  ({cpu:.1f} s in all; the fake server runs in its own process)")
    print(f"  memory (RSS)           {', '.join(f'{r:.0f}' for r in rss_after)} MB per process after the batch "
          f"(before {rss_before:.0f} MB, peak {', '.join(f'{p:.0f}' for p in peak)} MB)")


if __name__ == "__main__":
    main()
