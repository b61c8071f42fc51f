"""Import pages: after a clean dry run, "Import now" imports the same file without a second upload.

The checked file is kept on the server under a token bound to the user and the page; the token
is stored hashed, used once, and expires. Bad files still get the grouped problem report.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse
from django.utils import timezone

from annotation.models import ExternalRater, Rating
from core.models import StagedUpload
from core.roles import Role
from corpus.models import Conversation, Instrument, PersonaSet
from corpus.personas.services import personas_import
from tests.annotation.coordinator_setup import make_study
from tests.conftest import client_for, make_user
from tests.factories import ConversationFactory

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
JSONL = FIXTURES / "conversations" / "two.jsonl"
CONVERSATIONS = reverse("corpus:import-conversations")


@pytest.fixture
def fixture_personas(db):  # type: ignore[no-untyped-def]
    path = FIXTURES / "conversations" / "personas.yaml"
    return personas_import(text=path.read_text(), file=path.name).persona_set


def token_in(html: str) -> str:
    found = re.search(r'name="staged" value="([^"]+)"', html)
    assert found, "no Import now button on the page"
    return found.group(1)


def dry_run(client, url: str, filename: str, content: bytes, **fields):  # type: ignore[no-untyped-def]
    fields.setdefault("format", "auto")  # as a browser sends the select's choice
    return client.post(url, {"file": SimpleUploadedFile(filename, content), "dry_run": "on", **fields})


def test_a_clean_dry_run_offers_import_now_and_unticks_dry_run(fixture_personas, researcher):
    client = client_for(researcher)
    response = dry_run(client, CONVERSATIONS, "two.jsonl", JSONL.read_bytes(), format="jsonl")
    html = response.content.decode()
    assert response.status_code == 200 and Conversation.objects.count() == 0
    assert "Would import 2 conversation" in html and "Import now" in html and "two.jsonl" in html
    assert not re.search(r'name="dry_run"[^>]*checked', html)  # the next upload is not silently a dry run
    assert re.search(r'<option value="jsonl" selected>', html)  # the options the file was checked with stay
    response = client.post(CONVERSATIONS, {"staged": token_in(html)})
    assert response.status_code == 200, response.content
    assert "Imported 2 conversation" in response.content.decode()
    assert Conversation.objects.count() == 2
    assert not StagedUpload.objects.exists()  # forgotten once imported


def test_the_token_works_once(fixture_personas, researcher):
    client = client_for(researcher)
    token = token_in(dry_run(client, CONVERSATIONS, "two.jsonl", JSONL.read_bytes()).content.decode())
    assert client.post(CONVERSATIONS, {"staged": token}).status_code == 200
    again = client.post(CONVERSATIONS, {"staged": token})
    assert again.status_code == 400 and "no longer kept" in again.content.decode()
    assert Conversation.objects.count() == 2


def test_the_kept_file_belongs_to_its_user_and_page(fixture_personas, researcher, admin_user, outsider, clinician):
    token = token_in(dry_run(client_for(researcher), CONVERSATIONS, "two.jsonl", JSONL.read_bytes()).content.decode())
    other = make_user("rhea", Role.RESEARCHER)
    for user in (other, admin_user):
        response = client_for(user).post(CONVERSATIONS, {"staged": token})
        assert response.status_code == 400 and "no longer kept" in response.content.decode()
    for user in (outsider, clinician):
        assert client_for(user).post(CONVERSATIONS, {"staged": token}).status_code == 404
    # The same token on another import page names nothing either.
    response = client_for(researcher).post(reverse("corpus:import-personas"), {"staged": token})
    assert response.status_code == 400 and "no longer kept" in response.content.decode()
    assert Conversation.objects.count() == 0 and StagedUpload.objects.count() == 1


def test_the_token_is_stored_hashed_and_only_for_a_while(fixture_personas, researcher):
    client = client_for(researcher)
    with override_settings(EVALSITE_STAGED_UPLOAD_MINUTES=30):
        token = token_in(dry_run(client, CONVERSATIONS, "two.jsonl", JSONL.read_bytes()).content.decode())
    kept = StagedUpload.objects.get()
    assert token not in kept.token_hash and len(kept.token_hash) == 64
    assert bytes(kept.data) == JSONL.read_bytes() and kept.user == researcher and kept.target == "conversations"
    assert timedelta(minutes=29) < kept.expires_at - timezone.now() <= timedelta(minutes=30)
    StagedUpload.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.post(CONVERSATIONS, {"staged": token})
    assert response.status_code == 400 and "no longer kept" in response.content.decode()
    assert not StagedUpload.objects.exists() and Conversation.objects.count() == 0  # purged


def test_a_second_dry_run_replaces_the_kept_file(fixture_personas, researcher):
    client = client_for(researcher)
    first = token_in(dry_run(client, CONVERSATIONS, "two.jsonl", JSONL.read_bytes()).content.decode())
    second = token_in(dry_run(client, CONVERSATIONS, "again.jsonl", JSONL.read_bytes()).content.decode())
    assert StagedUpload.objects.get().name == "again.jsonl"
    assert client.post(CONVERSATIONS, {"staged": first}).status_code == 400
    assert client.post(CONVERSATIONS, {"staged": second}).status_code == 200


def test_a_dry_run_with_problems_offers_nothing_and_keeps_dry_run_ticked(researcher):
    bad = b'{"id": 1, "messages": [{"role": "user", "content": ""}]}\n'
    response = dry_run(client_for(researcher), CONVERSATIONS, "bad.jsonl", bad)
    html = response.content.decode()
    assert response.status_code == 400 and "Nothing was imported" in html and "messages[0].content" in html
    assert 'name="staged"' not in html and re.search(r'name="dry_run"[^>]*checked', html)
    assert not StagedUpload.objects.exists()


def test_personas_import_now_keeps_the_checked_key_and_name(researcher):
    tsv = (FIXTURES / "vera" / "personas_small.tsv").read_bytes()
    client = client_for(researcher)
    url = reverse("corpus:import-personas")
    html = dry_run(client, url, "personas.tsv", tsv, format="vera-mh", key="pilot-personas", name="Pilot").content.decode()
    assert "Checked" in html and not PersonaSet.objects.exists()
    assert "pilot-personas" in html and "VERA-MH TSV" in html  # what will be imported, as checked
    response = client.post(url, {"staged": token_in(html), "key": "something-else"})
    assert response.status_code == 200, response.content
    persona_set = PersonaSet.objects.get()
    assert (persona_set.key, persona_set.name) == ("pilot-personas", "Pilot")


def test_instruments_import_now(researcher):
    rubric = (FIXTURES / "vera" / "rubric_small.tsv").read_bytes()
    client = client_for(researcher)
    url = reverse("corpus:import-instruments")
    html = dry_run(client, url, "rubric.tsv", rubric, format="vera-mh", key="small-flow").content.decode()
    assert "The file is valid" in html and not Instrument.objects.filter(key="small-flow").exists()
    response = client.post(url, {"staged": token_in(html)})
    assert response.status_code == 200 and Instrument.objects.filter(key="small-flow").count() == 1


def test_ratings_import_now_on_the_study_page(coordinator, clinician, clinician2, outsider):
    study = make_study(coordinator, [clinician, clinician2], conversations=[ConversationFactory(code="C-A")])
    other_study = make_study(coordinator, [clinician], conversations=[ConversationFactory(code="C-Z")], name="Other")
    url = reverse("annotation:study-import-ratings", args=[study.pk])
    text = b"unit,rater,item,label\nC-A,clara,amhart_01,yes\nC-A,dana-outside,amhart_01,no\n"
    client = client_for(coordinator)
    html = dry_run(client, url, "r.csv", text, format="long", external_raters="on").content.decode()
    assert "Valid: 2 rows" in html and not Rating.objects.exists()
    token = token_in(html)
    assert client_for(outsider).post(url, {"staged": token}).status_code == 404
    # Another study of the same coordinator: the file was checked against this one only.
    other = client.post(reverse("annotation:study-import-ratings", args=[other_study.pk]), {"staged": token})
    assert other.status_code == 400 and not Rating.objects.exists()
    response = client.post(url, {"staged": token})
    assert response.status_code == 200 and "Imported 2 rows" in response.content.decode()
    assert Rating.objects.count() == 2 and ExternalRater.objects.filter(study=study, label="dana-outside").exists()
