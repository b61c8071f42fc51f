"""The publication bundle round-trips: a fresh database rebuilds the study from it, figure for figure (issue 23)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from annotation.demo.seed import DEMO_STUDY, PLAN_STUDY
from annotation.models import Study
from corpus.models import Conversation, Instrument
from reports.bundle.export import study_bundle_zip
from reports.bundle.figures import figure_differences, study_figures
from reports.bundle.importer import bundle_import


@pytest.fixture(scope="module")
def demo_bundle(django_db_setup, django_db_blocker):  # type: ignore[no-untyped-def]
    """Seed the demo once, export its two studies, compute their figures; leave the database empty."""
    with django_db_blocker.unblock():
        call_command("seed_demo", stdout=io.StringIO())
        out = {}
        for name in (DEMO_STUDY, PLAN_STUDY):
            study = Study.objects.get(name=name)
            out[name] = (study_bundle_zip(study=study), study_figures(study))
        call_command("flush", interactive=False)
    return out


def _fresh_import(data: bytes):  # type: ignore[no-untyped-def]
    assert not Conversation.objects.exists() and not Study.objects.exists() and not Instrument.objects.exists()
    return bundle_import(data=data, file="bundle.zip")


@pytest.mark.django_db(transaction=True)
def test_a_fresh_database_rebuilds_the_demo_study_figure_for_figure(demo_bundle):
    data, before = demo_bundle[DEMO_STUDY]
    result = _fresh_import(data)
    after = study_figures(result.study)
    assert set(before) >= {"reliability", "scorecard", "realism", "rater_drift", "judges_run1", "judges_run2",
                           "judge_assisted", "leaderboard"}
    assert figure_differences(before, after, places=4) == []



@pytest.mark.django_db(transaction=True)
def test_a_fresh_database_rebuilds_a_sampled_study_with_its_weights(demo_bundle):
    """The validation sample: Hájek weights from its sampling plan, a judge run wider than the study, open work."""
    data, before = demo_bundle[PLAN_STUDY]
    result = _fresh_import(data)
    assert result.study.sampling_plan.judge_run in result.runs
    assert before["scorecard"]["weighting"]["weighted"] is True
    assert figure_differences(before, study_figures(result.study), places=4) == []


def test_figures_that_differ_in_the_fourth_decimal_are_told_apart():
    before = {"reliability": {"main": {"pooled": {"fleiss_kappa": 0.61234, "n": 3}}, "run": 4, "_cache": {"hit": True}}}
    same = {"reliability": {"main": {"pooled": {"fleiss_kappa": 0.612341, "n": 3}}, "run": 9, "_cache": {"hit": False}}}
    moved = {"reliability": {"main": {"pooled": {"fleiss_kappa": 0.61264, "n": 3}}, "run": 4}}
    gone = {"reliability": {"main": {"pooled": {"fleiss_kappa": None, "n": 3}}}}
    assert figure_differences(before, same) == []
    assert figure_differences(before, moved) == ["reliability/main/pooled/fleiss_kappa: 0.61234 != 0.61264"]
    assert figure_differences(before, gone) == ["reliability/main/pooled/fleiss_kappa: 0.61234 != None"]
    assert figure_differences(before, {}) == ["reliability: only in the first set"]
