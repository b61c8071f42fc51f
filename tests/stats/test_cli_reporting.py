"""The command line declares N/A labels, checks --order, and reports how intervals were made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_cli import run

VERA = """unit,rater,item,label
c1,h1,d1,Best Practice
c1,h2,d1,best practice
c1,h3,d1,Not Relevant
c2,h1,d1,Not Relevant
c2,h2,d1,Not Relevant
c2,h3,d1,High Potential for Harm
c3,h1,d1,High Potential for Harm
c3,h2,d1,High Potential for Harm
c3,h3,d1,Best Practice
c4,h1,d1,Not Relevant
c4,h2,d1,Best Practice
c4,h3,d1,Best Practice
c1,h1,d2,Best Practice
c1,h2,d2,Best Practice
c2,h1,d2,Not Relevant
c2,h2,d2,N/A
c3,h1,d2,High Potential for Harm
c3,h2,d2,Best Practice
"""


@pytest.fixture
def vera_csv(tmp_path: Path) -> Path:
    path = tmp_path / "vera.csv"
    path.write_text(VERA, encoding="utf-8")
    return path


def _json(*args: str) -> dict:
    result = run("agreement", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_na_label_declares_not_relevant_and_replaces_the_defaults(vera_csv: Path) -> None:
    category = _json(str(vera_csv), "--na-label", "Not Relevant", "--na", "category")
    exclude = _json(str(vera_csv), "--na-label", "Not Relevant", "--na", "exclude")
    assert exclude["na_labels"] == ["Not Relevant"]
    assert exclude["items"]["d1"]["n_na_excluded"] == 4
    # "N/A" is no longer an N/A spelling once --na-label is given: it stays a category.
    assert exclude["items"]["d2"]["n_na_excluded"] == 1
    assert "N/A" in exclude["items"]["d2"]["categories"]
    assert exclude["pooled"]["krippendorff_alpha"] != category["pooled"]["krippendorff_alpha"]
    default = _json(str(vera_csv), "--na", "exclude")
    assert default["items"]["d1"]["n_na_excluded"] == 0


def test_help_says_na_label_replaces_the_defaults() -> None:
    result = run("agreement", "--help")
    assert result.returncode == 0
    assert "--na-label" in result.stdout and "REPLACE" in result.stdout


def test_a_label_missing_from_the_order_is_an_error_naming_it(vera_csv: Path) -> None:
    result = run("agreement", str(vera_csv), "--order", "Best Practice,Not Relevant,N/A")
    assert result.returncode == 2
    assert "label 'High Potential for Harm' is not in --order" in result.stderr
    assert "line 7, column 'label'" in result.stderr


def test_the_order_is_compared_ignoring_case(vera_csv: Path) -> None:
    order = "best practice,high potential for harm,not relevant,n/a"
    data = _json(str(vera_csv), "--order", order, "--level", "ordinal")
    assert data["items"]["d1"]["categories"] == [
        "best practice",
        "high potential for harm",
        "not relevant",
        "N/A",
    ]


def test_an_order_at_nominal_level_is_accepted_with_a_warning(vera_csv: Path) -> None:
    order = "Best Practice,High Potential for Harm,Not Relevant,N/A"
    nominal = run("agreement", str(vera_csv), "--order", order)
    assert nominal.returncode == 0
    assert "warning: --order has no effect on nominal coefficients" in nominal.stderr
    ordinal = run("agreement", str(vera_csv), "--order", order, "--level", "ordinal")
    assert ordinal.returncode == 0 and "warning" not in ordinal.stderr


def test_json_carries_interval_method_fleiss_variant_and_undefined_shares(vera_csv: Path) -> None:
    data = _json(str(vera_csv), "--bootstrap", "200", "--seed", "3")
    assert data["interval_method"] == "percentile_bootstrap_cluster"
    assert "whole conversations" in data["interval_method_label"]
    assert data["items"]["d1"]["fleiss_variant"] == "fleiss_1971"
    assert data["items"]["d2"]["fleiss_variant"] == "fleiss_1971"
    assert data["pooled"]["fleiss_variant"] == "gwet_2014_varying_raters"
    for block in [data["pooled"], *data["items"].values()]:
        shares = block["ci_percent_undefined"]
        assert set(shares) >= {"fleiss_kappa", "krippendorff_alpha", "gwet_ac1"}
        assert all(0 <= v <= 100 for v in shares.values())
        assert block["bootstrap"]["fleiss_kappa"]["percent_undefined"] == shares["fleiss_kappa"]
    # d2 has three conversations, one all-"Best Practice": some resamples hold one category.
    assert data["items"]["d2"]["ci_percent_undefined"]["fleiss_kappa"] > 0
    assert data["items"]["d1"]["precision"]["krippendorff_alpha"]["target"] == 0.10
    pairs = _json(str(vera_csv), "--bootstrap", "50", "--seed", "3", "--pooled-resampling", "pairs")
    assert pairs["interval_method"] == "percentile_bootstrap_pairs"


def test_the_table_names_the_interval_method_and_the_fleiss_variant(vera_csv: Path) -> None:
    result = run("agreement", str(vera_csv), "--bootstrap", "100", "--seed", "1")
    assert result.returncode == 0, result.stderr
    assert "resamples of whole conversations" in result.stdout
    assert "Fleiss' kappa, Fleiss (1971)" in result.stdout
    assert "Precision (Krippendorff's alpha, target width 0.10)" in result.stdout
