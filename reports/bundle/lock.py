"""The publication bundle and a locked test set (issue 30).

A bundle carries every rating, consensus and judge label of the study: while the current test
set has not been looked at, downloading it would let its agreement be computed outside the app
without a recorded look. The bundle is refused then, with what to do; a paper's bundle is made
once the final version was evaluated on the test set.
"""

from __future__ import annotations

from annotation.models import Study
from reports.review.scope import locked_test_sets


def bundle_refusal(study: Study) -> str:
    """Return why the study's bundle cannot be downloaded now, or "" when it can."""
    locked = locked_test_sets(study.pk)
    if not locked:
        return ""
    return (f"The publication bundle holds every label of the study, including the {len(locked)} conversations of its "
            "locked test set. Evaluate a version declared final on the test set first (judge development page): the "
            "look is recorded, and the bundle can then be downloaded.")
