"""Run one planned conversation of a batch: turn by turn, both sides through the LLM layer.

The full history goes to both sides at every turn. The chatbot sees it as it is (after its
system prompt); the user-agent sees it with roles swapped (chatbot messages become "user"
messages, each wrapped in the reminder when the batch has one) after the persona prompt, with
the kickoff first when the history would otherwise open with its own message. Every call's
record (``LLMResult.as_meta()`` plus side and requested model) goes into ``Message.meta``.
Claims, leases and writes live in ``run_state``.

A conversation is a coroutine run by the engine (``simulation.llm.engine``): its calls are
awaited on the event loop (``achat``) and every database step (claim, each message, the end)
runs in the engine's driving thread between loop turns, each in its own transaction as before.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from django.conf import settings

from corpus.models import Target
from simulation.http_target import http_chat
from simulation.llm import (
    LLMError,
    LLMResult,
    ModelSpec,
    RateLimiter,
    RetryPolicy,
    achat,
    limiter_for,
)
from simulation.llm.engine import db, db_batch, run_job, run_jobs
from simulation.models import SimulationBatch, SimulationRun
from simulation.prompts import reminder_wrap
from simulation.run_checks import speaker_at
from simulation.run_state import (
    LeaseLost,
    RunContext,
    RunOutcome,
    lease_seconds,
    new_owner,
    owner_finished,
    owner_started,
    save_messages,
    simulation_run_claim,
    simulation_run_fail,
    simulation_run_finish,
    simulation_run_renew,
    simulation_runs_held,
)

logger = logging.getLogger("simulation.simulate")
Status = SimulationRun.Status


def retry_override() -> RetryPolicy | None:
    """Return one retry policy for every simulation call (the ``SIMULATION_RETRY`` setting), or None.

    Without it each side keeps its own budget: the chatbot's (``Target.retry_*``) and the
    user-agent's (the batch's ``user_retry_*``).
    """
    configured = getattr(settings, "SIMULATION_RETRY", None)
    return RetryPolicy(**configured) if configured else None


def user_agent_retry(batch: SimulationBatch) -> RetryPolicy:
    return RetryPolicy.of(batch.user_retry_attempts, batch.user_retry_base_delay, batch.user_retry_max_delay)


def target_retry(target: Target) -> RetryPolicy:
    return RetryPolicy.of(target.retry_attempts, target.retry_base_delay, target.retry_max_delay)


def user_agent_spec(batch: SimulationBatch) -> ModelSpec:
    return ModelSpec(
        model=batch.user_model,
        api_base=batch.user_api_base,
        api_key_env=batch.user_api_key_env,
        params=batch.user_params,
        timeout=batch.user_timeout_seconds,
    )


def target_spec(target: Target) -> ModelSpec:
    return ModelSpec(
        model=target.model,
        api_base=target.api_base,
        api_key_env=target.api_key_env,
        params=target.params,
        timeout=target.timeout_seconds,
    )


def _limiter(name: str, max_concurrent: int, rpm: int, timeout: float) -> RateLimiter | None:
    if not max_concurrent and not rpm:
        return None
    return limiter_for(name, max_concurrent, rpm)  # slots are renewed while this process lives


def _user_agent_messages(ctx: RunContext) -> list[dict[str, Any]]:
    """Return the user-agent's view: roles swapped, each chatbot message after the reminder."""
    swapped = []
    for role, content, _ in ctx.history:
        if role == "user":
            swapped.append({"role": "assistant", "content": content})
        else:
            swapped.append({"role": "user", "content": reminder_wrap(ctx.reminder, content)})
    messages = [{"role": "system", "content": ctx.persona_prompt}]
    if not swapped or swapped[0]["role"] == "assistant":
        messages.append({"role": "user", "content": ctx.kickoff})
    return messages + swapped


def _target_messages(ctx: RunContext) -> list[dict[str, Any]]:
    messages = [{"role": "system", "content": ctx.run.target.system_prompt}] if ctx.run.target.system_prompt else []
    return messages + [{"role": role, "content": content} for role, content, _ in ctx.history]


def _cap_words(text: str, cap: int | None) -> tuple[str, int | None]:
    if not cap:
        return text, None
    words = len(text.split())
    if words <= cap:
        return text, None
    match = re.match(r"\s*(?:\S+\s+){" + str(cap - 1) + r"}\S+", text)
    return (match.group(0).strip() if match else text), words


def _strip_marker(text: str, marker: str) -> tuple[str, bool]:
    if not marker or marker.casefold() not in text.casefold():
        return text, False
    return re.sub(re.escape(marker), "", text, flags=re.IGNORECASE).strip(), True


def _call_meta(result: LLMResult, spec_model: str, api_base: str, side: str) -> dict[str, Any]:
    return {**result.as_meta(), "side": side, "requested_model": spec_model, "api_base": api_base}


Sleep = Callable[[float], Awaitable[None]]


def _guard(ctx: RunContext) -> Callable[[], Awaitable[None]]:
    """Return the check made right before each call is sent: is the conversation still ours?"""

    async def still_ours() -> None:
        if not await db_batch(simulation_runs_held, (ctx.run.pk, ctx.owner)):
            raise LeaseLost()  # cancelled or taken over: no call leaves

    return still_ours


async def _user_turn(ctx: RunContext, retry: RetryPolicy | None, sleep: Sleep) -> bool:
    """Produce and save the next user message; return whether the user-agent ended the chat."""
    batch = ctx.batch
    if not ctx.history and batch.protocol == SimulationBatch.Protocol.AMHART:
        card = ctx.run.persona.opening_message
        await db_batch(save_messages, (ctx, "user", card, {"side": "persona_card", "source": "opening_message"}, None))
        return False
    spec = user_agent_spec(batch)
    limiter = _limiter("simulation-user-agent", batch.user_max_concurrent, batch.user_requests_per_minute, spec.timeout)
    retry = retry or user_agent_retry(batch)
    result = await achat(spec, _user_agent_messages(ctx), retry=retry, limiter=limiter, sleep=sleep, guard=_guard(ctx))
    content, ended = _strip_marker(result.content, batch.end_marker)
    content, original_words = _cap_words(content, batch.word_cap)
    meta = _call_meta(result, spec.model, spec.api_base, "user_agent")
    if ended:
        meta["end_marker"] = True
        if not content:
            return True  # nothing but the marker: the conversation ends on the chatbot's reply
    if original_words is not None:
        meta["truncated_from_words"] = original_words
    await db_batch(save_messages, (ctx, "user", content, meta, result))
    return ended


async def _chatbot_turn(ctx: RunContext, retry: RetryPolicy | None, sleep: Sleep) -> None:
    target = ctx.run.target
    retry = retry or target_retry(target)
    limiter = _limiter("simulation-target", target.max_concurrent, target.requests_per_minute, target.timeout_seconds)
    if target.kind == Target.Kind.HTTP:
        # Custom HTTP chatbots keep their blocking client, on the loop's thread pool (checked
        # before the call; its own retries inside are not).
        await _guard(ctx)()
        result = await asyncio.to_thread(
            http_chat,
            url=target.api_base,
            headers=target.http_headers,
            request_template=target.request_template,
            response_path=target.response_path or "reply",
            messages=_target_messages(ctx),
            model_label=target.model or target.code,
            params=target.params,
            conversation_id=ctx.run.conversation.code,
            timeout=target.timeout_seconds,
            retry=retry,
            limiter=limiter,
        )
        meta = _call_meta(result, target.model or target.code, target.api_base, "chatbot")
    else:
        spec = target_spec(target)
        result = await achat(spec, _target_messages(ctx), retry=retry, limiter=limiter, sleep=sleep, guard=_guard(ctx))
        meta = _call_meta(result, spec.model, spec.api_base, "chatbot")
    await db_batch(save_messages, (ctx, "assistant", result.content, meta, result))


async def _converse(ctx: RunContext, retry: RetryPolicy | None, sleep: Sleep) -> bool:
    """Fill the conversation up to ``turns`` messages; return whether it ended early."""
    batch = ctx.batch
    # A resumed conversation whose last message carried the end marker still owes the reply.
    ending = bool(ctx.history) and ctx.history[-1][0] == "user" and bool(ctx.history[-1][2].get("end_marker"))
    while len(ctx.history) < batch.turns:
        if speaker_at(len(ctx.history), batch.first_speaker) == "user":
            if await _user_turn(ctx, retry, sleep):
                if not ctx.history or ctx.history[-1][0] != "user":
                    return True
                ending = True
        else:
            await _chatbot_turn(ctx, retry, sleep)
            if ending:
                return True
    return False


async def simulation_run_job(
    *,
    run_id: int,
    owner: str | None = None,
    retry: RetryPolicy | None = None,
    sleep: Sleep = asyncio.sleep,
) -> RunOutcome:
    """Claim the run, hold the conversation until it is finished or failed, and record it.

    A coroutine for the engine. Safe to run any number of times, concurrently too: a finished
    run is skipped, a run held by a live executor answers ``busy`` with the seconds its lease
    has left.
    """
    owner = owner or new_owner()
    retry = retry or retry_override()  # None: each side's own budget
    owner_started(owner)  # while this job lives, this process's claim as owner is not an orphan
    try:
        claimed = await db(simulation_run_claim, run_id=run_id, owner=owner)
        if isinstance(claimed, RunOutcome):
            return claimed
        return await _hold(claimed, retry, sleep)
    finally:
        owner_finished(owner)


async def _keep_claim(run_id: int, owner: str, job: asyncio.Task[Any]) -> None:
    """Renew the claim a few times per lease, also during a long call; stop the job once lost."""
    every = max(lease_seconds() / 3.0, 0.05)
    while True:
        await asyncio.sleep(every)
        if not await db(simulation_run_renew, run_id=run_id, owner=owner):
            job.cancel()
            return


async def _hold(ctx: RunContext, retry: RetryPolicy | None, sleep: Sleep) -> RunOutcome:
    run_id = ctx.run.pk
    keeper = asyncio.get_running_loop().create_task(_keep_claim(run_id, ctx.owner, asyncio.current_task()))  # type: ignore[arg-type]
    try:
        ended_early = await _converse(ctx, retry, sleep)
        keeper.cancel()
        await db(simulation_run_finish, ctx=ctx, ended_early=ended_early)
        return RunOutcome("done")
    except asyncio.CancelledError:
        if keeper.done() and not keeper.cancelled():  # the claim was lost: stop, write nothing
            logger.info("simulation run %s: lease lost (cancelled or taken over); stopping", run_id)
            return RunOutcome("lost")
        raise
    except LeaseLost:
        logger.info("simulation run %s: lease lost (cancelled or taken over); stopping", run_id)
        return RunOutcome("lost")
    except LLMError as exc:
        keeper.cancel()
        return await db(_fail, ctx, str(exc), exc.kind, exc.attempts)
    except Exception as exc:  # a bug or an outage must end the run visibly, not hang it
        keeper.cancel()
        logger.exception("simulation run %s failed", run_id)
        return await db(_fail, ctx, f"{type(exc).__name__}: {exc}"[:1000], "other")
    finally:
        keeper.cancel()


def simulation_run_execute(
    *,
    run_id: int,
    owner: str | None = None,
    retry: RetryPolicy | None = None,
    sleep: Sleep = asyncio.sleep,
) -> RunOutcome:
    """Run ``simulation_run_job`` to the end in the calling thread (its own engine)."""
    return run_job(lambda: simulation_run_job(run_id=run_id, owner=owner, retry=retry, sleep=sleep))


def _fail(ctx: RunContext, error: str, kind: str, failed_attempts: int = 0) -> RunOutcome:
    try:
        simulation_run_fail(ctx=ctx, error=error, kind=kind, failed_attempts=failed_attempts)
    except LeaseLost:
        return RunOutcome("lost")
    return RunOutcome("failed")


def simulation_runs_execute_inline(
    *, run_ids: list[int], threads: int = 4, on_done: Callable[[int, RunOutcome], None] | None = None
) -> dict[int, RunOutcome]:
    """Execute runs in this process, ``threads`` conversations at once (no worker needed).

    ``threads`` keeps its name for the command line; the conversations are coroutines of this
    thread's engine, not OS threads. ``on_done`` runs as a database step after each run.
    """
    async def one(run_id: int) -> RunOutcome:
        outcome = await simulation_run_job(run_id=run_id, owner=new_owner("inline"))
        if on_done is not None:
            await db(on_done, run_id, outcome)
        return outcome

    jobs = [lambda run_id=run_id: one(run_id) for run_id in run_ids]
    outcomes = run_jobs(jobs, concurrency=max(threads, 1))
    return dict(zip(run_ids, outcomes, strict=True))
