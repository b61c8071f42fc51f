"""Start, watch, cancel or resume a simulation batch from the terminal."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import call_budget
from core.templatetags.time_format import time_left_text
from corpus.models import PersonaSet, Target
from simulation.batch_spec import BatchSpec, UserAgent
from simulation.batches import (
    simulation_batch_cancel,
    simulation_batch_create,
    simulation_batch_resume,
    simulation_runs_recover,
)
from simulation.errors import SimulationError
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from simulation.preflight import batch_preflight, batch_resume_preflight
from simulation.preflight import enabled as preflight_enabled
from simulation.prompts import prompt_templates_ensure_builtin
from simulation.selectors import batch_progress
from simulation.simulate import simulation_runs_execute_inline


class Command(BaseCommand):
    help = (
        "Run a simulation batch: personas x chatbots x repetitions against a user-agent model. "
        "Without --inline the conversations go to the Celery workers (start one with `manage.py serve` "
        "or `celery -A evalsite worker`); --inline runs them in this process. --wait shows a progress bar "
        "until the batch is done. Also: --status/--cancel/--resume CODE."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--persona-set", help="persona set key (newest version) or id")
        parser.add_argument("--personas", default="", help="comma-separated persona keys (default: all)")
        parser.add_argument("--targets", default="", help="comma-separated chatbot codes")
        parser.add_argument("--protocol", choices=["amhart", "vera-mh"], default="amhart")
        parser.add_argument("--repetitions", type=int, default=1)
        parser.add_argument("--user-model", help="litellm model string of the user-agent")
        parser.add_argument("--user-api-base", default="")
        parser.add_argument("--user-api-key-env", default="", help="NAME of the variable holding the key")
        parser.add_argument("--user-params", default="{}", help='JSON, e.g. {"temperature": 1.0}')
        parser.add_argument("--user-max-concurrent", type=int, default=8)
        parser.add_argument("--user-rpm", type=int, default=0)
        parser.add_argument("--user-timeout", type=float, default=60.0, help="seconds one user-agent attempt may wait")
        parser.add_argument("--user-retry-attempts", type=int, default=call_budget.DEFAULT_ATTEMPTS)
        parser.add_argument("--user-retry-base-delay", type=float, default=call_budget.DEFAULT_BASE_DELAY)
        parser.add_argument("--user-retry-max-delay", type=float, default=call_budget.DEFAULT_MAX_DELAY)
        parser.add_argument("--exchanges", type=int, help="AMHART: user/chatbot pairs (default 10)")
        parser.add_argument("--turns", type=int, help="VERA-MH: messages, the chatbot last (default 20)")
        parser.add_argument("--first-speaker", choices=["user", "chatbot"], default="user")
        parser.add_argument("--word-cap", type=int)
        parser.add_argument("--end-marker", default="")
        parser.add_argument("--no-role-slide-check", action="store_true")
        parser.add_argument("--persona-template", help="template key (newest version) or key@version")
        parser.add_argument("--reminder-template")
        parser.add_argument("--kickoff-template")
        parser.add_argument("--name", default="")
        parser.add_argument("--wait", action="store_true", help="block with a progress bar until the batch is done")
        parser.add_argument("--inline", action="store_true", help="run the conversations in this process (no worker)")
        parser.add_argument("--threads", type=int, default=4, help="concurrent conversations with --inline")
        parser.add_argument("--status", metavar="CODE", help="show a batch's progress")
        parser.add_argument("--cancel", metavar="CODE", help="cancel a batch")
        parser.add_argument("--resume", metavar="CODE", help="resume a cancelled or stalled batch")
        parser.add_argument("--include-failed", action="store_true", help="with --resume: retry failed conversations")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["cancel"]:
                batch = simulation_batch_cancel(batch_id=self._batch(options["cancel"]).pk)
                self.stdout.write(self.style.SUCCESS(f"Cancelled {batch.code}."))
                return
            if options["status"]:
                batch = self._batch(options["status"])
            elif options["resume"]:
                batch = self._batch(options["resume"])
                if preflight_enabled():
                    report = batch_resume_preflight(batch, include_failed=options["include_failed"])
                    if not report.ok:
                        for check in report.failed:
                            self.stderr.write(f"{check.used_by} ({check.model}): {check.problem}\n  what to do: {check.hint}")
                        raise CommandError(report.message("nothing was resumed"))
                batch = simulation_batch_resume(
                    batch_id=batch.pk,
                    include_failed=options["include_failed"],
                    dispatch=not options["inline"],
                )
                self.stdout.write(f"Resumed {batch.code}.")
            else:
                spec = self._spec(options)
                if preflight_enabled():
                    report = batch_preflight(spec)
                    if not report.ok:
                        for check in report.failed:
                            self.stderr.write(f"{check.used_by} ({check.model}): {check.problem}\n  what to do: {check.hint}")
                        raise CommandError(report.message())
                batch = simulation_batch_create(spec=spec, dispatch=not options["inline"])
                self.stdout.write(f"Started {batch.code}: {batch.runs.count()} conversation(s), {batch.turns} messages each.")
        except SimulationError as exc:
            raise CommandError(str(exc)) from exc
        if options["inline"] and not options["status"]:
            self._run_inline(batch, options["threads"])
        elif options["wait"]:
            self._wait(batch)
        self._report(batch)

    # -- building the batch ----------------------------------------------------------------
    def _batch(self, code: str) -> SimulationBatch:
        try:
            return SimulationBatch.objects.get(code=code)
        except SimulationBatch.DoesNotExist as exc:
            raise CommandError(f"no batch {code}") from exc

    def _template(self, ref: str | None) -> int | None:
        if not ref:
            return None
        key, _, version = ref.partition("@")
        qs = PromptTemplate.objects.filter(key=key)
        template = qs.filter(version=int(version)).first() if version else qs.order_by("-version").first()
        if template is None:
            raise CommandError(f"no prompt template {ref}")
        return template.pk

    def _spec(self, options: dict[str, Any]) -> BatchSpec:
        prompt_templates_ensure_builtin()
        ref = options["persona_set"] or ""
        persona_set = (
            PersonaSet.objects.filter(pk=int(ref)).first() if ref.isdigit()
            else PersonaSet.objects.filter(key=ref).order_by("-version").first()
        )
        if persona_set is None:
            raise CommandError(f"no persona set '{ref}' (see `manage.py import_personas`)")
        keys = [k.strip() for k in options["personas"].split(",") if k.strip()]
        personas = list(persona_set.personas.filter(key__in=keys).values_list("pk", flat=True)) if keys else []
        if len(personas) != len(keys):
            raise CommandError(f"unknown persona key(s) in '{options['personas']}'")
        codes = [c.strip() for c in options["targets"].split(",") if c.strip()]
        targets = list(Target.objects.filter(code__in=codes).values_list("pk", flat=True))
        if not codes or len(targets) != len(codes):
            raise CommandError(f"unknown chatbot code(s) in '{options['targets']}' (see the Chatbots page)")
        if not options["user_model"]:
            raise CommandError("--user-model is required")
        try:
            params = json.loads(options["user_params"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--user-params is not JSON: {exc}") from exc
        return BatchSpec(
            name=options["name"],
            protocol=options["protocol"],
            persona_set_id=persona_set.pk,
            persona_ids=tuple(personas),
            target_ids=tuple(targets),
            repetitions=options["repetitions"],
            user_agent=UserAgent(
                model=options["user_model"], api_base=options["user_api_base"],
                api_key_env=options["user_api_key_env"], params=params,
                max_concurrent=options["user_max_concurrent"], requests_per_minute=options["user_rpm"],
                timeout_seconds=options["user_timeout"], retry_attempts=options["user_retry_attempts"],
                retry_base_delay=options["user_retry_base_delay"], retry_max_delay=options["user_retry_max_delay"],
            ),
            exchanges=options["exchanges"],
            turns=options["turns"],
            first_speaker=options["first_speaker"],
            word_cap=options["word_cap"],
            end_marker=options["end_marker"],
            role_slide_check=not options["no_role_slide_check"],
            persona_template_id=self._template(options["persona_template"]),
            reminder_template_id=self._template(options["reminder_template"]),
            kickoff_template_id=self._template(options["kickoff_template"]),
        )

    # -- running and watching --------------------------------------------------------------
    def _run_inline(self, batch: SimulationBatch, threads: int) -> None:
        run_ids = list(batch.runs.filter(status__in=SimulationRun.ACTIVE).values_list("pk", flat=True))
        self.stdout.write(f"Running {len(run_ids)} conversation(s) in this process on {threads} thread(s).")
        outcomes = simulation_runs_execute_inline(
            run_ids=run_ids, threads=threads, on_done=lambda *_: self._bar(batch)
        )
        self._bar(batch, final=True)
        busy = [r for r, o in outcomes.items() if o.status == "busy"]
        if busy:
            self.stderr.write(f"{len(busy)} conversation(s) are held by another executor; resume later.")

    def _wait(self, batch: SimulationBatch) -> None:
        last_change, last_done, hinted = time.monotonic(), -1, False
        while True:
            batch.refresh_from_db()
            progress = self._bar(batch)
            if batch.status != SimulationBatch.Status.RUNNING:
                self._bar(batch, final=True)
                return
            if progress.stalled:
                simulation_runs_recover(batch_id=batch.pk)
            if progress.messages != last_done:
                last_change, last_done = time.monotonic(), progress.messages
            elif not hinted and time.monotonic() - last_change > 30 and not progress.running:
                hinted = True
                self.stderr.write(
                    "\nNo progress for 30 s: is a worker running? Start one with `manage.py serve` or "
                    "`celery -A evalsite worker`, or press Ctrl-C and resume with --inline."
                )
            time.sleep(1.0)

    def _bar(self, batch: SimulationBatch, final: bool = False):  # type: ignore[no-untyped-def]
        progress = batch_progress(batch)
        width = 30
        filled = int(width * progress.finished / progress.total) if progress.total else width
        eta = f" · {time_left_text(progress.eta_seconds)}" if progress.eta_seconds is not None else ""
        line = (
            f"\r[{'#' * filled}{'.' * (width - filled)}] {progress.finished}/{progress.total} · "
            f"{progress.running} running · {progress.failed} failed · {progress.flagged} flagged · "
            f"{progress.prompt_tokens + progress.completion_tokens} tokens · ${progress.cost_usd:.4f}{eta}   "
        )
        self.stdout.write(line, ending="\n" if final else "")
        if hasattr(sys.stdout, "flush"):
            self.stdout.flush()
        return progress

    def _report(self, batch: SimulationBatch) -> None:
        batch.refresh_from_db()
        progress = batch_progress(batch)
        self.stdout.write(
            f"{batch.code}: {progress.state_label.lower()} · {progress.done} done, {progress.failed} failed, "
            f"{progress.cancelled} cancelled, {progress.flagged} flagged, {progress.queued + progress.running} to go."
        )
        for run in batch.runs.filter(status=SimulationRun.Status.FAILED).select_related("persona", "target")[:10]:
            self.stderr.write(f"  failed: {run.persona.key} x {run.target.code} #{run.repetition}: {run.error[:200]}")
