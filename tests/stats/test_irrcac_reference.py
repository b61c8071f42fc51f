"""Cross-check against irrCAC (Gwet's own implementation, Python port 0.4.4).

irrCAC pins an old scipy, so it is not a test dependency: the reference values below were
produced by ``irrCAC.raw.CAC(df).gwet() / .fleiss() / .krippendorff()`` (which round to five
decimals) on exactly this seeded data: 40 units, 4 raters, 3 categories, ~15% missing ratings
and so a varying number of raters per unit.
"""

from __future__ import annotations

import numpy as np
import pytest

from stats import agreement_report

IRRCAC = {"gwet_ac1": 0.47632, "fleiss_kappa": 0.47234, "krippendorff_alpha": 0.48344}


def seeded_rows() -> list[tuple]:
    rng = np.random.default_rng(5)
    units, raters = 40, 4
    truth = rng.integers(0, 3, units)
    data = np.where(rng.random((units, raters)) < 0.7, truth[:, None], rng.integers(0, 3, (units, raters))).astype(float)
    data[rng.random((units, raters)) < 0.15] = np.nan
    return [
        (u, f"r{r}", "i", None if np.isnan(data[u, r]) else str(int(data[u, r])))
        for u in range(units)
        for r in range(raters)
    ]


@pytest.mark.parametrize("statistic", sorted(IRRCAC))
def test_agrees_with_irrcac_on_missing_ratings_and_varying_raters(statistic):
    item = agreement_report(seeded_rows()).items["i"]
    assert getattr(item, statistic) == pytest.approx(IRRCAC[statistic], abs=5e-6)
