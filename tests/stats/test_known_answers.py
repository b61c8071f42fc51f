"""Known answers from published worked examples and from arithmetic done by hand."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from stats import (
    RatingTable,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    pairwise_cohen,
    percent_agreement,
)
from stats.data import coincidence_matrix

from .helpers import KRIPPENDORFF_2011, units_by_raters

# The classic 10 subjects x 5 categories x 14 raters table (counts of raters per category).
# Source: the worked example of the Wikipedia article "Fleiss' kappa" (also the table of
# statsmodels' test_inter_rater.py), which reports P-bar = 0.378, P_e = 0.213, kappa = 0.210.
# It is often credited to Fleiss (1971) but Fleiss' own example is the diagnoses data below.
FLEISS_TABLE_14_RATERS = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)

# Fleiss (1971), Psychological Bulletin 76(5), Table 1: 30 patients, 6 psychiatrists each,
# 5 diagnoses (1 depression, 2 personality disorder, 3 schizophrenia, 4 neurosis, 5 other).
# Raw ratings as distributed in R package irr (`diagnoses`) and in statsmodels' tests.
# Fleiss reports kappa = .430; irr::kappam.fleiss gives 0.4302445.
FLEISS_1971_DIAGNOSES = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]  # fmt: skip


def test_fleiss_kappa_reproduces_the_14_rater_worked_example() -> None:
    result = fleiss_kappa(FLEISS_TABLE_14_RATERS)
    assert result.p0 == pytest.approx(0.378, abs=5e-4)
    assert result.pe == pytest.approx(0.213, abs=5e-4)
    assert result.kappa == pytest.approx(0.210, abs=5e-4)
    assert result.kappa == pytest.approx(sm_fleiss_kappa(FLEISS_TABLE_14_RATERS), abs=1e-12)
    assert (result.n_units, result.min_raters, result.max_raters) == (10, 14, 14)


def test_fleiss_kappa_reproduces_fleiss_1971_diagnoses() -> None:
    table = RatingTable.from_matrix(FLEISS_1971_DIAGNOSES)
    result = fleiss_kappa(table)
    assert result.kappa == pytest.approx(0.430, abs=5e-4)
    assert result.kappa == pytest.approx(0.4302445, abs=1e-7)
    counts, _ = aggregate_raters(np.array(FLEISS_1971_DIAGNOSES))
    assert result.kappa == pytest.approx(sm_fleiss_kappa(counts), abs=1e-12)


@pytest.mark.parametrize(
    ("level", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)],
)
def test_krippendorff_alpha_reproduces_the_2011_worked_example(
    level: str, published: float
) -> None:
    table = RatingTable.from_matrix(units_by_raters(KRIPPENDORFF_2011), level=level)
    result = krippendorff_alpha(table, level)
    assert result.alpha == pytest.approx(published, abs=5e-4)
    # Unit 12 has a single value: 11 pairable units carrying 40 pairable values.
    assert (result.n_units, result.n_values) == (11, 40)


def test_krippendorff_nominal_alpha_by_hand_from_the_coincidence_matrix() -> None:
    # Pairable values per category (unit 12 is single, so it drops out):
    #   1: u1 3, u6 1, u8 3, u11 2 = 9      2: u2 3, u5 4, u6 1, u8 1, u9 4 = 13
    #   3: u2 1, u3 4, u4 4, u6 1 = 10      4: u6 1, u7 4 = 5      5: u10 3 = 3      n = 40
    # Agreeing coincidences sum_c o_cc = sum_u sum_c n_uc (n_uc - 1)/(m_u - 1)
    #   = 3 + 2 + 4 + 4 + 4 + 0 + 4 + 2 + 4 + 3 + 2 = 32
    # alpha = 1 - (n - 1)(n - 32)/(n^2 - sum n_c^2) = 1 - 39 * 8/(1600 - 384) = 1 - 312/1216
    table = RatingTable.from_matrix(units_by_raters(KRIPPENDORFF_2011))
    o = coincidence_matrix(table)
    np.testing.assert_allclose(o.sum(axis=1), [9, 13, 10, 5, 3])
    assert np.trace(o) == pytest.approx(32)
    assert krippendorff_alpha(table).alpha == pytest.approx(1 - 312 / 1216, abs=1e-12)


def test_multi_rater_coefficients_on_the_krippendorff_data_match_hand_arithmetic() -> None:
    # Same 12 units; units as rows. Unit 12 has one rating (not pairable).
    # Per-unit agreeing-pair shares P_u over the 11 pairable units:
    #   1:[1,1,1]=1  2:[2,2,3,2]=6/12  3:1  4:1  5:1  6:[1,2,3,4]=0  7:1  8:[1,1,2,1]=6/12
    #   9:1  10:[5,5,5]=1  11:[1,1]=1   -> P0 = 9/11 = 0.818182
    # Chance shares pi_c = mean over all 12 rated units of n_uc/m_u:
    #   pi_1 = (1 + .25 + .75 + 1)/12 = 3/12        pi_2 = (.75 + 1 + .25 + .25 + 1)/12 = 3.25/12
    #   pi_3 = (.25 + 1 + 1 + .25 + 1)/12 = 3.5/12  pi_4 = (.25 + 1)/12 = 1.25/12
    #   pi_5 = 1/12
    # Fleiss: Pe = sum pi^2 = 34.375/144 = 0.238715;  kappa = (9/11 - Pe)/(1 - Pe) = 0.761169
    # Gwet AC1 (q = 5): Pe = (1 - 34.375/144)/4 = 0.190321;  AC1 = 0.775444
    # These equal the values irrCAC (Gwet's R package) documents for its cac.raw4raters data,
    # which is this matrix: Fleiss 0.76117 (pe 0.2387153), AC1 0.77544 (pe 0.1903212).
    table = RatingTable.from_matrix(units_by_raters(KRIPPENDORFF_2011))
    pe_fleiss = 34.375 / 144
    pe_gwet = (1 - pe_fleiss) / 4
    assert percent_agreement(table).value == pytest.approx(9 / 11)
    fleiss = fleiss_kappa(table)
    assert fleiss.pe == pytest.approx(pe_fleiss)
    assert fleiss.kappa == pytest.approx((9 / 11 - pe_fleiss) / (1 - pe_fleiss))
    assert fleiss.kappa == pytest.approx(0.76117, abs=5e-6)
    ac1 = gwet_ac1(table)
    assert ac1.pe == pytest.approx(pe_gwet)
    assert ac1.ac1 == pytest.approx((9 / 11 - pe_gwet) / (1 - pe_gwet))
    assert ac1.ac1 == pytest.approx(0.77544, abs=5e-6)
    assert (ac1.n_categories, fleiss.min_raters, fleiss.max_raters) == (5, 2, 4)


def test_two_rater_example_by_hand_shows_ac1_stable_where_kappa_collapses() -> None:
    # 100 units, 2 raters: 90 both yes, 5 yes/no, 5 no/yes, 0 both no.
    # Po = 0.90. Cohen: p_yes = .95 for both raters, Pe = .95^2 + .05^2 = .905,
    #   kappa = (.90 - .905)/(1 - .905) = -0.0526316.
    # Gwet AC1 (q = 2): pi_yes = .95, Pe = 2 * .95 * .05 = .095, AC1 = (.9 - .095)/.905 = 0.889503.
    # Fleiss: pi as Gwet, Pe = .95^2 + .05^2 = .905 -> the same -0.0526316 as Cohen here.
    a = ["yes"] * 90 + ["yes"] * 5 + ["no"] * 5
    b = ["yes"] * 90 + ["no"] * 5 + ["yes"] * 5
    table = RatingTable.from_matrix(list(zip(a, b, strict=True)))
    assert cohen_kappa(a, b).kappa == pytest.approx(-0.005 / 0.095)
    assert gwet_ac1(table).ac1 == pytest.approx(0.805 / 0.905)
    assert fleiss_kappa(table).kappa == pytest.approx(-0.005 / 0.095)
    assert pairwise_cohen(table).mean == pytest.approx(-0.005 / 0.095)


def test_cohen_kappa_by_hand_on_a_small_table() -> None:
    # 10 units: 6 yes/yes, 1 yes/no, 1 no/yes, 2 no/no.
    # Po = 0.8; p_A(yes) = p_B(yes) = 0.7; Pe = .49 + .09 = .58; kappa = .22/.42 = 0.5238095.
    # Gwet AC1: pi_yes = 0.7, Pe = 2 * .7 * .3 = .42, AC1 = (.8 - .42)/.58 = 0.6551724.
    a = ["yes"] * 6 + ["yes", "no"] + ["no"] * 2
    b = ["yes"] * 6 + ["no", "yes"] + ["no"] * 2
    result = cohen_kappa(a, b)
    assert (result.po, result.pe, result.n) == (pytest.approx(0.8), pytest.approx(0.58), 10)
    assert result.kappa == pytest.approx(0.22 / 0.42)
    table = RatingTable.from_matrix(list(zip(a, b, strict=True)))
    assert gwet_ac1(table).ac1 == pytest.approx(0.38 / 0.58)


def test_cohen_kappa_drops_pairs_with_a_missing_label_and_counts_them() -> None:
    result = cohen_kappa(["a", "b", None, "a", ""], ["a", "b", "a", float("nan"), "b"])
    assert (result.n, result.n_dropped, result.kappa) == (2, 3, 1.0)
