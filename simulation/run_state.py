"""The claim on a simulation run and every write to its conversation.

``simulation_run_claim`` takes the run row with ``SELECT ... FOR UPDATE`` and writes a lease
(owner id + expiry). Every later write (each message, the end) locks the row again and checks
the lease is still ours and the run still running: an executor that lost its lease (too slow,
the batch was cancelled, another worker took over after a crash) writes nothing more. Each
message is saved in its own transaction at ``turn_index`` = the number already saved, so a
crash loses at most the call in flight and ``(conversation, turn_index)`` stays unique.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, OperationalError, close_old_connections, transaction
from django.db.models import F
from django.utils import timezone

from core.bulk import insert_rows
from core.codes import new_code
from corpus.conversations.integrity import Flag
from corpus.conversations.services import is_sensitive
from corpus.models import Conversation, Message, Persona, Target
from simulation import outages
from simulation.llm import LLMResult
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from simulation.prompts import persona_values, render
from simulation.run_checks import run_integrity_flags

logger = logging.getLogger("simulation.simulate")
DB_ATTEMPTS = 4  # a message write that meets a transient database error is tried again
Status = SimulationRun.Status


def lease_seconds() -> float:
    """Return how long a claim lasts without a write (renewed before each call and each save)."""
    configured = getattr(settings, "SIMULATION_LEASE_SECONDS", None)
    return float(configured or os.environ.get("EVALSITE_SIMULATION_LEASE_SECONDS") or 90)


def _start_ticks(pid: int) -> str:
    """Return when process ``pid`` started (clock ticks since boot; Linux), or "" if unknown.

    Part of an owner id: a pid reused by a later process does not pass for the dead holder.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # The command name (field 2) may hold spaces: fields are counted after its ")".
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


_MY_START = ""
_live_owners: set[str] = set()


def new_owner(tag: str = "") -> str:
    """Return a lease owner id: host, pid and its start (to spot a dead holder), a random part."""
    global _MY_START
    _MY_START = _MY_START or _start_ticks(os.getpid())
    process = f"{os.getpid()}@{_MY_START}" if _MY_START else str(os.getpid())
    return f"{socket.gethostname()}:{process}:{tag or 'local'}:{uuid.uuid4().hex[:12]}"


def owner_started(owner: str) -> None:
    """Record that a job of this process holds claims as ``owner`` (see ``holder_is_dead``)."""
    _live_owners.add(owner)


def owner_finished(owner: str) -> None:
    """Record that the job holding claims as ``owner`` ended (its claims are orphans if any)."""
    _live_owners.discard(owner)


def _after_fork() -> None:
    global _MY_START
    _MY_START = ""
    _live_owners.clear()


os.register_at_fork(after_in_child=_after_fork)


def holder_is_dead(owner: str) -> bool:
    """Return whether ``owner`` was a job of a process on this host that no longer runs it.

    Exact on this host: the process is gone (or its pid now belongs to a later process), or
    it is this very process and the job that took the claim has ended. A holder on another
    host is never known dead: its lease running out says it is gone.
    """
    host, _, rest = owner.partition(":")
    process = rest.partition(":")[0]
    pid_text, _, started = process.partition("@")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return owner not in _live_owners
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return bool(started) and _start_ticks(pid) not in ("", started)


def holder_is_alive_here(owner: str) -> bool:
    """Return whether ``owner`` is a job still running in a process on this host."""
    host, _, rest = owner.partition(":")
    return host == socket.gethostname() and rest.partition(":")[0].partition("@")[0].isdigit() and not holder_is_dead(owner)


def holder_gone(owner: str, expires: Any, now: Any) -> bool:
    """Return whether a claim's holder is gone: known dead on this host, else its lease ran out.

    A holder alive on this host keeps its claim even past its lease (a loop held up for a
    while, a loaded machine): taking the row over would judge or write it twice.
    """
    if not owner:
        return expires is None or expires < now
    if holder_is_dead(owner):
        return True
    if holder_is_alive_here(owner):
        return False
    return expires is None or expires < now


class LeaseLost(Exception):
    """This executor no longer owns the run (cancelled, or taken over): stop, write nothing."""


@dataclass
class RunOutcome:
    status: str  # done, failed, cancelled, skipped, busy, lost
    retry_in: float | None = None


@dataclass
class RunContext:
    run: SimulationRun
    batch: SimulationBatch
    owner: str
    persona_prompt: str
    reminder: str
    kickoff: str
    history: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


def template_values(batch: SimulationBatch, persona: Any) -> dict[str, Any]:
    return persona_values(
        persona,
        {
            "end_marker": batch.end_marker,
            "word_cap": batch.word_cap or "",
            "turns": batch.turns,
            "exchanges": batch.exchanges or "",
            "chatbot_message": "{chatbot_message}",
        },
    )


def rendered_prompts(batch: SimulationBatch, persona: Any) -> tuple[str, str, str]:
    """Return the persona system prompt, the reminder and the kickoff for one persona."""
    values = template_values(batch, persona)

    def one(template: PromptTemplate | None) -> str:
        return render(template.text, values) if template is not None else ""

    return one(batch.persona_template), one(batch.reminder_template), one(batch.kickoff_template)


def simulated_content_hash(run: SimulationRun, messages: list[tuple[str, str]]) -> str:
    """Return the conversation hash: batch, cell and repetition make equal texts distinct."""
    payload = {
        "batch": run.batch_id,
        "persona": run.persona_id,
        "target": run.target_id,
        "repetition": run.repetition,
        "messages": [[role, content] for role, content in messages],
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --- claim --------------------------------------------------------------------------------


def _conversation_metadata(run: SimulationRun, batch: SimulationBatch, persona_prompt: str) -> dict[str, Any]:
    target = run.target
    refs = {
        kind: (t.reference() if t is not None else None)
        for kind, t in (
            ("persona_system", batch.persona_template),
            ("reminder", batch.reminder_template),
            ("kickoff", batch.kickoff_template),
        )
    }
    return {
        "batch_id": batch.pk,
        "batch_code": batch.code,
        "run_id": run.pk,
        "repetition": run.repetition,
        "protocol": batch.protocol,
        "cell": {
            "persona_set": f"{run.persona.persona_set.key}@v{run.persona.persona_set.version}",
            "persona": run.persona.key,
            "target": target.code,
            "target_kind": target.kind,
            "target_model": target.model,
            "target_params": target.params,
        },
        "user_agent": {"model": batch.user_model, "api_base": batch.user_api_base, "params": batch.user_params},
        "expected_messages": batch.turns,
        "first_speaker": batch.first_speaker,
        "word_cap": batch.word_cap,
        "end_marker": batch.end_marker,
        "role_slide_check": batch.role_slide_check,
        "prompts": refs,
        "persona_prompt_sha256": hashlib.sha256(persona_prompt.encode()).hexdigest(),
        "chatbot_system_prompt_sha256": hashlib.sha256(target.system_prompt.encode()).hexdigest(),
    }


@transaction.atomic
def simulation_run_claim(*, run_id: int, owner: str) -> RunOutcome | RunContext:
    """Take the run for ``owner``, or say why not: finished, cancelled, or held (retry later)."""
    run = SimulationRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None or run.status in SimulationRun.TERMINAL:  # gone (batch deleted) or finished
        return RunOutcome("skipped")
    batch = (
        SimulationBatch.objects.select_related("persona_template", "reminder_template", "kickoff_template")
        .get(pk=run.batch_id)
    )
    now = timezone.now()
    if batch.status == SimulationBatch.Status.CANCELLED:
        SimulationRun.objects.filter(pk=run.pk).update(status=Status.CANCELLED, lease_owner="", lease_expires_at=None)
        return RunOutcome("cancelled")
    held = (
        run.status == Status.RUNNING
        and run.lease_owner
        and run.lease_owner != owner
        and not holder_gone(run.lease_owner, run.lease_expires_at, now)
    )
    if held:  # a late or duplicate delivery: the holder goes on; the sweeper covers its death
        left = (run.lease_expires_at - now).total_seconds() if run.lease_expires_at else 0.0
        return RunOutcome("busy", retry_in=max(left, 0.0))
    run.persona = Persona.objects.select_related("persona_set").get(pk=run.persona_id)
    run.target = Target.objects.get(pk=run.target_id)
    persona_prompt, reminder, kickoff = rendered_prompts(batch, run.persona)
    if run.conversation_id is None:
        conversation = Conversation.objects.create(
            code=_conversation_code(),
            persona=run.persona,
            target=run.target,
            source=Conversation.Source.SIMULATED,
            run_index=run.repetition,
            metadata=_conversation_metadata(run, batch, persona_prompt),
            # Flagged until the final check: an unfinished conversation is never scored.
            integrity_ok=False,
            integrity_flags=[Flag("incomplete", "the simulation has not finished").as_dict()],
            content_hash=hashlib.sha256(f"simulation-run:{run.pk}:pending".encode()).hexdigest(),
            created_by_id=batch.created_by_id,
        )
        run.conversation = conversation
    if run.status != Status.RUNNING or run.lease_owner != owner:
        run.attempts += 1
    run.status = Status.RUNNING
    run.lease_owner = owner
    run.lease_expires_at = now + timedelta(seconds=lease_seconds())
    run.started_at = run.started_at or now
    run.error = ""
    run.error_kind = ""
    run.save()
    history = [
        (m.role, m.content, m.meta)
        for m in Message.objects.filter(conversation_id=run.conversation_id).order_by("turn_index")
    ]
    if run.messages_done != len(history):  # the saved messages are the truth
        SimulationRun.objects.filter(pk=run.pk).update(messages_done=len(history))
        run.messages_done = len(history)
    Conversation.objects.filter(pk=run.conversation_id).update(message_count=len(history))
    return RunContext(run, batch, owner, persona_prompt, reminder, kickoff, history)


def _conversation_code() -> str:
    while True:
        code = new_code("C-")
        if not Conversation.objects.filter(code=code).exists():
            return code


def simulation_run_renew(*, run_id: int, owner: str) -> bool:
    """Extend the claim; False when it is no longer ours (cancelled, or taken over)."""
    until = timezone.now() + timedelta(seconds=lease_seconds())
    return bool(
        SimulationRun.objects.filter(pk=run_id, status=Status.RUNNING, lease_owner=owner).update(lease_expires_at=until)
    )


def simulation_runs_held(items: list[tuple[int, str]]) -> list[bool]:
    """Return, for each (run, owner), whether the run is still running on that owner's claim.

    A batched step (one query for every conversation about to call in this turn): a cancelled
    batch, or a run taken over, stops before its next call instead of at its next write.
    """
    held = set(
        SimulationRun.objects.filter(pk__in={pk for pk, _ in items}, status=Status.RUNNING).values_list(
            "pk", "lease_owner"
        )
    )
    return [(pk, owner) in held for pk, owner in items]


def _lock_owned(ctx: RunContext) -> SimulationRun:
    run = SimulationRun.objects.select_for_update().get(pk=ctx.run.pk)
    if run.status != Status.RUNNING or run.lease_owner != ctx.owner:
        raise LeaseLost()
    return run


def _message_updates(ctx: RunContext, result: LLMResult | None) -> dict[str, Any]:
    """Return the run row's update for one more message: count, lease, the call's usage."""
    updates: dict[str, Any] = {
        "messages_done": len(ctx.history) + 1,
        "lease_expires_at": timezone.now() + timedelta(seconds=lease_seconds()),
    }
    if result is not None and not result.cached:
        # Every attempt was an HTTP request; all but the last one failed (an error, an empty reply).
        updates.update(
            calls=F("calls") + max(result.attempts, 1),
            failed_calls=F("failed_calls") + max(result.attempts - 1, 0),
            prompt_tokens=F("prompt_tokens") + result.prompt_tokens,
            completion_tokens=F("completion_tokens") + result.completion_tokens,
            cost_usd=F("cost_usd") + (result.cost_usd or 0.0),
            cost_unknown_calls=F("cost_unknown_calls") + (1 if result.cost_usd is None else 0),
        )
    return updates


def save_message(ctx: RunContext, role: str, content: str, meta: dict[str, Any], result: LLMResult | None) -> None:
    """Store the next message in its own transaction, if we still own the run; renew the lease.

    The fenced UPDATE (our lease, still running, exactly ``index`` messages so far) takes the
    row lock and proves ownership in one statement; no match means someone else owns the run.
    """
    index = len(ctx.history)
    updates = _message_updates(ctx, result)
    for attempt in range(DB_ATTEMPTS):
        try:
            _store_message(ctx, index, role, content, meta, updates)
            break
        except OperationalError as exc:  # SQLite "database is locked", a dropped connection...
            if attempt == DB_ATTEMPTS - 1:
                raise
            logger.warning("simulation run %s: database busy (%s); retrying the write", ctx.run.pk, exc)
            close_old_connections()
            time.sleep(0.05 * 2**attempt)
    ctx.history.append((role, content, meta))


MessageItem = tuple[RunContext, str, str, dict[str, Any], LLMResult | None]


def save_messages(items: list[MessageItem]) -> list[BaseException | None]:
    """Store the next message of many conversations in one transaction (a batched step).

    Each conversation's write is fenced as in ``save_message`` (its lease, still running,
    exactly *n* messages so far); one whose lease is lost gets ``LeaseLost`` and writes
    nothing. The messages go in one INSERT. If the batch meets a database error, every item
    is written again on its own, so one bad item never costs the others.
    """
    if len(items) == 1:
        return [_save_one(items[0])]
    outcomes: list[BaseException | None] = []
    try:
        with transaction.atomic():
            rows = []
            for ctx, role, content, meta, result in items:
                index = len(ctx.history)
                owned = SimulationRun.objects.filter(
                    pk=ctx.run.pk, lease_owner=ctx.owner, status=Status.RUNNING, messages_done=index
                ).update(**_message_updates(ctx, result))
                if owned:
                    rows.append(
                        Message(conversation_id=ctx.run.conversation_id, turn_index=index, role=role, content=content, meta=meta)
                    )
                outcomes.append(None if owned else LeaseLost())
            insert_rows(Message, rows)
    except (IntegrityError, OperationalError) as exc:
        logger.warning("simulation: a batch of %d message writes failed (%s); writing them one by one", len(items), exc)
        close_old_connections()
        return [_save_one(item) for item in items]
    for (ctx, role, content, meta, _result), outcome in zip(items, outcomes, strict=True):
        if outcome is None:
            ctx.history.append((role, content, meta))
    return outcomes


def _save_one(item: MessageItem) -> BaseException | None:
    try:
        save_message(*item)
    except (LeaseLost, IntegrityError, OperationalError) as exc:
        return exc
    return None


def _store_message(
    ctx: RunContext, index: int, role: str, content: str, meta: dict[str, Any], updates: dict[str, Any]
) -> None:
    try:
        with transaction.atomic():
            owned = SimulationRun.objects.filter(
                pk=ctx.run.pk, lease_owner=ctx.owner, status=Status.RUNNING, messages_done=index
            ).update(**updates)
            if not owned:
                raise LeaseLost()
            Message.objects.create(
                conversation_id=ctx.run.conversation_id, turn_index=index, role=role, content=content, meta=meta
            )
    except IntegrityError as exc:  # (conversation, turn_index) taken: someone else wrote it
        raise LeaseLost() from exc


# --- the conversation ---------------------------------------------------------------------




def _close(
    ctx: RunContext, *, status: str, ended_early: bool, error: str = "", kind: str = "", failed_attempts: int = 0
) -> None:
    run = _lock_owned(ctx)
    conversation = Conversation.objects.get(pk=run.conversation_id)
    messages = [
        (m.role, m.content, m.meta) for m in Message.objects.filter(conversation=conversation).order_by("turn_index")
    ]
    run.target, run.persona = ctx.run.target, ctx.run.persona
    flags = run_integrity_flags(run, ctx.batch, messages, ended_early=ended_early)
    if status == Status.FAILED:
        flags.insert(0, Flag("simulation_failed", f"the simulation failed: {error}"))
    pairs = [(role, content) for role, content, _ in messages]
    conversation.integrity_flags = [f.as_dict() for f in flags]
    conversation.integrity_ok = not flags
    conversation.content_hash = simulated_content_hash(run, pairs)
    conversation.message_count = len(pairs)
    conversation.sensitive = is_sensitive(pairs) or conversation.content_warning_marked
    conversation.metadata = {**conversation.metadata, "ended_early": ended_early, "status": status}
    conversation.save()
    SimulationRun.objects.filter(pk=run.pk).update(
        status=status,
        ended_early=ended_early,
        error=error,
        error_kind=kind,
        finished_at=timezone.now(),
        lease_owner="",
        lease_expires_at=None,
        # The attempts of the call that failed for good were requests too.
        calls=F("calls") + failed_attempts,
        failed_calls=F("failed_calls") + failed_attempts,
    )


def simulation_run_finish(*, ctx: RunContext, ended_early: bool) -> None:
    """Check and close a finished conversation; flags exclude it from scoring."""
    with transaction.atomic():
        _close(ctx, status=Status.DONE, ended_early=ended_early)
    # Its chatbot answered: a breaker open on it closes and its waiting conversations go again.
    outages.run_done(ctx.run.target_id)
    batch_maybe_finish(batch_id=ctx.batch.pk)


def simulation_run_fail(*, ctx: RunContext, error: str, kind: str, failed_attempts: int = 0) -> None:
    """Record a run that cannot go on (retries spent, bad request...) with its error.

    ``failed_attempts`` are the HTTP requests of the call that failed for good (counted as calls).
    """
    logger.warning("simulation run %s failed: %s", ctx.run.pk, error)
    with transaction.atomic():
        _close(ctx, status=Status.FAILED, ended_early=False, error=error, kind=kind, failed_attempts=failed_attempts)
    # A model that did not answer: the run waits for it (core.outages) instead of for a person.
    outages.run_failed(ctx.run, getattr(ctx.run.target, "code", "") or f"chatbot {ctx.run.target_id}", error, kind)
    batch_maybe_finish(batch_id=ctx.batch.pk)


def batch_maybe_finish(*, batch_id: int) -> bool:
    """Mark a running batch finished once none of its runs is queued, running or waiting.

    Waiting: failed because a model did not answer, with automatic retries left (core.outages):
    the batch is not finished while its chatbot's breaker will send them again.
    """
    if SimulationRun.objects.filter(batch_id=batch_id, status__in=SimulationRun.ACTIVE).exists():
        return False
    if outages.waiting_in_batch_id(batch_id):
        return False
    return bool(
        SimulationBatch.objects.filter(pk=batch_id, status=SimulationBatch.Status.RUNNING).update(
            status=SimulationBatch.Status.FINISHED, finished_at=timezone.now()
        )
    )
