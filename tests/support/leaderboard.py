"""Data written for the leaderboard: three chatbots judged on VERA-MH personas of two risk levels.

Only the LLM calls are skipped: judge labels are stored as the judging app stores them, the
ensemble is the real majority vote, and the study's ratings give a real consensus.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from annotation.consensus.services import study_compute_consensus
from annotation.models import Assignment, AssignmentStatus, Rating, RatingStatus
from annotation.studies.services import study_create
from corpus.instruments.services import instrument_import
from tests.factories import ConversationFactory, PersonaFactory, TargetFactory
from tests.support.judged import judged_run, judges_for

BP, SUB, HPH, NR = "Best Practice", "Suboptimal but Low Potential for Harm", "High Potential for Harm", "Not Relevant"
RUBRIC = Path(__file__).resolve().parents[1] / "fixtures" / "vera" / "rubric_small.tsv"


def vera_instrument():  # type: ignore[no-untyped-def]
    instrument, _ = instrument_import(text=RUBRIC.read_text(encoding="utf-8"), file=RUBRIC.name, fmt="vera-mh")
    return instrument


def vera_board(coordinator: Any, clinician: Any, *, personas: int = 24, sparse_bot: bool = False) -> dict[str, Any]:
    """Return three chatbots x 24 personas (half Low, half High risk) x 2 repetitions, judged; a study rated one repetition.

    BOT-A answers well and BOT-B badly, each persona pulling both up or down; BOT-C says exactly
    what BOT-A says (twins: no difference). The humans agree with the judges except on a fifth
    of BOT-B's labels, which they find worse. With ``sparse_bot``, BOT-D talked with six
    personas only (too few to decide anything about it).
    """
    instrument = vera_instrument()
    dimensions = list(dict.fromkeys(instrument.items.order_by("position").values_list("domain", flat=True)))
    codes = ("BOT-A", "BOT-B", "BOT-C", "BOT-D") if sparse_bot else ("BOT-A", "BOT-B", "BOT-C")
    bots = {code: TargetFactory(code=code, model=f"vendor/{code.lower()}-model") for code in codes}
    rng = random.Random(4)
    people = [PersonaFactory(name=f"Persona {i + 1}", design={"risk": "Low" if i < personas // 2 else "High", "disclosure": "High"})
              for i in range(personas)]
    conversations, judge, human = [], {}, {}

    def label(z: float) -> str:
        return BP if z > 0.5 else SUB if z > -0.5 else HPH

    for n, person in enumerate(people):
        difficulty = rng.gauss(0, 1.2)
        for r in range(2):
            twin = None
            for code in codes:
                if code == "BOT-D" and n % 4:
                    continue
                c = ConversationFactory(target=bots[code], persona=person, run_index=r)
                conversations.append(c)
                if code == "BOT-C":
                    judge[c.pk] = dict(twin)
                else:
                    quality = {"BOT-A": 1.2, "BOT-B": -0.6, "BOT-D": 0.3}[code]
                    judge[c.pk] = {d: (NR if rng.random() < 0.1 else label(quality + difficulty + rng.gauss(0, 0.6))) for d in dimensions}
                    twin = judge[c.pk] if code == "BOT-A" else twin
                human[c.pk] = {d: (HPH if code == "BOT-B" and v != NR and rng.random() < 0.2 else v) for d, v in judge[c.pk].items()}
    run = judged_run(instrument, judges_for(instrument, ["flow-a", "flow-b"]), conversations, lambda j, c: judge[c.pk])
    rated = [c for c in conversations if c.run_index == 0]
    study = study_create(name="Flow board", instrument=instrument, section=None, conversation_ids=[c.pk for c in rated],
                         created_by=coordinator, coordinators=[coordinator], raters=[(clinician, "clinician")],
                         raters_per_conversation=1)
    for c in rated:
        assignment = Assignment.objects.create(study=study, conversation=c, rater=clinician, status=AssignmentStatus.SUBMITTED)
        Rating.objects.create(assignment=assignment, status=RatingStatus.SUBMITTED, derived={"labels": human[c.pk]})
    study_compute_consensus(study=study, actor=coordinator)
    return {"run": run, "study": study, "conversations": conversations, "judge": judge, "human": human, "rated": rated}
