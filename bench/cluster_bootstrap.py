"""Benchmark the pooled cluster bootstrap against the (conversation, item) pairs bootstrap.

Same data as bench/agreement.py (1,600 conversations x 14 items x 3 judges; 4 humans on 200
conversations), 1,000 resamples. Prints the time of each full report and the pooled
Krippendorff alpha interval width under each resampling. The cluster bootstrap sums the
per-unit features per conversation once, so each resample is a smaller matrix product: it
should not be slower than the pairs bootstrap.

Run: .venv/bin/python bench/cluster_bootstrap.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agreement import RESAMPLES, SEED, make_data  # noqa: E402

from stats import agreement_report  # noqa: E402


def main() -> None:
    judges, humans = make_data(np.random.default_rng(SEED))
    for name, rows in (("humans", humans), ("judges", judges)):
        for resampling in ("cluster", "pairs"):
            best = float("inf")
            for _ in range(3):
                started = time.perf_counter()
                report = agreement_report(
                    rows, bootstrap=RESAMPLES, seed=SEED, pooled_resampling=resampling
                )
                best = min(best, time.perf_counter() - started)
            ci = report.pooled.cis["krippendorff_alpha"]
            print(
                f"{name:6} pooled_resampling={resampling:7} best of 3: {best:6.2f} s   "
                f"pooled alpha CI width {ci.width:.4f}"
            )


if __name__ == "__main__":
    main()
