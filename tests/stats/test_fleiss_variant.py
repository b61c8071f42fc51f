"""Fleiss' kappa names the variant it computed: Fleiss (1971) or Gwet's varying-raters form."""

from __future__ import annotations

import numpy as np
import pytest

from stats import RatingTable, agreement_report, fleiss_kappa

from .helpers import KRIPPENDORFF_2011, units_by_raters
from .test_known_answers import FLEISS_1971_DIAGNOSES, FLEISS_TABLE_14_RATERS


def test_the_same_number_of_raters_everywhere_is_fleiss_1971() -> None:
    result = fleiss_kappa(FLEISS_TABLE_14_RATERS)
    assert result.variant == "fleiss_1971"
    assert "Fleiss (1971)" in (result.variant_label or "")
    assert fleiss_kappa(RatingTable.from_matrix(FLEISS_1971_DIAGNOSES)).variant == "fleiss_1971"


def test_a_varying_number_of_raters_is_gwet_2014() -> None:
    result = fleiss_kappa(RatingTable.from_matrix(units_by_raters(KRIPPENDORFF_2011)))
    assert result.variant == "gwet_2014_varying_raters"
    assert "varying number of raters" in (result.variant_label or "")


def test_one_singly_rated_unit_makes_it_the_generalisation_and_changes_pe() -> None:
    # Three units rated by three raters, plus one unit with a single "b" rating.
    # Fleiss (1971) on the three full units: p = column totals / 9 = (6/9, 3/9), Pe = 5/9.
    # Gwet (2014): pi = mean per rated unit of the shares, over all four units
    #   = ((1 + 1/3 + 2/3 + 0)/4, (0 + 2/3 + 1/3 + 1)/4) = (1/2, 1/2), Pe = 1/2,
    #   while P0 still uses only the three full units.
    full = np.array([[3, 0], [1, 2], [2, 1]])
    with_single = np.vstack([full, [[0, 1]]])
    assert fleiss_kappa(full).variant == "fleiss_1971"
    assert fleiss_kappa(full).pe == pytest.approx(5 / 9)
    generalised = fleiss_kappa(with_single)
    assert generalised.variant == "gwet_2014_varying_raters"
    assert generalised.pe == pytest.approx(1 / 2)
    assert generalised.p0 == pytest.approx(fleiss_kappa(full).p0)
    assert (generalised.min_raters, generalised.max_raters) == (3, 3)


def test_no_rating_names_no_variant() -> None:
    result = fleiss_kappa(np.zeros((0, 2)))
    assert result.variant is None and result.variant_label is None


def test_the_report_names_the_variant_per_item_and_pooled() -> None:
    rows = [
        (u, r, "full", "yes" if (u + len(r)) % 3 else "no") for u in range(4) for r in ("a", "bb")
    ]
    rows += [(0, "a", "partial", "yes"), (0, "bb", "partial", "no"), (1, "a", "partial", "no")]
    data = agreement_report(rows).as_dict()
    assert data["items"]["full"]["fleiss_variant"] == "fleiss_1971"
    assert data["items"]["partial"]["fleiss_variant"] == "gwet_2014_varying_raters"
    assert data["pooled"]["fleiss_variant"] == "gwet_2014_varying_raters"
    assert data["pooled"]["fleiss_variant_label"].startswith("Gwet (2014)")
