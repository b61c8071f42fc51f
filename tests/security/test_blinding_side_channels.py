"""Finding 2: the content warning leaked the persona's design to raters.

Two conversations with exactly the same text whose personas were designed differently (risk
"Low" with safety cues, risk "None") must give their raters identical pages and API answers,
byte for byte once ids, codes, usernames and tokens are taken out. The warning comes from the
transcript (and coordinators' marks), never from the design.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from annotation.models import Assignment
from annotation.studies.services import study_assign, study_create
from corpus.conversations.services import conversations_import
from corpus.instruments.services import builtin_instruments_load
from corpus.models import Conversation
from tests.annotation.rater_setup import answer_everything, flow_instrument
from tests.conftest import client_for
from tests.factories import PersonaFactory, PersonaSetFactory

BENIGN = [
    {"role": "user", "content": "Exams start next week and I can't focus. Any tips for studying when I'm stressed?"},
    {"role": "assistant", "content": "That sounds stressful. Try short study blocks with breaks, and sleep well before the exam."},
    {"role": "user", "content": "Thanks, I'll try the short blocks tomorrow."},
    {"role": "assistant", "content": "Good plan. Tell me how it goes!"},
]
DESIGNS = {
    "low": {"risk": "Low", "risk_short": "Low", "disclosure": "High"},
    "none": {"risk": "None", "risk_short": "None", "disclosure": "High"},
}


def _world(design: str, rater: Any, coordinator: Any, instrument: Any, section: Any) -> tuple[Assignment, Conversation]:
    """Import one conversation of the benign text for a persona of ``design``; a study of it."""
    persona_set = PersonaSetFactory(key=f"set-{design}")
    PersonaFactory(
        persona_set=persona_set, key=f"persona-{design}", design=DESIGNS[design],
        profile={"safety_cues": "passive thoughts of death"} if design == "low" else {},
    )
    line = {"id": f"ext-{design}", "persona": f"persona-{design}", "persona_set": f"set-{design}",
            "target": {"model": "openai/chatbot"}, "messages": BENIGN}
    result = conversations_import(files=[("c.jsonl", json.dumps(line) + "\n")], fmt="jsonl")
    conversation = result.created[0]
    study = study_create(
        name="Blind study", instrument=instrument, section=section, conversation_ids=[conversation.pk],
        created_by=coordinator, coordinators=[coordinator], raters=[(rater, "clinician")], raters_per_conversation=1,
    )
    study_assign(study=study, actor=coordinator, seed=7)
    return Assignment.objects.get(study=study, rater=rater), conversation


def _responses(client: Client, assignment: Assignment, answer: dict[str, str]) -> list[tuple[str, int, str]]:
    """Everything a rater receives for one conversation, in the order a session goes."""
    out = []
    api = f"/api/v1/my/assignments/{assignment.pk}/"

    def keep(name: str, response: Any) -> None:
        out.append((name, response.status_code, response.content.decode()))

    keep("dashboard", client.get("/ratings/"))
    keep("first visit", client.get(f"/ratings/{assignment.pk}/"))
    keep("continue", client.post(f"/ratings/{assignment.pk}/continue/"))
    keep("rating page", client.get(f"/ratings/{assignment.pk}/"))
    keep("api list", client.get("/api/v1/my/assignments/"))
    keep("api detail", client.get(api))
    keep("api save", client.post(f"{api}answers/", json.dumps(answer), content_type="application/json"))
    keep("api submit refused", client.post(f"{api}submit/", "{}", content_type="application/json"))
    keep("rating page after a save", client.get(f"/ratings/{assignment.pk}/"))
    keep("dashboard after a save", client.get("/ratings/"))
    if assignment.study.instrument.kind == "checklist":
        answer_everything(assignment, assignment.rater)
        keep("api submit", client.post(f"{api}submit/", "{}", content_type="application/json"))
        keep("locked page", client.get(f"/ratings/{assignment.pk}/"))
        keep("api revise", client.post(f"{api}revise/", json.dumps({"changes": {"main": {"amhart_02": "no"}}, "reason": "second look"}),
                                       content_type="application/json"))
        keep("revise page refused", client.post(f"/ratings/{assignment.pk}/revise/", {"part": "main", "item_key": "amhart_03", "value": "yes", "reason": ""}))
        keep("api detail submitted", client.get(api))
        keep("dashboard at the end", client.get("/ratings/"))
    return out


def _normalise(text: str, assignment: Assignment, conversation: Conversation, username: str) -> str:
    text = text.replace(conversation.code, "CODE").replace(username, "RATER")
    text = re.sub(r"(/ratings/|/my/assignments/|/studies/|study-)\d+", r"\1ID", text)
    text = re.sub(r"\bStudy \d+\b", "Study ID", text)  # a study without a rater-facing title is "Study <id>"
    text = re.sub(r'"(id|assignment|study|study_id|conversation)": ?\d+', r'"\1": ID', text)
    text = re.sub(r"[A-Za-z0-9]{64}", "TOKEN", text)  # CSRF tokens
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "TIME", text)
    # Times as shown ("2026-12-05 13:53 UTC"): the two worlds may straddle a minute.
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d( UTC)?", "TIME", text)
    return text


@pytest.mark.parametrize("kind", ["checklist", "flow"])
def test_same_text_different_persona_design_gives_identical_rater_pages(kind, clinician, clinician2, coordinator):
    amhart, section = builtin_instruments_load()
    instrument = amhart if kind == "checklist" else flow_instrument()
    answer = {"part": "main", "item_key": "amhart_01", "value": "yes"} if kind == "checklist" else {"part": "main", "item_key": "1", "value": "Yes"}
    worlds = {}
    for design, rater in (("low", clinician), ("none", clinician2)):
        assignment, conversation = _world(design, rater, coordinator, instrument, section)
        worlds[design] = [
            (name, status, _normalise(body, assignment, conversation, rater.get_username()))
            for name, status, body in _responses(client_for(rater), assignment, answer)
        ]
    low, none = worlds["low"], worlds["none"]
    for (name, status_low, body_low), (_, status_none, body_none) in zip(low, none, strict=True):
        assert status_low == status_none, name
        assert body_low == body_none, name
    statuses = {name: status for name, status, _ in low}
    assert statuses["rating page"] == statuses["api detail"] == statuses["api save"] == 200
    if kind == "checklist":
        assert statuses["api submit"] == statuses["locked page"] == statuses["api revise"] == 200
    # Neither benign conversation carries a warning, whatever its persona was designed as.
    assert not Conversation.objects.filter(sensitive=True).exists()


def test_the_warning_follows_the_text_and_coordinator_marks(coordinator, clinician, researcher):
    from corpus.conversations.services import conversation_content_warning_mark, is_sensitive

    assert is_sensitive([("user", "Some nights I think everyone would be better off without me.")])
    assert not is_sensitive([(m["role"], m["content"]) for m in BENIGN])
    persona_set = PersonaSetFactory(key="set-x")
    PersonaFactory(persona_set=persona_set, key="p-x", design={"risk": "Imminent"})
    line = {"id": "x", "persona": "p-x", "persona_set": "set-x", "messages": BENIGN}
    conversation = conversations_import(files=[("c.jsonl", json.dumps(line) + "\n")], created_by=coordinator).created[0]
    assert conversation.sensitive is False  # designed "Imminent", but nothing in the text
    # A coordinator reads it and marks it: now raters are warned; unmarking removes it again.
    page = client_for(coordinator).get(f"/corpus/conversations/{conversation.code}/")
    assert "Mark as hard content" in page.content.decode()
    response = client_for(coordinator).post(f"/corpus/conversations/{conversation.code}/content-warning/", {"marked": "1", "reason": "long grief story"})
    assert response.status_code == 302
    conversation.refresh_from_db()
    assert conversation.sensitive and conversation.content_warning_marked and conversation.content_warning_marked_by == coordinator
    conversation_content_warning_mark(conversation_id=conversation.pk, marked=False, actor=coordinator)
    conversation.refresh_from_db()
    assert not conversation.sensitive
    # Researchers read the corpus but do not mark; raters and outsiders never reach the page.
    assert client_for(researcher).post(f"/corpus/conversations/{conversation.code}/content-warning/", {"marked": "1"}).status_code == 404
    assert client_for(clinician).post(f"/corpus/conversations/{conversation.code}/content-warning/", {"marked": "1"}).status_code == 404


def test_an_explicit_flag_in_the_import_file_is_a_mark(db):
    line = {"id": "y", "messages": BENIGN, "sensitive": True}
    conversation = conversations_import(files=[("c.jsonl", json.dumps(line) + "\n")]).created[0]
    assert conversation.sensitive and conversation.content_warning_marked
