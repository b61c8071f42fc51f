"""Launch checks for judge runs: every judge's model answers one small call before a run starts.

The call goes through the same path and parameters as the judgements (temperature, reasoning
effort, extra parameters, structured output), so a model that refuses one of them is caught
here, named with its reason and a fix hint, instead of failing every judgement of the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from corpus.models import Item, Scale
from judging.calls import JudgeCallConfig
from judging.judges import judge_snapshot
from judging.models import Judge, JudgeMode, JudgeRun, ResultStatus, RunStatus
from simulation.preflight import PreflightReport, preflight

# A strict schema like the judgements' own, reduced to one field.
CHECK_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "connection_check",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"reply": {"type": "string"}},
            "required": ["reply"],
            "additionalProperties": False,
        },
    },
}


def judges_preflight(judges: Sequence[Judge]) -> PreflightReport:
    """Check each judge's model as its run would call it."""
    return _snapshots_preflight([judge_snapshot(judge, position=position) for position, judge in enumerate(judges)])


def run_retry_preflight(run: JudgeRun) -> PreflightReport:
    """Check the judges whose failed (or skipped) judgements a retry would schedule again.

    As the run recorded them (its snapshots decide the retried calls, not the judges as they
    are now), so a retry into the same refusal is refused before anything is scheduled.
    """
    if run.status in (RunStatus.PENDING, RunStatus.RUNNING):
        return PreflightReport([])  # the retry itself refuses a running run: no call spent on it
    judge_ids = set(
        run.results.filter(status__in=[ResultStatus.FAILED, ResultStatus.SKIPPED]).values_list("judge_id", flat=True)
    )
    snapshots = run.config.get("judges", {})
    missing = [pk for pk in judge_ids if str(pk) not in snapshots]
    extra = {str(j.pk): judge_snapshot(j, position=0) for j in Judge.objects.filter(pk__in=missing)}
    chosen = [snapshots.get(str(pk)) or extra[str(pk)] for pk in judge_ids if str(pk) in snapshots or str(pk) in extra]
    return _snapshots_preflight(sorted(chosen, key=lambda s: (s.get("position", 0), s.get("name", ""))))


def _snapshots_preflight(snapshots: Sequence[dict[str, Any]]) -> PreflightReport:
    models = []
    for snapshot in snapshots:
        config = JudgeCallConfig.from_snapshot(snapshot)
        models.append((f"judge {snapshot['name']}", config.spec(), CHECK_FORMAT if config.structured_output else None))
    return preflight(models)


@dataclass(frozen=True)
class RunCounts:
    """What a judge run will do before it starts: judgements and (at most) LLM calls."""

    conversations: int = 0
    judges: int = 0
    instances: int = 1
    calls_per_judgement: int = 1  # a question flow: at most one per question on its path
    flow: bool = False
    called_instances: int = 1  # instances 2..n of an identical request come from the cache
    launch_checks: int = 0
    flagged_left_out: int = 0
    missing: str = ""

    @property
    def judgements(self) -> int:
        return self.conversations * self.judges * self.instances

    @property
    def calls(self) -> int:
        return self.conversations * self.judges * self.called_instances * self.calls_per_judgement


def run_counts(
    *, judges: Sequence[Judge], conversation_ids: Sequence[int], selection: dict[str, Any], instances: int,
    independent_instances: bool, use_cache: bool, launch_check: bool,
) -> RunCounts:
    """Count the judgements and LLM calls of a run as ``judge_run_create`` would build it."""
    judges = list(dict.fromkeys(judges))
    flow = any(j.mode == JudgeMode.FLOW for j in judges)
    per_judgement = 1
    if flow:
        per_judgement = max(1, Item.objects.filter(instrument_id=judges[0].instrument_id, scale=Scale.FLOW_QUESTION).count())
    return RunCounts(
        conversations=len(conversation_ids), judges=len(judges), instances=instances, calls_per_judgement=per_judgement,
        flow=flow, called_instances=instances if (independent_instances or not use_cache) else 1,
        launch_checks=len(judges) if launch_check else 0, flagged_left_out=int(selection.get("flagged_left_out") or 0),
    )
