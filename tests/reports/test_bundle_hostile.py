"""Issue 30, finding 2: a publication bundle whose JSON nests deeper than 64 levels (or whose
manifest or study is of another shape) answered 500 (``RecursionError``, ``AttributeError``);
the README promises a 400 naming the file, and nothing imported."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import pytest
from rest_framework.test import APIClient

from annotation.models import Study
from corpus.models import Conversation
from reports.bundle import layout

pytestmark = pytest.mark.django_db


def _zip(files: dict[str, str], manifest: str | None = None) -> io.BytesIO:
    if manifest is None:
        manifest = json.dumps({"bundle_format": layout.BUNDLE_FORMAT, "files": [
            {"path": name, "sha256": hashlib.sha256(text.encode()).hexdigest()} for name, text in files.items()]})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(layout.MANIFEST, manifest)
        for name, text in files.items():
            archive.writestr(name, text)
    out.seek(0)
    out.name = "bundle.zip"
    return out


def _post(coordinator, bundle: io.BytesIO):  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(coordinator)
    return client.post("/api/v1/imports/bundle/", {"file": bundle}, format="multipart")


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize(("files", "manifest", "file", "words"), [
    ({layout.STUDY: '{"name": ' + deep(100_000) + "}"}, None, layout.STUDY, "nested more than 64 levels"),
    ({layout.STUDY: '{"name": ' + deep(70) + "}"}, None, layout.STUDY, "nested more than 64 levels"),
    ({}, '{"bundle_format": 1, "files": ' + deep(100_000) + "}", layout.MANIFEST, "nested more than 64 levels"),
    ({}, "[1, 2, 3]", layout.MANIFEST, "should be an object"),
    ({}, '{"bundle_format": 1, "files": ["study.json"]}', layout.MANIFEST, "should be an object"),
    ({layout.STUDY: "[]"}, None, layout.STUDY, "should be an object"),
    ({layout.STUDY: '{"conversations": {"code": "C-1"}}'}, None, layout.STUDY, "should be a list"),
    ({layout.STUDY: '{"conversations": [["C-1"]]}'}, None, layout.STUDY, "should be an object"),
    ({layout.STUDY: '{"judge_runs": [{"run": 1, "instrument": 5}]}'}, None, layout.STUDY, "should be text"),
    ({layout.STUDY: '{"sampling_plan": {"run": 1, "planning": {"unit_inclusion_prob": [1]}}}'}, None, layout.STUDY, "should be an object"),
    ({layout.STUDY: '{"name": NaN}'}, None, layout.STUDY, "NaN"),
], ids=["study-deep", "study-65", "manifest-deep", "manifest-list", "manifest-entry", "study-list", "conversations-object",
        "conversation-list", "run-instrument-number", "plan-probabilities-list", "nan"])
def test_a_hostile_bundle_is_refused_with_the_file_and_nothing_is_imported(coordinator, files, manifest, file, words):
    response = _post(coordinator, _zip(files, manifest))
    assert response.status_code == 400, response.content[:500]
    body = response.json()
    problems = body.get("problems") or []
    assert any(p.get("file") == file and words in p.get("message", "") for p in problems), body
    assert not Study.objects.exists() and not Conversation.objects.exists()
