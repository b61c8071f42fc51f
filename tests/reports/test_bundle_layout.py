"""The bundle's VERA-MH transcripts are laid out as VERA-MH lays them out, under names every file system takes (issue 31, defect 7)."""

from __future__ import annotations

import pytest

from corpus.conversations.services import conversations_import
from corpus.models import Conversation, Message
from reports.bundle import layout
from reports.bundle.export import vera_layout
from tests.factories import ConversationFactory, TargetFactory

FOLDER = "p_gpt_4o_mini__a_claude-x__t20__r2__20251112_171754_380"
TRANSCRIPT = "user: hello\n\nagent: hi, how are you?\n\nuser: not great\n\nagent: I'm sorry to hear that.\n"


def _messages(conversations: list[Conversation]) -> dict[int, list[tuple[str, str]]]:
    out: dict[int, list[tuple[str, str]]] = {c.pk: [] for c in conversations}
    for m in Message.objects.filter(conversation__in=conversations).order_by("conversation_id", "turn_index"):
        out[m.conversation_id].append((m.role, m.content))
    return out


@pytest.mark.django_db
def test_imported_vera_mh_transcripts_go_back_to_the_paths_they_came_from() -> None:
    # Two runs of one persona: run1 stays run1, t20 stays t20 though each transcript has two user turns,
    # and the file's model token (the persona's model, g4o) is not the chatbot's.
    paths = [f"{FOLDER}/a1b2c3_Kim_g4o_run1.txt", f"{FOLDER}/d4e5f6_Kim_g4o_run2.txt"]
    texts = [TRANSCRIPT, TRANSCRIPT.replace("hello", "hey")]
    conversations_import(files=list(zip(paths, texts, strict=True)), fmt="vera-mh")
    conversations = list(Conversation.objects.order_by("pk"))
    written = vera_layout(conversations, _messages(conversations))
    assert sorted(path for path, _ in written.values()) == paths


@pytest.mark.django_db
def test_a_simulated_conversation_is_named_by_its_persona_model_run_and_maximum_turns() -> None:
    target = TargetFactory(model="anthropic/claude-x")
    conversation = ConversationFactory(
        target=target, run_index=1, persona__name="Sky",
        metadata={"user_agent": {"model": "openai/gpt_4o_mini"}, "expected_messages": 12, "repetition": 1},
    )
    (path, facts), = vera_layout([conversation], _messages([conversation])).values()
    folder, name = path.split("/")
    assert folder.startswith("p_openai-gpt_4o_mini__a_anthropic-claude-x__t12__r1__")
    assert name.endswith("_Sky_gpt_4o_mini_run1.txt")
    # The facts the bundle's JSONL carries name the same folder, so a rebuilt study writes it again.
    rebuilt = ConversationFactory(target=target, run_index=1, persona=conversation.persona, code="C-REBUILT",
                                  metadata={**conversation.metadata, **facts})
    rebuilt.external_id = name.split("_")[0]
    ((again, _),) = vera_layout([rebuilt], _messages([rebuilt])).values()
    assert again == path


@pytest.mark.parametrize(
    ("name", "portable"),
    [
        ("figures/judge_assisted_item:amhart_01.json", "figures/judge_assisted_item-amhart_01.json"),
        ('figures/a<b>c"d|e?f*g\\h.json', "figures/a-b-c-d-e-f-g-h.json"),
        ("figures/plotly/trailing. ", "figures/plotly/trailing"),
        ("figures/CON.json", "figures/_CON.json"),
        ("nul", "_nul"),
        ("figures/lpt1", "figures/_lpt1"),
        ("figures/console.json", "figures/console.json"),
        ("transcripts/vera-mh/p_a__a_b__t2__r1__x/abc123_Kim_g4o_run1.txt",
         "transcripts/vera-mh/p_a__a_b__t2__r1__x/abc123_Kim_g4o_run1.txt"),
    ],
)
def test_every_bundle_name_is_made_portable(name: str, portable: str) -> None:
    assert layout.portable_path(name) == portable
    assert layout.is_portable(portable)
