"""The coverage check of bench/leaderboard_coverage.py, small so that it runs in CI.

200 benchmarks of 500 resamples per setting (the bench: 500 of 2,000, every setting); a setting
whose pairwise intervals cover less than 95% by more than two Monte-Carlo standard errors, or
whose Holm familywise error exceeds 5% by more than two, fails, as the bench then exits 1.
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from tests.support.bench import load_bench


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    return load_bench("leaderboard_coverage", "leaderboard_coverage_bench")


@pytest.mark.parametrize("setting", ["vera_margin", "vera_null"])
def test_the_leaderboards_pairs_cover_and_keep_the_familywise_error(bench, setting: str) -> None:  # type: ignore[no-untyped-def]
    args = argparse.Namespace(studies=200, resamples=500)
    sd, noise = 1.0, 0.7
    if setting == "vera_margin":
        margin = bench.vera_truth(1.0, sd, noise) - bench.vera_truth(0.0, sd, noise)
        make = lambda r: bench.vera_units({"A": 1.0, "B": 0.0}, 40, 2, sd, noise, r)  # noqa: E731
        truth = {("A", "B"): margin}
    else:
        make = lambda r: bench.vera_units({"A": 0.3, "B": 0.3, "C": 0.3}, 30, 2, sd, noise, r)  # noqa: E731
        truth = {}
    bench.BELOW.clear()
    line = bench.run_setting(setting, make, truth, "vera_mh", args, np.random.default_rng(7))
    assert "mc_se=0.0154" in line and "check=" in line
    assert bench.BELOW == [], line
