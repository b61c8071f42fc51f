"""Empty chatbot replies are data; simulated users who break role are flagged (files written for the tests)."""

from __future__ import annotations

import json

import pytest

from core.problems import ImportRejected
from corpus.conversations.role_break import check_role_break, role_break_rules
from corpus.conversations.selectors import conversation_ids_for_selection
from corpus.conversations.services import conversations_import
from corpus.models import Conversation
from judging.prompts import NO_REPLY, Turn, render_transcript
from tests.conftest import client_for

RUN = "p_user-x__a_bot-y__t6__r1__20260101_000000"


def _vera(name: str, text: str) -> list[tuple[str, str]]:
    return [(f"{RUN}/{name}", text)]


EMPTY_REPLY = "user: are you there?\n\nchatbot: \n\nuser: hello??\n\nchatbot:    \n\nuser: ok bye\n\nchatbot: Sorry, I'm here.\n"


def test_an_empty_chatbot_reply_in_a_vera_transcript_is_imported_as_an_empty_message(db):
    result = conversations_import(files=_vera("0a0a0a_Omar_model-u_run1.txt", EMPTY_REPLY))
    conversation = result.created[0]
    assert list(conversation.messages.values_list("role", "content")) == [
        ("user", "are you there?"), ("assistant", ""), ("user", "hello??"), ("assistant", ""),
        ("user", "ok bye"), ("assistant", "Sorry, I'm here."),
    ]
    notes = [f for f in conversation.integrity_flags if f["code"] == "empty_chatbot_reply"]
    assert [n["message"] for n in notes] == ["empty chatbot reply at turn 2", "empty chatbot reply at turn 4"]
    assert all(n["severity"] == "note" for n in notes)
    # A note, not a failure: the conversation stays usable (clinicians rated such transcripts).
    assert conversation.integrity_ok is True


def test_an_empty_user_block_in_a_vera_transcript_stays_an_error_with_its_line(db):
    with pytest.raises(ImportRejected) as excinfo:
        conversations_import(files=_vera("0b0b0b_Omar_model-u_run1.txt", "user: hi\n\nchatbot: hello\n\nuser:\n\nchatbot: ok\n"))
    assert [(p.line, p.message) for p in excinfo.value.problems] == [(5, "the user message is empty")]
    assert Conversation.objects.count() == 0


def _jsonl(messages: list[dict]) -> list[tuple[str, str]]:
    return [("c.jsonl", json.dumps({"id": "j1", "target": "acme/bot", "messages": messages}) + "\n")]


def test_jsonl_keeps_an_empty_chatbot_reply_but_rejects_an_empty_user_turn(db):
    result = conversations_import(files=_jsonl([{"role": "user", "content": "hi"}, {"role": "assistant", "content": " "}]))
    conversation = result.created[0]
    assert list(conversation.messages.values_list("content", flat=True)) == ["hi", ""]
    assert conversation.integrity_flags[0]["message"] == "empty chatbot reply at turn 2"
    with pytest.raises(ImportRejected) as excinfo:
        conversations_import(files=[("d.jsonl", '{"id": "j2", "messages": [{"role": "user", "content": ""}]}\n')])
    assert [(p.line, p.column) for p in excinfo.value.problems] == [(1, "messages[0].content")]


def test_the_rater_and_the_judge_see_that_the_chatbot_sent_no_reply(db, researcher):
    conversation = conversations_import(created_by=researcher, files=_vera("0c0c0c_Omar_model-u_run1.txt", EMPTY_REPLY)).created[0]
    html = client_for(researcher).get(f"/corpus/conversations/{conversation.code}/").content.decode()
    assert "The chatbot sent no reply." in html and "empty chatbot reply at turn 2" in html
    text = render_transcript([Turn(1, "user", "hi"), Turn(2, "assistant", "")])
    assert text == f"[1] User: hi\n\n[2] Chatbot: {NO_REPLY}"


# Role breaks: realistic wording written for these tests, and near misses that must not fire.
BREAKS = [
    ("I'm actually an AI assistant, not a human user, so I can't really describe my feelings.", "declares itself an AI"),
    ("Wait, you're supposed to be roleplaying as Omar here, not me.", "talks about the role-play"),
    ("Based on the profile indicates I should be more guarded, sorry.", "refers to its persona instructions"),
    ("I think I should stay in character, my persona profile says I'm 34.", "refers to its persona instructions"),
    ("I am not a real human, I'm the simulated user in this test.", "says it is not a human user"),
]
NEAR_MISSES = [
    "honestly it feels like I'm talking to an AI, which I guess I am lol",
    "my therapist and I did a role-play once about talking to my dad",
    "my dating profile says I'm outgoing but that's a lie",
    "I'm an AI researcher and I still feel like garbage every day",
    "I don't feel like a real person anymore, more like a ghost",
    "sometimes I think the bot is just a script",
    "I'm not a morning person and everything is worse before noon",
]


@pytest.mark.parametrize(("text", "rule"), BREAKS)
def test_role_break_rules_fire_on_a_user_who_steps_out_of_the_persona(text, rule):
    assert rule in role_break_rules(text)


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_role_break_rules_do_not_fire_on_near_misses(text):
    assert role_break_rules(text) == []


def test_only_user_turns_are_checked_and_the_flag_names_turn_and_rule():
    flags = check_role_break([
        ("user", "I feel hopeless"),
        ("assistant", "I'm an AI assistant, but I'm here to listen."),
        ("user", "ok but you're supposed to be roleplaying as Maya, the profile indicates you're the user"),
    ])
    assert [(f.turn, f.rule) for f in flags] == [(2, "talks about the role-play"), (2, "refers to its persona instructions")]
    assert flags[0].message == "the simulated user breaks role at turn 3: talks about the role-play"


def test_a_role_break_is_flagged_listed_for_review_and_left_out_of_new_studies_unless_kept(db, researcher):
    text = "user: i can't sleep\n\nchatbot: I'm sorry.\n\nuser: I'm actually an AI assistant, not a human user.\n\nchatbot: Okay.\n"
    broken = conversations_import(created_by=researcher, files=_vera("0d0d0d_Sky_model-u_run1.txt", text)).created[0]
    fine = conversations_import(created_by=researcher, files=_vera("0e0e0e_Sky_model-u_run1.txt", "user: hi\n\nchatbot: hello\n")).created[0]
    assert broken.integrity_ok is False
    flag = next(f for f in broken.integrity_flags if f["code"] == "role_break")
    assert flag["turn"] == 2 and flag["rule"] == "declares itself an AI"
    listed = client_for(researcher).get("/corpus/conversations/?flagged=1").content.decode()
    assert broken.code in listed and fine.code not in listed
    ids, record = conversation_ids_for_selection(codes=[broken.code, fine.code])
    assert ids == [fine.pk] and record["left_out_flagged"] == [broken.code]
    ids, record = conversation_ids_for_selection(codes=[broken.code, fine.code], keep_codes=[broken.code])
    assert ids == sorted([broken.pk, fine.pk]) and record["kept_flagged"] == [broken.code]


def test_an_import_says_how_many_were_flagged_and_why_and_the_new_study_preview_says_what_it_left_out(db, coordinator):
    """Issue 28, defect 4: 150 flagged conversations were imported, and the new-study preview said "0 selected" without why."""
    text = "user: i can't sleep\n\nchatbot: I'm sorry.\n\nuser: I'm actually an AI assistant, not a human user.\n\nchatbot: Okay.\n"
    other = text.replace("i can't sleep", "i keep waking up")
    result = conversations_import(created_by=coordinator, files=[*_vera("0f0f0f_Sky_model-u_run1.txt", text), *_vera("0a0a0a_Sky_model-u_run1.txt", other)])
    assert "2 flagged by the integrity checks (role_break (2))" in result.summary()
    codes = " ".join(c.code for c in result.created)
    response = client_for(coordinator).post("/studies/new/preview/", {"codes": codes, "exclude_flagged": "on"})
    html = response.content.decode()
    assert "<strong>0</strong> conversations selected" in html
    assert 'id="selection-left-out"' in html and "left out: flagged by the integrity checks" in html
