"""Degenerate data say so (None plus a note) instead of crashing or giving NaN."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from stats import (
    RatingTable,
    agreement_report,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    pairwise_cohen,
    percent_agreement,
)

COEFFICIENTS = (
    "percent_agreement",
    "fleiss_kappa",
    "cohen_kappa_mean",
    "krippendorff_alpha",
    "gwet_ac1",
)


def _no_nan(obj: object) -> None:
    json.dumps(obj, allow_nan=False)


def _report(rows: list[tuple], **kwargs: object):  # type: ignore[no-untyped-def]
    report = agreement_report(rows, bootstrap=50, seed=1, **kwargs)  # type: ignore[arg-type]
    _no_nan(report.as_dict())
    return report


def test_one_rater_gives_no_coefficient_and_says_why() -> None:
    rows = [(f"u{i}", "only", "q1", "yes" if i % 2 else "no") for i in range(6)]
    item = _report(rows).items["q1"]
    assert all(getattr(item, name) is None for name in COEFFICIENTS)
    assert (item.n_units, item.n_raters, item.n_ratings) == (6, 1, 6)
    assert any("only one rater" in note for note in item.notes)


def test_one_unit_is_computed_but_flagged() -> None:
    rows = [("u1", "a", "q1", "yes"), ("u1", "b", "q1", "no"), ("u1", "c", "q1", "yes")]
    item = _report(rows).items["q1"]
    assert item.percent_agreement == pytest.approx(1 / 3)
    assert any("single unit" in note for note in item.notes)
    ci = item.cis["percent_agreement"]
    assert ci.low == ci.high == pytest.approx(1 / 3)


def test_a_single_category_everywhere_leaves_kappa_and_alpha_undefined() -> None:
    rows = [(f"u{i}", r, "q1", "yes") for i in range(5) for r in "abc"]
    item = _report(rows).items["q1"]
    assert item.percent_agreement == 1.0
    assert item.fleiss_kappa is None and item.krippendorff_alpha is None
    assert item.gwet_ac1 is None  # q = 1: the scale was not declared
    assert any("Pe = 1" in n for n in item.notes)
    assert any("D_e = 0" in n for n in item.notes)
    assert item.cis["krippendorff_alpha"].n_undefined == 50
    assert item.cis["krippendorff_alpha"].low is None


def test_a_single_category_with_a_declared_scale_gives_ac1_of_one() -> None:
    rows = [(f"u{i}", r, "q1", "yes") for i in range(5) for r in "abc"]
    item = _report(rows, order=["yes", "no"]).items["q1"]
    assert item.gwet_ac1 == 1.0
    assert item.fleiss_kappa is None


def test_all_missing_gives_zero_counts_and_notes() -> None:
    rows = [(f"u{i}", r, "q1", None) for i in range(3) for r in "ab"]
    rows += [("u0", "a", "q2", "yes"), ("u0", "b", "q2", "yes"), ("u1", "a", "q2", "no")]
    rows += [("u1", "b", "q2", "no")]
    report = _report(rows)
    item = report.items["q1"]
    assert (item.n_units, item.n_raters, item.n_ratings, item.n_missing) == (0, 0, 0, 6)
    assert all(getattr(item, name) is None for name in COEFFICIENTS)
    assert "no ratings: every label is missing" in item.notes
    assert report.items["q2"].krippendorff_alpha is not None


def test_no_unit_rated_twice_is_undefined() -> None:
    table = RatingTable.from_matrix([["a", None], [None, "b"], ["b", None]])
    assert percent_agreement(table).value is None
    assert fleiss_kappa(table).kappa is None
    assert "two or more ratings" in (krippendorff_alpha(table).note or "")
    assert gwet_ac1(table).ac1 is None
    assert pairwise_cohen(table).mean is None


def test_empty_count_tables_do_not_crash() -> None:
    empty = np.zeros((0, 2))
    assert fleiss_kappa(empty).kappa is None
    assert krippendorff_alpha(empty).alpha is None
    assert gwet_ac1(empty).ac1 is None
    assert percent_agreement(empty).value is None


def test_undefined_cohen_pairs_are_listed_and_left_out_of_the_mean() -> None:
    table = RatingTable.from_matrix(
        [["y", "y", "y"], ["y", "y", "n"], ["y", "y", "y"], ["y", "y", "n"]]
    )
    summary = pairwise_cohen(table)
    assert [p.kappa is None for p in summary.pairs] == [True, False, False]
    assert summary.n_pairs_defined == 2
    assert "Pe = 1" in (summary.pairs[0].note or "")
    assert summary.mean is not None and not math.isnan(summary.mean)
