"""An active sampling study in a realistic state, for the browser tests (pages, layout, axe, screenshots).

A finished run of three judges over the given conversations (on every third conversation two
judges flip two items: the ensemble is wrong there and the judges split), a study grown by active
sampling from it, its first batch rated with the truth and its consensus computed, and a second
batch drawn and not yet rated: the page then shows an estimate, a chart, the width expected after
batch 3 and a batch being rated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotation.consensus.services import study_compute_consensus
from annotation.models import Study
from annotation.sampling.active.services import (
    ActiveOptions,
    active_batch_draw,
    active_study_create,
)
from corpus.models import Conversation
from judging.models import JudgeRun
from tests.support.judged import AMHART_KEYS, amhart, amhart_truth, judged_run, judges_for, rate

FLIPPED = ("amhart_03", "amhart_05")


def active_run(conversations: Sequence[Conversation], *, prefix: str = "active") -> tuple[JudgeRun, dict[int, dict]]:
    """Return a finished three-judge run over the conversations, and the truth the clinicians give."""
    instrument = amhart()
    truth = amhart_truth(conversations, seed=7)
    hard = {c.pk for i, c in enumerate(conversations) if i % 3 == 0}

    def labels(judge: Any, conversation: Conversation) -> dict:
        out = dict(truth[conversation.pk])
        if not judge.name.endswith("-a") and conversation.pk in hard:
            for key in FLIPPED:
                out[key] = "yes" if out[key] == "no" else "no"
        return {k: out[k] for k in AMHART_KEYS}

    judges = judges_for(instrument, [f"{prefix}-judge-a", f"{prefix}-judge-b", f"{prefix}-judge-c"])
    return judged_run(instrument, judges, conversations, labels, name="Active sampling run"), truth


def active_study(
    coordinator: Any, raters: Sequence[Any], conversations: Sequence[Conversation], *, budget: int, batch_size: int,
    target_width: float = 0.1, prefix: str = "active", name: str = "Active sampling study",
) -> Study:
    """Return a study grown by active sampling: batch 1 rated (consensus computed), batch 2 drawn."""
    run, truth = active_run(conversations, prefix=prefix)
    study = active_study_create(
        run=run, source_key=None, options=ActiveOptions(budget=budget, batch_size=batch_size, target_width=target_width, seed=20),
        created_by=coordinator, name=name, rater_title="Conversations for review", section=None,
        coordinators=[coordinator], raters=[(r, "clinician") for r in raters], raters_per_conversation=len(raters),
    )
    for position, cid in enumerate(study.study_conversations.values_list("conversation_id", flat=True)):
        for rater in raters:
            rate(study, Conversation.objects.get(pk=cid), rater, truth[cid], position=position)
    study_compute_consensus(study=study, actor=coordinator)
    active_batch_draw(study=study, actor=coordinator)
    return study
