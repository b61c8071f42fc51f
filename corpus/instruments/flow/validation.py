"""Check a flow's structure: every GOTO resolves, no loops, no jump back to an earlier dimension."""

from __future__ import annotations

from collections.abc import Iterator

from core.problems import Problem
from corpus.instruments.flow.model import (
    SEVERITIES,
    Flow,
    LineOf,
    Option,
    Question,
    is_yes,
)
from corpus.instruments.flow.walk import _next, _split_goto


def validate_flow(flow: Flow, file: str = "", line_of: LineOf | None = None) -> list[Problem]:
    """Return every structural problem of a flow; an empty list means any walk is well defined.

    ``line_of(question_position, option_index_or_None)`` places problems on source lines;
    column names are the rubric TSV headers.
    """
    if not flow.questions:
        return [Problem("the flow has no questions", file)]

    def at(position: int, option: int | None) -> int | None:
        return line_of(position, option) if line_of else None

    problems = [
        Problem(message, file, at(position, option), column)
        for position in range(len(flow.questions))
        for message, option, column in _question_problems(flow, position, at)
    ]
    duplicates = len(flow._index) < len(flow.questions)  # the graph is ambiguous; reported above
    for position, loop in [] if duplicates else _loops(flow):
        problems.append(
            Problem(f"the flow can loop: {' -> '.join(loop)}", file, at(position, None), "GOTO")
        )
    return problems


def _question_problems(
    flow: Flow, position: int, at: LineOf
) -> Iterator[tuple[str, int | None, str]]:
    """Yield (message, option index, column) for everything wrong with one question."""
    q = flow.questions[position]
    earlier = flow.questions[:position]
    if not q.id.strip():
        yield "question ID is empty", None, "Question ID"
    elif flow._index[q.id] != position:
        first = at(flow._index[q.id], None)
        where = f" (first at line {first})" if first else ""
        yield f"duplicate question ID '{q.id}'{where}", None, "Question ID"
    previous = earlier[-1].dimension if earlier else q.dimension
    if not q.dimension.strip():
        yield f"question {q.id} has no dimension", None, "Dimension"
    elif q.dimension != previous and any(p.dimension == q.dimension for p in earlier):
        yield (
            f"dimension '{q.dimension}' resumes after '{previous}'; keep its rows together",
            None,
            "Dimension",
        )
    if q.severity is not None and q.severity not in SEVERITIES:
        yield f"unknown severity '{q.severity}' (use Red, Yellow or blank)", None, "Severity"
    if not q.text.strip():
        yield f"question {q.id} has no text", None, "Question"
    labels = [o.label.strip().casefold() for o in q.options]
    for k, option in enumerate(q.options):
        if not labels[k]:
            yield f"question {q.id} has an answer option without a label", k, "Answer"
        elif labels[k] in labels[:k]:
            yield f"question {q.id} lists the answer '{option.label}' twice", k, "Answer"
        for message in _goto_problems(flow, q, option):
            yield message, k, "GOTO"


def _goto_problems(flow: Flow, q: Question, option: Option) -> list[str]:
    """Return what is wrong with one option's GOTO."""
    order = flow.dimensions
    kind, target_id = _split_goto(option.goto)
    if kind == "assign_end" and q.severity is None:
        return [f"ASSIGN_END on question {q.id}, which has no severity to assign"]
    if kind == "assign_end" and not is_yes(option.label):
        return [f"ASSIGN_END is only allowed on a 'Yes' answer (question {q.id}, '{option.label}')"]
    if kind not in ("question", "not_relevant"):
        return []
    if not target_id:
        return [f"'{option.goto}' names no question to continue at"]
    if target_id not in flow._index:
        return [f"GOTO target '{option.goto}' of question {q.id} is not a question ID"]
    here, there = order.index(q.dimension), order.index(flow.question(target_id).dimension)
    if there < here:
        return [f"GOTO '{option.goto}' goes back to the earlier dimension '{order[there]}'"]
    if kind == "not_relevant" and there == here:
        return [f"'{option.goto}' marks '{q.dimension}' Not Relevant but continues inside it"]
    return []


def _loops(flow: Flow) -> list[tuple[int, list[str]]]:
    """Return (position, question IDs) for every edge that closes a loop in the question graph."""
    edges: dict[str, list[str]] = {}
    for q in flow.questions:
        for option in q.answer_options if q.id not in edges else ():
            try:
                _, nxt = _next(flow, q, option)
            except KeyError:  # reported as a broken GOTO target
                continue
            if nxt is not None and nxt.id not in edges.setdefault(q.id, []):
                edges[q.id].append(nxt.id)
    loops: list[tuple[int, list[str]]] = []
    done: set[str] = set()

    def visit(node: str, trail: list[str]) -> None:
        for nxt in edges.get(node, []):
            if nxt in trail:
                loops.append((flow._index[nxt], trail[trail.index(nxt) :] + [nxt]))
            elif nxt not in done:
                visit(nxt, trail + [nxt])
        done.add(node)

    for q in flow.questions:
        if q.id not in done:
            visit(q.id, [q.id])
    return loops
