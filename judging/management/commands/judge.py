"""Manage LLM judges and judge runs from the command line.

    manage.py judge create --name gpt-judge --instrument amhart --model openai/gpt-4o \\
        --api-key-env OPENAI_API_KEY [--provider openai] [--temperature 0] [--reasoning-effort low]
    manage.py judge list
    manage.py judge run --judges gpt-judge,claude-judge,3 --batch 7 [--study 2] [--codes C-1,C-2]
        [--persona-set 4] [--instances 3 --independent] [--no-cache] [--wait | --inline -j 16]
    manage.py judge status RUN [--wait]
    manage.py judge retry RUN [--wait | --inline]

``--wait`` polls the run while Celery workers do the work, with a progress bar; ``--inline``
runs the judgements in this process on a pool of threads (no worker needed).
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from corpus.models import Instrument
from judging import selectors, services
from judging.errors import JudgingError
from judging.models import Judge, JudgeRun, PromptTemplate


def _csv(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _instrument(ref: str) -> Instrument:
    if ref.isdigit():
        found = Instrument.objects.filter(pk=int(ref)).first()
    else:
        found = Instrument.objects.filter(key=ref).order_by("-version").first()
    if found is None:
        raise CommandError(f"no instrument '{ref}' (give an id or a key; the newest version is used)")
    return found


class Command(BaseCommand):
    help = "Create and list LLM judges; start, follow and retry judge runs."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a judge")
        create.add_argument("--name", required=True)
        create.add_argument("--instrument", required=True, help="Instrument id or key")
        create.add_argument("--model", required=True, help="litellm model string")
        create.add_argument("--provider", default="")
        create.add_argument("--api-base", default="")
        create.add_argument("--api-key-env", default="", help="NAME of the variable holding the key")
        create.add_argument("--temperature", type=float, default=None, help="Default: not sent (the provider decides)")
        create.add_argument("--no-temperature", action="store_true", help="Do not send a temperature (the default)")
        create.add_argument("--reasoning-effort", default="", choices=["", "minimal", "low", "medium", "high"])
        create.add_argument("--params", default="{}", help="Other litellm parameters as JSON")
        create.add_argument("--prompt", default="", help="Prompt template id (default: the team default)")
        create.add_argument("--no-structured-output", action="store_true")
        create.add_argument("--format-retries", type=int, default=2)
        create.add_argument("--max-concurrent", type=int, default=8)
        create.add_argument("--rpm", type=int, default=0)

        sub.add_parser("list", help="List the judges")

        run = sub.add_parser("run", help="Start a judge run")
        run.add_argument("--judges", required=True, help="Comma-separated judge ids or names")
        run.add_argument("--batch", default="", help="Simulation batch id(s), comma-separated")
        run.add_argument("--persona-set", default="", help="Persona set id(s), comma-separated")
        run.add_argument("--study", type=int, default=None)
        run.add_argument("--codes", default="", help="Conversation codes, comma-separated")
        run.add_argument("--include-flagged", action="store_true")
        run.add_argument("--instances", type=int, default=1)
        run.add_argument("--independent", action="store_true", help="Instances get their own cache keys")
        run.add_argument("--no-cache", action="store_true", help="Fresh calls (results still stored)")
        run.add_argument("--name", default="")
        self._follow_arguments(run)

        status = sub.add_parser("status", help="Show a run's progress")
        status.add_argument("run", type=int)
        status.add_argument("--wait", action="store_true")

        retry = sub.add_parser("retry", help="Schedule a finished run's failed judgements again")
        retry.add_argument("run", type=int)
        self._follow_arguments(retry)

    def _follow_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wait", action="store_true", help="Follow the run with a progress bar until it ends")
        parser.add_argument("--inline", action="store_true", help="Run the judgements in this process")
        parser.add_argument("-j", "--concurrency", type=int, default=8, help="Threads for --inline")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except JudgingError as exc:
            raise CommandError(str(exc)) from exc

    # -- actions -------------------------------------------------------------------------------
    def _create(self, o: dict[str, Any]) -> None:
        try:
            params = json.loads(o["params"])
        except json.JSONDecodeError as exc:
            raise CommandError(f"--params is not JSON: {exc.msg}") from exc
        prompt = PromptTemplate.objects.filter(pk=int(o["prompt"])).first() if o["prompt"].isdigit() else None
        if o["prompt"] and prompt is None:
            raise CommandError(f"no prompt template {o['prompt']}")
        judge = services.judge_create(
            name=o["name"],
            instrument=_instrument(o["instrument"]),
            model=o["model"],
            provider=o["provider"],
            api_base=o["api_base"],
            api_key_env=o["api_key_env"],
            temperature=None if o["no_temperature"] else o["temperature"],
            reasoning_effort=o["reasoning_effort"],
            params=params,
            prompt=prompt,
            structured_output=not o["no_structured_output"],
            format_retries=o["format_retries"],
            max_concurrent=o["max_concurrent"],
            requests_per_minute=o["rpm"],
        )
        self.stdout.write(f"judge {judge.pk} '{judge.name}': {judge.mode}, {judge.model} ({judge.provider}), prompt {judge.prompt}")

    def _list(self, o: dict[str, Any]) -> None:
        for judge in Judge.objects.select_related("instrument", "prompt").order_by("name"):
            self.stdout.write(
                f"{judge.pk:>4}  {judge.name:<24} {judge.mode:<9} {judge.provider:<10} {judge.model:<32} "
                f"{judge.instrument.key} v{judge.instrument.version}  {judge.prompt}"
            )

    def _run(self, o: dict[str, Any]) -> None:
        ids, selection = selectors.conversation_ids_for_judging(
            batch_ids=_csv(o["batch"]),
            persona_set_ids=[int(p) for p in _csv(o["persona_set"])],
            study_id=o["study"],
            codes=_csv(o["codes"]),
            include_flagged=o["include_flagged"],
            user=None,  # whoever runs manage.py operates the server: every study
        )
        judges = selectors.judges_by_reference(_csv(o["judges"]))
        from judging.launch import judges_preflight
        from simulation.preflight import enabled as preflight_enabled

        if preflight_enabled():
            report = judges_preflight(judges)
            for check in report.failed:
                self.stderr.write(f"{check.used_by} ({check.model}): {check.problem}\n  what to do: {check.hint}")
            if not report.ok:
                raise CommandError(report.message())
        run = services.judge_run_create(
            judges=judges,
            conversation_ids=ids,
            selection=selection,
            instances=o["instances"],
            independent_instances=o["independent"],
            use_cache=not o["no_cache"],
            name=o["name"],
            start=not o["inline"],
        )
        self.stdout.write(f"run {run.pk}: {run.n_total} judgement(s) of {len(ids)} conversation(s)")
        for warning in run.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        self._follow(run, o)

    def _status(self, o: dict[str, Any]) -> None:
        run = self._get_run(o["run"])
        if o["wait"]:
            self._wait(run)
        else:
            self._summary(run)

    def _retry(self, o: dict[str, Any]) -> None:
        from judging.launch import run_retry_preflight
        from simulation.preflight import enabled as preflight_enabled

        run = self._get_run(o["run"])
        if preflight_enabled():
            report = run_retry_preflight(run)
            for check in report.failed:
                self.stderr.write(f"{check.used_by} ({check.model}): {check.problem}\n  what to do: {check.hint}")
            if not report.ok:
                raise CommandError(report.message("nothing was scheduled again"))
        n = services.judge_run_retry_failed(run=run, start=not o["inline"])
        self.stdout.write(f"{n} judgement(s) scheduled again")
        self._follow(run, o)

    # -- following a run ---------------------------------------------------------------------
    def _get_run(self, pk: int) -> JudgeRun:
        run = JudgeRun.objects.filter(pk=pk).first()
        if run is None:
            raise CommandError(f"no judge run {pk}")
        return run

    def _follow(self, run: JudgeRun, o: dict[str, Any]) -> None:
        if o["inline"]:
            started = time.monotonic()
            services.judge_run_execute_in_process(
                run_id=run.pk, concurrency=o["concurrency"], on_result=lambda _r: self._bar(JudgeRun.objects.get(pk=run.pk), started)
            )
            self._summary(JudgeRun.objects.get(pk=run.pk))
        elif o["wait"]:
            self._wait(run)

    def _wait(self, run: JudgeRun) -> None:
        started = time.monotonic()
        while True:
            run.refresh_from_db()
            self._bar(run, started)
            if run.is_finished:
                break
            time.sleep(1.0)
        self._summary(run)

    def _bar(self, run: JudgeRun, started: float, width: int = 30) -> None:
        """Draw the progress line on stdout (stderr is for errors, and Django paints it red)."""
        finished = run.n_done + run.n_failed
        filled = int(width * run.progress)
        elapsed = time.monotonic() - started
        left = ""
        if 0 < finished < run.n_total and elapsed > 0:
            left = f" ~{(run.n_total - finished) * elapsed / finished:4.0f}s left"
        line = (
            f"\r[{'#' * filled}{'.' * (width - filled)}] {finished}/{run.n_total} "
            f"failed {run.n_failed} cached {run.n_cached}/{run.n_calls} "
            f"{elapsed:5.0f}s{left}"
        )
        self.stdout.write(line, ending="")
        self.stdout.flush()

    def _summary(self, run: JudgeRun) -> None:
        self.stdout.write("")
        self.stdout.write(
            f"run {run.pk}: {run.get_status_display()}; {run.n_done} done, {run.n_failed} failed of "
            f"{run.n_total}; calls {run.n_calls} ({run.n_failed_calls} failed attempts, {run.n_cached} cached); tokens "
            f"{run.prompt_tokens}+{run.completion_tokens}; cost {run.cost_usd} USD"
        )
        if run.error:
            self.stdout.write(run.error)
        from judging.selectors import run_error_groups

        for group in run_error_groups(run):
            self.stderr.write(f"{group.count} failed with {group.kind}: {group.example[:200]}")
            self.stderr.write(f"  what to do: {group.hint}")
