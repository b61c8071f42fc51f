"""Writes of the judging app, in one import: prompts and judges, runs, the ensemble.

The implementation is split by subdomain: ``judges`` (prompt templates, judges), ``runs``
(create, cancel, retry, recover), ``execute`` (the judge job), ``leases`` and ``store`` (who
holds a result, how it is stored), ``ensemble`` (the majority vote), with the LLM side in
``calls``, ``checklist`` and ``flowjudge``.
"""

from judging.ensemble import ensemble_compute, ensemble_rule, provider_warnings
from judging.errors import JudgingError
from judging.execute import judge_result_execute, judge_result_job, judge_run_execute_in_process
from judging.judges import judge_create, prompt_create, prompt_default, provider_from_model
from judging.runs import (
    judge_results_recover,
    judge_run_cancel,
    judge_run_create,
    judge_run_retry_failed,
)
from judging.store import judge_run_refresh

__all__ = [
    "JudgingError",
    "ensemble_compute",
    "ensemble_rule",
    "judge_create",
    "judge_result_execute",
    "judge_result_job",
    "judge_results_recover",
    "judge_run_cancel",
    "judge_run_create",
    "judge_run_execute_in_process",
    "judge_run_refresh",
    "judge_run_retry_failed",
    "prompt_create",
    "prompt_default",
    "provider_from_model",
    "provider_warnings",
]
