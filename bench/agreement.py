"""Benchmark the agreement report against a straightforward per-resample loop.

Data: 1,600 conversations x 14 items labelled by 3 judges, plus 4 human raters on 200 of them
(yes/no/N/A). The report: per item and pooled, every coefficient, 1,000 bootstrap resamples of
units. The baseline: the same Krippendorff alpha intervals computed by a plain loop that
resamples units and calls the ``krippendorff`` package once per resample.

Run: .venv/bin/python bench/agreement.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import krippendorff  # noqa: E402

from stats import agreement_report  # noqa: E402

N_CONVERSATIONS, N_ITEMS, N_HUMAN_UNITS, RESAMPLES, SEED = 1600, 14, 200, 1000, 7
LABELS = ["yes", "no", "N/A"]


def make_data(rng: np.random.Generator) -> tuple[list[tuple], list[tuple]]:
    truth = rng.choice(3, size=(N_CONVERSATIONS, N_ITEMS), p=[0.55, 0.35, 0.10])
    judges, humans = [], []
    for unit in range(N_CONVERSATIONS):
        for item in range(N_ITEMS):
            for j in range(3):
                label = truth[unit, item] if rng.random() < 0.8 else rng.integers(3)
                judges.append((f"c{unit}", f"judge{j}", f"i{item}", LABELS[label]))
            if unit < N_HUMAN_UNITS:
                for h in range(4):
                    label = truth[unit, item] if rng.random() < 0.85 else rng.integers(3)
                    humans.append((f"c{unit}", f"human{h}", f"i{item}", LABELS[label]))
    return judges, humans


def loop_baseline(rows: list[tuple]) -> float:
    """Per item: 1,000 resamples, each a call to krippendorff.alpha on the resampled matrix."""
    started = time.perf_counter()
    items = sorted({r[2] for r in rows})
    raters = sorted({r[1] for r in rows})
    units = sorted({r[0] for r in rows})
    u_index = {u: i for i, u in enumerate(units)}
    r_index = {r: i for i, r in enumerate(raters)}
    code = {label: i for i, label in enumerate(LABELS)}
    rng = np.random.default_rng(SEED)
    for item in items:
        matrix = np.full((len(raters), len(units)), np.nan)
        for unit, rater, it, label in rows:
            if it == item:
                matrix[r_index[rater], u_index[unit]] = code[label]
        for _ in range(RESAMPLES):
            pick = rng.integers(0, len(units), len(units))
            krippendorff.alpha(reliability_data=matrix[:, pick], level_of_measurement="nominal")
    return time.perf_counter() - started


def main() -> None:
    rng = np.random.default_rng(SEED)
    judges, humans = make_data(rng)
    print(f"data: {len(judges):,} judge ratings, {len(humans):,} human ratings")
    for name, rows in (("humans (200 units x 4 raters)", humans), ("judges (1,600 units x 3 judges)", judges)):
        started = time.perf_counter()
        report = agreement_report(rows, na="category", bootstrap=RESAMPLES, seed=SEED)
        ours = time.perf_counter() - started
        pooled = report.pooled
        print(f"\n{name}: full report, {len(report.items)} items + pooled, {RESAMPLES} resamples")
        print(f"  evalsite report: {ours:8.2f} s   (pooled alpha {pooled.krippendorff_alpha:.4f}, CI {pooled.cis['krippendorff_alpha'].low:.4f}..{pooled.cis['krippendorff_alpha'].high:.4f})")
        baseline = loop_baseline(rows)
        print(f"  loop over krippendorff.alpha (alpha only, items only): {baseline:8.2f} s")
        print(f"  ratio loop / evalsite: {baseline / ours:6.1f}x")


if __name__ == "__main__":
    main()
