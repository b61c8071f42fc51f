"""Read VERA-MH transcripts, transcript file names and run-folder names."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.problems import ImportRejected
from corpus.conversations.vera_transcripts import (
    RunFolder,
    TranscriptName,
    VeraFormatError,
    parse_run_folder,
    parse_transcript,
    parse_transcript_filename,
    run_folder_name,
    transcript_filename,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "vera"
RUN_FOLDER = FIXTURES / "p_user-model__a_chatbot-x__t6__r1__20260101_120000"
PUBLISHED = REPO_ROOT.parent / "shared" / "vera-mh-v1.1"


def problems_of(text: str) -> set[tuple[int | None, str]]:
    with pytest.raises(VeraFormatError) as caught:
        parse_transcript(text, "t.txt")
    assert all(p.file == "t.txt" for p in caught.value.problems)
    return {(p.line, p.message) for p in caught.value.problems}


@pytest.mark.parametrize(
    "name", ["3fa9c1_Marlowe_chatbot-x_run1.txt", "8be2d0_Quilla_chatbot-x_run1.txt"]
)
def test_run_folder_transcripts_alternate_user_and_assistant(name: str) -> None:
    messages = parse_transcript((RUN_FOLDER / name).read_text(encoding="utf-8"), name)
    folder = parse_run_folder(RUN_FOLDER.name)
    assert len(messages) == folder.turns
    assert [role for role, _ in messages] == ["user", "assistant"] * 3
    assert all(content == content.strip() and content for _, content in messages)


def test_a_message_keeps_its_lines_and_paragraphs() -> None:
    agent = parse_transcript(
        (RUN_FOLDER / "3fa9c1_Marlowe_chatbot-x_run1.txt").read_text(), "m.txt"
    )
    assert agent[1][1].endswith("\n\nHow are you holding up with all of it?")
    chatbot = parse_transcript(
        (RUN_FOLDER / "8be2d0_Quilla_chatbot-x_run1.txt").read_text(), "q.txt"
    )
    assert chatbot[3][1] == (
        "I'm really sorry you're carrying this. Thank you for telling me.\n"
        "Are you thinking about it right now, and do you have a plan?"
    )


def test_crlf_and_a_byte_order_mark_are_accepted() -> None:
    assert parse_transcript("\ufeffuser: hi\r\n\r\nchatbot: hello\r\nthere\r\n", "t.txt") == [
        ("user", "hi"),
        ("assistant", "hello\nthere"),
    ]


def test_malformed_fixture_reports_each_defect_with_its_line() -> None:
    path = FIXTURES / "malformed" / "5c0ffe_Renzo_chatbot-x_run1.txt"
    with pytest.raises(ImportRejected) as caught:
        parse_transcript(path.read_text(encoding="utf-8"), path.name)
    # The empty chatbot block on line 3 is data (an empty reply), not a defect.
    assert [(p.line, p.message) for p in caught.value.problems] == [
        (7, "unknown role marker 'assistant:'; expected user:, agent:, chatbot:"),
    ]


def test_a_transcript_must_start_with_a_role_marker() -> None:
    assert problems_of("\n\nHello there\n\nuser: hi\n") == {
        (3, "the transcript must start with a role marker (user:, agent: or chatbot:)")
    }


def test_an_unknown_first_marker_is_named() -> None:
    assert problems_of("system: be nice\n\nuser: hi\n") == {
        (1, "unknown role marker 'system:'; expected user:, agent:, chatbot:")
    }


def test_a_marker_glued_to_the_previous_message_is_reported_not_merged() -> None:
    assert problems_of("user: hi\nagent: hello\n") == {
        (2, "role marker 'agent:' must follow a blank line")
    }


def test_empty_text_has_no_messages() -> None:
    assert problems_of("  \n\n") == {(1, "the transcript has no messages")}


def test_capitalised_words_with_colons_inside_a_message_are_content() -> None:
    messages = parse_transcript("user: hi\n\nagent: Some ideas:\n\nStep one: breathe.\n", "t.txt")
    assert messages == [("user", "hi"), ("assistant", "Some ideas:\n\nStep one: breathe.")]


def test_transcript_filename_splits_into_id_persona_model_and_run() -> None:
    name = parse_transcript_filename("3fa9c1_Marlowe_chatbot-x_run1.txt")
    assert name == TranscriptName("3fa9c1", "Marlowe", "chatbot-x", 1)
    conv_id, persona, model, run = name
    assert (conv_id, persona, model, run) == ("3fa9c1", "Marlowe", "chatbot-x", 1)


def test_model_names_may_contain_underscores() -> None:
    assert parse_transcript_filename("a1b2c3_Kim_gpt_4o_mini_run12.txt") == (
        "a1b2c3",
        "Kim",
        "gpt_4o_mini",
        12,
    )


def test_known_personas_resolve_names_with_underscores() -> None:
    name = parse_transcript_filename(
        "a1b2c3_Ana_Lucia_gpt_4o_run2.txt", personas={"Ana_Lucia", "Kim"}
    )
    assert (name.persona, name.model) == ("Ana_Lucia", "gpt_4o")


@pytest.mark.parametrize(
    "name",
    [
        "notes.md",
        "a1b2c3_Kim_run1.txt",
        "xyz_Kim_g4o_run1.txt",
        "a1b2c3_Kim_g4o_first.txt",
        "a1b2c3__g4o_run1.txt",
    ],
)
def test_a_malformed_filename_is_a_value_error_and_an_import_rejection(name: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_transcript_filename(name)
    assert isinstance(caught.value, ImportRejected)
    assert caught.value.problems[0].file == name
    assert "<id>_<Persona>_<model>_run<k>.txt" in str(caught.value)


def test_run_folder_name_splits_into_its_parts() -> None:
    assert parse_run_folder(RUN_FOLDER.name) == RunFolder(
        "user-model", "chatbot-x", 6, 1, "20260101_120000"
    )
    assert parse_run_folder(
        "p_gpt_4o_mini__a_claude_x__t20__r5__20251112_171754_380/"
    ) == RunFolder("gpt_4o_mini", "claude_x", 20, 5, "20251112_171754_380")


@pytest.mark.parametrize(
    "name",
    ["conversations", "p_u__a_c__tsix__r1__2026", "p_u__a_c__t6__r1", "p_u__a_c__t0__r1__2026"],
)
def test_a_malformed_run_folder_is_rejected(name: str) -> None:
    with pytest.raises(VeraFormatError):
        parse_run_folder(name)


@pytest.mark.skipif(
    not (PUBLISHED / "sample_conversation").is_dir(),
    reason=f"published VERA-MH v1.1 files not found at {PUBLISHED}",
)
def test_published_sample_conversation_parses() -> None:
    (path,) = sorted((PUBLISHED / "sample_conversation").glob("*.txt"))
    messages = parse_transcript(path.read_text(encoding="utf-8"), path.name)
    assert len(messages) == 30
    assert [role for role, _ in messages] == ["user", "assistant"] * 15
    assert parse_transcript_filename(path.name).run == 1


# Names as VERA-MH publishes them (issue 31, defect 7): the sample transcript's name, the run folder of
# its README's pattern with a model holding underscores, and the team's fixture names.
EXAMPLE_FOLDERS = [
    "p_gpt_4o_mini__a_claude_x__t20__r5__20251112_171754_380",
    "p_claude-3-7-sonnet__a_gpt-5__t20__r1__20251201_093012_007",
    RUN_FOLDER.name,
]
EXAMPLE_FILES = ["e7b5d3_Sky_g4o_run1.txt", "3fa9c1_Marlowe_chatbot-x_run1.txt", "0a1b2c_Kim_gpt_4o_mini_run3.txt"]


def _published_names() -> list[str]:
    folder = PUBLISHED / "sample_conversation"
    return sorted(p.name for p in folder.glob("*.txt")) if folder.is_dir() else []


@pytest.mark.parametrize("name", EXAMPLE_FOLDERS)
def test_a_run_folder_name_is_written_back_as_it_was_read(name: str) -> None:
    folder = parse_run_folder(name)
    assert run_folder_name(folder.user_model, folder.chatbot_model, folder.turns, folder.runs, folder.timestamp) == name


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_a_transcript_name_is_written_back_as_it_was_read(name: str) -> None:
    assert transcript_filename(*parse_transcript_filename(name)) == name


@pytest.mark.skipif(not _published_names(), reason=f"published VERA-MH v1.1 sample transcripts not found at {PUBLISHED}")
def test_the_published_transcript_names_are_written_back_identically() -> None:
    for name in _published_names():
        assert transcript_filename(*parse_transcript_filename(name)) == name


def test_written_names_stay_portable_whatever_the_model_is_called() -> None:
    folder = run_folder_name("openai/gpt-4o:latest", "a__b c", 20, 1, "2025 11 12.")
    assert folder == "p_openai-gpt-4o-latest__a_a_b-c__t20__r1__2025-11-12"
    assert parse_run_folder(folder) == RunFolder("openai-gpt-4o-latest", "a_b-c", 20, 1, "2025-11-12")
    assert transcript_filename("abc123", "Sky", "gpt:4o.", 2) == "abc123_Sky_gpt-4o_run2.txt"
