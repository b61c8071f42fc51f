"""The judge job: judge one conversation for one (run, judge, instance), in a worker or in process.

``judge_result_job`` (a coroutine for the engine) is idempotent: a finished row is left alone,
and only the holder of a row's lease may store it (``judging.leases``, ``judging.store``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from judging.calls import Caller, JudgeCallConfig
from judging.checklist import ChecklistOutcome, judge_checklist
from judging.flowjudge import FlowOutcome, judge_flow
from judging.leases import (
    LeaseLost,
    claim_many,
    guard,
    keep_lease,
    max_attempts,
    stalled_results,
    status_of,
)
from judging.material import (
    checklist_labels,
    conversation_materials,
    flow_labels,
    guided_view,
    instrument_view,
    prompt_get_cached,
)
from judging.models import (
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    ResultStatus,
)
from judging.store import Outcome, finish_many
from simulation.llm.engine import db, db_batch, run_job, run_jobs
from simulation.run_state import new_owner, owner_finished, owner_started

logger = logging.getLogger("judging")

def _materials(results: list[JudgeResult]) -> list[tuple[Any, Any, Any]]:
    """Return (prompt, instrument view, conversation material) of many results (2 queries)."""
    materials = conversation_materials([r.conversation_id for r in results])
    out = []
    for result in results:
        run = result.run
        snapshot = run.config["judges"][str(result.judge_id)]
        prompt = prompt_get_cached(snapshot["prompt_id"], snapshot["prompt_hash"])
        view = instrument_view(run.instrument_id, run.config["instrument"]["content_hash"])
        # The version's edited item instructions (judging.guidance): in the prompt, so in the cache key.
        view = guided_view(view, snapshot.get("item_guidance"))
        out.append((prompt, view, materials[result.conversation_id]))
    return out


async def _judge(result: JudgeResult, caller: Caller) -> tuple[list[JudgeLabel], ChecklistOutcome | FlowOutcome]:
    prompt, view, material = await db_batch(_materials, result)
    if view.flow is None:
        outcome: ChecklistOutcome | FlowOutcome = await judge_checklist(
            caller=caller,
            prompt=prompt,
            instrument=view.name,
            vignette=material.vignette,
            turns=material.turns,
            items=view.items,
        )
        return checklist_labels(result, view.items, outcome), outcome
    outcome = await judge_flow(caller=caller, prompt=prompt, flow=view.flow, turns=material.turns)
    return flow_labels(result, view.flow, outcome), outcome


async def judge_result_job(*, result_id: int, owner: str | None = None) -> str:
    """Judge one conversation for one (run, judge, instance); return the row's status.

    A coroutine for the engine. Safe to run twice: a finished row is left alone, a row held by
    a live worker too; only the holder of the lease may store, and a worker that loses its
    lease (cancelled, or presumed dead and taken over) stops at its next step.
    """
    owner = owner or new_owner("judge")
    owner_started(owner)  # while this job lives, this process's claims as owner are not orphans
    try:
        return await _judge_result(result_id, owner)
    finally:
        owner_finished(owner)


async def _judge_result(result_id: int, owner: str) -> str:
    claimed = await db_batch(claim_many, (result_id, owner))
    if isinstance(claimed, str):
        return claimed
    result = claimed
    run = result.run
    if result.attempts > max_attempts():
        error = (
            f"gave up after {result.attempts - 1} attempt(s): each time its worker stopped "
            "(killed, out of memory or timed out) before storing the result"
        )
        caller = Caller(JudgeCallConfig.from_snapshot(run.config["judges"][str(result.judge_id)]), None)
        await db_batch(finish_many, Outcome(result, owner, caller, [], ResultStatus.FAILED, "worker_lost", error, [], ""))
        return ResultStatus.FAILED
    config = JudgeCallConfig.from_snapshot(run.config["judges"][str(result.judge_id)])
    caller = Caller.for_result(
        config, instance=result.instance, independent=run.independent_instances, use_cache=run.use_cache,
        conversation_id=result.conversation_id,
    )
    caller.guard = guard(result_id, owner)
    labels: list[JudgeLabel] = []
    error_kind = error = ""
    path: list[dict[str, str]] = []
    ended_by = ""
    keeper = asyncio.get_running_loop().create_task(keep_lease(result_id, owner, asyncio.current_task()))  # type: ignore[arg-type]
    try:
        labels, outcome = await _judge(result, caller)
        error_kind, error = outcome.error_kind, outcome.error
        if isinstance(outcome, FlowOutcome):
            path, ended_by = outcome.path, outcome.ended_by
    except asyncio.CancelledError:
        if keeper.done():  # the lease was lost: someone else owns the row now; write nothing
            logger.info("judge result %s: lease lost (cancelled or taken over); stopping", result_id)
            return await db(status_of, result_id)
        raise
    except LeaseLost:  # found before a call: nothing was sent, nothing is written
        logger.info("judge result %s: cancelled or taken over; stopping before its next call", result_id)
        return await db(status_of, result_id)
    except Exception as exc:  # a bug or a time limit must not leave the row "running"
        logger.exception("judge result %s failed", result_id)
        error_kind, error = "internal", f"{type(exc).__name__}: {exc}"[:2000]
    finally:
        keeper.cancel()
    status = ResultStatus.FAILED if error_kind else ResultStatus.DONE
    outcome = Outcome(result, owner, caller, labels, status, error_kind, error, path, ended_by)
    if not await db_batch(finish_many, outcome):
        return await db(status_of, result_id)  # the lease was lost meanwhile: not ours to say
    return outcome.status  # FAILED if it could not be stored

def judge_result_execute(*, result_id: int, owner: str | None = None) -> str:
    """Run ``judge_result_job`` to the end in the calling thread (its own engine)."""
    return run_job(lambda: judge_result_job(result_id=result_id, owner=owner))

def judge_run_execute_in_process(
    *,
    run_id: int,
    concurrency: int = 8,
    on_result: Callable[[JudgeResult], None] | None = None,
    shard: tuple[int, int] = (0, 1),
) -> JudgeRun:
    """Run a run's pending (and stalled) results in this process, ``concurrency`` at once.

    The results are coroutines of this thread's engine, the same job the Celery task runs.
    ``on_result`` runs as a database step after each. ``shard=(i, n)`` takes only the results
    whose id is i modulo n, so n processes can share a run.
    """
    index, shards = shard
    ids = [
        pk
        for pk in JudgeResult.objects.filter(run_id=run_id, status=ResultStatus.PENDING).values_list("pk", flat=True)
        if pk % shards == index
    ]
    ids += [pk for pk in stalled_results(run_id) if pk % shards == index]
    owner = new_owner("inline")

    async def one(pk: int) -> str:
        status = await judge_result_job(result_id=pk, owner=owner)
        if on_result is not None:
            await db(lambda: on_result(JudgeResult.objects.get(pk=pk)))
        return status

    run_jobs([lambda pk=pk: one(pk) for pk in ids], concurrency=max(1, concurrency))
    return JudgeRun.objects.get(pk=run_id)
