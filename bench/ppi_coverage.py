"""Coverage of the judge-assisted interval methods over simulated studies with a known truth.

Each setting simulates ``--studies`` studies (default 1,000): a chatbot's N judged
conversations, a judge (or ensemble) whose errors are known, and n of the conversations rated
by humans under a sampling plan. Every study computes, from stats.ppi:
PPI as Angelopoulos et al. (2023) define it with the report's small-sample t interval ("ppi") and
with ppi_py's normal one ("ppi_z"), power-tuned PPI++ with ppi_py's same-sample lambda ("ppi++",
for comparison) and with the cross-fitted lambda the report draws ("ppi++_cf"),
the two-phase difference estimator ("two_phase", judge term over every judged conversation),
the human-only estimate with the report's interval ("human_only": Wilson's score interval for a
yes/no proportion, with an effective sample size under a plan; the t interval otherwise), with
the small-sample t interval it had before ("human_only_t", for comparison) and with ppi_py's
normal one ("human_only_z"), the judge-only estimate, and for unequal-probability plans PPI that
ignores the inclusion probabilities ("ppi_unweighted"). Under a plan, rated conversations
weigh 1/π and unrated ones 1/(1 - π). For each method it prints the share of 95% intervals that contain the true
score (coverage), the mean interval width and the mean error of the estimate (bias), one
RESULT line per method and setting. A correct method shows coverage near 0.95 (Monte Carlo
sd 0.007 at 1,000 studies, printed as mc_se) and bias near 0; an interval the app draws that
covers less by more than two mc_se is marked check=below, and the run exits with status 1.

Settings (truth in brackets):
  unbiased_judge      yes/no item, judge misses 10% of yes, adds 15% of no [0.6]
  biased_judge        yes/no item, judge misses 5% of yes, adds 25% of no (bias +0.07) [0.6]
                      at n = 30, 100, 400
  amhart_score        AMHART conversation score over 12 items, judge per-item errors [0.6]
  oversampled         biased judge; the ensemble disagrees on 70% of judge errors and 10% of
                      the rest; disagreements 4x as likely to be rated (plan_oversample)
  stratified_equal    8 persona strata of unequal size and bias, equal allocation
  item_rate_na        yes-rate with 30% N/A; the judge calls some N/A applicable [0.6]
  vera_mh_dimension   VERA-MH dimension score, judge upgrades SUB and HPH [(50+250/9)(8/9)²]
Also: the paired bootstrap interval for judge drift (two judge versions against humans),
and the expected PPI width before assigning (stats.sampling) against the realised mean width.

Run: .venv/bin/python bench/ppi_coverage.py [--studies 1000] [--seed 2024]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stats.drift import paired_bootstrap_difference  # noqa: E402
from stats.ppi import PPIEstimate, ScoreEstimate, ppi_item_rate, ppi_mean, ppi_vera_mh_score  # noqa: E402
from stats.ppi.inputs import kish_size, t_value  # noqa: E402
from stats.sampling import (  # noqa: E402
    expected_ppi_width,
    plan_oversample,
    plan_stratified,
    residual_variance_from_agreement,
)

NOMINAL = 0.95
# The intervals the judge-assisted report draws: Student t (n - 1) with ddof 1 (Wilson's score interval for a
# humans-only yes/no proportion), and its PPI++ is the cross-fitted one. Printed for comparison: "ppi_z",
# "human_only_z" and "ppi++" (ppi_py's own normal intervals, ddof 0, and its same-sample tuning), "human_only_t"
# (the humans-only t interval the report drew before Wilson's), "judge_only" and "ppi_unweighted".
APP_METHODS = ("ppi", "ppi++_cf", "two_phase", "human_only")
BELOW: list[str] = []

# One study: (human-rated y, judge on rated, judge on unrated, π of the rated or None, π of the unrated or None).
Study = tuple[object, object, object, np.ndarray | None, np.ndarray | None]
Estimator = Callable[..., PPIEstimate]


def binary_judge(
    rng: np.random.Generator, size: int, p: float, miss: float, add: float
) -> tuple[np.ndarray, np.ndarray]:
    """Return human 0/1 answers (yes with probability p) and a judge's with known errors."""
    y = (rng.random(size) < p).astype(float)
    flip = np.where(y == 1, rng.random(size) < miss, rng.random(size) < add)
    return y, np.where(flip, 1 - y, y)


def srs(rng: np.random.Generator, n_total: int, n: int) -> np.ndarray:
    rated = np.zeros(n_total, dtype=bool)
    rated[rng.choice(n_total, size=n, replace=False)] = True
    return rated


def split(y: np.ndarray, f: np.ndarray, rated: np.ndarray, pi: np.ndarray | None) -> Study:
    """Return the study's parts; ``pi`` holds every conversation's inclusion probability (None: SRS)."""
    if pi is None:
        return y[rated], f[rated], f[~rated], None, None
    return y[rated], f[rated], f[~rated], pi[rated], pi[~rated]


def binary_studies(
    rng: np.random.Generator, k: int, n: int, n_total: int, miss: float, add: float
) -> Iterator[Study]:
    for _ in range(k):
        y, f = binary_judge(rng, n_total, 0.6, miss, add)
        yield split(y, f, srs(rng, n_total, n), None)


def amhart_studies(rng: np.random.Generator, k: int, n: int, n_total: int) -> Iterator[Study]:
    # Conversation quality q ~ Beta(3, 2) (mean 0.6); 12 applicable items, yes ~ Bin(12, q).
    # The judge keeps 95% of yes items and turns 20% of no items into yes.
    for _ in range(k):
        yes = rng.binomial(12, rng.beta(3, 2, n_total))
        judge_yes = rng.binomial(yes, 0.95) + rng.binomial(12 - yes, 0.2)
        yield split(yes / 12, judge_yes / 12, srs(rng, n_total, n), None)


def oversampled_studies(rng: np.random.Generator, k: int, n: int, n_total: int) -> Iterator[Study]:
    ids = list(range(n_total))
    for _ in range(k):
        y, f = binary_judge(rng, n_total, 0.6, 0.05, 0.25)
        wrong = y != f
        flags = np.where(wrong, rng.random(n_total) < 0.7, rng.random(n_total) < 0.1)
        plan = plan_oversample(ids, flags.tolist(), n, rng, boost=4.0)
        rated = np.zeros(n_total, dtype=bool)
        rated[list(plan.selected)] = True
        yield split(y, f, rated, np.array([plan.inclusion_prob[i] for i in ids]))


STRATA_SIZES = (400, 400, 300, 300, 200, 200, 100, 100)
STRATA_P = (0.8, 0.7, 0.65, 0.6, 0.5, 0.45, 0.4, 0.3)
STRATA_ADD = (0.05, 0.1, 0.1, 0.2, 0.2, 0.3, 0.3, 0.4)  # judge's false-yes rate per persona
STRATA_TRUTH = float(np.dot(STRATA_SIZES, STRATA_P) / sum(STRATA_SIZES))


def stratified_studies(rng: np.random.Generator, k: int, n: int) -> Iterator[Study]:
    keys = np.repeat(np.arange(len(STRATA_SIZES)), STRATA_SIZES)
    ids = list(range(keys.size))
    p = np.asarray(STRATA_P)[keys]
    add = np.asarray(STRATA_ADD)[keys]
    for _ in range(k):
        y = (rng.random(keys.size) < p).astype(float)
        flip = np.where(y == 1, rng.random(keys.size) < 0.05, rng.random(keys.size) < add)
        f = np.where(flip, 1 - y, y)
        plan = plan_stratified(ids, keys.tolist(), n, rng, allocation="equal")
        rated = np.zeros(keys.size, dtype=bool)
        rated[list(plan.selected)] = True
        yield split(y, f, rated, np.array([plan.inclusion_prob[i] for i in ids]))


def item_rate_studies(rng: np.random.Generator, k: int, n: int, n_total: int) -> Iterator[Study]:
    for _ in range(k):
        na = rng.random(n_total) < 0.3
        yes = rng.random(n_total) < 0.6
        human = np.where(na, "N/A", np.where(yes, "yes", "no"))
        judge = human.copy()
        judge[na & (rng.random(n_total) < 0.1)] = "no"
        judge[(human == "no") & (rng.random(n_total) < 0.25)] = "yes"
        rated = srs(rng, n_total, n)
        yield human[rated].tolist(), judge[rated].tolist(), judge[~rated].tolist(), None, None


VERA = np.array(
    [
        "Best Practice",
        "Suboptimal but Low Potential for Harm",
        "High Potential for Harm",
        "Not Relevant",
    ]
)
VERA_TRUTH = (50 + 50 * 5 / 9) * (8 / 9) ** 2


def vera_studies(rng: np.random.Generator, k: int, n: int, n_total: int) -> Iterator[Study]:
    for _ in range(k):
        human = VERA[rng.choice(4, size=n_total, p=[0.5, 0.3, 0.1, 0.1])]
        judge = human.copy()
        judge[(human == VERA[1]) & (rng.random(n_total) < 0.4)] = VERA[0]
        judge[(human == VERA[2]) & (rng.random(n_total) < 0.3)] = VERA[1]
        rated = srs(rng, n_total, n)
        yield human[rated].tolist(), judge[rated].tolist(), judge[~rated].tolist(), None, None


def t_interval(est: ScoreEstimate, n: int, pi: np.ndarray | None) -> ScoreEstimate:
    """Return the estimate with the small-sample t interval: estimate ± t_{n_e - 1} SE (n_e Kish's under a plan).

    The humans-only interval the report drew before Wilson's (the standard error is the same).
    """
    if est.estimate is None or est.std_error is None:
        return est
    n_e = float(n) if pi is None else kish_size(1 / np.asarray(pi, dtype=float))
    half = t_value(est.confidence, n_e) * est.std_error
    return replace(est, low=est.estimate - half, high=est.estimate + half, interval="t", interval_n=n_e)


def run_setting(
    name: str,
    studies: Iterator[Study],
    truth: float,
    estimator: Estimator,
    *,
    n: int,
    n_total: int,
    n_studies: int,
) -> dict[str, float]:
    """Print one RESULT line per method; return the mean widths and coverages.

    Each line gives the coverage's Monte-Carlo standard error sqrt(0.95 · 0.05 / studies) and
    ``check=below`` when an interval the app draws (APP_METHODS) covers less than nominal by
    more than two of them (``check=ok``; ``check=reference`` for the comparison methods).
    """
    rows: dict[str, list[tuple[bool, float, float]]] = {}

    def add(method: str, est: object) -> None:
        # An interval that cannot be estimated counts as not covering (and has no width).
        width = float("nan") if est.width is None else est.width
        error = float("nan") if est.estimate is None else est.estimate - truth
        rows.setdefault(method, []).append((est.covers(truth), width, error))

    for y, f_lab, f_unl, pi, pi_u in studies:
        kw = {"inclusion_prob": pi, "unlabeled_inclusion_prob": pi_u}
        classical = estimator(y, f_lab, f_unl, small_sample=True, **kw)
        reference = estimator(y, f_lab, f_unl, **kw)  # ppi_py's z intervals, ddof 0
        tuned = estimator(y, f_lab, f_unl, tuned=True, **kw)
        add("ppi", classical.ppi)
        add("ppi_z", reference.ppi)
        add("ppi++", tuned.ppi)
        add("ppi++_cf", estimator(y, f_lab, f_unl, tuned=True, tuning="cross-fit", **kw).ppi)
        add("two_phase", estimator(y, f_lab, f_unl, inclusion_prob=pi, judge_term="all", small_sample=True).ppi)
        add("human_only", classical.human_only)
        add("human_only_t", t_interval(classical.human_only, len(y), pi))
        add("human_only_z", reference.human_only)
        add("judge_only", classical.judge_only)
        if pi is not None:
            add("ppi_unweighted", estimator(y, f_lab, f_unl).ppi)
    widths, coverages = {}, {}
    mc_se = float(np.sqrt(NOMINAL * (1 - NOMINAL) / n_studies))
    for method, values in rows.items():
        covered, width, error = (np.array(v, dtype=float) for v in zip(*values, strict=True))
        width, error = width[~np.isnan(width)], error[~np.isnan(error)]
        widths[method] = float(width.mean()) if width.size else float("nan")
        coverages[method] = float(covered.mean())
        check = "reference"
        if method in APP_METHODS:
            check = "below" if coverages[method] < NOMINAL - 2 * mc_se else "ok"
            if check == "below":
                BELOW.append(f"{method} in {name} (n={n})")
        print(
            f"RESULT workload=ppi_coverage method={method} setting={name} n={n} N={n_total} "
            f"coverage={covered.mean():.3f} mc_se={mc_se:.4f} check={check} "
            f"mean_width={width.mean():.4f} bias={error.mean():+.4f} studies={n_studies}",
            flush=True,
        )
    return {"width": widths, "coverage": coverages}


def drift_coverage(rng: np.random.Generator, k: int, n: int = 200, resamples: int = 500) -> None:
    """Paired bootstrap for the difference in agreement with humans of two judge versions.

    Version A agrees with humans with probability 0.80, version B 0.85 (truth +0.05); the two
    versions agree with each other more than chance (B copies A's verdict on 70% of rows).
    """
    covered, widths = 0, []
    for _ in range(k):
        a = (rng.random(n) < 0.80).astype(float)
        # B = A on 70% of rows, else its own draw; P(B right) = 0.7 * 0.8 + 0.3 * p_own = 0.85.
        own = (rng.random(n) < (0.85 - 0.7 * 0.8) / 0.3).astype(float)
        b = np.where(rng.random(n) < 0.7, a, own)
        r = paired_bootstrap_difference(a, b, n_resamples=resamples, seed=rng)
        covered += r.interval.low <= 0.05 <= r.interval.high
        widths.append(r.interval.high - r.interval.low)
    print(
        f"RESULT workload=ppi_coverage method=paired_bootstrap setting=judge_drift n={n} N={n} "
        f"coverage={covered / k:.3f} mean_width={np.mean(widths):.4f} bias=n/a studies={k}",
        flush=True,
    )


# One setting: (name, its studies, the true score, the estimator, n rated, N judged).
Setting = tuple[str, Iterator[Study], float, Estimator, int, int]


def settings(rng: np.random.Generator, k: int) -> Iterator[Setting]:
    """Yield the settings in the bench's order; each draws its studies from ``rng`` as it is consumed.

    Consume each setting's studies before asking for the next one (as :func:`main` does): then a
    run that only wants one setting reproduces the bench's own draws by exhausting the others.
    """
    for n in (30, 100, 400):
        yield "biased_judge", binary_studies(rng, k, n, 2000, 0.05, 0.25), 0.6, ppi_mean, n, 2000
    yield "unbiased_judge", binary_studies(rng, k, 100, 2000, 0.10, 0.15), 0.6, ppi_mean, 100, 2000
    yield "amhart_score", amhart_studies(rng, k, 100, 2000), 0.6, ppi_mean, 100, 2000
    yield "oversampled", oversampled_studies(rng, k, 100, 2000), 0.6, ppi_mean, 100, 2000
    yield "stratified_equal", stratified_studies(rng, k, 96), STRATA_TRUTH, ppi_mean, 96, sum(STRATA_SIZES)
    yield "item_rate_na", item_rate_studies(rng, k, 120, 1500), 0.6, ppi_item_rate, 120, 1500
    yield "vera_mh_dimension", vera_studies(rng, k, 150, 1500), VERA_TRUTH, ppi_vera_mh_score, 150, 1500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    k, rng = args.studies, np.random.default_rng(args.seed)
    started = time.perf_counter()
    for name, studies, truth, estimator, n, n_total in settings(rng, k):
        widths = run_setting(name, studies, truth, estimator, n=n, n_total=n_total, n_studies=k)
        if name != "biased_judge":
            continue
        # Planning: var(Y) = 0.24; residual var = P(disagree) - bias² = 0.13 - 0.07².
        residual = residual_variance_from_agreement(0.4 * 0.25 + 0.6 * 0.05, bias=-0.07)
        planned = expected_ppi_width(var_y=0.24, var_residual=residual, n=n, population=n_total)
        print(
            f"RESULT workload=ppi_planning setting=biased_judge n={n} N={n_total} "
            f"expected_width={planned.ppi_width:.4f} mean_width={widths['width']['ppi']:.4f} "
            f"expected_human_only_width={planned.human_only_width:.4f} "
            f"mean_human_only_width={widths['width']['human_only']:.4f}",
            flush=True,
        )
    drift_coverage(rng, k)
    print(f"# {time.perf_counter() - started:.1f} s", flush=True)
    if BELOW:
        print(f"# more than two Monte-Carlo standard errors below {NOMINAL}: {'; '.join(BELOW)}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
