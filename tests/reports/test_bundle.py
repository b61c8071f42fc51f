"""The publication bundle round-trips: a fresh database rebuilds the study from it, figure for figure (issue 23)."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import pytest
from django.core.management import call_command

from annotation.demo.seed import DEMO_STUDY, PLAN_STUDY
from annotation.models import Study
from reports.bundle.figures import figure_differences, study_figures
from tests.support.demo_bundle import bundle_text, evidence_of, fresh_import, rejected, rewrite

# Each test starts from an empty database (a fresh one, as a bundle's reader has): the demo is seeded once, exported,
# and the database emptied again (``demo_bundle``, tests/reports/conftest.py).
pytestmark = pytest.mark.django_db(transaction=True)

def test_a_fresh_database_rebuilds_the_demo_study_figure_for_figure(demo_bundle):
    data, before = demo_bundle[DEMO_STUDY]
    result = fresh_import(data)
    after = study_figures(result.study)
    assert set(before) >= {"reliability", "scorecard", "realism", "rater_drift", "judges_run1", "judges_run2",
                           "judge_assisted", "leaderboard"}
    assert figure_differences(before, after, places=4) == []
    # The turns the raters cited come back with their answers (and the whole form's).
    cited = demo_bundle["evidence"]
    assert len(cited) == 4 and any("__form__" in c for c in cited.values())
    assert evidence_of(result.study) == cited
    assert result.study.evidence_mode == "per_item"


def test_the_ratings_carry_the_cited_turns_in_their_own_column(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    rows = list(csv.DictReader(io.StringIO(bundle_text(data, "ratings_long.csv"))))
    assert sum(1 for r in rows if r["evidence_turns"]) == 6
    form = [r for r in rows if r["part"] == "form"]
    assert len(form) == 1 and form[0]["item"] == "evidence" and form[0]["evidence_turns"] == "1;3" and form[0]["label"] == ""
    assert "evidence_turns" in bundle_text(data, "codebook.md") and "evidence_turns" in bundle_text(data, "README.txt")


def test_a_bundle_without_cited_turns_still_imports(demo_bundle):
    """Bundles made before the evidence_turns column: the column is optional."""
    data, _ = demo_bundle[DEMO_STUDY]
    rows = list(csv.reader(io.StringIO(bundle_text(data, "ratings_long.csv"))))
    at = rows[0].index("evidence_turns")
    older = [row[:at] + row[at + 1:] for row in rows if len(row) > at and row[2] != "form"]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(older)
    result = fresh_import(rewrite(data, {"ratings_long.csv": buffer.getvalue().encode()}))
    assert result.n_ratings and evidence_of(result.study) == {}


def test_a_cited_turn_past_the_conversations_end_is_refused(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    text = bundle_text(data, "ratings_long.csv").replace(",1;3", ",1;999", 1)
    problems = rejected(rewrite(data, {"ratings_long.csv": text.encode()}))
    assert len(problems) == 1 and "turn 999 is not a turn of conversation" in problems[0], problems


def test_a_fresh_database_rebuilds_a_sampled_study_with_its_weights(demo_bundle):
    """The validation sample: Hájek weights from its sampling plan, a judge run wider than the study, open work."""
    data, before = demo_bundle[PLAN_STUDY]
    result = fresh_import(data)
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


def test_a_file_changed_after_the_bundle_was_made_is_refused_by_its_checksum(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    consensus = bundle_text(data, "consensus.csv").replace(",yes,unanimous,", ",no,unanimous,", 1).encode()
    problems = rejected(rewrite(data, {"consensus.csv": consensus}, fix_manifest=False))
    assert len(problems) == 1 and problems[0].startswith("consensus.csv: SHA-256 ")
    assert "differs from the manifest" in problems[0]


def test_a_missing_file_and_an_unlisted_file_are_named(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    problems = rejected(rewrite(data, {"assignments.csv": None, "extra.csv": b"unit\n"}, fix_manifest=False))
    assert problems == ["assignments.csv: listed in the manifest but missing from the bundle",
                        "extra.csv: not listed in the manifest (no checksum): added after the bundle was made?"]


def test_a_wrong_column_is_named_with_its_file_and_nothing_is_imported(demo_bundle):
    data, _ = demo_bundle[DEMO_STUDY]
    consensus = bundle_text(data, "consensus.csv").replace("provenance", "how", 1).encode()
    problems = rejected(rewrite(data, {"consensus.csv": consensus}))
    assert problems == ["consensus.csv, line 1, column provenance: missing column 'provenance'; the header must hold "
                        "unit,external_id,item,label,provenance,n_ratings,n_expected,provisional,in_adjudication_queue,votes,"
                        "disagreement,adjudicated_by,reason"]


def test_a_bad_label_deep_in_the_ratings_is_named_by_line_and_column_and_rolls_everything_back(demo_bundle):
    """The conversations and instruments were already written when the ratings are read: all of it is undone."""
    data, _ = demo_bundle[DEMO_STUDY]
    lines = bundle_text(data, "ratings_long.csv").splitlines(keepends=True)
    number = next(i for i, line in enumerate(lines) if ",main," in line and ",yes," in line and i > 40)
    lines[number] = lines[number].replace(",yes,", ",maybe,", 1)
    problems = rejected(rewrite(data, {"ratings_long.csv": "".join(lines).encode()}))
    assert len(problems) == 1
    assert problems[0].startswith(f"ratings_long.csv, line {number + 1}, column"), problems
    assert "maybe" in problems[0]


def _stats_bundle(path, *args: str):  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])  # the checkout's `stats`, run from elsewhere: no app, no database
    return subprocess.run([sys.executable, "-m", "stats", "bundle", str(path), *args], capture_output=True, text=True,
                          cwd=path.parent, env={**os.environ, "PYTHONPATH": root})


COEFFICIENTS = ("percent_agreement", "fleiss_kappa", "cohen_kappa_mean", "krippendorff_alpha", "gwet_ac1")


def test_python_m_stats_reproduces_the_reliability_figures_from_the_bundles_files_alone(demo_bundle, tmp_path):
    data, before = demo_bundle[DEMO_STUDY]
    path = tmp_path / "bundle.zip"
    path.write_bytes(data)
    done = _stats_bundle(path, "--json")
    assert done.returncode == 0, done.stderr
    reports = list(json.loads(done.stdout)["reports"].values())
    groups = before["reliability"]["main"]["groups"]
    assert len(reports) == len(groups) >= 1
    checked = 0
    for report, group in zip(reports, groups, strict=True):
        for name in COEFFICIENTS:
            assert round(report["pooled"][name], 4) == round(group["pooled"][name], 4), name
            if f"{name}_ci" in group["pooled"]:
                assert [round(x, 4) for x in report["pooled"][f"{name}_ci"]] == [round(x, 4) for x in group["pooled"][f"{name}_ci"]]
        for item, figures in report["items"].items():
            page = before["reliability"]["main"]["items"][item]
            for name in COEFFICIENTS:
                if figures[name] is None:
                    assert page[name] is None
                    continue
                assert round(figures[name], 4) == round(page[name], 4), (item, name)
                checked += 1
    assert checked >= 20


def test_python_m_stats_refuses_a_bundle_whose_ratings_were_changed(demo_bundle, tmp_path):
    data, _ = demo_bundle[DEMO_STUDY]
    name = "reliability_ratings.csv" if "reliability_ratings.csv" in zipfile.ZipFile(io.BytesIO(data)).namelist() else "reliability_ratings_1.csv"
    text = bundle_text(data, name)
    path = tmp_path / "bundle.zip"
    path.write_bytes(rewrite(data, {name: text.replace(",yes", ",no", 1).encode()}, fix_manifest=False))
    done = _stats_bundle(path)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {name}: its SHA-256 differs from the manifest's: the file was changed after the bundle was made"


def test_the_page_link_the_api_and_the_commands_give_and_take_the_bundle(demo_bundle, tmp_path):
    """Researchers and coordinators of a study download it (page and API); an outsider gets 404/403; a coordinator
    imports one by the API and manages the study it rebuilds; ``export_bundle`` / ``import_bundle`` do the same."""
    from core.roles import Role
    from tests.conftest import client_for, make_user

    data, before = demo_bundle[DEMO_STUDY]
    cora = make_user("cora", Role.COORDINATOR)
    outsider = make_user("otto")
    researcher = make_user("remy", Role.RESEARCHER)
    with io.BytesIO(data) as upload:
        upload.name = "bundle.zip"
        answer = client_for(researcher).post("/api/v1/imports/bundle/", {"file": upload})
    assert answer.status_code == 403  # a researcher does not create studies
    with io.BytesIO(data) as upload:
        upload.name = "bundle.zip"
        answer = client_for(cora).post("/api/v1/imports/bundle/", {"file": upload, "dry_run": "true"})
    assert answer.status_code == 200 and answer.json()["dry_run"] is True
    assert not Study.objects.exists()
    with io.BytesIO(data) as upload:
        upload.name = "bundle.zip"
        answer = client_for(cora).post("/api/v1/imports/bundle/", {"file": upload})
    assert answer.status_code == 200, answer.content
    study = Study.objects.get(pk=answer.json()["study"])
    index = client_for(cora).get("/reports/").content.decode()
    assert f"/reports/studies/{study.pk}/bundle/" in index
    page = client_for(cora).get(f"/reports/studies/{study.pk}/bundle.zip")
    assert page.status_code == 200 and page["Content-Type"] == "application/zip"
    api = client_for(cora).get(f"/api/v1/reports/studies/{study.pk}/bundle/")
    assert api.status_code == 200
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(api.getvalue())).read("manifest.json"))
    assert manifest["app"] == "evalsite" and manifest["app_version"] and manifest["bundle_format"] == 1
    assert client_for(outsider).get(f"/reports/studies/{study.pk}/bundle.zip").status_code == 404
    assert client_for(outsider).get(f"/api/v1/reports/studies/{study.pk}/bundle/").status_code == 403
    assert client_for(researcher).get(f"/reports/studies/{study.pk}/bundle.zip").status_code == 404  # not a member
    path = tmp_path / "again.zip"
    call_command("export_bundle", str(study.pk), "-o", str(path), stdout=io.StringIO())
    bad = rewrite(path.read_bytes(), {"assignments.csv": None}, fix_manifest=False)
    (tmp_path / "bad.zip").write_bytes(bad)
    from django.core.management import CommandError

    err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("import_bundle", str(tmp_path / "bad.zip"), stdout=io.StringIO(), stderr=err)
    assert "assignments.csv: listed in the manifest but missing from the bundle" in err.getvalue()
    assert Study.objects.count() == 1
    # The re-exported bundle of the rebuilt study has the same figures again: export, import, export is stable.
    again = json.loads(zipfile.ZipFile(io.BytesIO(path.read_bytes())).read("figures/reliability.json"))
    assert figure_differences({"reliability": before["reliability"]}, {"reliability": again}) == []


def test_the_vera_mh_layout_reads_back_to_the_same_messages(demo_bundle):
    """The transcripts in VERA-MH's published layout parse with the app's own VERA-MH reader to the JSONL's messages."""
    from corpus.conversations.formats import read_vera_files

    data, _ = demo_bundle[DEMO_STUDY]
    archive = zipfile.ZipFile(io.BytesIO(data))
    files = [(name.removeprefix("transcripts/vera-mh/"), archive.read(name).decode()) for name in archive.namelist()
             if name.startswith("transcripts/vera-mh/") and name.endswith(".txt")]
    records, problems = read_vera_files(files)
    assert problems == []
    index = {row.split(",")[0]: row.split(",")[1] for row in bundle_text(data, "transcripts/vera-mh/index.csv").splitlines()[1:]}
    jsonl = {json.loads(line)["metadata"]["evalsite_code"]: json.loads(line) for line in bundle_text(data, "transcripts/conversations.jsonl").splitlines()}
    assert len(records) == len(jsonl) == 36
    for record in records:
        original = jsonl[index[record.file]]
        assert record.messages == [(m["role"], m["content"].strip()) for m in original["messages"] if m["role"] != "system"]
        assert record.target_model == original["target"]["model"].replace("/", "-")


def test_every_file_name_in_the_bundle_is_portable(demo_bundle):
    """Issue 31, defect 7: 14 names held ':' (judge_assisted_item:amhart_01.json), which Windows cannot extract."""
    from reports.bundle import layout

    names = zipfile.ZipFile(io.BytesIO(demo_bundle[DEMO_STUDY][0])).namelist()
    assert [name for name in names if not layout.is_portable(name)] == []
    assert any(name.startswith("figures/plotly/judge_assisted_item-") for name in names)
