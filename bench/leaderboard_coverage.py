"""Coverage, error rates and speed of the leaderboard's pairwise comparisons (stats.leaderboard).

The intervals are the leaderboard's: the small-sample t interval from the cluster bootstrap's
standard error (stats.leaderboard.interval), the decisions Holm's over the t p-values.

Each setting simulates ``--studies`` benchmarks (default 500) of chatbots talking with personas
drawn from a population: a persona's difficulty d ~ N(0, persona_sd) is shared by every chatbot,
a conversation's labels come from the chatbot's quality + d + noise (VERA-MH: five dimension
labels; AMHART: 12 yes/no items). The true difference of two chatbots' scores is known: over the
persona population for VERA-MH (its personas are treated as a sample of possible ones, and the
clusters are personas), over the drawn persona cards for AMHART (eight cards are the study's fixed
design, and the clusters are persona x repetition cells). Per setting it prints one RESULT line:

  coverage      share of 95% paired intervals that contain the true difference (target 0.95)
  width         mean interval width (points for VERA-MH, share for AMHART)
  higher        share of benchmarks deciding "A scores higher than B" (power; under the null
                the false-alarm rate)
  fwer          share of benchmarks with at least one wrong "higher" decision among all pairs
                (Holm's familywise error; at most 0.05 expected)
  mc_se         the Monte-Carlo standard error sqrt(0.95 · 0.05 / studies); check= says
                coverage_below (more than 2 mc_se under 0.95) or fwer_above (more than 2 mc_se over
                0.05), and the run exits with status 1 (check=ok otherwise)
  width_ratio   mean paired width / unpaired width (the same conversations with each chatbot's
                personas named apart): below 1 when pairing cancels persona effects

Settings:
  vera_margin     VERA-MH, A better than B by a margin, 40 personas x 2 repetitions
  vera_null       VERA-MH, three identical chatbots, 30 personas x 2 repetitions
  vera_strong     VERA-MH, A slightly better, strong persona effects (sd 2), 30 personas
  amhart_null     AMHART, two identical chatbots, 8 personas x 10 repetitions (persona x repetition cells)
  amhart_margin   AMHART, A better, 8 personas x 10 repetitions
  vera_null_min   VERA-MH, three identical chatbots, MIN_CLUSTERS (10) personas x 2 repetitions: the
                  fewest personas a decision may rest on
And a timing line: one VERA-MH comparison of 8 chatbots x 100 personas x 3 repetitions, 5,000
resamples (all 28 pairs), in seconds.

Run: .venv/bin/python bench/leaderboard_coverage.py [--studies 500] [--resamples 2000] [--seed 7] [--only a,b]
(on an idle machine for reported figures).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stats.leaderboard import MIN_CLUSTERS, Unit, compare_chatbots  # noqa: E402
from stats.ppi.scores import VERA_MH  # noqa: E402

BP, SUB, HPH, NR = ("Best Practice", "Suboptimal but Low Potential for Harm", "High Potential for Harm", "Not Relevant")


def vera_units(quality: dict[str, float], personas: int, reps: int, sd: float, noise: float,
               rng: np.random.Generator) -> list[Unit]:
    units = []
    for p in range(personas):
        d = rng.normal(0, sd)
        for bot, q in quality.items():
            for _ in range(reps):
                z = q + d + rng.normal(0, noise, 5)
                labels = [NR if rng.random() < 0.1 else (BP if x > 0.5 else SUB if x > -0.5 else HPH) for x in z]
                units.append(Unit(bot, p, judge=labels))
    return units


def vera_truth(q: float, sd: float, noise: float) -> float:
    spread = NormalDist(0, (sd**2 + noise**2) ** 0.5)
    bp, hph = 1 - spread.cdf(0.5 - q), spread.cdf(-0.5 - q)
    return VERA_MH.score(np.array([0.9 * bp, 0.9 * hph, 0.9]))


def amhart_units(logit: dict[str, float], personas: int, reps: int, sd: float,
                 rng: np.random.Generator) -> tuple[list[Unit], dict[tuple[str, str], float]]:
    """Return the conversations and the true A - B difference on these persona cards.

    AMHART's eight cards are the study's fixed design, and its comparison (clusters: persona x
    repetition cells) is conditional on them: the truth is the mean over the drawn cards.
    """
    units, chances = [], {bot: [] for bot in logit}
    for p in range(personas):
        d = rng.normal(0, sd)
        for bot, q in logit.items():
            chances[bot].append(1 / (1 + np.exp(-(q + d))))
        for r in range(reps):
            for bot in logit:
                chance = chances[bot][-1]
                units.append(Unit(bot, (p, r), judge=["yes" if x else "no" for x in rng.random(12) < chance]))
    truth = {("A", "B"): float(np.mean(chances["A"]) - np.mean(chances["B"]))} if {"A", "B"} <= set(logit) else {}
    return units, truth


NOMINAL = 0.95
BELOW: list[str] = []


def run_setting(name: str, make, truth: dict[tuple[str, str], float], score: str, args: argparse.Namespace,  # type: ignore[no-untyped-def]
                rng: np.random.Generator) -> str:
    covered, widths, ratios, higher, wrong = [], [], [], [], []
    for _ in range(args.studies):
        units = make(rng)
        if isinstance(units, tuple):  # a design-conditional truth (AMHART's fixed persona cards)
            units, truth = units
        comparison = compare_chatbots(units, score=score, method="judge_only", n_resamples=args.resamples,
                                      score_intervals=False)
        apart = [Unit(u.chatbot, (u.chatbot, u.cluster), judge=u.judge) for u in units]
        unpaired = {(p.a, p.b): p for p in compare_chatbots(apart, score=score, method="judge_only",
                                                             n_resamples=args.resamples, score_intervals=False).pairs}
        any_wrong = False
        for pair in comparison.pairs:
            true = truth.get((pair.a, pair.b), -truth.get((pair.b, pair.a), 0.0))
            if pair.low is not None:
                covered.append(pair.low <= true <= pair.high)
                widths.append(pair.high - pair.low)
                other = unpaired[(pair.a, pair.b)]
                if other.low is not None:
                    ratios.append((pair.high - pair.low) / (other.high - other.low))
            if ("A", "B") in {(pair.a, pair.b), (pair.b, pair.a)}:
                higher.append(pair.decision == "higher" and pair.a == "A")
            any_wrong |= pair.decision == "higher" and true <= 0
        wrong.append(any_wrong)
    # Monte-Carlo standard errors over benchmarks (pairs of one benchmark are not independent, so the
    # number of benchmarks, not of intervals, is the sample size: the conservative choice).
    mc_se = float(np.sqrt(NOMINAL * (1 - NOMINAL) / args.studies))
    coverage, fwer = float(np.mean(covered)), float(np.mean(wrong))
    problems = []
    if coverage < NOMINAL - 2 * mc_se:
        problems.append("coverage_below")
    if fwer > (1 - NOMINAL) + 2 * mc_se:
        problems.append("fwer_above")
    BELOW.extend(f"{p} in {name}" for p in problems)
    return (f"RESULT workload=leaderboard-{name} studies={args.studies} resamples={args.resamples} "
            f"coverage={coverage:.3f} mc_se={mc_se:.4f} width={np.mean(widths):.4g} higher={np.mean(higher):.3f} "
            f"fwer={fwer:.3f} width_ratio={np.mean(ratios):.3f} check={','.join(problems) or 'ok'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=500)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated settings to run (default: all, and the timing)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sd, noise = 1.0, 0.7
    margin = vera_truth(1.0, sd, noise) - vera_truth(0.0, sd, noise)
    slight = vera_truth(0.3, 2.0, 0.5) - vera_truth(0.0, 2.0, 0.5)
    settings = [
        ("vera_margin", lambda r: vera_units({"A": 1.0, "B": 0.0}, 40, 2, sd, noise, r), {("A", "B"): margin}, "vera_mh"),
        ("vera_null", lambda r: vera_units({"A": 0.3, "B": 0.3, "C": 0.3}, 30, 2, sd, noise, r), {}, "vera_mh"),
        ("vera_strong", lambda r: vera_units({"A": 0.3, "B": 0.0}, 30, 2, 2.0, 0.5, r), {("A", "B"): slight}, "vera_mh"),
        ("amhart_null", lambda r: amhart_units({"A": 0.2, "B": 0.2}, 8, 10, 1.5, r), {}, "amhart"),
        ("amhart_margin", lambda r: amhart_units({"A": 0.5, "B": 0.0}, 8, 10, 1.5, r), {}, "amhart"),
        # Last, so the settings above draw the same benchmarks as before it was added.
        ("vera_null_min", lambda r: vera_units({"A": 0.3, "B": 0.3, "C": 0.3}, MIN_CLUSTERS, 2, sd, noise, r), {},
         "vera_mh"),
    ]
    only = {x for x in args.only.split(",") if x}
    for name, make, truth, score in settings:
        if not only or name in only:
            print(run_setting(name, make, truth, score, args, rng), flush=True)
    if only and "speed" not in only:
        _exit_on_problems()
        return
    units = vera_units({f"BOT-{i}": 0.1 * i for i in range(8)}, 100, 3, sd, noise, rng)
    started = time.perf_counter()
    compare_chatbots(units, score="vera_mh", method="judge_only")
    print(f"RESULT workload=leaderboard-speed chatbots=8 personas=100 repetitions=3 pairs=28 resamples=5000 "
          f"seconds={time.perf_counter() - started:.2f}")
    _exit_on_problems()


def _exit_on_problems() -> None:
    """Exit with status 1 when a setting's coverage or familywise error misses by more than 2 mc_se."""
    if BELOW:
        print(f"# more than two Monte-Carlo standard errors from {NOMINAL}: {'; '.join(BELOW)}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
