"""Conversation exports: JSONL round-trips through the importer; CSV has one row per message."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from django.core.management import call_command

from corpus.conversations.selectors import CSV_COLUMNS
from corpus.conversations.services import conversations_import
from corpus.models import Conversation
from corpus.personas.services import personas_import
from tests.conftest import client_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "conversations"


def _seed(db, researcher):  # type: ignore[no-untyped-def]
    personas_import(text=(FIXTURES / "personas.yaml").read_text(), file="personas.yaml")
    conversations_import(created_by=researcher, files=[("two.jsonl", (FIXTURES / "two.jsonl").read_text())])


def test_jsonl_export_reimports_as_duplicates_and_into_a_fresh_database(db, researcher):
    _seed(db, researcher)
    body = b"".join(client_for(researcher).get("/corpus/conversations/export.jsonl").streaming_content).decode()
    lines = [json.loads(line) for line in body.splitlines()]
    assert len(lines) == 2 and lines[0]["messages"][0]["role"] == "user"
    again = conversations_import(created_by=researcher, files=[("export.jsonl", body)])
    assert again.created == [] and len(again.duplicates) == 2
    original_hashes = set(Conversation.objects.values_list("content_hash", flat=True))
    Conversation.objects.all().delete()
    fresh = conversations_import(created_by=researcher, files=[("export.jsonl", body)])
    assert len(fresh.created) == 2
    assert set(Conversation.objects.values_list("content_hash", flat=True)) == original_hashes


def test_csv_export_has_one_row_per_message_and_survives_commas_and_newlines(db, researcher):
    _seed(db, researcher)
    conversations_import(created_by=researcher, files=[("x.jsonl", json.dumps({"id": "tricky", "messages": [
        {"role": "user", "content": 'line one,\n"quoted" line two'}, {"role": "assistant", "content": "ok"}]}))])
    body = b"".join(client_for(researcher).get("/corpus/conversations/export.csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert list(rows[0]) == CSV_COLUMNS
    assert len(rows) == 8
    tricky = [r for r in rows if r["external_id"] == "tricky"]
    assert tricky[0]["content"] == 'line one,\n"quoted" line two'


def test_export_respects_filters_and_the_command_writes_a_file(db, researcher, tmp_path):
    _seed(db, researcher)
    target = Conversation.objects.get(external_id="t-1").target
    body = b"".join(client_for(researcher).get(f"/corpus/conversations/export.jsonl?target={target.pk}").streaming_content)
    assert len(body.decode().splitlines()) == 1
    out = tmp_path / "all.csv"
    call_command("export_conversations", "--format", "csv", "--output", str(out))
    assert out.read_text().count("\n") >= 7


def test_export_list_pages_run_a_fixed_number_of_queries(db, researcher, django_assert_max_num_queries):
    _seed(db, researcher)
    client = client_for(researcher)
    client.get("/corpus/conversations/")  # warm the session
    with django_assert_max_num_queries(8):
        assert client.get("/corpus/conversations/").status_code == 200
    with django_assert_max_num_queries(8):
        assert client.get("/api/v1/conversations/").status_code == 200


def test_outsider_cannot_export(outsider, clinician):
    for user in (outsider, clinician):
        assert client_for(user).get("/corpus/conversations/export.csv").status_code == 404
        assert client_for(user).get("/api/v1/conversations/export/?as=csv").status_code == 403
