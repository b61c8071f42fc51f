"""The role-slide heuristic: counsellor talk from the simulated user is caught, a teen's is not."""

from __future__ import annotations

import pytest

from simulation.role_slide import check_role_slide, role_slide_cues


@pytest.mark.parametrize(
    "text",
    [
        "As an AI, I can't really feel that, but I can help.",
        "I'm here to support you through this.",
        "How are you feeling today?",
        "You should try writing your worries down before bed.",
        "Here is what helps:\n1. Breathe slowly\n2. Take a walk\n3. Talk to someone",
        "Your feelings are valid, and you're not alone in this.",
        "It takes courage to go through this.\n\nFirstly, remind yourself why you started.",
        "Have you considered talking to a therapist about it?",
    ],
)
def test_counsellor_talk_from_the_user_is_caught(text):
    assert role_slide_cues(text)


@pytest.mark.parametrize(
    "text",
    [
        "idk. i tried the breathing thing but it didnt help much",
        "my mom says i should try to sleep earlier but i cant",
        "what should i do when my chest gets tight before tests?",
        "ok maybe. but how do i even tell my dad",
        "Some days I feel like nothing will get better. Is that normal?",
    ],
)
def test_a_help_seeker_is_left_alone(text):
    assert role_slide_cues(text) == []


def test_only_user_messages_are_checked_and_the_card_can_be_skipped():
    messages = [("user", "I'm here to support you."), ("assistant", "I'm here to support you."), ("user", "You should try yoga.")]
    flags = check_role_slide(messages, skip=frozenset({0}))
    assert [(f.code, f.turn) for f in flags] == [("role_slide", 2)]
