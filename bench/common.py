"""What the simulation and judging benchmarks share: the fake server, workers, CPU and memory.

Every figure is printed as one ``RESULT`` line per workload so runs can be compared by eye or
by ``grep RESULT``:

    RESULT workload=simulate-32x20-c32 mode=inprocess db=sqlite ratio=1.08 cpu_ms_per_call=5.1 rss_mb=180 ...

ratio = wall / ideal, ideal = calls x latency / concurrency. cpu_ms_per_call is the CPU time
of the process(es) doing the work (all their threads; not the fake server, which runs in its
own process as a remote provider would) divided by the LLM calls made. A ``bare-*`` mode is
litellm alone on the same fake server: the app's own cost per call is the difference.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
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


class FakeServer:
    """FakeLLM in its own process (a remote provider's CPU is not the app's)."""

    def __init__(self, latency: float, setup: str = "") -> None:
        code = (
            f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "from tests.support.fake_llm import FakeLLM\n"
            f"fake = FakeLLM(latency={latency!r}).start()\n"
            f"{setup}\n"
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
        return sum(cpu_seconds(p.pid) for p in self.procs)

    def rss(self) -> list[float]:
        return [rss_mb(p.pid) for p in self.procs]

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in sorted(self.log_dir.glob("worker*.log")))

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


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
    """litellm alone on the same fake server: ``conversations`` x ``messages`` calls, both APIs.

    Returns the RESULT lines of ``bare-acompletion`` (one event loop, what the engine uses) and
    ``bare-completion`` (one OS thread per conversation, what a thread pool does).
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

    async def async_loop() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with gate:
                for _ in range(messages):
                    await litellm.acompletion(**kwargs)

        await litellm.acompletion(**kwargs)  # warm-up: client and connection
        cpu0, t0 = cpu_seconds(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(conversations)))
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        lines.append(result_line(workload, mode="bare-acompletion", ratio=wall / ideal, cpu_ms_per_call=cpu * 1000 / calls, rss_mb=rss_mb(), wall_s=wall, ideal_s=ideal, calls=calls))

    asyncio.run(async_loop())

    def conversation(_: int) -> None:
        for _ in range(messages):
            litellm.completion(**kwargs)

    litellm.completion(**kwargs)
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(conversation, range(conversations)))
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    lines.append(result_line(workload, mode="bare-completion", ratio=wall / ideal, cpu_ms_per_call=cpu * 1000 / calls, rss_mb=rss_mb(), wall_s=wall, ideal_s=ideal, calls=calls))
    return "\n".join(lines)
