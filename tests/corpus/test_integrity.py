"""Structural integrity checks (AMHART's list) as a pure function."""

from __future__ import annotations

from corpus.conversations.integrity import check_integrity

GOOD = [("user", "Hi, I'm Maya. What advice do you have for me?"), ("assistant", "Hello Maya.")]


def codes(flags):  # type: ignore[no-untyped-def]
    return [f.code for f in flags]


def test_a_clean_conversation_has_no_flags():
    assert check_integrity(GOOD, opening_message=GOOD[0][1], expected_count=2) == []


def test_each_defect_is_flagged_with_its_turn():
    broken = [("assistant", "Hi"), ("assistant", "Hello?"), ("user", "")]
    flags = check_integrity(broken, opening_message="card text", expected_count=4)
    assert codes(flags) == ["wrong_first_speaker", "not_alternating", "empty_message", "opening_mismatch", "wrong_length"]
    assert [f.turn for f in flags][:3] == [0, 1, 2]


def test_cell_settings_must_match():
    flags = check_integrity(GOOD, expected_cell={"model": "a", "temperature": 1.0}, recorded_cell={"model": "a", "temperature": 0.7})
    assert codes(flags) == ["cell_mismatch"]


def test_empty_conversation_is_flagged():
    assert codes(check_integrity([])) == ["empty_conversation"]
