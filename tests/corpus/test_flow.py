"""Walk and validate hand-made question flows (pure: no database, no Django)."""

from __future__ import annotations

import json

import pytest

from core.problems import ImportRejected
from corpus.instruments.flow import (
    BEST_PRACTICE,
    ENDED_BY_ASSIGN_END,
    ENDED_BY_COMPLETED,
    ENDED_BY_END,
    HIGH_HARM,
    LABELS,
    NOT_RELEVANT,
    SUBOPTIMAL,
    Flow,
    FlowError,
    Option,
    Question,
    Step,
    validate_flow,
    walk,
)

A, B, C = "Alpha", "Bravo", "Charlie"


def q(
    qid: str, dimension: str, severity: str | None = None, *options: tuple[str, str | None]
) -> Question:
    """Build a question; without options it is the implicit Yes/No question."""
    return Question(
        id=qid,
        dimension=dimension,
        severity=severity,
        risk_type="",
        text=f"Did failure {qid} happen?",
        examples="",
        options=tuple(Option(label, goto) for label, goto in options),
        notes="",
    )


def three_dimensions() -> Flow:
    """Return a flow whose dimensions are all implicit Yes/No questions: A1 A2 | B1 B2 | C1."""
    return Flow(
        (
            q("a1", A, "Red"),
            q("a2", A, "Yellow"),
            q("b1", B, "Red"),
            q("b2", B, "Yellow"),
            q("c1", C, "Yellow"),
        )
    )


def routed() -> Flow:
    """Return a flow with every GOTO form: explicit, END, ASSIGN_END, NOT_RELEVANT>>ID, options."""
    return Flow(
        (
            q("1", A, None, ("Yes", "2"), ("No", "3"), ("User-agent quits the role", "END")),
            q("2", A, "Red", ("Yes", "4"), ("No", "5")),
            q("3", A, "Yellow", ("Yes", "ASSIGN_END"), ("No", "END")),
            q("4", B, None, ("Skip this dimension", "NOT_RELEVANT>>7")),
            q("5", B, None, ("Nothing to rate", "NOT_RELEVANT>>7"), ("Something to rate", "6")),
            q("6", B, "Red", ("Yes", "7"), ("No", "7"), ("Not Relevant", "7")),
            q("7", C, "Red"),
            q("8", C, "Yellow"),
        )
    )


def path_ids(result) -> list[str]:
    return [step.question_id for step in result.path]


def test_labels_are_in_the_documented_order() -> None:
    assert LABELS == (
        "Best Practice",
        "Suboptimal but Low Potential for Harm",
        "High Potential for Harm",
        "Not Relevant",
    )


def test_yes_on_an_implicit_question_jumps_to_the_next_dimension() -> None:
    result = walk(three_dimensions(), {"a1": "Yes"})
    assert path_ids(result) == ["a1"]
    assert result.next_question == "b1"
    assert result.labels == {A: HIGH_HARM}


def test_no_on_an_implicit_question_goes_to_the_next_row() -> None:
    assert walk(three_dimensions(), {"a1": "No"}).next_question == "a2"


def test_answering_every_row_finishes_past_the_last_row() -> None:
    result = walk(three_dimensions(), {"a1": "No", "a2": "No", "b1": "No", "b2": "Yes", "c1": "No"})
    assert result.finished and result.next_question is None
    assert result.ended_by == ENDED_BY_COMPLETED
    assert result.labels == {A: BEST_PRACTICE, B: SUBOPTIMAL, C: BEST_PRACTICE}


def test_yes_in_the_last_dimension_finishes_the_flow() -> None:
    result = walk(three_dimensions(), {"a1": "Yes", "b1": "Yes", "c1": "Yes"})
    assert result.finished
    assert result.labels == {A: HIGH_HARM, B: HIGH_HARM, C: SUBOPTIMAL}


def test_an_explicit_goto_is_followed() -> None:
    result = walk(routed(), {"1": "Yes", "2": "No"})
    assert path_ids(result) == ["1", "2"]
    assert result.next_question == "5"


def test_end_makes_every_dimension_not_relevant_when_nothing_was_decided() -> None:
    result = walk(routed(), {"1": "No", "3": "No"})
    assert result.finished and result.ended_by == ENDED_BY_END
    assert path_ids(result) == ["1", "3"]  # answered questions stay on the path
    assert result.labels == {A: NOT_RELEVANT, B: NOT_RELEVANT, C: NOT_RELEVANT}


def test_end_from_an_option_of_a_routing_question() -> None:
    result = walk(routed(), {"1": "User-agent quits the role"})
    assert result.ended_by == ENDED_BY_END
    assert set(result.labels.values()) == {NOT_RELEVANT}


def test_end_keeps_the_labels_of_dimensions_already_left() -> None:
    flow = Flow(
        (
            q("a1", A, "Red"),
            q("b1", B, None, ("Stop here", "END"), ("Go on", "b2")),
            q("b2", B, "Red"),
            q("c1", C, "Red"),
        )
    )
    result = walk(flow, {"a1": "Yes", "b1": "Stop here"})
    assert result.labels == {A: HIGH_HARM, B: NOT_RELEVANT, C: NOT_RELEVANT}


def test_assign_end_labels_the_dimension_with_the_question_severity() -> None:
    result = walk(routed(), {"1": "No", "3": "Yes"})
    assert result.finished and result.ended_by == ENDED_BY_ASSIGN_END
    assert result.labels == {A: SUBOPTIMAL, B: NOT_RELEVANT, C: NOT_RELEVANT}


def test_not_relevant_goto_marks_the_dimension_and_continues_at_the_target() -> None:
    result = walk(
        routed(), {"1": "Yes", "2": "Yes", "4": "Skip this dimension", "7": "No", "8": "No"}
    )
    assert path_ids(result) == ["1", "2", "4", "7", "8"]
    assert result.labels == {A: HIGH_HARM, B: NOT_RELEVANT, C: BEST_PRACTICE}


def test_not_relevant_goto_overrides_answers_given_in_the_dimension() -> None:
    flow = Flow(
        (
            q("a1", A, "Red", ("Yes", "a2"), ("No", "a2")),
            q("a2", A, None, ("Drop it", "NOT_RELEVANT>>b1")),
            q("b1", B, "Red"),
        )
    )
    result = walk(flow, {"a1": "Yes", "a2": "Drop it", "b1": "No"})
    assert [s.answer for s in result.path] == ["Yes", "Drop it", "No"]
    assert result.labels == {A: NOT_RELEVANT, B: BEST_PRACTICE}


def test_custom_options_route_and_are_never_failures() -> None:
    answers = {
        "1": "Yes",
        "2": "No",
        "5": "Something to rate",
        "6": "Not Relevant",
        "7": "No",
        "8": "No",
    }
    result = walk(routed(), answers)
    assert path_ids(result) == ["1", "2", "5", "6", "7", "8"]
    assert result.labels == {A: BEST_PRACTICE, B: BEST_PRACTICE, C: BEST_PRACTICE}


def test_a_dimension_jumped_over_by_a_goto_is_not_relevant() -> None:
    flow = Flow(
        (q("a1", A, "Red", ("Yes", "c1"), ("No", "b1")), q("b1", B, "Red"), q("c1", C, "Red"))
    )
    result = walk(flow, {"a1": "Yes", "c1": "No"})
    assert result.labels == {A: HIGH_HARM, B: NOT_RELEVANT, C: BEST_PRACTICE}


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ({"a1": "No", "a2": "No"}, BEST_PRACTICE),
        ({"a1": "No", "a2": "Yes"}, SUBOPTIMAL),
        ({"a1": "Yes"}, HIGH_HARM),
    ],
)
def test_dimension_label_follows_the_worst_yes(answers: dict[str, str], expected: str) -> None:
    assert walk(three_dimensions(), answers).labels[A] == expected


def test_red_beats_yellow_within_a_dimension() -> None:
    flow = Flow(
        (
            q("y", A, "Yellow", ("Yes", "r"), ("No", "r")),
            q("r", A, "Red", ("Yes", "b"), ("No", "b")),
            q("b", B),
        )
    )
    assert walk(flow, {"y": "Yes", "r": "Yes", "b": "No"}).labels[A] == HIGH_HARM


def test_changing_an_earlier_answer_reroutes_and_ignores_stale_answers() -> None:
    first = walk(routed(), {"1": "Yes", "2": "Yes", "4": "Skip this dimension"})
    assert path_ids(first) == ["1", "2", "4"]
    changed = walk(routed(), {"1": "No", "2": "Yes", "4": "Skip this dimension", "3": "No"})
    assert path_ids(changed) == ["1", "3"]
    assert changed.ended_by == ENDED_BY_END


def test_an_answer_that_is_not_an_option_is_rejected_not_guessed() -> None:
    with pytest.raises(FlowError) as caught:
        walk(routed(), {"1": "Maybe"})
    assert "'Maybe' is not an answer to question 1" in caught.value.problems[0].message
    assert isinstance(caught.value, ImportRejected) and isinstance(caught.value, ValueError)


def test_answers_match_options_case_insensitively_and_keep_the_canonical_label() -> None:
    result = walk(routed(), {"1": "  user-agent QUITS the role "})
    assert result.path == (Step("1", "User-agent quits the role"),)


def test_a_blank_answer_counts_as_unanswered() -> None:
    assert walk(three_dimensions(), {"a1": "  "}).next_question == "a1"


def test_an_unfinished_walk_reports_the_next_question_and_decided_labels_only() -> None:
    result = walk(three_dimensions(), {"a1": "No", "a2": "Yes", "b1": "No"})
    assert not result.finished and result.ended_by == ""
    assert result.next_question == "b2"
    assert result.labels == {A: SUBOPTIMAL}


def test_a_flow_that_loops_is_refused_while_walking_and_reported_by_validation() -> None:
    flow = Flow(
        (
            q("1", A, None, ("Yes", "2"), ("No", "2")),
            q("2", A, "Red", ("Yes", "1"), ("No", "3")),
            q("3", B),
        )
    )
    with pytest.raises(FlowError, match="loops back to question 1"):
        walk(flow, {"1": "Yes", "2": "Yes"})
    problems = validate_flow(flow, file="loop.yaml")
    assert [p.message for p in problems] == ["the flow can loop: 1 -> 2 -> 1"]
    assert problems[0].file == "loop.yaml" and problems[0].column == "GOTO"


def test_validation_accepts_a_well_formed_flow() -> None:
    assert validate_flow(routed()) == []
    assert validate_flow(three_dimensions()) == []


def test_validation_reports_duplicate_ids_and_unresolved_targets() -> None:
    flow = Flow(
        (
            q("1", A, None, ("Yes", "9"), ("No", "NOT_RELEVANT>>42")),
            q("1", A, "Red"),
            q("2", B, "Purple"),
        )
    )
    lines = {(0, 0): 2, (0, 1): 3, (0, None): 2, (1, None): 4, (2, None): 5}
    problems = validate_flow(flow, "r.tsv", lambda position, option: lines[(position, option)])
    found = {(p.line, p.column, p.message) for p in problems}
    assert (2, "GOTO", "GOTO target '9' of question 1 is not a question ID") in found
    assert (3, "GOTO", "GOTO target 'NOT_RELEVANT>>42' of question 1 is not a question ID") in found
    assert (4, "Question ID", "duplicate question ID '1' (first at line 2)") in found
    assert (5, "Severity", "unknown severity 'Purple' (use Red, Yellow or blank)") in found


@pytest.mark.parametrize(
    ("questions", "fragment"),
    [
        ((q("1", A, None, ("Yes", "ASSIGN_END"), ("No", "2")), q("2", B)), "no severity to assign"),
        (
            (q("1", A, "Red", ("Yes", "2"), ("No", "ASSIGN_END")), q("2", B)),
            "only allowed on a 'Yes'",
        ),
        ((q("1", A), q("2", B), q("3", A)), "resumes after"),
        ((q("1", A), q("2", B, "Red", ("Yes", "1"), ("No", "1"))), "earlier dimension"),
        ((q("1", A, None, ("Skip", "NOT_RELEVANT>>2")), q("2", A)), "continues inside it"),
        ((q("1", A, None, ("Yes", "2"), ("yes", "2")), q("2", A)), "lists the answer 'yes' twice"),
        ((Question("1", A, None, "", "  ", "", (), ""),), "has no text"),
    ],
)
def test_validation_reports_structural_mistakes(
    questions: tuple[Question, ...], fragment: str
) -> None:
    messages = [p.message for p in validate_flow(Flow(questions))]
    assert any(fragment in m for m in messages), messages


def test_flow_round_trips_through_json() -> None:
    flow = routed()
    again = Flow.from_dict(json.loads(json.dumps(flow.to_dict())))
    assert again == flow
    assert again.dimensions == (A, B, C)
    assert again.first_question_of(B).id == "4"


def test_from_dict_reports_every_malformed_field_as_a_value_error() -> None:
    with pytest.raises(ValueError) as caught:
        Flow.from_dict(
            {"questions": [{"id": "1", "dimension": 3, "text": "?", "options": [{"goto": "2"}]}]}
        )
    columns = {p.column for p in caught.value.problems}  # type: ignore[attr-defined]
    assert columns == {"questions[0].dimension", "questions[0].options[0].label"}


def test_question_lookup_names_the_missing_id() -> None:
    with pytest.raises(KeyError, match="no question with ID 'zz'"):
        routed().question("zz")
