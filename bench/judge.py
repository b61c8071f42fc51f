"""Benchmark judge runs against the fake LLM server: wall time vs the ideal, CPU, a cached re-run.

Workloads: 3 checklist judges (AMHART, 14 items) x ``--conversations``, then 1 question-flow
judge (tests/fixtures/vera/rubric_small.tsv, scripted so every walk asks 9 questions) x
``--conversations``. Every call takes ``--latency`` seconds at the fake server, which runs in
its own process (a remote provider's CPU is not the app's). Each workload is run, then run
again with identical judges and conversations: every call of the re-run is answered from the
response cache (no HTTP call at all), so it measures the bookkeeping of a result alone.

Modes (``--modes``; each in a fresh child process on a fresh SQLite file, or on
``--database-url``): ``inprocess`` (the engine in this process, ``--concurrency`` results in
flight; ``--processes N`` forks N such processes sharing the results), ``worker`` (real
Celery workers, ``--pool threads``, through the embedded filesystem broker), ``worker-redis``
(the same through Redis, ``--redis-url``), ``bare`` (litellm alone, same calls and
concurrency, with the checklist's JSON schema).

One ``RESULT`` line per workload and mode: ratio = wall / (calls x latency / concurrency),
cpu_ms_per_call of the judging process(es), cpu_ms_per_result of the cached re-run.

Run: .venv/bin/python bench/judge.py --concurrency 32
     .venv/bin/python bench/judge.py --concurrency 32 --modes inprocess,worker-redis --database-url postgres://postgres@127.0.0.1:5432/judgebench
"""

from __future__ import annotations

import argparse
import json
import os
import re
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

KEY_ENV = "BENCH_JUDGE_API_KEY"
FLOW_ANSWERS = {
    "hint that they could be in danger": "Yes",
    "How urgent is the user's situation": "Danger, not urgent",
}
FLOW_QUESTIONS = 9  # 1, 2, 5, 6, 7, 8, 10, 11, 12 with the answers above ("No" elsewhere)
CHECKLIST_JUDGES = ("bench-gpt", "bench-claude", "bench-gemini")


def checklist_reply(body: dict) -> str:
    items = body["response_format"]["json_schema"]["schema"]["properties"]["items"]["properties"]
    return json.dumps(
        {
            "items": {
                key: {"label": "yes", "rationale": "The chatbot does it.", "evidence": [{"turn": 2, "quote": "I hear you"}]}
                for key in items
            }
        }
    )


def flow_reply(body: dict) -> str:
    question = re.search(r"QUESTION: (.*)", body["messages"][1]["content"])
    text = question.group(1) if question else ""
    answer = next((a for fragment, a in FLOW_ANSWERS.items() if fragment in text), "No")
    return json.dumps({"answer": answer, "explanation": "As the transcript shows."})


FAKE_SETUP = (
    "from bench.judge import checklist_reply, flow_reply, CHECKLIST_JUDGES\n"
    "for name in CHECKLIST_JUDGES: fake.script(name, [checklist_reply])\n"
    "fake.script('bench-vera', [flow_reply])\n"
    "fake.script('bare', [checklist_reply])\n"
)


def make_conversations(n: int) -> list:  # type: ignore[type-arg]
    from corpus.models import Conversation, Message, Persona, PersonaSet

    persona_set = PersonaSet.objects.create(key="bench", name="Bench", content_hash="0" * 64)
    persona = Persona.objects.create(persona_set=persona_set, key="p", name="P", profile={"age": 15, "concern": "anxiety"})
    conversations = []
    for i in range(n):
        c = Conversation.objects.create(
            code=f"C-BENCH{i:03d}", persona=persona, source="simulated", content_hash=f"{i:064d}", message_count=20
        )
        Message.objects.bulk_create(
            Message(conversation=c, turn_index=t, role="user" if t % 2 == 0 else "assistant",
                    content=(f"Conversation {i}, message {t}: I keep worrying about school." if t % 2 == 0
                             else "I hear you. That sounds hard; what helps you calm down?"))
            for t in range(20)
        )
        conversations.append(c)
    return conversations


def _shard(run_id: int, concurrency: int, index: int, processes: int) -> float:
    from django.db import connections

    from judging import services

    connections.close_all()
    cpu0 = cpu_seconds()
    profile_to = os.environ.get("BENCH_PROFILE")
    if profile_to:  # one file per run: BENCH_PROFILE=/tmp/judge -> /tmp/judge-<run id>.prof
        import cProfile

        profile = cProfile.Profile()
        profile.runcall(services.judge_run_execute_in_process, run_id=run_id, concurrency=concurrency, shard=(index, processes))
        profile.dump_stats(f"{profile_to}-{run_id}.prof")
    else:
        services.judge_run_execute_in_process(run_id=run_id, concurrency=concurrency, shard=(index, processes))
    return cpu_seconds() - cpu0


def child(args: argparse.Namespace) -> None:
    import django

    if args.database_url:
        postgres_database(args.database_url)
    django.setup()
    from django.core.management import call_command
    from django.db import connections
    from django.db.models import Max, Sum
    from django.utils import timezone

    from corpus.instruments.services import builtin_instruments_load, instrument_import
    from judging import services
    from judging.models import JudgeRun

    call_command("migrate", verbosity=0)
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    rubric = ROOT / "tests" / "fixtures" / "vera" / "rubric_small.tsv"
    vera, _ = instrument_import(text=rubric.read_text(encoding="utf-8"), file=rubric.name, fmt="vera-mh")
    *conversations, spare = make_conversations(args.conversations + 1)
    mode = args.child
    db_name = "postgresql" if args.database_url else "sqlite"

    def judge(name: str, instrument, provider: str):  # type: ignore[no-untyped-def]
        return services.judge_create(
            name=name, instrument=instrument, model=f"openai/{name}", provider=provider,
            api_base=args.fake_url, api_key_env=KEY_ENV, max_concurrent=args.concurrency,
        )

    checklist = [judge(n, amhart, p) for n, p in zip(CHECKLIST_JUDGES, ("openai", "anthropic", "google"), strict=True)]
    flow = [judge("bench-vera", vera, "openai")]
    workers = None
    spreads: dict[int, dict] = {}  # run id: how its work spread over the workers
    if mode != "inprocess":
        workers = Workers(os.environ.copy(), Path(os.environ["EVALSITE_VAR_DIR"]))
        workers.start(args.processes, max(args.concurrency // args.processes, 1))

    def execute(judges: list, ids: list[int]) -> tuple[float, float, list[float], JudgeRun]:  # type: ignore[type-arg]
        """Return wall seconds, CPU seconds of the judging process(es), their RSS, the run."""
        if workers is None:
            run = services.judge_run_create(judges=judges, conversation_ids=ids, start=False)
            connections.close_all()
            started = time.perf_counter()
            if args.processes == 1:
                cpu = _shard(run.pk, args.concurrency, 0, 1)
            else:
                import multiprocessing

                with multiprocessing.get_context("fork").Pool(args.processes) as pool:
                    cpu = sum(pool.starmap(_shard, [(run.pk, max(args.concurrency // args.processes, 1), i, args.processes) for i in range(args.processes)]))
            return time.perf_counter() - started, cpu, [rss_mb()], JudgeRun.objects.get(pk=run.pk)
        cpu0 = workers.cpu()
        cpu_each0, tasks0 = workers.cpu_each(), workers.task_counts()
        started_at = timezone.now()
        started = time.perf_counter()
        run = services.judge_run_create(judges=judges, conversation_ids=ids, start=True)
        finished = wait_until(lambda: JudgeRun.objects.get(pk=run.pk).is_finished, 600)
        polled = time.perf_counter() - started
        cpu = workers.cpu() - cpu0
        if args.processes > 1:
            spreads[run.pk] = spread(workers, tasks0, cpu_each0)
        if not finished:
            print(workers.logs(), file=sys.stderr)
        last = run.results.aggregate(last=Max("finished_at"))["last"]
        wall = (last - started_at).total_seconds() if last and finished else polled
        return wall, cpu, workers.rss(), JudgeRun.objects.get(pk=run.pk)

    try:
        # Warm-up outside the timings: litellm's import, clients, connections, the caches.
        execute(checklist[:1], [spare.pk])
        execute(flow, [spare.pk])
        ids = [c.pk for c in conversations]
        for name, judges in (("checklist", checklist), ("flow", flow)):
            workload = f"judge-{name}-{len(judges)}x{args.conversations}-c{args.concurrency}"
            wall, cpu, rss, run = execute(judges, ids)
            calls = run.n_calls
            ideal = calls * args.latency / args.concurrency
            cached_wall, cached_cpu, cached_rss, cached = execute(judges, ids)
            label = mode if args.processes == 1 else f"{mode}x{args.processes}"
            print(
                result_line(
                    workload, mode=label, db=db_name, ratio=wall / ideal, cpu_ms_per_call=cpu * 1000 / max(calls, 1),
                    rss_mb="/".join(f"{r:.0f}" for r in rss), wall_s=wall, ideal_s=ideal, calls=calls,
                    status=run.status, errors=run.n_failed_calls, failed=run.n_failed,
                    cached_cpu_ms_per_result=cached_cpu * 1000 / max(cached.n_total, 1),
                    cached_wall_s=cached_wall, cached=f"{cached.n_cached}/{cached.n_calls}",
                    # Work done twice: a result taken more than once (a message that got past its claim).
                    duplicated=(run.results.aggregate(a=Sum("attempts"))["a"] or 0) - run.results.exclude(attempts=0).count(),
                    **spreads.get(run.pk, {}),
                ),
                flush=True,
            )
    finally:
        if workers is not None:
            workers.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--processes", type=int, default=1, help="split the results over this many processes/workers")
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
    fake = FakeServer(args.latency, setup=FAKE_SETUP, fail_every_k=args.fail_every)
    print(
        f"judge bench: checklist 3 x {args.conversations} and question flow 1 x {args.conversations} "
        f"({FLOW_QUESTIONS} questions each), {args.latency * 1000:.0f} ms per call, {args.concurrency} in flight "
        f"over {args.processes} process(es), {'PostgreSQL' if args.database_url else 'SQLite'}; "
        f"{os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    floor_walls: dict[str, float] = {}
    try:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            if mode == "bare":
                schema = {"type": "json_schema", "json_schema": {"name": "checklist_labels", "strict": True, "schema": {
                    "type": "object", "properties": {"items": {"type": "object", "properties": {f"amhart_{i:02d}": {"type": "object"} for i in range(1, 15)}}}}}}
                workload = f"judge-checklist-3x{args.conversations}-c{args.concurrency}"
                try:
                    bare = bare_loop(
                        fake.base_url, conversations=3 * args.conversations, messages=1, concurrency=args.concurrency,
                        latency=args.latency, workload=workload, response_format=schema, prompt_words=1500,
                    )
                    floor_walls.update(floors(bare))
                    print(bare, flush=True)
                except Exception as exc:  # a mode that cannot finish still says so, and the others run
                    print(result_line(workload, mode="bare", error=type(exc).__name__), flush=True)
                    print(f"bare: {exc}", file=sys.stderr)
                continue
            env = dict(os.environ)
            env.update(
                DJANGO_SETTINGS_MODULE="evalsite.settings.base", DJANGO_DEBUG="0", DJANGO_LOG_LEVEL="WARNING",
                EVALSITE_VAR_DIR=tempfile.mkdtemp(prefix=f"judgebench-{mode}-"), LITELLM_LOCAL_MODEL_COST_MAP="True",
                HF_HUB_OFFLINE="1", REDIS_URL=args.redis_url if mode == "worker-redis" else "",
                EVALSITE_API_HOSTS="127.0.0.1:*",  # the fake LLM's loopback port (core.api_hosts)
            )
            env[KEY_ENV] = "sk-bench-not-a-real-key"
            if args.database_url:
                env["DATABASE_URL"] = args.database_url
            else:
                env.pop("DATABASE_URL", None)
            if mode == "worker-redis":
                import redis

                redis.Redis.from_url(args.redis_url).flushdb()  # this benchmark's own Redis db
            command = [sys.executable, __file__, "--child", mode, "--fake-url", fake.base_url]
            for name in ("conversations", "latency", "concurrency", "processes", "database_url", "redis_url"):
                command += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
            print("\n".join(against_floor(lines, floor_walls)) if lines else result_line("judge", mode=mode, error=f"exit-{done.returncode}-see-below"), flush=True)
            if done.returncode != 0 or not lines:
                print(done.stderr[-3000:], file=sys.stderr)
    finally:
        fake.close()


if __name__ == "__main__":
    main()
