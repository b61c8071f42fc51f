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


def _rewrite(data: bytes, changes: dict[str, bytes | None], *, fix_manifest: bool = True) -> bytes:
    """Return the bundle with files replaced (None: removed), the manifest's checksums updated unless told not to."""
    import hashlib
    import json
    import zipfile

    source = zipfile.ZipFile(io.BytesIO(data))
    files = {name: source.read(name) for name in source.namelist()}
    for name, content in changes.items():
        if content is None:
            files.pop(name, None)
        else:
            files[name] = content
    if fix_manifest:
        manifest = json.loads(files["manifest.json"])
        for entry in manifest["files"]:
            if entry["path"] in files:
                entry["sha256"] = hashlib.sha256(files[entry["path"]]).hexdigest()
        files["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return out.getvalue()


def _read(data: bytes, name: str) -> str:
    import zipfile

    return zipfile.ZipFile(io.BytesIO(data)).read(name).decode()


def _rejected(data: bytes) -> list[str]:
    from core.problems import ImportRejected

    with pytest.raises(ImportRejected) as caught:
        bundle_import(data=data, file="bundle.zip")
    assert not Study.objects.exists() and not Conversation.objects.exists() and not Instrument.objects.exists()
    from judging.models import JudgeRun

    assert not JudgeRun.objects.exists()
    return [str(p) for p in caught.value.problems]


@pytest.mark.django_db(transaction=True)
def test_a_file_changed_after_the_bundle_was_made_is_refused_by_its_checksum(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    consensus = _read(data, "consensus.csv").replace(",yes,unanimous,", ",no,unanimous,", 1).encode()
    problems = _rejected(_rewrite(data, {"consensus.csv": consensus}, fix_manifest=False))
    assert len(problems) == 1 and problems[0].startswith("consensus.csv: SHA-256 ")
    assert "differs from the manifest" in problems[0]


@pytest.mark.django_db(transaction=True)
def test_a_missing_file_and_an_unlisted_file_are_named(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    problems = _rejected(_rewrite(data, {"assignments.csv": None, "extra.csv": b"unit\n"}, fix_manifest=False))
    assert problems == ["assignments.csv: listed in the manifest but missing from the bundle",
                        "extra.csv: not listed in the manifest (no checksum): added after the bundle was made?"]


@pytest.mark.django_db(transaction=True)
def test_a_wrong_column_is_named_with_its_file_and_nothing_is_imported(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    consensus = _read(data, "consensus.csv").replace("provenance", "how", 1).encode()
    problems = _rejected(_rewrite(data, {"consensus.csv": consensus}))
    assert problems == ["consensus.csv, line 1, column provenance: missing column 'provenance'; the header must hold "
                        "unit,external_id,item,label,provenance,n_ratings,n_expected,provisional,in_adjudication_queue,votes,"
                        "disagreement,adjudicated_by,reason"]


@pytest.mark.django_db(transaction=True)
def test_a_bad_label_deep_in_the_ratings_is_named_by_line_and_column_and_rolls_everything_back(demo_bundle):
    """The conversations and instruments were already written when the ratings are read: all of it is undone."""
    data, _ = demo_bundle[DEMO_STUDY]
    lines = _read(data, "ratings_long.csv").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if ",main," in line and ",yes," in line and i > 40)
    lines[number] = lines[number].replace(",yes,", ",maybe,", 1)
    problems = _rejected(_rewrite(data, {"ratings_long.csv": "".join(lines).encode()}))
    assert len(problems) == 1
    assert problems[0].startswith(f"ratings_long.csv, line {number + 1}, column"), problems
    assert "maybe" in problems[0]
