"""Reports of a study drawn by active sampling: scorecards weight by each batch's π; PPI warns it assumes SRS."""

from __future__ import annotations

import pytest

from reports import selectors as report_reads
from reports.judge_assisted.services import judge_assisted_scorecard
from tests.annotation.test_active_sampling import _create, _rate_drawn, run  # noqa: F401  (run is a fixture)


def test_the_scorecard_weights_each_rated_conversation_by_its_batch_probability(run, coordinator, clinician):  # noqa: F811
    study = _create(run, coordinator, [clinician], budget=40, batch_size=20)
    weights, weighting = report_reads.study_inclusion_weights(study)
    links = dict(study.study_conversations.values_list("conversation__code", "inclusion_prob"))
    assert weighting["weighted"] and "active sampling" in weighting["note"]
    assert weights == {code: pytest.approx(1 / pi) for code, pi in links.items()}


def test_the_judge_assisted_page_says_it_does_not_undo_active_sampling(run, coordinator, clinician):  # noqa: F811
    study = _create(run, coordinator, [clinician], budget=40, batch_size=20)
    _rate_drawn(study, run, coordinator, clinician)
    data = judge_assisted_scorecard(study=study, run=run)
    assert not data["weighted"]
    assert any("drawn by active sampling" in note and "active sampling page" in note for note in data["notes"])
