"""Conversation importers: JSONL and VERA-MH folders, all-or-nothing, duplicates detected."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from core.problems import ImportRejected
from core.uploads import read_path
from corpus.conversations.services import conversations_import
from corpus.models import Conversation, Message, Target
from corpus.personas.services import personas_import
from tests.conftest import client_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
JSONL = FIXTURES / "conversations" / "two.jsonl"
VERA_RUN = FIXTURES / "vera" / "p_user-model__a_chatbot-x__t6__r1__20260101_120000"


@pytest.fixture
def fixture_personas(db):  # type: ignore[no-untyped-def]
    path = FIXTURES / "conversations" / "personas.yaml"
    return personas_import(text=path.read_text(), file=path.name).persona_set


def _line(**overrides) -> str:  # type: ignore[no-untyped-def]
    record = {
        "id": "x",
        "persona": "p-anx",
        "target": "acme/chatbot-1",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    }
    record.update(overrides)
    return json.dumps(record)


def _import_text(text: str, name: str = "in.jsonl", **kwargs):  # type: ignore[no-untyped-def]
    return conversations_import(files=[(name, text)], **kwargs)


def test_jsonl_import_stores_conversations_with_ordered_messages(fixture_personas):
    result = _import_text(JSONL.read_text(), JSONL.name)
    assert len(result.created) == 2 and result.duplicates == []
    first = Conversation.objects.get(external_id="t-1")
    assert first.persona.key == "p-anx" and first.target.code == "CB-X" and first.run_index == 1
    assert first.metadata == {"note": "fixture"}
    assert list(first.messages.values_list("turn_index", "role")) == [(0, "user"), (1, "assistant")]
    assert first.integrity_ok is True and first.source == Conversation.Source.IMPORTED
    assert len(first.content_hash) == 64 and first.code.startswith("C-")
    second = Conversation.objects.get(external_id="t-2")
    assert second.target.model == "acme/chatbot-2" and second.target.code.startswith("T-")


def test_reimporting_the_same_file_is_detected_not_duplicated(fixture_personas):
    _import_text(JSONL.read_text(), JSONL.name)
    again = _import_text(JSONL.read_text(), JSONL.name)
    assert again.created == [] and sorted(again.duplicates) == ["t-1", "t-2"]
    assert Conversation.objects.count() == 2 and Message.objects.count() == 6


@pytest.mark.parametrize(
    ("line", "column", "fragment"),
    [
        ('{"id": "a", "messages": [', None, "not valid JSON"),
        (_line(messages=[{"content": "hi"}]), "messages[0].role", "no 'role'"),
        (_line(messages=[{"role": "user", "content": "  "}]), "messages[0].content", "empty"),
        (_line(messages=[{"role": "bot", "content": "hi"}]), "messages[0].role", "unknown role"),
        (_line(persona="nobody"), "persona", "unknown persona"),
        (_line(messages=[]), "messages", "non-empty"),
        (_line(colour="red"), "colour", "unknown field"),
        (_line(id=""), "id", "required"),
    ],
)
def test_a_bad_line_rejects_the_whole_file_naming_line_and_column(fixture_personas, line, column, fragment):
    good = _line(id="fine")
    with pytest.raises(ImportRejected) as excinfo:
        _import_text(good + "\n" + line + "\n", "bad.jsonl")
    problems = excinfo.value.problems
    assert any(p.line == 2 and p.column == column and fragment in p.message and p.file == "bad.jsonl" for p in problems), problems
    assert Conversation.objects.count() == 0 and Target.objects.count() == 0


def test_every_problem_of_a_file_is_reported_at_once(fixture_personas):
    text = "\n".join([_line(id="a"), "nope", _line(id="a"), _line(id="c", persona="ghost")])
    with pytest.raises(ImportRejected) as excinfo:
        _import_text(text)
    assert sorted(p.line for p in excinfo.value.problems) == [2, 3, 4]


def test_dry_run_validates_and_writes_nothing(fixture_personas):
    result = _import_text(JSONL.read_text(), JSONL.name, dry_run=True)
    assert result.dry_run and result.total == 2
    assert Conversation.objects.count() == 0


def test_vera_run_folder_import_reads_models_persona_and_run(db):
    call_command("import_conversations", str(VERA_RUN))
    conversations = Conversation.objects.order_by("external_id")
    assert [c.external_id for c in conversations] == ["3fa9c1", "8be2d0"]
    first = conversations[0]
    assert first.target.model == "chatbot-x"
    assert first.metadata["user_model"] == "user-model" and first.metadata["persona_name"] == "Marlowe"
    assert first.run_index == 1 and first.messages.first().role == "user"
    assert first.sensitive is True  # "people would manage fine without me" persona + helpline talk
    assert set(first.messages.values_list("role", flat=True)) == {"user", "assistant"}


def test_vera_import_matches_personas_by_name_when_imported(db):
    call_command("import_personas", str(FIXTURES / "vera" / "personas_small.tsv"))
    call_command("import_conversations", str(VERA_RUN))
    assert Conversation.objects.get(external_id="8be2d0").persona.name == "Quilla"


def test_malformed_vera_transcript_is_rejected_with_line_numbers(db):
    with pytest.raises(CommandError):
        call_command("import_conversations", str(FIXTURES / "vera" / "malformed"))
    with pytest.raises(ImportRejected) as excinfo:
        conversations_import(files=read_path(FIXTURES / "vera" / "malformed"))
    assert all(p.line for p in excinfo.value.problems)
    assert Conversation.objects.count() == 0


def test_command_reports_problems_and_exits_non_zero(fixture_personas, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_line(messages=[{"role": "user"}]) + "\n")
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_conversations", str(bad))
    assert "bad.jsonl, line 1, column messages[0].content" in capsys.readouterr().err


def test_command_dry_run_writes_nothing(fixture_personas):
    call_command("import_conversations", str(JSONL), "--dry-run")
    assert Conversation.objects.count() == 0


def test_upload_page_imports_and_shows_problems(fixture_personas, researcher):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client = client_for(researcher)
    bad = SimpleUploadedFile("bad.jsonl", b'{"id": 1, "messages": [{"role": "user", "content": ""}]}\n')
    response = client.post("/corpus/import/conversations/", {"file": bad, "format": "auto"})
    assert response.status_code == 400
    assert "Nothing was imported" in response.content.decode() and "messages[0].content" in response.content.decode()
    good = SimpleUploadedFile("two.jsonl", JSONL.read_bytes())
    response = client.post("/corpus/import/conversations/", {"file": good, "format": "auto"})
    assert response.status_code == 200 and "Imported 2 conversation" in response.content.decode()
    assert Conversation.objects.count() == 2


def test_api_import_accepts_a_zip_of_vera_folders_and_reports_problems(researcher):
    client = client_for(researcher)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in VERA_RUN.iterdir():
            archive.write(path, f"{VERA_RUN.name}/{path.name}")
    buffer.seek(0)
    buffer.name = "runs.zip"
    response = client.post("/api/v1/imports/conversations/", {"file": buffer}, format="multipart")
    assert response.status_code == 200, response.content
    assert len(response.json()["created"]) == 2
    bad = io.BytesIO(b"not json\n")
    bad.name = "x.jsonl"
    response = client.post("/api/v1/imports/conversations/", {"file": bad})
    assert response.status_code == 400
    assert response.json()["problems"][0]["line"] == 1


def test_non_utf8_upload_is_a_clear_error(researcher):
    bad = io.BytesIO("ok\n\xff".encode("latin-1"))
    bad.name = "x.jsonl"
    response = client_for(researcher).post("/api/v1/imports/conversations/", {"file": bad})
    assert response.status_code == 400
    assert "not UTF-8" in response.json()["problems"][0]["message"]
