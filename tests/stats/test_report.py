"""The agreement report: per item and pooled, N/A policy, levels, JSON shape."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stats import (
    Rating,
    RatingTable,
    StatsInputError,
    agreement_report,
    fleiss_kappa,
    krippendorff_alpha,
)

REQUIRED_KEYS = {
    "n_units",
    "n_raters",
    "percent_agreement",
    "fleiss_kappa",
    "fleiss_p0",
    "fleiss_pe",
    "krippendorff_alpha",
    "gwet_ac1",
}

AMHART_ROWS = [
    ("c1", "h1", "q1", "yes"), ("c1", "h2", "q1", "yes"), ("c1", "h3", "q1", "N/A"),
    ("c2", "h1", "q1", "no"), ("c2", "h2", "q1", "no"), ("c2", "h3", "q1", "no"),
    ("c3", "h1", "q1", "n/a"), ("c3", "h2", "q1", "NA"), ("c3", "h3", "q1", "yes"),
    ("c1", "h1", "q2", "yes"), ("c1", "h2", "q2", "no"), ("c1", "h3", "q2", "yes"),
    ("c2", "h1", "q2", "no"), ("c2", "h2", "q2", "no"), ("c2", "h3", "q2", ""),
]  # fmt: skip


def test_na_as_a_category_merges_its_spellings() -> None:
    report = agreement_report(AMHART_ROWS, na="category")
    q1 = report.items["q1"]
    assert q1.categories == ("N/A", "no", "yes")
    assert q1.label_counts == {"N/A": 3, "no": 3, "yes": 3}
    assert q1.na_policy == report.na_policy == "category"
    assert q1.n_na_excluded == 0


def test_excluding_na_keeps_only_applicable_ratings() -> None:
    report = agreement_report(AMHART_ROWS, na="exclude")
    q1 = report.items["q1"]
    assert q1.categories == ("no", "yes")
    assert (q1.n_ratings, q1.n_na_excluded, q1.n_units_pairable) == (6, 3, 2)
    assert q1.na_policy == "exclude"
    assert any("N/A rating(s) excluded" in n for n in q1.notes)
    # c1: yes, yes -> 1; c2: no, no, no -> 1; c3 keeps one rating (not pairable).
    assert q1.percent_agreement == 1.0


def test_missing_labels_are_counted_not_rated() -> None:
    q2 = agreement_report(AMHART_ROWS).items["q2"]
    assert (q2.n_ratings, q2.n_missing) == (5, 1)
    assert q2.base_rates == pytest.approx({"no": 0.6, "yes": 0.4})


def test_pooled_treats_every_unit_item_pair_as_one_unit() -> None:
    report = agreement_report(AMHART_ROWS, na="exclude")
    assert report.pooled.n_units == sum(i.n_units for i in report.items.values())
    counts = np.vstack([t.counts for t in _tables(report.items)])
    assert report.pooled.krippendorff_alpha == pytest.approx(krippendorff_alpha(counts).alpha)
    assert report.pooled.fleiss_kappa == pytest.approx(fleiss_kappa(counts).kappa)


def _tables(items: dict) -> list[RatingTable]:
    # Rebuild per-item count tables in the pooled category order (no, yes).
    tables = []
    for item in items:
        rows = [r for r in AMHART_ROWS if r[2] == item and r[3].lower() in ("yes", "no")]
        units = sorted({r[0] for r in rows})
        raters = sorted({r[1] for r in rows})
        matrix = [[None] * len(raters) for _ in units]
        for u, r, _, label in rows:
            matrix[units.index(u)][raters.index(r)] = label
        tables.append(RatingTable.from_matrix(matrix, order=["no", "yes"]))
    return tables


def test_items_keep_the_order_they_first_appear_in() -> None:
    rows = [("u1", "a", "z-item", "1"), ("u1", "a", "a-item", "2")]
    assert list(agreement_report(rows).items) == ["z-item", "a-item"]


def test_ordinal_level_needs_numbers_or_an_order() -> None:
    with pytest.raises(StatsInputError, match="non-numeric"):
        agreement_report(AMHART_ROWS, level="ordinal", na="exclude")
    report = agreement_report(AMHART_ROWS, level="ordinal", na="exclude", order=["no", "yes"])
    assert report.pooled.level == "ordinal"
    assert report.pooled.krippendorff_alpha == pytest.approx(
        report.pooled.krippendorff_alpha_nominal
    )


def test_na_cannot_sit_on_an_ordinal_scale_unless_ordered() -> None:
    with pytest.raises(StatsInputError, match="N/A"):
        agreement_report(AMHART_ROWS, level="ordinal", order=["no", "yes"])


def test_labels_outside_a_declared_order_are_rejected() -> None:
    with pytest.raises(StatsInputError, match="maybe"):
        agreement_report([("u", "a", "q", "maybe")], order=["no", "yes"])


def test_duplicate_ratings_are_rejected() -> None:
    with pytest.raises(StatsInputError, match="duplicate"):
        agreement_report([("u", "a", "q", "yes"), ("u", "a", "q", "no")])


def test_numeric_labels_give_interval_alpha_on_a_five_point_scale() -> None:
    rows = [
        (f"u{u}", r, "realism", str(v))
        for u, vals in enumerate([[1, 2], [4, 5], [3, 3], [5, 4]])
        for r, v in zip("ab", vals, strict=True)
    ]
    report = agreement_report(rows, level="interval")
    assert report.items["realism"].krippendorff.level == "interval"
    assert (
        report.items["realism"].krippendorff_alpha
        > report.items["realism"].krippendorff_alpha_nominal
    )


def test_ratings_may_come_as_dataclasses_mappings_or_a_dataframe() -> None:
    pd = pytest.importorskip("pandas")
    tuples = agreement_report(AMHART_ROWS).as_dict()
    as_ratings = agreement_report([Rating(*r) for r in AMHART_ROWS]).as_dict()
    as_dicts = agreement_report(
        [dict(zip(("unit", "rater", "item", "label"), r, strict=True)) for r in AMHART_ROWS]
    ).as_dict()
    frame = pd.DataFrame(AMHART_ROWS, columns=["unit", "rater", "item", "label"])
    assert tuples == as_ratings == as_dicts == agreement_report(frame).as_dict()


def test_as_dict_is_strict_json_with_the_documented_keys() -> None:
    report = agreement_report(AMHART_ROWS, bootstrap=100, seed=3, na="exclude")
    data = json.loads(json.dumps(report.as_dict(), allow_nan=False))
    assert set(data["items"]) == {"q1", "q2"}
    for block in [data["pooled"], *data["items"].values()]:
        assert REQUIRED_KEYS <= set(block)
        assert "krippendorff_alpha_ci" in block
        assert block["bootstrap"]["krippendorff_alpha"]["n_resamples"] == 100
    assert data["bootstrap"]["seed"] == 3 and data["na_policy"] == "exclude"


def test_without_bootstrap_there_are_no_intervals() -> None:
    data = agreement_report(AMHART_ROWS).as_dict()
    assert "krippendorff_alpha_ci" not in data["pooled"] and data["bootstrap"] is None
