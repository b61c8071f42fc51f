"""Walk a rater's (or a judge's) answers through a flow and derive the dimension labels."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from corpus.instruments.flow.model import (
    BEST_PRACTICE,
    ENDED_BY_ASSIGN_END,
    ENDED_BY_COMPLETED,
    ENDED_BY_END,
    GOTO_ASSIGN_END,
    GOTO_END,
    GOTO_NOT_RELEVANT,
    HIGH_HARM,
    NOT_RELEVANT,
    RED,
    SUBOPTIMAL,
    YELLOW,
    Flow,
    Option,
    Question,
    _error,
    is_yes,
)


def _split_goto(goto: str | None) -> tuple[str, str]:
    """Return (kind, target ID); kind is default, end, assign_end, not_relevant or question."""
    value = (goto or "").strip()
    if not value:
        return "default", ""
    if value in (GOTO_END, GOTO_ASSIGN_END):
        return value.lower(), ""
    if value.startswith(GOTO_NOT_RELEVANT):
        return "not_relevant", value[len(GOTO_NOT_RELEVANT) :].strip()
    return "question", value


def _next(flow: Flow, question: Question, option: Option) -> tuple[str, Question | None]:
    """Return (kind, next question) for an answer; kind "finished" has no next question.

    Raises KeyError for a GOTO target that does not exist.
    """
    kind, target_id = _split_goto(option.goto)
    if kind in ("end", "assign_end"):
        return kind, None
    if kind in ("question", "not_relevant"):
        return kind, flow.question(target_id)
    if not question.options and is_yes(option.label):
        nxt = flow.next_dimension_first(question.id)
    else:
        nxt = flow.next_row(question.id)
    return ("question", nxt) if nxt is not None else ("finished", None)


@dataclass(frozen=True)
class Step:
    """One answered question on the path (answer = the option's canonical label)."""

    question_id: str
    answer: str


@dataclass(frozen=True)
class FlowWalk:
    """Where a set of answers leads: the path, what to ask next, and the dimension labels."""

    path: tuple[Step, ...]
    next_question: str | None
    finished: bool
    labels: dict[str, str]
    ended_by: str  # an ENDED_BY_* value when finished, "" otherwise


_ENDED_BY = {"end": ENDED_BY_END, "assign_end": ENDED_BY_ASSIGN_END}


def _labels(flow: Flow, steps: list[tuple[Question, Option]], upto: str | None) -> dict[str, str]:
    """Return the labels a path decides: every dimension before ``upto``, all when None.

    A dimension is Not Relevant when the path skipped it or an answer in it led to END or
    NOT_RELEVANT>>ID; otherwise its worst "Yes" (or ASSIGN_END) severity decides.
    """
    failures: dict[str, set[str]] = {}
    marked: set[str] = set()
    for question, option in steps:
        kind = _split_goto(option.goto)[0]
        if question.severity and (is_yes(option.label) or kind == "assign_end"):
            failures.setdefault(question.dimension, set()).add(question.severity)
        if kind in ("not_relevant", "end"):
            marked.add(question.dimension)
    visited = {question.dimension for question, _ in steps}
    order = flow.dimensions
    labels: dict[str, str] = {}
    for dimension in order[: order.index(upto) if upto is not None else len(order)]:
        found = failures.get(dimension, set())
        if dimension in marked or dimension not in visited:
            labels[dimension] = NOT_RELEVANT
        else:
            labels[dimension] = (
                HIGH_HARM if RED in found else SUBOPTIMAL if YELLOW in found else BEST_PRACTICE
            )
    return labels


def walk(flow: Flow, answers: Mapping[str, str]) -> FlowWalk:
    """Follow the answers from the first question; raise FlowError on an answer that fits no option.

    ``answers`` maps question ID to the chosen option label (matched case-insensitively; a
    blank answer is no answer). Answers to questions off the path are ignored, so changing
    an earlier answer simply re-routes the walk.
    """
    given = {str(k).strip(): v for k, v in answers.items() if isinstance(v, str) and v.strip()}
    order = flow.dimensions
    steps: list[tuple[Question, Option]] = []
    current = flow.questions[0] if flow.questions else None
    while current is not None:
        path = tuple(Step(q.id, o.label) for q, o in steps)
        if any(q.id == current.id for q, _ in steps):
            chain = " -> ".join([s.question_id for s in path] + [current.id])
            raise _error(f"the flow loops back to question {current.id}: {chain}", current.id)
        raw = given.get(current.id)
        if raw is None:
            return FlowWalk(path, current.id, False, _labels(flow, steps, current.dimension), "")
        option = current.option_for(raw)
        if option is None:
            allowed = ", ".join(f"'{o.label}'" for o in current.answer_options)
            raise _error(
                f"'{raw}' is not an answer to question {current.id}; expected {allowed}", current.id
            )
        steps.append((current, option))
        try:
            kind, nxt = _next(flow, current, option)
        except KeyError as exc:
            raise _error(f"question {current.id}: {exc.args[0]}", current.id) from None
        if nxt is None:
            path = tuple(Step(q.id, o.label) for q, o in steps)
            ended_by = _ENDED_BY.get(kind, ENDED_BY_COMPLETED)
            return FlowWalk(path, None, True, _labels(flow, steps, None), ended_by)
        if order.index(nxt.dimension) < order.index(current.dimension):
            raise _error(
                f"question {current.id} goes back to dimension '{nxt.dimension}'", current.id
            )
        current = nxt
    return FlowWalk((), None, True, {}, ENDED_BY_COMPLETED)  # a flow without questions


def remaining(flow: Flow, question_id: str) -> tuple[int, int]:
    """Return the fewest and the most questions still to answer from this one, itself included.

    Every answer option of every question on the way is followed (the flow is acyclic: its
    validation refuses loops), so "Question 3 · 4 to 9 left" is exact and never grows as the
    rater goes on; it can only narrow. A GOTO to a missing question counts as the end.
    """
    memo: dict[str, tuple[int, int]] = {}

    def visit(question: Question, trail: frozenset[str]) -> tuple[int, int]:
        if question.id in memo:
            return memo[question.id]
        if question.id in trail:
            raise _error(f"the flow loops back to question {question.id}", question.id)
        lows, highs = [], []
        for option in question.answer_options:
            try:
                _, nxt = _next(flow, question, option)
            except KeyError:
                nxt = None
            low, high = visit(nxt, trail | {question.id}) if nxt is not None else (0, 0)
            lows.append(low)
            highs.append(high)
        memo[question.id] = (1 + min(lows), 1 + max(highs))
        return memo[question.id]

    return visit(flow.question(question_id), frozenset())
