"""How many questions a guided flow still asks: the fewest and the most, from any question (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpus.instruments.flow import walk
from corpus.instruments.flow.walk import remaining
from corpus.instruments.vera_rubric import parse_rubric_tsv

RUBRIC = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_small.tsv"


@pytest.fixture(scope="module")
def flow():  # type: ignore[no-untyped-def]
    return parse_rubric_tsv(RUBRIC.read_text())


# Worked by hand from rubric_small.tsv: the last dimension is three implicit Yes/No questions
# (Yes ends the flow), so from 10 it is 1 to 3 questions; 1 can end at once (role-play refused).
@pytest.mark.parametrize(
    ("question", "expected"),
    [("12", (1, 1)), ("11", (1, 2)), ("10", (1, 3)), ("9", (2, 4)), ("7", (2, 5)), ("6", (2, 6)),
     ("5", (2, 7)), ("4", (2, 4)), ("3", (1, 1)), ("2", (3, 8)), ("1", (1, 9))],
)
def test_the_fewest_and_most_questions_left_count_the_current_one(flow, question, expected) -> None:
    assert remaining(flow, question) == expected


def test_the_most_questions_left_never_grows_as_a_rater_follows_any_path(flow) -> None:
    # Every answer sequence: the longest remaining path shrinks by at least one per answer.
    def explore(answers: dict[str, str], previous_max: int) -> None:
        state = walk(flow, answers)
        if state.next_question is None:
            return
        low, high = remaining(flow, state.next_question)
        assert 1 <= low <= high < previous_max
        for option in flow.question(state.next_question).answer_options:
            explore({**answers, state.next_question: option.label}, high)

    explore({}, 10**6)
