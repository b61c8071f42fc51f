"""Active sampling: the clinicians' side, which drawn conversations are rated and their scores.

A drawn conversation counts as rated once it has a computed consensus and none of its labels
is provisional (every active assignment submitted); its score is the instrument's (the AMHART
score, or the VERA-MH label counts), as the judges' side computes it
(:mod:`annotation.sampling.active.population`).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from annotation.models import Assignment, AssignmentStatus, ConsensusLabel, Study
from stats.data import StatsInputError
from stats.ppi.scores import amhart_conversation_scores, vera_mh_counts


def human_scores(study: Study, instrument: str) -> dict[int, np.ndarray]:
    """Return the clinicians' score row of each conversation whose ratings are all in.

    A conversation counts once it has a computed consensus and none of its labels is
    provisional (every active assignment submitted). Unresolved labels (ties awaiting
    adjudication, too few ratings) are missing, as in every report; a conversation whose
    labels are all missing or not applicable gets a row of NaN (left out and counted).
    """
    labels: dict[int, list[str | None]] = defaultdict(list)
    provisional: set[int] = set()
    rows = (
        ConsensusLabel.objects.filter(study=study).exclude(item_key__startswith="section:")
        .values_list("conversation_id", "label", "provisional")
    )
    for cid, label, pending in rows:
        labels[cid].append(label or None)
        if pending:
            provisional.add(cid)
    out: dict[int, np.ndarray] = {}
    for cid, mine in labels.items():
        if cid in provisional:
            continue
        try:
            row = vera_mh_counts([mine], "human")[0] if instrument == "vera_mh" else amhart_conversation_scores([mine], "human")
        except StatsInputError:
            row = np.full(3 if instrument == "vera_mh" else 1, np.nan)
        out[cid] = np.atleast_1d(np.asarray(row, dtype=float))
    return out


def waiting_for_consensus(study: Study, chosen: list[int], human: dict[int, np.ndarray]) -> int:
    """Return how many rated-to-be conversations have every rating in but no final consensus yet."""
    open_ = set(
        Assignment.objects.filter(study=study, is_calibration=False, is_gold=False)
        .exclude(status__in=[AssignmentStatus.SUBMITTED, AssignmentStatus.WITHDRAWN])
        .values_list("conversation_id", flat=True)
    )
    return sum(1 for cid in chosen if cid not in human and cid not in open_)
