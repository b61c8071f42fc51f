"""Launch checks for judge runs: every judge's model answers one small call before a run starts.

The call goes through the same path and parameters as the judgements (temperature, reasoning
effort, extra parameters, structured output), so a model that refuses one of them is caught
here, named with its reason and a fix hint, instead of failing every judgement of the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judging.calls import JudgeCallConfig
from judging.judges import judge_snapshot
from judging.models import Judge
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
    models = []
    for position, judge in enumerate(judges):
        config = JudgeCallConfig.from_snapshot(judge_snapshot(judge, position=position))
        models.append((f"judge {judge.name}", config.spec(), CHECK_FORMAT if config.structured_output else None))
    return preflight(models)
