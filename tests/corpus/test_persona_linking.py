"""Personas by name, in any order: conversations wait for the persona their source names."""

from __future__ import annotations

from django.core.management import call_command

from corpus.conversations.services import conversations_import
from corpus.models import Conversation
from corpus.personas.services import personas_import
from tests.conftest import client_for

RUN = "p_user-x__a_bot-y__t2__r1__20260101_000000"
PERSONAS = """key: later-personas
name: "Personas written after the transcripts"
format: custom
personas:
  - key: omar
    name: "Omar"
    design: {risk: High, disclosure: Low}
  - key: kim
    name: "Kim"
    design: {risk: High, disclosure: High}
"""


def _transcripts(*names: str) -> list[tuple[str, str]]:
    return [(f"{RUN}/{n}", f"user: hello from {n}\n\nchatbot: hi\n") for n in names]


def test_a_conversation_keeps_its_persona_name_and_a_later_import_links_it(db):
    conversations_import(files=_transcripts("0a0001_Omar_m_run1.txt", "0a0002_omar_m_run1.txt", "0a0003_Sky_m_run1.txt"))
    assert Conversation.objects.filter(persona__isnull=True).count() == 3
    assert Conversation.objects.get(external_id="0a0001").metadata["persona_name"] == "Omar"
    result = personas_import(text=PERSONAS, file="p.yaml")
    assert result.linked == 2
    linked = Conversation.objects.filter(persona__key="omar")
    assert set(linked.values_list("external_id", flat=True)) == {"0a0001", "0a0002"}
    assert Conversation.objects.get(external_id="0a0003").persona is None


def test_personas_imported_first_link_at_conversation_import(db):
    personas_import(text=PERSONAS, file="p.yaml")
    conversations_import(files=_transcripts("0b0001_Kim_m_run1.txt"))
    assert Conversation.objects.get(external_id="0b0001").persona.key == "kim"


def test_link_personas_command_reports_linked_and_still_waiting(db, capsys):
    conversations_import(files=_transcripts("0c0001_Omar_m_run1.txt", "0c0002_Noah_m_run1.txt"))
    # A persona created some other way (not through the importer) is linked on demand.
    from corpus.models import Persona, PersonaSet

    persona_set = PersonaSet.objects.create(key="hand-made", name="Hand made", content_hash="x")
    Persona.objects.create(persona_set=persona_set, key="omar", name="Omar")
    call_command("link_personas")
    out = capsys.readouterr().out
    assert "Linked 1 conversation(s)" in out and "'Noah': 1 conversation(s)" in out


def test_the_conversations_page_offers_the_relink_button_and_it_reports_the_count(db, researcher, outsider):
    conversations_import(files=_transcripts("0d0001_Omar_m_run1.txt"))
    page = client_for(researcher).get("/corpus/conversations/").content.decode()
    assert "Link conversations to personas" in page and "Omar: 1" in page
    from corpus.models import Persona, PersonaSet

    Persona.objects.create(persona_set=PersonaSet.objects.create(key="s", name="S", content_hash="y"), key="o", name="Omar")
    assert client_for(outsider).post("/corpus/conversations/link-personas/").status_code == 404
    response = client_for(researcher).post("/corpus/conversations/link-personas/", follow=True)
    assert "Linked 1 conversation(s) to their persona." in response.content.decode()
    assert Conversation.objects.get(external_id="0d0001").persona.name == "Omar"
