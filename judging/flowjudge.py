"""Question-flow mode (VERA-MH): one stateless call per question, walking the rubric.

Every call carries the whole transcript in the system prompt and one question; nothing of the
earlier questions. ``corpus.instruments.flow.walk`` decides the next question from the answers so far
and derives the dimension labels, so GOTO, END, ASSIGN_END and NOT_RELEVANT>>ID behave exactly
as for a clinician in guided mode.

Parsing an answer (``parse_answer``), never guessing:
1. a JSON object (optionally in a code fence) with a text ``answer``: the answer must equal an
   option label, ignoring case, surrounding spaces, quotes and a final full stop;
   ``explanation`` (or ``reasoning``) is kept;
2. otherwise the text after a leading ``ANSWER:`` (or the first non-empty line) must start
   with an option label, compared case-insensitively and followed by the end of the line or a
   non-letter (``"Yes - because..."``); when several labels match, the longest wins
   (``"No danger mentioned"`` over ``"No"``). The rest of the text is the explanation.
Anything else is unparseable: the judge is asked again with the error; after
``format_retries`` the walk stops there and the result is a failure. The first option is never
taken by default.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from corpus.instruments.flow import Flow, FlowError, Option, Question, walk
from judging.calls import Caller
from judging.checklist import strip_fence
from judging.prompts import FLOW_OUTPUT_FORMAT, Turn, render, render_transcript
from simulation.llm import LLMError
from stats.labels import fold_label

SCHEMA_NAME = "flow_answer"
UNASKED = "the question has one option: answered without a call"


@dataclass(frozen=True)
class ParsedAnswer:
    option: Option | None
    explanation: str
    error: str = ""


@dataclass
class FlowOutcome:
    """The answered path, the walk's labels, and the reason it stopped early (if it did)."""

    path: list[dict[str, str]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    finished: bool = False
    ended_by: str = ""
    error_kind: str = ""
    error: str = ""
    failed_question: str = ""


def _clean(text: str) -> str:
    # The app's one label fold (stats.labels.fold_label): case and runs of spaces ignored.
    return fold_label(text.strip().strip("*_`\"'“”[]()").strip().rstrip("."))


def _match_exact(answer: str, question: Question) -> Option | None:
    wanted = _clean(answer)
    return next((o for o in question.answer_options if _clean(o.label) == wanted), None)


def _match_leading(line: str, question: Question) -> Option | None:
    text = line.strip().lstrip("*_`\"'“[( ").casefold()
    best: Option | None = None
    for option in question.answer_options:
        label = option.label.strip().casefold()
        if not text.startswith(label):
            continue
        rest = text[len(label) :]
        if rest and rest[0].isalnum():
            continue  # "Notable" does not start with the answer "No"
        if best is None or len(label) > len(best.label.strip()):
            best = option
    return best


_ANSWER_LINE = re.compile(r"^\s*\**\s*answer\s*\**\s*[:\-]\s*\**(.*)$", re.IGNORECASE)
_EXPLANATION = re.compile(r"^\s*\**\s*(?:explanation|reasoning|reason)\s*\**\s*[:\-]\s*", re.IGNORECASE)


def parse_answer(content: str, question: Question) -> ParsedAnswer:
    """Return the option a reply chooses and its explanation, or an error; never a default."""
    allowed = ", ".join(f'"{o.label}"' for o in question.answer_options)
    text = strip_fence(content).strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return ParsedAnswer(None, "", f"the reply is not valid JSON ({exc.msg})")
        answer = data.get("answer") if isinstance(data, dict) else None
        if not isinstance(answer, str):
            return ParsedAnswer(None, "", 'the JSON reply has no text field "answer"')
        option = _match_exact(answer, question)
        if option is None:
            return ParsedAnswer(None, "", f'"{answer}" is not one of the answers {allowed}')
        explanation = data.get("explanation", data.get("reasoning", ""))
        return ParsedAnswer(option, explanation.strip() if isinstance(explanation, str) else "")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ParsedAnswer(None, "", "the reply is empty")
    index, first = 0, lines[0]
    for i, line in enumerate(lines):
        match = _ANSWER_LINE.match(line)
        if match:
            index, first = i, match.group(1)
            break
    option = _match_leading(first, question)
    if option is None:
        return ParsedAnswer(None, "", f"the reply does not start with one of the answers {allowed}")
    rest = first.strip().lstrip("*_`\"'“[( ")[len(option.label.strip()) :].lstrip(" *_`\"'”]).,:;-—")
    tail = [rest] if rest.strip() else []
    tail += [_EXPLANATION.sub("", line) for line in lines[index + 1 :]]
    return ParsedAnswer(option, "\n".join(t.strip() for t in tail if t.strip()))


def answer_format(question: Question) -> dict[str, Any]:
    """Return the ``response_format`` for one question: an enum of its answer labels (cached)."""
    return _answer_format(tuple(o.label for o in question.answer_options))


@functools.lru_cache(maxsize=1024)
def _answer_format(labels: tuple[str, ...]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "enum": list(labels)},
            "explanation": {"type": "string"},
        },
        "required": ["answer", "explanation"],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema}}


def question_messages(*, prompt: Any, system: str, question: Question) -> list[dict[str, Any]]:
    """Return the stateless messages for one question."""
    examples = f"EXAMPLES AND NOTES: {question.examples.strip()}\n" if question.examples.strip() else ""
    options = ", ".join(f'"{o.label}"' for o in question.answer_options)
    user = render(
        prompt.user_template,
        {
            "question": question.text.strip(),
            "examples_section": examples,
            "options": options,
            "output_format": FLOW_OUTPUT_FORMAT,
        },
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


async def _ask(caller: Caller, prompt: Any, system: str, question: Question) -> tuple[ParsedAnswer | None, str, str]:
    """Return (answer, error kind, error) for one question, retrying unparseable replies."""
    messages = question_messages(prompt=prompt, system=system, question=question)
    fmt = answer_format(question) if caller.config.structured_output else None
    parsed = ParsedAnswer(None, "", "")
    caller.begin()
    for attempt in range(caller.config.format_retries + 1):
        purpose = f"question {question.id}" + (f" retry {attempt}" if attempt else "")
        try:
            result = await caller(messages, response_format=fmt, purpose=purpose)
        except LLMError as exc:
            return None, exc.kind, str(exc)
        parsed = parse_answer(result.content, question)
        if parsed.option is not None:
            caller.accept(result)
            return parsed, "", ""
        messages = [
            *messages,
            {"role": "assistant", "content": result.content},
            {"role": "user", "content": render(prompt.retry_template, {"error": parsed.error})},
        ]
    attempts = caller.config.format_retries + 1
    return None, "unparseable_answer", f"question {question.id}: no usable answer after {attempts} attempt(s): {parsed.error}"


async def judge_flow(*, caller: Caller, prompt: Any, flow: Flow, turns: list[Turn]) -> FlowOutcome:
    """Walk the flow, one stateless call per question, keeping every answer and explanation."""
    system = render(prompt.system_template, {"transcript": render_transcript(turns)})
    answers: dict[str, str] = {}
    outcome = FlowOutcome()
    while True:
        try:
            state = walk(flow, answers)
        except FlowError as exc:  # a broken rubric: nothing the judge can fix
            outcome.error_kind, outcome.error = "flow_error", str(exc)
            return outcome
        outcome.labels = dict(state.labels)
        if state.finished:
            outcome.finished, outcome.ended_by = True, state.ended_by
            return outcome
        question = flow.question(state.next_question or "")
        if len(question.answer_options) == 1:
            # Nothing to choose (VERA-MH's "Rate this dimension Not Relevant" step): answered as
            # VERA-MH's own judge does, without a call that could only fail to parse.
            only = question.answer_options[0].label
            answers[question.id] = only
            outcome.path.append({"question_id": question.id, "answer": only, "explanation": UNASKED, "asked": "no"})
            continue
        parsed, kind, error = await _ask(caller, prompt, system, question)
        if parsed is None or parsed.option is None:
            outcome.error_kind, outcome.error, outcome.failed_question = kind, error, question.id
            return outcome
        answers[question.id] = parsed.option.label
        outcome.path.append(
            {"question_id": question.id, "answer": parsed.option.label, "explanation": parsed.explanation}
        )
