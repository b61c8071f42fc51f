"""What the simulation and judging benchmarks share: the fake server, workers, CPU and memory.

Every figure is printed as one ``RESULT`` line per workload so runs can be compared by eye or
by ``grep RESULT``:

    RESULT workload=simulate-32x20-c32 mode=inprocess db=sqlite ratio=1.08 cpu_ms_per_call=5.1 rss_mb=180 ...

ratio = wall / ideal, ideal = calls x latency / concurrency. cpu_ms_per_call is the CPU time
of the process(es) doing the work (all their threads; not the fake server, which runs in its
own process as a remote provider would) divided by the LLM calls made. A ``bare-*`` mode is
litellm alone on the same fake server: the app's own cost per call is the difference.

``errors=N`` counts the calls that failed (an HTTP error, a dropped connection, a timeout): in a
``bare-*`` mode each failed call is counted and skipped (litellm alone does not retry); in the
app's modes it is the failed attempts the runs recorded, retried or not. A benchmark never
crashes on them: a mode that cannot finish still prints its RESULT line, with ``error=...``.
``--fail-every K`` makes the fake server answer every K-th request with a 500.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int | None = None) -> float:
    path = Path(f"/proc/{pid or 'self'}/status")
    for line in path.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds(pid: int | None = None) -> float:
    """Return user + system CPU seconds of a process (all its threads)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def result_line(workload: str, **figures: Any) -> str:
    parts = [f"workload={workload}"]
    for name, value in figures.items():
        if isinstance(value, float):
            value = f"{value:.2f}"
        parts.append(f"{name}={value}")
    return "RESULT " + " ".join(parts)


def figure(line: str, name: str) -> float | None:
    """Return the number a RESULT line prints as ``name=...``, or None."""
    for part in line.split():
        key, _, value = part.partition("=")
        if key == name:
            try:
                return float(value)
            except ValueError:
                return None
    return None


def floors(lines: str) -> dict[str, float]:
    """Return ``{workload: wall_s}`` of the ``openai-sdk`` lines among RESULT ``lines``."""
    found = {}
    for line in lines.splitlines():
        if " mode=openai-sdk " in f"{line} " and (wall := figure(line, "wall_s")):
            found[line.split()[1].partition("=")[2]] = wall
    return found


def against_floor(lines: list[str], floor_walls: dict[str, float]) -> list[str]:
    """Append ``vs_openai_sdk`` (wall / the openai SDK's wall on the same workload, same run) to each line."""
    out = []
    for line in lines:
        workload = line.split()[1].partition("=")[2] if line.startswith("RESULT ") else ""
        wall = figure(line, "wall_s")
        floor = floor_walls.get(workload)
        out.append(f"{line} vs_openai_sdk={wall / floor:.2f}" if wall is not None and floor else line)
    return out


def fail_every(k: int) -> str:
    """Return FakeServer setup code that answers every ``k``-th request with a 500 (0: none)."""
    if k <= 0:
        return ""
    return (
        "import itertools\n"
        "from tests.support.fake_llm import http_500\n"
        "_count, _begin = itertools.count(1), fake._begin\n"
        "def _faulty_begin(request):\n"
        "    reply, latency = _begin(request)\n"
        f"    return (http_500() if next(_count) % {k} == 0 else reply), latency\n"
        "fake._begin = _faulty_begin\n"
    )


class FakeServer:
    """FakeLLM in its own process (a remote provider's CPU is not the app's)."""

    def __init__(self, latency: float, setup: str = "", fail_every_k: int = 0) -> None:
        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from tests.support.fake_llm import FakeLLM\n"
            f"fake = FakeLLM(latency={latency!r}).start()\n"
            f"{setup}\n"
            f"{fail_every(fail_every_k)}\n"
            "print(fake.base_url, flush=True)\n"
            "sys.stdin.read()\n"
        )
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.base_url = (self.proc.stdout.readline() if self.proc.stdout else "").strip()
        if not self.base_url:
            raise RuntimeError("the fake LLM server did not start")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Workers:
    """Celery worker processes started as the README starts them (threads pool)."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, n: int, concurrency: int) -> None:
        for i in range(n):
            log = open(self.log_dir / f"worker{i}.log", "w")
            self.procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=threads",
                     f"--concurrency={concurrency}", "--loglevel=WARNING", "--without-gossip",
                     "--without-mingle", "--without-heartbeat", f"--hostname=bench{i}-{os.getpid()}@%h"],
                    cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                )
            )

    def cpu(self) -> float:
        return sum(self.cpu_each())

    def cpu_each(self) -> list[float]:
        return [cpu_seconds(p.pid) for p in self.procs]

    def rss(self) -> list[float]:
        return [rss_mb(p.pid) for p in self.procs]

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in sorted(self.log_dir.glob("worker*.log")))

    def task_counts(self) -> list[int] | None:
        """Return how many tasks each worker has run (Celery's own stats), or None if it cannot tell.

        Asked through the broker's broadcast (Redis); the embedded filesystem broker has none.
        """
        from evalsite.celery import app

        try:
            stats = app.control.inspect(timeout=2.0).stats() or {}
        except Exception:
            return None
        counts = []
        for proc_index in range(len(self.procs)):
            name = next((k for k in stats if k.startswith(f"bench{proc_index}-{os.getpid()}@")), None)
            if name is None:
                return None
            counts.append(sum(stats[name].get("total", {}).values()))
        return counts

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def postgres_database(url: str, *, drop_only: bool = False, template: str = "") -> None:
    """Drop the database of ``url`` if it exists, then create it afresh (from ``template``) unless ``drop_only``."""
    import psycopg

    base, _, name = url.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))


def wait_until(predicate: Callable[[], bool], timeout: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


def bare_loop(
    base_url: str,
    *,
    conversations: int,
    messages: int,
    concurrency: int,
    latency: float,
    workload: str,
    response_format: dict[str, Any] | None = None,
    prompt_words: int = 200,
) -> str:
    """The LLM clients alone on the same fake server: ``conversations`` x ``messages`` calls each.

    Returns the RESULT lines of ``bare-acompletion`` (litellm on one event loop), ``openai-sdk``
    (the openai SDK on one event loop: the floor, what ``simulation.llm.direct`` sends through) and
    ``bare-completion`` (litellm, one OS thread per conversation, what a thread pool does). A call that
    fails (a dropped connection under load, an HTTP error) is counted in ``errors`` and the
    conversation goes on: one failure never ends the benchmark without its RESULT lines.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from simulation.llm.client import _litellm

    litellm = _litellm()
    body = [{"role": "system", "content": "You are a person."}, {"role": "user", "content": "word " * prompt_words}]
    kwargs: dict[str, Any] = dict(model="openai/bare", api_base=base_url, api_key="sk-bench", messages=body, num_retries=0, timeout=60)
    if response_format is not None:
        kwargs["response_format"] = response_format
    calls = conversations * messages
    ideal = calls * latency / concurrency
    lines = []
    errors: dict[str, int] = {}
    kinds: dict[str, set[str]] = {}
    counting = threading.Lock()  # the thread-per-call baseline fails from many threads at once

    def failed(mode: str, exc: BaseException) -> None:
        with counting:
            errors[mode] = errors.get(mode, 0) + 1
            kinds.setdefault(mode, set()).add(type(exc).__name__)

    def line(mode: str, wall: float, cpu: float) -> str:
        extra = {"error_kinds": ",".join(sorted(kinds[mode]))} if kinds.get(mode) else {}
        return result_line(workload, mode=mode, ratio=wall / ideal, cpu_ms_per_call=cpu * 1000 / calls, rss_mb=rss_mb(),
                           wall_s=wall, ideal_s=ideal, calls=calls, errors=errors.get(mode, 0), **extra)

    async def timed(mode: str, send: Callable[[], Awaitable[Any]]) -> None:
        """Run the workload on one event loop through ``send``, after a warm-up call; add its line."""
        gate = asyncio.Semaphore(concurrency)

        async def call() -> None:
            try:
                await send()
            except Exception as exc:  # counted, never the end of the benchmark
                failed(mode, exc)

        async def one() -> None:
            async with gate:
                for _ in range(messages):
                    await call()

        await call()  # warm-up: client and connection
        errors.pop(mode, None)
        kinds.pop(mode, None)
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(conversations)))
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        lines.append(line(mode, wall, cpu))

    async def async_loop() -> None:
        await timed("bare-acompletion", lambda: litellm.acompletion(**kwargs))

    async def sdk_loop() -> None:
        # The floor: the openai SDK as it comes (its own default HTTP client). simulation.llm.direct
        # hands it litellm's aiohttp transport instead (docs/engine.md: httpx's own pool costs
        # 20 ms of CPU per call at 100 in flight), so the app's path can come out below this line.
        import openai

        client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0, timeout=60)
        sdk_kwargs: dict[str, Any] = dict(model="bare", messages=body)
        if response_format is not None:
            sdk_kwargs["response_format"] = response_format
        await timed("openai-sdk", lambda: client.chat.completions.create(**sdk_kwargs))
        await client.close()

    asyncio.run(async_loop())
    asyncio.run(sdk_loop())

    def call_blocking() -> None:
        try:
            litellm.completion(**kwargs)
        except Exception as exc:  # counted, never the end of the benchmark
            failed("bare-completion", exc)

    def conversation(_: int) -> None:
        for _ in range(messages):
            call_blocking()

    call_blocking()
    errors.pop("bare-completion", None)
    kinds.pop("bare-completion", None)
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(conversation, range(conversations)))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    lines.append(line("bare-completion", wall, cpu))
    return "\n".join(lines)


def spread(workers: Workers, tasks_before: list[int] | None, cpu_before: list[float]) -> dict[str, Any]:
    """Return how the timed work spread over the workers: tasks run and CPU seconds, each."""
    tasks_after = workers.task_counts()
    figures: dict[str, Any] = {
        "cpu_s_per_worker": "/".join(f"{after - before:.1f}" for before, after in zip(cpu_before, workers.cpu_each(), strict=True)),
    }
    if tasks_before is not None and tasks_after is not None:
        figures["tasks_per_worker"] = "/".join(str(a - b) for b, a in zip(tasks_before, tasks_after, strict=True))
    return figures
