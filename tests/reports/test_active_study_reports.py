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


def test_the_active_sampling_page_its_api_and_the_study_zip_carry_its_methods_paragraph(run, coordinator, clinician, outsider):  # noqa: F811
    """The paragraph states the design and the estimate from the study's own state, and names no chatbot or judge."""
    import io
    import zipfile

    from annotation.models import ActiveBatch
    from tests.conftest import client_for

    study = _create(run, coordinator, [clinician], budget=40, batch_size=20)
    _rate_drawn(study, run, coordinator, clinician)
    batch = ActiveBatch.objects.get(plan__study=study, number=1)
    api = client_for(coordinator).get(f"/api/v1/studies/{study.pk}/active-sampling/?units=false").json()
    text = api["methods"]["text"]
    assert f"seed {study.active_plan.seed}" in text and f"batch seeds {batch.seed}" in text
    assert f"budget of {study.active_plan.budget}" in text and f"{batch.n_selected} drawn" in text
    assert "active inference estimator" in text and "(Zrnic & Candès, 2024)" in text
    assert any("Active statistical inference" in r["citation"] for r in api["methods"]["references"])
    pooled = api["pooled"]
    assert f"{pooled['estimate']:.3f}" in text
    for target in {c.target for c in run.conversations.values()}:
        assert target.model not in text and target.code not in text
    for judge in run.judges.all():
        assert judge.name not in text and judge.model not in text
    page = client_for(coordinator).get(f"/studies/{study.pk}/active/").content.decode()
    assert "Methods paragraph" in page and f"seed {study.active_plan.seed}" in page
    assert client_for(outsider).get(f"/studies/{study.pk}/active/").status_code == 404
    archive = zipfile.ZipFile(io.BytesIO(client_for(coordinator).get(f"/reports/studies/{study.pk}/export.zip").content))
    assert "## Active sampling for human review" in archive.read("METHODS.md").decode()
