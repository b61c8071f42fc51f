"""Finding 3: uploads were not bounded.

An upload above the limit is answered 413 naming the limit (before reading it, or while it
streams in); zip members are checked for declared size, actual size and compression ratio;
a file holds at most so many rows; problem lists are capped at the first 100 plus grouped
counts. The memory figures are measured by ``bench/uploads.py``, not here.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from core.problems import ImportRejected
from core.uploads import read_upload
from corpus.models import Conversation
from tests.annotation.coordinator_setup import make_study
from tests.conftest import client_for
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db
MB = 1024 * 1024


def jsonl(n_bytes: int) -> bytes:
    line = json.dumps({"id": "x", "messages": [{"role": "user", "content": "a" * 1000}]}).encode() + b"\n"
    return line * (n_bytes // len(line) + 1)


def test_an_upload_above_the_limit_is_answered_413_naming_the_limit(researcher, settings):
    settings.EVALSITE_MAX_UPLOAD_BYTES = 1 * MB
    upload = SimpleUploadedFile("big.jsonl", jsonl(3 * MB))
    page = client_for(researcher).post("/corpus/import/conversations/", {"file": upload, "format": "jsonl"})
    assert page.status_code == 413 and "1 MB" in page.content.decode()
    upload.seek(0)
    client = Client()
    client.force_login(researcher)
    api = client.post("/api/v1/imports/conversations/", {"file": upload, "format": "jsonl"})
    assert api.status_code == 413 and api.json()["limit_bytes"] == MB and "1 MB" in api.json()["detail"]
    assert not Conversation.objects.exists()


def test_a_file_is_refused_while_it_streams_in(researcher, settings):
    # The body's announced length is within the slack, so only counting the streamed bytes sees it.
    settings.EVALSITE_MAX_UPLOAD_BYTES = 1 * MB
    upload = SimpleUploadedFile("big.jsonl", jsonl(MB + MB // 2))
    response = client_for(researcher).post("/corpus/import/conversations/", {"file": upload, "format": "jsonl"})
    assert response.status_code == 413 and "1 MB" in response.content.decode()


def test_an_upload_within_the_limit_still_imports(researcher, settings):
    settings.EVALSITE_MAX_UPLOAD_BYTES = 1 * MB
    line = json.dumps({"id": "ok", "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]})
    response = client_for(researcher).post("/corpus/import/conversations/", {"file": SimpleUploadedFile("ok.jsonl", line.encode()), "format": "jsonl"})
    assert response.status_code == 200 and Conversation.objects.count() == 1


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_zip_bomb_is_refused_from_its_declared_sizes(settings):
    settings.EVALSITE_MAX_UPLOAD_BYTES = 4 * MB
    settings.EVALSITE_MAX_UNZIPPED_BYTES = 8 * MB
    bomb = _zip({f"part{i}.txt": b"\0" * (5 * MB) for i in range(5)})
    assert len(bomb) < 100 * 1024
    with pytest.raises(ImportRejected) as caught:
        read_upload("bomb.zip", io.BytesIO(bomb))
    report = caught.value.report()
    assert "part0.txt" in report and "4 MB per file" in report
    assert "more than the limit of 8 MB" in report


def test_a_member_compressed_beyond_the_ratio_is_refused(settings):
    settings.EVALSITE_MAX_ZIP_RATIO = 50
    archive = _zip({"zeros.jsonl": b" " * (2 * MB), "fine.jsonl": b'{"id": "a"}\n'})
    with pytest.raises(ImportRejected) as caught:
        read_upload("a.zip", io.BytesIO(archive))
    assert "zeros.jsonl" in caught.value.report() and "to 1" in caught.value.report()


def test_a_member_larger_than_it_declares_is_refused(settings):
    data = bytearray(_zip({"a.txt": b"x" * 4096}))
    # Shrink the declared size in the central directory (the local header too): the zip lies.
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):
        at = data.find(signature)
        data[at + offset: at + offset + 4] = (100).to_bytes(4, "little")
    with pytest.raises(ImportRejected) as caught:
        read_upload("liar.zip", io.BytesIO(bytes(data)))
    assert "a.txt" in caught.value.report()


def test_a_file_with_too_many_rows_is_refused_naming_the_limit(settings, coordinator, clinician, clinician2, tmp_path):
    settings.EVALSITE_MAX_IMPORT_ROWS = 1000
    study = make_study(coordinator, [clinician, clinician2], conversations=[ConversationFactory(code="C-A")])
    text = "unit,rater,item,label\n" + "C-A,clara,amhart_01,yes\n" * 1500
    upload = SimpleUploadedFile("r.csv", text.encode())
    response = client_for(coordinator).post(reverse("annotation:study-import-ratings", args=[study.pk]), {"file": upload, "dry_run": "on"})
    body = response.content.decode()
    assert response.status_code == 400 and "1,501 lines" in body and "at most 1,000" in body
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(CommandError):
        call_command("import_ratings", str(path), "--study", str(study.pk), "--dry-run")


def test_problem_lists_are_capped_with_grouped_counts(coordinator, clinician, clinician2):
    study = make_study(coordinator, [clinician, clinician2], conversations=[ConversationFactory(code="C-A")])
    rows = [f"C-NOPE{i},clara,amhart_01,yes" for i in range(400)] + [f"C-A,ghost{i},amhart_01,yes" for i in range(200)]
    upload = SimpleUploadedFile("r.csv", ("unit,rater,item,label\n" + "\n".join(rows) + "\n").encode())
    response = client_for(coordinator).post(reverse("annotation:study-import-ratings", args=[study.pk]), {"file": upload})
    body = response.content.decode()
    assert response.status_code == 400
    assert "600 problems" in body
    assert body.count("C-NOPE") == 100  # the first 100 are listed in full ...
    assert '<td class="num">400</td>' in body and '<td class="num">200</td>' in body  # ... all counted by kind
    assert "unknown rater username" in body and len(body) < 100_000


def test_the_api_answers_the_total_and_the_groups(researcher):
    text = "\n".join(json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": ""}]}) for i in range(150)) + "\n"
    client = Client()
    client.force_login(researcher)
    response = client.post("/api/v1/imports/conversations/", {"file": SimpleUploadedFile("x.jsonl", text.encode()), "format": "jsonl"})
    body = response.json()
    assert response.status_code == 400 and body["total"] >= 150 and len(body["problems"]) == 100
    assert sum(g["count"] for g in body["problem_groups"]) == body["total"]
