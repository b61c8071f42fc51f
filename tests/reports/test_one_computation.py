"""One computation, one default: the reliability page, its API, the study zip and `python -m stats`
give the same figures on the same ratings (issue 18, defect 8)."""

from __future__ import annotations

import csv
import io
import json
import os
import random
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from annotation.studies.ratings_import import ratings_import
from reports.reliability import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from tests.annotation.test_external_raters import flow_and_section
from tests.conftest import client_for
from tests.stats.test_vera_ratings import BP, HPH, NR, SUB, crlf, row

pytestmark = pytest.mark.django_db
LABELS = (BP, SUB, HPH, NR)
COEFFICIENTS = ("percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1")


def vera_ratings(n_units: int = 24, seed: int = 3) -> str:
    """Return a published-format ratings file: three raters of six per unit, labels that mostly agree."""
    rng = random.Random(seed)
    rows = []
    raters = ["clinician_a", "clinician_b", "clinician_c", "clinician_d", "expert_a", "expert_b"]
    for u in range(n_units):
        unit = f"{u:06x}"
        truth = [rng.choice(LABELS) for _ in range(5)]
        for rater in rng.sample(raters, 3):
            dims = tuple(label if rng.random() < 0.75 else rng.choice(LABELS) for label in truth)
            rows.append(row(rater, unit if u % 7 else f"#{unit}", dims=dims, design=f"modelu,modelc,P{u % 4},High,Low"))
    return crlf(*rows)


@pytest.fixture
def imported(coordinator, tmp_path):  # type: ignore[no-untyped-def]
    from annotation.studies.from_ratings import study_create_from_ratings

    text = vera_ratings()
    path = tmp_path / "ratings.csv"
    path.write_bytes(text.encode())
    flow, section = flow_and_section()
    study = study_create_from_ratings(name="Validation", instrument=flow, section=section, text=text, file="ratings.csv",
                                      fmt="vera-mh", created_by=coordinator, coordinators=[coordinator]).study
    ratings_import(study=study, text=text, file="ratings.csv", fmt="vera-mh", actor=coordinator)
    return study, path


def cli(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "stats", "agreement", *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_the_page_the_api_the_zip_and_the_command_line_print_the_same_figures(imported, coordinator):
    study, path = imported
    client = client_for(coordinator)
    api = client.get(f"/api/v1/reports/studies/{study.pk}/reliability/").json()
    line = cli(str(path), "--format", "vera-mh")  # the command line's defaults, nothing added
    assert line["bootstrap"]["n_resamples"] == BOOTSTRAP_RESAMPLES == api["bootstrap"]["resamples"]
    assert line["bootstrap"]["seed"] == BOOTSTRAP_SEED == api["bootstrap"]["seed"]
    assert line["interval_method"] == api["interval_method"] == "percentile_bootstrap_cluster"
    pooled, page_pooled = line["pooled"], api["main"]["pooled"]
    for name in COEFFICIENTS:
        assert page_pooled[name] == pytest.approx(pooled[name], abs=1e-12), name
        assert page_pooled[f"{name}_ci"] == pytest.approx(pooled[f"{name}_ci"], abs=1e-12), name
        assert page_pooled["precision"][name] == pooled["precision"][name], name  # the same plan: more conversations
    for item, figures in line["items"].items():
        page_item = api["main"]["items"][item]
        for name in COEFFICIENTS:
            assert page_item[name] == pytest.approx(figures[name], abs=1e-12), (item, name)
            assert page_item[f"{name}_ci"] == pytest.approx(figures[f"{name}_ci"], abs=1e-12), (item, name)
            assert page_item["precision"][name] == figures["precision"][name], (item, name)
    # The page shows the API's interval, and the zip's reliability.csv is the same computation.
    body = client.get(f"/reports/studies/{study.pk}/reliability/").content.decode()
    low, high = page_pooled["krippendorff_alpha_ci"]
    assert f"{low:.2f}–{high:.2f}" in body
    assert f"+{pooled['precision']['krippendorff_alpha']['n_more_needed']} conv." in body
    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{study.pk}/export.zip").content))
    table = list(csv.DictReader(io.StringIO(archive.read("reliability.csv").decode())))
    pooled_row = next(r for r in table if r["item"] == "pooled")
    assert float(pooled_row["krippendorff_alpha_ci_low"]) == pytest.approx(low, abs=1e-12)
    assert float(pooled_row["krippendorff_alpha_ci_high"]) == pytest.approx(high, abs=1e-12)
    assert int(float(pooled_row["krippendorff_alpha_n_more_needed"])) == pooled["precision"]["krippendorff_alpha"]["n_more_needed"]


def _zip_command_figures(client, study, tmp_path) -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    """Return the API's reliability and the figures of the zip's own command run on the zip's file."""
    import shlex

    archive = zipfile.ZipFile(io.BytesIO(client.get(f"/reports/studies/{study.pk}/export.zip").content))
    archive.extractall(tmp_path)
    readme = archive.read("README.txt").decode()
    command = next(line.strip() for line in readme.splitlines() if line.strip().startswith("python -m stats agreement"))
    args = shlex.split(command)[4:]
    root = str(Path(__file__).resolve().parents[2])  # `python -m stats` from the checkout, run where the zip was unpacked
    out = subprocess.run([sys.executable, "-m", "stats", "agreement", *args, "--json"], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": root})
    return client.get(f"/api/v1/reports/studies/{study.pk}/reliability/").json(), json.loads(out.stdout)


def _same(page: dict, line: dict) -> None:
    for name in COEFFICIENTS:
        assert page[name] == pytest.approx(line[name], abs=1e-12), name
        assert page[f"{name}_ci"] == pytest.approx(line[f"{name}_ci"], abs=1e-12), name
        assert page["precision"][name]["n_more_needed"] == line["precision"][name]["n_more_needed"], name


def test_the_zips_ratings_and_command_reproduce_the_page_for_an_imported_study(imported, coordinator, tmp_path):
    study, _ = imported
    api, line = _zip_command_figures(client_for(coordinator), study, tmp_path)
    _same(api["main"]["pooled"], line["pooled"])
    for item, figures in line["items"].items():
        _same(api["main"]["items"][item], figures)


def test_the_zips_ratings_and_command_reproduce_the_page_for_an_in_app_amhart_study(coordinator, tmp_path):
    from tests.conftest import make_user
    from tests.support.judged import amhart_truth, corpus, noisy, rated_study

    conversations = corpus(chatbots=("BOT-A", "BOT-B"), personas=2, repetitions=4)
    raters = [make_user(name, "clinician") for name in ("ana", "ben", "cy")]
    truth = amhart_truth(conversations)
    rng = random.Random(2)
    study = rated_study(coordinator, raters[:1], conversations, truth)
    from tests.support.judged import rate

    for rater in raters[1:]:
        for i, c in enumerate(conversations):
            rate(study, c, rater, noisy(truth[c.pk], rng, 0.2), position=i)
    api, line = _zip_command_figures(client_for(coordinator), study, tmp_path)
    assert api["na_policy"] == "exclude" and line["na_policy"] == "exclude"
    _same(api["main"]["pooled"], line["pooled"])
    for item, figures in line["items"].items():
        _same(api["main"]["items"][item], figures)


def test_the_alt_test_command_equals_the_judges_page_on_ids_written_with_a_hash(imported, tmp_path):
    """Issue 31, defect 6: `python -m stats alt-test --format vera-mh` dropped the instances whose ids carry a '#'
    (rho 0.4138 where the app gives 0.4183); the command and the app now test the same instances."""
    from judging.external import judge_labels_import
    from reports import services

    study, path = imported
    rng = random.Random(11)
    ratings = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    dimensions = ["Detects Potential Risk", "Confirms Risk", "Guides to Human Care", "Supportive Conversation", "Follows AI Boundaries"]
    columns = ["clinician_detects", "clinician_confirms", "clinician_guides", "clinician_supportive", "clinician_boundaries"]
    first = {}
    for r in ratings:  # the judge: the first rater's label, sometimes another; ids spelled as the ratings spell them
        first.setdefault(r["conversation_id"], r)
    rows = [(unit, "judge-1", name, r[column] if rng.random() < 0.8 else rng.choice(LABELS))
            for unit, r in first.items() for name, column in zip(dimensions, columns, strict=True)]
    assert any(unit.startswith("#") for unit, _, _, _ in rows)
    text = "unit,judge,item,label\n" + "".join(f"{u},{j},{i},{label}\n" for u, j, i, label in rows)
    judges = tmp_path / "judges.csv"
    judges.write_text(text, encoding="utf-8")
    run = judge_labels_import(text=text, file="judges.csv", instrument=study.instrument, name="judge").run
    page = services.study_judges_vs_humans(study=study, run_id=run.pk)
    (group,) = page["groups"]
    app = group["alt_test"]["judge-1"]
    out = subprocess.run([sys.executable, "-m", "stats", "alt-test", str(path), "--format", "vera-mh", "--judges", str(judges),
                          "--epsilon", f"{study.alt_test_epsilon}", "--json"], capture_output=True, text=True, check=True).stdout
    line = json.loads(out)["judges"]["judge-1"]
    assert line["n_instances"] == app["n_instances"] == 24 * 5
    assert line["advantage_probability"] == pytest.approx(app["advantage_probability"], abs=1e-12)
    assert line["winning_rate"] == pytest.approx(app["winning_rate"], abs=1e-12)
