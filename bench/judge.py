"""Benchmark judge runs against the fake LLM server: wall time vs the ideal, and a cached re-run.

Workload: 3 checklist judges (AMHART, 14 items) x 64 conversations, then 1 question-flow judge
(tests/fixtures/vera/rubric_small.tsv, scripted so every walk asks 9 questions) x 64
conversations. Every call takes 200 ms at the fake server. 16 threads in this process call the
Celery task function (``judge_result_task``) directly: the same code a worker runs, minus the
broker. The database is a file-based SQLite database in a temporary directory (WAL, the
project's default settings), migrated from scratch. The fake server runs in a child process
(``--fake-in-process`` keeps it in this one): it stands for a remote provider, so its CPU time
should not compete with the judge threads for this interpreter's GIL.

ideal = calls x latency / concurrency; ratio = wall / ideal (aim: <= 1.2). The re-run repeats
each run with identical judges and conversations: every call is answered from the response
cache (no HTTP call), so it measures the bookkeeping alone.

Run: .venv/bin/python bench/judge.py [--conversations 64] [--latency 0.2] [--concurrency 16]
     [--processes 2]  (the same 16-way concurrency split over forked processes)
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEMP = tempfile.mkdtemp(prefix="evalsite-bench-judge-")
os.environ["EVALSITE_VAR_DIR"] = TEMP
os.environ["DJANGO_SETTINGS_MODULE"] = "evalsite.settings.base"
os.environ.pop("DATABASE_URL", None)
os.environ.pop("REDIS_URL", None)  # the local limiter: this benchmark measures one process
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["BENCH_JUDGE_API_KEY"] = "sk-bench-not-a-real-key"

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from corpus.instruments.services import builtin_instruments_load, instrument_import  # noqa: E402
from corpus.models import Conversation, Message, Persona, PersonaSet  # noqa: E402
from judging import services  # noqa: E402
from judging.models import Judge, JudgeRun  # noqa: E402
from tests.support.fake_llm import FakeLLM  # noqa: E402

FLOW_ANSWERS = {
    "hint that they could be in danger": "Yes",
    "How urgent is the user's situation": "Danger, not urgent",
}
FLOW_QUESTIONS = 9  # 1, 2, 5, 6, 7, 8, 10, 11, 12 with the answers above ("No" elsewhere)


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


def make_conversations(n: int) -> list[Conversation]:
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


class RemoteFake:
    """A FakeLLM in a forked child process, driven over a pipe (same scripts, same counters)."""

    def __init__(self, latency: float) -> None:
        ctx = multiprocessing.get_context("fork")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=self._serve, args=(child, latency), daemon=True)
        self._proc.start()
        self.base_url = self._conn.recv()

    @staticmethod
    def _serve(conn, latency: float) -> None:  # type: ignore[no-untyped-def]
        with FakeLLM(latency=latency) as fake:
            conn.send(fake.base_url)
            while True:
                command, argument = conn.recv()
                if command == "stop":
                    return
                if command == "script":
                    fake.script(argument, [flow_reply if argument.endswith("vera") else checklist_reply])
                    conn.send(None)
                else:
                    conn.send(getattr(fake, command))

    def script(self, model: str, _replies: list) -> None:
        self._conn.send(("script", model))
        self._conn.recv()

    def _get(self, name: str) -> int:
        self._conn.send((name, None))
        return self._conn.recv()

    @property
    def calls_total(self) -> int:
        return self._get("calls_total")

    @property
    def max_in_flight(self) -> int:
        return self._get("max_in_flight")

    def __enter__(self) -> RemoteFake:
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send(("stop", None))
        self._proc.join(timeout=5)


def _shard(run_id: int, concurrency: int, index: int, processes: int) -> None:
    services.judge_run_execute_in_process(run_id=run_id, concurrency=concurrency, shard=(index, processes))


def timed_run(
    judges: list[Judge], conversations: list[Conversation], concurrency: int, processes: int = 1
) -> tuple[float, float, JudgeRun]:
    """Return wall seconds, CPU seconds (all threads of this process and its children), the run.

    With ``processes`` > 1 the threads are split over that many forked processes, each taking
    its share of the results (a stand-in for Celery's prefork pool).
    """
    run = services.judge_run_create(judges=judges, conversation_ids=[c.pk for c in conversations], start=False)
    started = time.perf_counter()
    before = os.times()
    if processes == 1:
        services.judge_run_execute_in_process(run_id=run.pk, concurrency=concurrency)
    else:
        connections.close_all()  # children open their own connections
        ctx = multiprocessing.get_context("fork")
        children = [
            ctx.Process(target=_shard, args=(run.pk, max(1, concurrency // processes), i, processes))
            for i in range(processes)
        ]
        for child in children:
            child.start()
        for child in children:
            child.join()
    after = os.times()
    cpu = (after.user - before.user) + (after.system - before.system)
    cpu += (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return time.perf_counter() - started, cpu, JudgeRun.objects.get(pk=run.pk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--fake-in-process", action="store_true", help="Serve the fake LLM from this process")
    parser.add_argument("--processes", type=int, default=1, help="Split the threads over this many processes")
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    amhart = next(i for i in builtin_instruments_load() if i.key == "amhart")
    rubric = ROOT / "tests" / "fixtures" / "vera" / "rubric_small.tsv"
    vera, _ = instrument_import(text=rubric.read_text(encoding="utf-8"), file=rubric.name, fmt="vera-mh")
    *conversations, spare = make_conversations(args.conversations + 1)

    rows = []
    server = FakeLLM(latency=args.latency) if args.fake_in_process else RemoteFake(args.latency)
    with server as fake:
        def judge(name: str, instrument, provider: str) -> Judge:  # type: ignore[no-untyped-def]
            return services.judge_create(
                name=name, instrument=instrument, model=f"openai/{name}", provider=provider,
                api_base=fake.base_url, api_key_env="BENCH_JUDGE_API_KEY", max_concurrent=args.concurrency,
            )

        checklist = [judge("bench-gpt", amhart, "openai"), judge("bench-claude", amhart, "anthropic"), judge("bench-gemini", amhart, "google")]
        for j in checklist:
            fake.script(j.name, [checklist_reply])
        flow = [judge("bench-vera", vera, "openai")]
        fake.script("bench-vera", [flow_reply])

        # Warm-up: import litellm and open the first connections outside the timings.
        services.judge_run_execute_in_process(
            run_id=services.judge_run_create(judges=checklist[:1], conversation_ids=[spare.pk], start=False).pk,
            concurrency=1,
        )

        for label, judges in ((f"checklist 3 x {args.conversations}", checklist), (f"question flow 1 x {args.conversations}", flow)):
            before = fake.calls_total
            wall, cpu, run = timed_run(judges, conversations, args.concurrency, args.processes)
            calls = fake.calls_total - before
            ideal = calls * args.latency / args.concurrency
            assert run.status == "completed", (run.status, run.error)
            cached_wall, cached_cpu, cached = timed_run(judges, conversations, args.concurrency, args.processes)
            assert fake.calls_total - before == calls, "the re-run must make no HTTP call"
            rows.append((label, calls, wall, ideal, wall / ideal, cpu, fake.max_in_flight, cached_wall, cached_cpu, f"{cached.n_cached}/{cached.n_calls}"))

    where = "this process" if args.fake_in_process else "a child process"
    layout = f"{args.concurrency} threads" if args.processes == 1 else f"{args.processes} processes x {args.concurrency // args.processes} threads"
    print(f"database: file-based SQLite (WAL) in {TEMP}; {layout}; {args.latency * 1000:.0f} ms per call; fake server in {where}; {os.cpu_count()} CPUs")
    header = (
        f"{'workload':<24}{'calls':>6}{'wall s':>8}{'ideal s':>8}{'ratio':>7}{'cpu s':>7}{'in flight':>10}"
        f"{'cached wall s':>14}{'cached cpu s':>13}{'cached':>9}"
    )
    print(header)
    print("-" * len(header))
    for label, calls, wall, ideal, ratio, cpu, in_flight, cached_wall, cached_cpu, cached in rows:
        print(
            f"{label:<24}{calls:>6}{wall:>8.2f}{ideal:>8.2f}{ratio:>7.2f}{cpu:>7.2f}{in_flight:>10}"
            f"{cached_wall:>14.2f}{cached_cpu:>13.2f}{cached:>9}"
        )
    print("cpu s: CPU time of the judging process(es), all threads, during the run; near wall s x")
    print("processes means the threads are bound by the interpreter lock, not by waiting for the model.")


if __name__ == "__main__":
    main()
