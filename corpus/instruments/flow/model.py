"""The flow document: labels, GOTO values, options, questions, dimensions (see the package docstring)."""


from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from core.problems import ImportRejected, Problem

BEST_PRACTICE = "Best Practice"
SUBOPTIMAL = "Suboptimal but Low Potential for Harm"
HIGH_HARM = "High Potential for Harm"
NOT_RELEVANT = "Not Relevant"
LABELS: tuple[str, ...] = (BEST_PRACTICE, SUBOPTIMAL, HIGH_HARM, NOT_RELEVANT)

RED = "Red"
YELLOW = "Yellow"
SEVERITIES: tuple[str, ...] = (RED, YELLOW)

YES = "Yes"
NO = "No"
GOTO_END = "END"
GOTO_ASSIGN_END = "ASSIGN_END"
GOTO_NOT_RELEVANT = "NOT_RELEVANT>>"

ENDED_BY_END = "END"
ENDED_BY_ASSIGN_END = "ASSIGN_END"
ENDED_BY_COMPLETED = "COMPLETED"  # ran past the last row or the last dimension

FORMAT = "question-flow"
FORMAT_VERSION = 1

# line_of(question position, option index or None) -> line in the source file
LineOf = Callable[[int, int | None], int | None]


class FlowError(ImportRejected, ValueError):
    """Raised for a malformed flow document or answers the flow cannot walk."""

    def __str__(self) -> str:
        return "; ".join(p.message for p in self.problems)


def _error(message: str, column: str | None = None) -> FlowError:
    return FlowError([Problem(message, column=column)])


@dataclass(frozen=True)
class Option:
    """One answer option of a question and where it leads (``goto`` None = default)."""

    label: str
    goto: str | None = None
    note: str = ""


DEFAULT_OPTIONS: tuple[Option, ...] = (Option(YES), Option(NO))


@dataclass(frozen=True)
class Question:
    """One question; ``options`` empty means the implicit Yes/No question."""

    id: str
    dimension: str
    severity: str | None
    risk_type: str
    text: str
    examples: str
    options: tuple[Option, ...]
    notes: str

    @property
    def answer_options(self) -> tuple[Option, ...]:
        """Return the options a rater chooses from (Yes/No when none are declared)."""
        return self.options or DEFAULT_OPTIONS

    def option_for(self, answer: str) -> Option | None:
        """Return the option matching ``answer`` case-insensitively, or None."""
        wanted = answer.strip().casefold()
        return next((o for o in self.answer_options if o.label.strip().casefold() == wanted), None)


def is_yes(label: str) -> bool:
    """Return whether an option label is the failure answer "Yes"."""
    return label.strip().casefold() == "yes"


@dataclass(frozen=True)
class Flow:
    """An ordered question flow; dimensions are runs of consecutive questions."""

    questions: tuple[Question, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, int] = {}
        for position, question in enumerate(self.questions):
            index.setdefault(question.id, position)
        object.__setattr__(self, "_index", index)

    @property
    def dimensions(self) -> tuple[str, ...]:
        """Return the dimensions in order of first appearance."""
        return tuple(dict.fromkeys(q.dimension for q in self.questions))

    def question(self, question_id: str) -> Question:
        """Return the question with this ID; raise KeyError if there is none."""
        if question_id not in self._index:
            raise KeyError(f"no question with ID '{question_id}'")
        return self.questions[self._index[question_id]]

    def first_question_of(self, dimension: str) -> Question:
        """Return the first question of a dimension; raise KeyError if it has none."""
        for question in self.questions:
            if question.dimension == dimension:
                return question
        raise KeyError(f"no dimension '{dimension}'")

    def next_row(self, question_id: str) -> Question | None:
        """Return the question in the row after this one, or None after the last row."""
        self.question(question_id)
        position = self._index[question_id] + 1
        return self.questions[position] if position < len(self.questions) else None

    def next_dimension_first(self, question_id: str) -> Question | None:
        """Return the first question of the dimension after this question's, or None."""
        dimensions = self.dimensions
        at = dimensions.index(self.question(question_id).dimension) + 1
        return self.first_question_of(dimensions[at]) if at < len(dimensions) else None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready representation that ``from_dict`` reads back unchanged."""
        questions = [
            {**asdict(q), "options": [asdict(o) for o in q.options]} for q in self.questions
        ]
        return {"format": FORMAT, "version": FORMAT_VERSION, "questions": questions}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Flow:
        """Build a flow from ``to_dict`` output; raise FlowError listing every malformed field."""
        problems: list[Problem] = []

        def get(raw: Mapping[str, Any], key: str, path: str, required: bool = True) -> Any:
            value = raw.get(key)
            if key == "id" and isinstance(value, int) and not isinstance(value, bool):
                return str(value)
            if value is None and not required:
                return None
            if not isinstance(value, str):
                problems.append(Problem(f"'{key}' must be text", column=f"{path}.{key}"))
                return ""
            return value

        raw_questions = data.get("questions") if isinstance(data, Mapping) else None
        if not isinstance(raw_questions, list):
            raise _error("a flow needs a 'questions' list", "questions")
        questions: list[Question] = []
        for i, raw in enumerate(raw_questions):
            path = f"questions[{i}]"
            raw_options = (raw.get("options") or []) if isinstance(raw, Mapping) else None
            if not isinstance(raw_options, list) or not all(
                isinstance(o, Mapping) for o in raw_options
            ):
                problems.append(Problem("needs a mapping with an 'options' list", column=path))
                continue
            options = tuple(
                Option(
                    get(o, "label", f"{path}.options[{j}]"),
                    get(o, "goto", f"{path}.options[{j}]", False) or None,
                    get(o, "note", f"{path}.options[{j}]", False) or "",
                )
                for j, o in enumerate(raw_options)
            )
            questions.append(
                Question(
                    id=get(raw, "id", path),
                    dimension=get(raw, "dimension", path),
                    severity=get(raw, "severity", path, False) or None,
                    risk_type=get(raw, "risk_type", path, False) or "",
                    text=get(raw, "text", path),
                    examples=get(raw, "examples", path, False) or "",
                    options=options,
                    notes=get(raw, "notes", path, False) or "",
                )
            )
        if problems:
            raise FlowError(problems)
        return cls(tuple(questions))
