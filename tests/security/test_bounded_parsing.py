"""Findings 5 and 6: parsing was bounded by the raw file only.

A 501-byte YAML persona file with nested anchors and aliases expanded to about 70 MB in the
database; files nested tens of thousands of levels deep and a CSV field of 200,000 characters
answered 500. Now aliases may add only a small number of values, nesting is limited (JSON and
YAML), a CSV field is limited, and every importer answers any file, however malformed, with a
400 and a message, never a 500: each importer is fuzzed from a valid sample with a fixed seed
and a small time budget.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotation.studies.ratings_import import ratings_import
from core.problems import ImportRejected
from corpus.models import Conversation, Persona, PersonaSet
from tests.annotation.coordinator_setup import make_study
from tests.conftest import client_for
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = {
    "conversations.jsonl": (FIXTURES / "conversations" / "two.jsonl").read_bytes(),
    "personas.yaml": (FIXTURES / "conversations" / "personas.yaml").read_bytes(),
    "personas.tsv": (FIXTURES / "vera" / "personas_small.tsv").read_bytes(),
    "instrument.yaml": (ROOT / "corpus" / "builtin" / "study_section.yaml").read_bytes(),
    "rubric.tsv": (FIXTURES / "vera" / "rubric_small.tsv").read_bytes(),
    "ratings.csv": b"unit,rater,item,label\nC-A,clara,amhart_01,yes\nC-A,cyrus,amhart_02,no\n",
}


def _transcripts_zip() -> bytes:
    """The VERA-MH transcript folder of the fixtures, zipped as a researcher would upload it."""
    import io
    import zipfile

    folder = FIXTURES / "vera" / "p_user-model__a_chatbot-x__t6__r1__20260101_120000"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, f"{folder.name}/{path.name}")
    return buffer.getvalue()


SAMPLES["transcripts.zip"] = _transcripts_zip()
def yaml_bomb() -> str:
    """Return the issue's kind of file: nine anchors, each a list of nine aliases of the one before (9**9 values)."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for n in range(1, 9):
        prev = f"*a{n - 1}"
        lines.append(f"a{n}: &a{n} [{', '.join([prev] * 9)}]")
    return "\n".join(lines) + "\nkey: bomb\nname: Bomb\npersonas:\n- key: p1\n  name: P\n  notes: *a8\n"


def deep_json(levels: int) -> str:
    return "[" * levels + "]" * levels


def deep_yaml_flow(levels: int) -> str:
    return "key: deep\nname: Deep\npersonas:\n- key: p1\n  name: P\n  notes: " + "[" * levels + "]" * levels + "\n"


def deep_yaml_block(levels: int) -> str:
    lines = ["key: deep", "name: Deep", "personas:", "- key: p1", "  name: P", "  notes:"]
    lines += [" " * (4 + i) + "a:" for i in range(levels)]
    return "\n".join(lines) + " 1\n"


def upload(client: Client, url: str, name: str, content: bytes, **fields: Any) -> Any:
    return client.post(url, {"file": SimpleUploadedFile(name, content), **fields})


def assert_refused_with_a_message(response: Any) -> str:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    text = response.content.decode("utf-8", "replace")
    assert len(text) > 20
    return text


# -- the cases ------------------------------------------------------------------------


def test_the_yaml_bomb_is_refused_and_nothing_is_stored(researcher):
    bomb = yaml_bomb()
    assert len(bomb) < 600
    for url in ("/api/v1/imports/personas/", "/corpus/import/personas/"):
        text = assert_refused_with_a_message(upload(client_for(researcher), url, "bomb.yaml", bomb.encode(), format="yaml"))
        assert "alias" in text
    assert not PersonaSet.objects.exists() and not Persona.objects.exists()


def test_a_few_aliases_still_work(researcher):
    text = (
        "key: anchors\nname: Anchors\npersonas:\n"
        "- key: p1\n  name: P1\n  opening_message: hi\n  background: &bg {school: year 10, sleep: poor}\n"
        "- key: p2\n  name: P2\n  opening_message: hello\n  background: *bg\n"
    )
    response = upload(client_for(researcher), "/api/v1/imports/personas/", "a.yaml", text.encode(), format="yaml")
    assert response.status_code == 200, response.content
    assert Persona.objects.count() == 2


def test_a_recursive_alias_is_refused(researcher):
    text = "key: loop\nname: Loop\npersonas:\n- &p\n  key: p1\n  name: P\n  self: *p\n"
    text = assert_refused_with_a_message(upload(client_for(researcher), "/api/v1/imports/personas/", "l.yaml", text.encode(), format="yaml"))
    assert "alias" in text


@pytest.mark.parametrize("levels", [200, 50_000])
def test_deeply_nested_json_and_yaml_are_refused(researcher, levels):
    client = client_for(researcher)
    line = json.dumps({"id": "x", "messages": [{"role": "user", "content": "hi"}], "metadata": {}})
    nested = line.replace('"metadata": {}', f'"metadata": {{"x": {deep_json(levels)}}}')
    for url in ("/api/v1/imports/conversations/", "/corpus/import/conversations/"):
        text = assert_refused_with_a_message(upload(client, url, "deep.jsonl", nested.encode(), format="jsonl"))
        assert "nested" in text
    for content in (deep_yaml_flow(levels), deep_yaml_block(min(levels, 5000))):
        text = assert_refused_with_a_message(upload(client, "/api/v1/imports/personas/", "deep.yaml", content.encode(), format="yaml"))
        assert "nested" in text
    text = assert_refused_with_a_message(upload(client, "/api/v1/imports/instruments/", "deep.json", deep_json(levels).encode(), format="json"))
    assert "nested" in text
    assert not Conversation.objects.exists() and not PersonaSet.objects.exists()


def test_a_json_api_body_nested_too_deeply_is_a_400(researcher):
    response = client_for(researcher).post("/api/v1/judges/", '{"params": ' + deep_json(100_000) + "}", content_type="application/json")
    assert response.status_code == 400 and "nested" in response.content.decode()


def test_a_huge_csv_field_is_refused_with_its_line(coordinator, clinician, clinician2, researcher):
    study = make_study(coordinator, [clinician, clinician2], conversations=[ConversationFactory(code="C-A")], with_section=True)
    big = "x" * 200_000
    ratings = f"unit,rater,item,label\nC-A,clara,amhart_01,yes\nC-A,clara,amhart_02,{big}\n".encode()
    text = assert_refused_with_a_message(upload(client_for(coordinator), f"/studies/{study.pk}/import-ratings/", "r.csv", ratings, format="long"))
    assert "longer than 131,072 characters" in text
    with pytest.raises(ImportRejected) as caught:
        ratings_import(study=study, text=ratings.decode(), file="r.csv", actor=coordinator)
    assert [(p.line, p.file) for p in caught.value.problems] == [(3, "r.csv")]
    tsv = SAMPLES["personas.tsv"].decode().splitlines()
    tsv[1] = tsv[1] + "\t" + big
    response = upload(client_for(researcher), "/api/v1/imports/personas/", "p.tsv", "\n".join(tsv).encode(), format="vera-mh")
    assert "longer than" in assert_refused_with_a_message(response)
    rubric = SAMPLES["rubric.tsv"].decode().replace("\n", "\t" + big + "\n", 1).encode()
    response = upload(client_for(researcher), "/api/v1/imports/instruments/", "r.tsv", rubric, format="vera-mh")
    assert "longer than" in assert_refused_with_a_message(response)


# -- fuzzing: any file gets a 400 with a message, never a 500 --------------------------------

Mutator = Callable[[random.Random, bytes], bytes]


def _flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] = rng.randrange(256)
    return bytes(out)


def _cut(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _splice(rng: random.Random, data: bytes) -> bytes:
    pieces = [b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b'"', b"'", b"\t\t\t", b"\r", b"\n\n", b"{", b"[", b"]", b"}",
              b"&a ", b"*a", b"!!python/object:os.system", b"- ", b": ", b"%YAML 1.1\n", b"---\n", b"\\", b"=cmd|' /C calc'!A0",
              b"x" * 140_000, b"[" * 3000, b"{\"a\":" * 3000, b"- " * 2000, "é€𝄞".encode(), b"\xc3\x28"]
    at = rng.randrange(len(data) + 1)
    return data[:at] + rng.choice(pieces) + data[at:]


def _shuffle_lines(rng: random.Random, data: bytes) -> bytes:
    lines = data.split(b"\n")
    rng.shuffle(lines)
    return b"\n".join(lines)


def _random(rng: random.Random, data: bytes) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, 400)))


MUTATORS: list[Mutator] = [_flip, _cut, _splice, _splice, _shuffle_lines, _random]


def _fuzz(send: Callable[[bytes], Any], sample: bytes, seed: int, budget_seconds: float = 6.0, at_most: int = 60) -> int:
    rng = random.Random(seed)
    started = time.monotonic()
    cases = 0
    while cases < at_most and time.monotonic() - started < budget_seconds:
        data = sample
        for _ in range(rng.randint(1, 3)):
            data = rng.choice(MUTATORS)(rng, data)
        response = send(data)
        assert response.status_code in (200, 201, 400, 413), (response.status_code, data[:200], response.content[:300])
        if response.status_code == 400:
            assert response.content.strip(), data[:200]
        cases += 1
    return cases


IMPORTERS: dict[str, tuple[str, str, dict[str, str]]] = {
    "conversations (API)": ("/api/v1/imports/conversations/", "conversations.jsonl", {"format": "jsonl", "dry_run": "true"}),
    "conversations (page)": ("/corpus/import/conversations/", "conversations.jsonl", {"format": "jsonl", "dry_run": "on"}),
    "VERA-MH transcripts zip (API)": ("/api/v1/imports/conversations/", "transcripts.zip", {"format": "vera-mh", "dry_run": "true"}),
    "personas YAML (API)": ("/api/v1/imports/personas/", "personas.yaml", {"format": "yaml", "dry_run": "true"}),
    "personas TSV (API)": ("/api/v1/imports/personas/", "personas.tsv", {"format": "vera-mh", "dry_run": "true"}),
    "personas (page)": ("/corpus/import/personas/", "personas.yaml", {"format": "yaml", "dry_run": "on"}),
    "instrument YAML (API)": ("/api/v1/imports/instruments/", "instrument.yaml", {"format": "yaml", "dry_run": "true"}),
    "rubric TSV (API)": ("/api/v1/imports/instruments/", "rubric.tsv", {"format": "vera-mh", "dry_run": "true"}),
    "instruments (page)": ("/import/instruments/", "instrument.yaml", {"format": "yaml", "dry_run": "on"}),
}


@pytest.mark.parametrize("importer", sorted(IMPORTERS))
def test_any_file_gets_a_400_with_a_message_never_a_500(researcher, importer):
    url, sample, fields = IMPORTERS[importer]
    client = client_for(researcher)
    cases = _fuzz(lambda data: upload(client, url, sample, data, **fields), SAMPLES[sample], seed=zlib.crc32(importer.encode()))
    assert cases >= 10


def test_the_ratings_importer_never_answers_500(coordinator, clinician, clinician2):
    study = make_study(coordinator, [clinician, clinician2], conversations=[ConversationFactory(code="C-A")], with_section=True)
    client = client_for(coordinator)
    url = f"/studies/{study.pk}/import-ratings/"
    cases = _fuzz(lambda data: upload(client, url, "r.csv", data, format="long", dry_run="on"), SAMPLES["ratings.csv"], seed=7)
    assert cases >= 10


def test_the_command_line_importers_refuse_what_they_cannot_read(coordinator):
    """Judge labels, accounts and study-from-ratings files: a malformed one is refused (ImportRejected), nothing else."""
    from annotation.studies.from_ratings import study_create_from_ratings
    from core.accounts import accounts_create_from_csv
    from core.errors import ServiceError
    from core.problems import ImportRejected
    from corpus.instruments.services import builtin_instruments_load
    from judging.external import judge_labels_import

    amhart = builtin_instruments_load()[0]
    importers: list[tuple[bytes, Callable[[str], Any]]] = [
        (b"conversation,judge,item,label\nC-A,j1,amhart_01,yes\n",
         lambda text: judge_labels_import(text=text, file="l.csv", instrument=amhart, name="ext", dry_run=True)),
        (b"username,email,roles\nnewbie,n@example.org,clinician\n",
         lambda text: accounts_create_from_csv(text=text, file="a.csv", dry_run=True)),
        (SAMPLES["ratings.csv"],
         lambda text: study_create_from_ratings(text=text, file="r.csv", instrument=amhart, section=None,
                                                name=f"s{rng.random()}", created_by=coordinator)),
    ]
    rng = random.Random(11)
    for sample, run in importers:
        for _ in range(40):
            data = sample
            for _ in range(rng.randint(1, 3)):
                data = rng.choice(MUTATORS)(rng, data)
            try:
                run(data.decode("utf-8", "replace"))
            except (ImportRejected, ServiceError):
                pass
