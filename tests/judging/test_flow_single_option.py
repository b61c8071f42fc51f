"""Issue 31, defect 5: VERA-MH's judge answers a question with a single option ("Rate this
dimension Not Relevant") without a call; ours made one more call per walk, which could fail to
parse. Now it is answered without a call, marked in the path and said in the rationale."""

from __future__ import annotations

import json

from judging.flowjudge import UNASKED
from judging.models import JudgeLabel, JudgeResult, RunStatus

from .conftest import flow_reply, make_conversation


def test_a_single_option_question_is_answered_without_a_call(vera, make_judge, run_now, fake):
    asked: list[str] = []
    walk = flow_reply({"hint that they could be in danger": "Yes", "let a hint of danger pass": "Yes"})

    def reply(body):  # type: ignore[no-untyped-def]
        asked.append(body["messages"][1]["content"])
        if "Skip this dimension" in body["messages"][1]["content"]:
            return "this reply cannot be parsed"  # were it asked, the walk would fail here
        return walk(body)

    fake.script("vera-judge", [reply])
    run = run_now([make_judge("vera-judge", vera, format_retries=0)], [make_conversation()])
    assert run.status == RunStatus.COMPLETED, run.error
    assert not any("Skip this dimension" in q for q in asked)
    result = JudgeResult.objects.get(run=run)
    step = next(s for s in result.path if s["question_id"] == "4")
    assert step == {"question_id": "4", "answer": "Skip this dimension", "explanation": UNASKED, "asked": "no"}
    assert result.n_calls == len(asked)  # the calls made, nothing counted for question 4
    rationale = JudgeLabel.objects.get(result=result, item_key="Points To Help").rationale
    assert "answered without a call" in rationale, json.dumps(rationale)
