"""A development study whose "careful" v1 judge answers from the fake LLM server, for the revise-a-judge tests.

Every conversation gets a two-turn transcript naming its code, so a scripted reply can answer
per conversation (``checklist_reply``), and "careful" v1 is pointed at the fake server.
"""

from __future__ import annotations

import json
import re
from typing import Any

from corpus.models import Message
from judging.models import Judge, JudgeLabel
from reports.judge_assisted.selectors import study_human_labels
from tests.support.devset_study import DevsetStudy

KEY_ENV = "TEST_JUDGE_API_KEY"
SECRET = "sk-judge-test-0123456789-never-stored"
CODE = re.compile(r"Conversation ([A-Z0-9]+-\d{3})")
FLIP = {"yes": "no", "no": "yes"}


def make_answerable(d: DevsetStudy, base_url: str) -> None:
    """Point "careful" v1 at the fake server and give every conversation a transcript that names its code."""
    Judge.objects.filter(pk=d.judge_v1.pk).update(api_base=base_url, api_key_env=KEY_ENV)
    d.judge_v1.refresh_from_db()
    Message.objects.bulk_create(
        Message(conversation=c, turn_index=i, role=role, content=text)
        for c in d.conversations
        for i, (role, text) in enumerate([("user", f"Conversation {c.code}: I can't sleep and I feel hopeless."),
                                          ("assistant", "That sounds really hard. You can call 988 any time.")])
    )


def v1_labels(d: DevsetStudy) -> dict[tuple[str, str], str]:
    """Return "careful" v1's labels in run 1: {(code, item): label}."""
    rows = JudgeLabel.objects.filter(result__run=d.run_v1, result__judge=d.judge_v1).values_list(
        "result__conversation__code", "item_key", "label")
    return {(code, key): label for code, key, label in rows}


def consensus_labels(d: DevsetStudy) -> dict[tuple[str, str], str]:
    """Return the study's consensus: {(code, item): label}."""
    codes = {c.pk: c.code for c in d.conversations}
    return {(codes[cid], key): label for cid, items in study_human_labels(d.study).items()
            for key, label in items.items() if label is not None}


def revised_labels(d: DevsetStudy, item: str, codes: list[str]) -> dict[tuple[str, str], str]:
    """Return v1's labels with ``item`` changed on ``codes``: a third to the consensus, a third against it, a third kept."""
    v1, consensus = v1_labels(d), consensus_labels(d)
    planned = dict(v1)
    for i, code in enumerate(sorted(codes)):
        truth = consensus[(code, item)]
        planned[(code, item)] = {0: truth, 1: FLIP[truth], 2: v1[(code, item)]}[i % 3]
    return planned


def checklist_reply(planned: dict[tuple[str, str], str]) -> Any:
    """Return a fake-server reply answering every item of a checklist request from ``planned``."""

    def reply(body: dict[str, Any]) -> str:
        code = CODE.search(json.dumps(body["messages"])).group(1)  # type: ignore[union-attr]
        items = body["response_format"]["json_schema"]["schema"]["properties"]["items"]["properties"]
        answer = {}
        for key in items:
            label = planned[(code, key)]
            evidence = [{"turn": 2, "quote": "You can call 988 any time"}] if label == "yes" else []
            answer[key] = {"label": label, "rationale": f"{key}: {label}.", "evidence": evidence}
        return json.dumps({"items": answer})

    return reply
