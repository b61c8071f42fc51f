"""The judges-vs-humans verdict through the Django test client and the API: a constant judge, a
random judge and a judge equal to the human majority, each read as it should be; the CLI on
the same data gives the same alt-test; epsilon is a study setting only its readers can change."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotation.models import StudyEvent
from stats.cli import main as stats_main
from tests.conftest import client_for
from tests.support.verdict_study import build_verdict_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def known(db):  # type: ignore[no-untyped-def]
    return build_verdict_study(late_rater=True, prefix="kv")


def _api(client, study, run) -> dict:  # type: ignore[no-untyped-def]
    response = client.get(f"/api/v1/reports/studies/{study.pk}/judges/?run={run.pk}")
    assert response.status_code == 200, response.content[:300]
    return response.json()


def test_a_constant_yes_judge_is_never_shown_inside_the_human_range(known):
    """Issue 18, defect 1: one rater pair shared a single conversation (kappa 0.00), so the old
    min-max envelope started at 0 and a judge that always says "yes" read "inside" (green)."""
    client = client_for(known.coordinator)
    page = client.get(f"/reports/studies/{known.study.pk}/judges/?run={known.run.pk}").content.decode()
    rows = [part.split("</tr>", 1)[0] for part in page.split('<th scope="row">always-yes</th>')[1:]]
    assert rows and not any('class="inside"' in row for row in rows), "the constant judge is shown inside the human range"
    group = _api(client, known.study, known.run)["groups"][0]
    late = known.raters[4].username
    assert all(late in (e["rater"], e["reference"]) for e in group["human_range"]["excluded"])
    assert {e["n_conversations"] for e in group["human_range"]["excluded"]} == {1}
    assert group["human_range"]["kappa_min"] > 0.4  # the range is the four regular raters' pairs only
    assert group["alt_test"]["always-yes"]["passed"] is False
    assert group["leave_one_out"]["always-yes"]["mean"]["kappa"]["reading"] == "judge below the raters"
    assert group["leave_one_out"]["always-yes"]["mean"]["kappa"]["ci"]["high"] < 0
    assert 'class="verdict-badge fail">fails' in rows[0]  # the headline verdict
    assert 'id="pairs-left-out"' in page and f"{late}" in page.split('id="pairs-left-out"', 1)[1].split("</p>", 1)[0]


def test_constant_random_and_majority_judges_read_as_they_should(known):
    client = client_for(known.coordinator)
    payload = _api(client, known.study, known.run)
    group = payload["groups"][0]
    tests = group["alt_test"]
    assert set(tests) == {"always-yes", "coin-flip", "majority", "ensemble"}
    for name in ("always-yes", "coin-flip", "majority", "ensemble"):
        assert {"epsilon", "winning_rate", "advantage_probability", "passed", "per_rater"} <= set(tests[name])
        assert tests[name]["epsilon"] == 0.2
        for rater in tests[name]["per_rater"]:
            assert {"rater", "n_instances", "rho", "p_value", "p_adjusted", "decision"} <= set(rater)
    assert tests["always-yes"]["passed"] is False and tests["always-yes"]["winning_rate"] == 0.0
    assert tests["coin-flip"]["passed"] is False and tests["coin-flip"]["winning_rate"] == 0.0
    assert tests["majority"]["passed"] is True and tests["majority"]["winning_rate"] == 1.0
    assert tests["majority"]["advantage_probability"] == 1.0  # the paper's optimal jury
    assert tests["majority"]["advantage_probability"] > tests["coin-flip"]["advantage_probability"]
    # The late rater (one conversation, 14 instances) is below 30 instances: listed, not tested.
    assert [e["rater"] for e in tests["majority"]["excluded_raters"]] == [known.raters[4].username]
    loo = group["leave_one_out"]
    assert loo["coin-flip"]["mean"]["agreement"]["reading"] == "judge below the raters"
    assert loo["majority"]["mean"]["kappa"]["reading"] == "judge above the raters"
    consensus = {c["rater"]: c for c in group["vs_consensus"]}
    assert consensus["majority"]["kappa_ci"]["low"] <= consensus["majority"]["cohen_kappa"] <= consensus["majority"]["kappa_ci"]["high"]
    assert consensus["coin-flip"]["kappa_ci"]["high"] < 0.3
    assert payload["parameters"]["alt_test"]["q"] == 0.05 and payload["parameters"]["bootstrap"]["resamples"] >= 1000
    assert payload["parameters"]["min_shared_conversations"] == 10

    page = client.get(f"/reports/studies/{known.study.pk}/judges/?run={known.run.pk}").content.decode()
    verdict = page.split('id="verdict"', 1)[1].split("</table>", 1)[0]
    assert verdict.index("always-yes") < verdict.index("ensemble")  # the headline lists every judge, ensemble last
    for name, word in (("always-yes", "fails"), ("coin-flip", "fails"), ("majority", "passes")):
        row = verdict.split(f'<th scope="row">{name}</th>', 1)[1].split("</tr>", 1)[0]
        assert f">{word}</span>" in row, (name, row)
    assert "Benjamini–Yekutieli" in page and "ε = 0.20" in page


def test_the_command_line_gives_the_same_alt_test_as_the_page_and_api(known, tmp_path, capsys):
    ratings = tmp_path / "ratings.csv"
    judges = tmp_path / "judges.csv"
    with open(ratings, "w", newline="") as fh:
        csv.writer(fh).writerows([("unit", "rater", "item", "label"), *known.ratings])
    with open(judges, "w", newline="") as fh:
        csv.writer(fh).writerows([("unit", "judge", "item", "label"), *known.judge_labels])
    assert stats_main(["alt-test", str(ratings), "--judges", str(judges), "--epsilon", "0.2", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["judges"]
    api = _api(client_for(known.coordinator), known.study, known.run)["groups"][0]["alt_test"]
    for name in ("always-yes", "coin-flip", "majority"):
        for key in ("winning_rate", "advantage_probability", "passed", "verdict", "n_instances", "per_rater", "excluded_raters"):
            assert cli[name][key] == api[name][key], (name, key)
        # The page adds the constant-judge check beside each item's test (reports.verdict); the test itself is the same.
        page_items = {k: {f: v for f, v in t.items() if f != "constant_judge_passes"} for k, t in api[name]["items"].items()}
        assert cli[name]["items"] == page_items


def test_every_new_table_downloads_as_csv(known):
    client = client_for(known.coordinator)
    base = f"/reports/studies/{known.study.pk}/judges"
    verdicts = list(csv.DictReader(io.StringIO(client.get(f"{base}/alt-test.csv?run={known.run.pk}").content.decode())))
    pooled = {r["judge"]: r for r in verdicts if r["scope"] == "pooled"}
    assert pooled["majority"]["verdict"] == "passed" and pooled["always-yes"]["verdict"] == "failed"
    assert {r["scope"] for r in verdicts} >= {"pooled", "amhart_01", "amhart_14"}
    raters = list(csv.DictReader(io.StringIO(client.get(f"{base}/alt-test-raters.csv?run={known.run.pk}").content.decode())))
    assert {"rater", "n_instances", "rho_judge", "p_value", "p_adjusted_by", "decision"} <= set(raters[0])
    loo = list(csv.DictReader(io.StringIO(client.get(f"{base}/leave-one-out.csv?run={known.run.pk}").content.decode())))
    assert any(r["rater"] == "mean over raters" and r["judge"] == "always-yes" for r in loo)
    judges = list(csv.DictReader(io.StringIO(client.get(f"{base}.csv?run={known.run.pk}").content.decode())))
    assert all(r["kappa_ci_low"] != "" for r in judges if r["comparison"] == "vs_consensus" and r["item"] == "pooled")
    assert client.get(f"{base}/nonsense.csv?run={known.run.pk}").status_code == 404


def test_epsilon_is_a_study_setting_its_readers_set_with_the_guidance_beside_it(known, clinician, outsider, researcher):
    study, run = known.study, known.run
    client = client_for(known.coordinator)
    page = client.get(f"/reports/studies/{study.pk}/judges/?run={run.pk}").content.decode()
    assert "0.2 for expert raters" in page and "0.15 for skilled raters" in page and "0.1 for crowd workers" in page
    response = client.post(f"/reports/studies/{study.pk}/judges/epsilon/", {"epsilon": "0.1", "run": run.pk, "na": "category"})
    assert response.status_code == 302 and f"run={run.pk}" in response["Location"]
    study.refresh_from_db()
    assert study.alt_test_epsilon == 0.1
    assert StudyEvent.objects.filter(study=study, action="alt_test_epsilon_set").exists()
    assert _api(client, study, run)["groups"][0]["alt_test"]["majority"]["epsilon"] == 0.1  # recomputed
    bad = client.post(f"/reports/studies/{study.pk}/judges/epsilon/", {"epsilon": "0.9"}, follow=True)
    assert "epsilon must lie between 0 and 0.5" in bad.content.decode()
    for user in (clinician, outsider, researcher):  # the researcher is not a member of this study
        assert client_for(user).post(f"/reports/studies/{study.pk}/judges/epsilon/", {"epsilon": "0.3"}).status_code in (403, 404)
    study.refresh_from_db()
    assert study.alt_test_epsilon == 0.1
    client.post(f"/reports/studies/{study.pk}/judges/epsilon/", {"epsilon": "0.2"})


def test_below_the_minimums_the_page_and_api_say_cannot_decide_yet():
    small = build_verdict_study(n_conversations=2, prefix="sm")
    client = client_for(small.coordinator)
    tests = _api(client, small.study, small.run)["groups"][0]["alt_test"]
    for name, test in tests.items():
        assert test["passed"] is None and test["winning_rate"] is None, name
        assert test["verdict"].startswith("cannot decide yet: 0 raters with at least 30 instances"), name
    page = client.get(f"/reports/studies/{small.study.pk}/judges/?run={small.run.pk}").content.decode()
    verdict = page.split('id="verdict"', 1)[1].split("<tbody>", 1)[1].split("</table>", 1)[0]
    assert verdict.count("cannot decide yet: 0 raters with at least 30 instances") == 4
    assert "verdict-badge pass" not in verdict and "verdict-badge fail" not in verdict


def test_the_study_api_reads_and_sets_epsilon_for_its_coordinator_only(known, clinician, outsider):
    study = known.study
    client = client_for(known.coordinator)
    assert client.get(f"/api/v1/studies/{study.pk}/").json()["alt_test_epsilon"] == 0.2
    response = client.post(f"/api/v1/studies/{study.pk}/alt-test-epsilon/", {"epsilon": 0.15}, content_type="application/json")
    assert response.status_code == 200 and response.json()["alt_test_epsilon"] == 0.15
    assert client.post(f"/api/v1/studies/{study.pk}/alt-test-epsilon/", {"epsilon": 0.7}, content_type="application/json").status_code == 400
    for user in (clinician, outsider):
        assert client_for(user).post(f"/api/v1/studies/{study.pk}/alt-test-epsilon/", {"epsilon": 0.1},
                                     content_type="application/json").status_code in (403, 404)
    study.refresh_from_db()
    assert study.alt_test_epsilon == 0.15


def test_where_a_constant_judge_would_pass_the_page_csv_and_methods_say_the_test_cannot_tell(db):
    """Issue 31, defect 3: with 'yes' on about 92% of the items, an always-yes judge passes the alt-test;
    the procedure is right, so the page warns beside the verdict instead of reading it as a good judge."""
    skewed = build_verdict_study(prefix="sk", p_yes=0.92, n_conversations=60)
    client = client_for(skewed.coordinator)
    group = _api(client, skewed.study, skewed.run)["groups"][0]
    baseline = group["baseline"]
    passing = [k for k, b in baseline["items"].items() if b["passed"]]
    assert passing, baseline["items"]
    assert all(baseline["items"][k]["label"] == "yes" and baseline["items"][k]["majority_share"] > 0.75 for k in passing)
    always = group["alt_test"]["always-yes"]
    assert any(always["items"][k]["passed"] and always["items"][k]["constant_judge_passes"] for k in passing)
    page = client.get(f"/reports/studies/{skewed.study.pk}/judges/?run={skewed.run.pk}").content.decode()
    assert "the test cannot tell a constant judge from a good one here" in page
    assert 'class="cannot-tell"' in page and "would pass</strong>" in page
    methods = _api(client, skewed.study, skewed.run)["methods"]["text"]
    assert "the same test run on a constant judge that answers every instance of an item" in methods
    assert "the test cannot tell a constant judge from a good one" in methods
    export = client.get(f"/reports/studies/{skewed.study.pk}/judges/alt-test.csv?run={skewed.run.pk}")
    rows = list(csv.DictReader(io.StringIO(export.content.decode())))
    flagged = [r for r in rows if r["judge"] == "always-yes" and r["scope"] in passing]
    assert flagged and all(r["constant_judge_passes"] == "True" and r["majority_label"] == "yes" for r in flagged)


def test_where_labels_are_balanced_the_constant_judge_check_says_a_pass_means_more(known):
    client = client_for(known.coordinator)
    group = _api(client, known.study, known.run)["groups"][0]
    assert group["baseline"]["pooled"]["passed"] is False
    assert not any(t["constant_judge_passes"] for t in group["alt_test"]["majority"]["items"].values())
    page = client.get(f"/reports/studies/{known.study.pk}/judges/?run={known.run.pk}").content.decode()
    assert "so a pass here is more than the labels' base rate" in page
    assert "the test cannot tell a constant judge from a good one here" not in page
