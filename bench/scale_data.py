"""What bench/scale.py sizes, writes and measures: the counts, the import files, peak memory, goals.

The files are the formats the importers take (docs/formats.md): conversations as evalsite
JSONL, ratings as the long CSV (``unit,rater,item,label``). Content is seeded, so two runs
import the same files.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import result_line

ROOT = Path(__file__).resolve().parents[1]
KEY_ENV = "BENCH_SCALE_API_KEY"
TURNS = 20
MEMORY_GOAL_MB = 1024.0
WORKLOADS = ("import", "simulate", "study", "judge", "pages")
NEEDS = {"import": (), "simulate": (), "study": ("import",), "judge": ("import",), "pages": ("import", "study", "judge")}
CHATBOTS = (("CB-A", "vendor-a/chat-large", "Chatbot A"), ("CB-B", "vendor-b/assistant-2", "Chatbot B"),
            ("CB-C", "vendor-c/helper-mini", "Chatbot C"))
USER_LINES = ("I keep worrying about school and I can't sleep.", "My friends seem far away lately.",
              "I don't know who to talk to about this.", "Some days everything feels like too much.")
BOT_LINES = ("I hear you. That sounds hard; what helps you calm down?", "Thank you for telling me. Who do you trust?",
             "That sounds heavy. Would talking to a counselor help?", "I'm glad you reached out. What happened today?")


@dataclass(frozen=True)
class Counts:
    """How much of everything at one scale (VERA-MH's size at 1.0)."""

    conversations: int
    simulated: int
    study: int
    raters: int
    k: int = 3

    @classmethod
    def at(cls, scale: float) -> Counts:
        conversations = max(6, round(10_000 * scale))
        return cls(
            conversations=conversations,
            simulated=max(2, round(1_000 * scale)),
            study=max(3, min(conversations, round(2_000 * scale))),
            raters=max(3, round(30 * scale)),
        )

    def describe(self) -> str:
        return (f"{self.conversations} conversations x {TURNS} turns, {self.simulated} simulated, a study of "
                f"{self.study} with {self.raters} raters (k={self.k}), 3 judges x {self.conversations}")


def write_conversations(path: Path, n: int, persona_set: str, personas: list[str]) -> None:
    """Write ``n`` distinct conversations of TURNS messages as evalsite JSONL."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            code, model, name = CHATBOTS[i % len(CHATBOTS)]
            messages = [
                {"role": "user", "content": f"Message {t + 1} of conversation {i}. {USER_LINES[(i + t) % len(USER_LINES)]}"}
                if t % 2 == 0 else {"role": "assistant", "content": BOT_LINES[(i + t) % len(BOT_LINES)]}
                for t in range(TURNS)
            ]
            record = {
                "id": f"scale-{i:06d}", "persona_set": persona_set, "persona": personas[(i // len(CHATBOTS)) % len(personas)],
                "target": {"model": model, "code": code, "name": name}, "run_index": i // (len(CHATBOTS) * len(personas)),
                "messages": messages,
            }
            out.write(json.dumps(record) + "\n")


def write_ratings(path: Path, study: Any, keys: list[str], seed: int = 5) -> int:
    """Write every assignment of ``study`` as submitted answers in the long CSV; return the rows written.

    Each conversation has a seeded latent answer per item; a rater gives it 88% of the time.
    Items 13 and 14 (risk) are N/A when the latent answer says so; the study section is answered too.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    truth: dict[tuple[int, str], str] = {}
    rows = 0
    assignments = study.assignments.filter(is_calibration=False).order_by("conversation_id", "rater_id")
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["unit", "rater", "item", "label"])
        for conversation_id, code, rater in assignments.values_list("conversation_id", "conversation__code", "rater__username"):
            for key in keys:
                risky = key in ("amhart_13", "amhart_14")
                options = ["yes", "no", "N/A"] if risky else ["yes", "no"]
                latent = truth.setdefault((conversation_id, key), str(rng.choice(options)))
                label = latent if rng.random() < 0.88 else str(rng.choice([o for o in options if o != latent]))
                writer.writerow([code, rater, key, label])
                rows += 1
            section = {
                "realism_user": str(int(rng.integers(2, 6))), "realism_clinical": str(int(rng.integers(2, 6))),
                "perceived_risk": str(rng.choice(["None", "Low", "High", "Imminent"])),
                "perceived_disclosure": str(rng.choice(["Low", "Moderate", "High"])),
                "broke_role": "no" if rng.random() < 0.95 else "yes",
            }
            for key, label in section.items():
                writer.writerow([code, rater, f"section:{key}", label])
                rows += 1
    return rows


def selected_workloads(only: str, *, reuse: bool = False) -> list[str]:
    """Return the workloads to run in order: those named and what their data needs (``reuse``: only those named)."""
    wanted = {w.strip() for w in only.split(",") if w.strip()} if only else set(WORKLOADS)
    unknown = wanted - set(WORKLOADS) - {"memory"}
    if unknown:
        raise SystemExit(f"unknown workload(s): {', '.join(sorted(unknown))}; choose from {', '.join(WORKLOADS)}")
    todo = set(wanted)
    if reuse:
        return [w for w in WORKLOADS if w in todo]
    for name in wanted & set(WORKLOADS):
        todo.update(NEEDS[name])
        for need in NEEDS[name]:
            todo.update(NEEDS[need])
    return [w for w in WORKLOADS if w in todo]


def memory_line(peaks: dict[str, float]) -> str:
    """Return the RESULT line of the peak memory of every process (name: MB), each against the goal."""
    over = [f"{name}_{mb:.0f}MB" for name, mb in peaks.items() if mb > MEMORY_GOAL_MB]
    return result_line("memory", **peaks, target=f"each<={MEMORY_GOAL_MB:.0f}MB", **verdict(not over, ",".join(over)))


class StepFailed(RuntimeError):
    """A command of the benchmark exited with an error (its output is in the message)."""


# Runs a Python script and, at its exit, prints its own peak resident memory. The rusage of a
# child is no measure: its ru_maxrss keeps the high-water mark of the forked copy of the parent.
PEAK_PRELUDE = (
    "import atexit, runpy, sys\n"
    "def _peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            sys.stderr.write(f'\\nBENCH_PEAK_KB={line.split()[1]}\\n')\n"
    "atexit.register(_peak)\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)


def run_measured(script: list[str], env: dict[str, str], *, check: bool = True) -> tuple[float, float, str]:
    """Run a Python ``script`` (path and arguments) from the project root; return (wall seconds, its peak RSS in MB, its output)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as log:
        done = subprocess.run([sys.executable, "-c", PEAK_PRELUDE, *script], cwd=ROOT, env=env, stdout=log,
                              stderr=subprocess.STDOUT, check=False)
        wall = time.perf_counter() - started
        log.seek(0)
        output = log.read().decode(errors="replace")
    if check and done.returncode != 0:
        raise StepFailed(f"{' '.join(script[:2])} exited {done.returncode}: {output[-2000:]}")
    peaks = re.findall(r"^BENCH_PEAK_KB=(\d+)$", output, re.MULTILINE)
    return wall, int(peaks[-1]) / 1024 if peaks else float("nan"), output


def peak_mb(pid: int) -> float:
    """Return a running process's peak resident memory (VmHWM) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def verdict(met: bool, why: str) -> dict[str, str]:
    """Return the RESULT fields of a goal: ``goal=met``, or ``goal=missed`` with ``why`` (no spaces)."""
    return {"goal": "met"} if met else {"goal": "missed", "why": why.replace(" ", "_") or "unknown"}
