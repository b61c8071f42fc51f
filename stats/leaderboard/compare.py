"""Every pair of chatbots compared: a paired cluster bootstrap of the difference, Holm's decisions.

For one score (the AMHART score or the VERA-MH overall score) and one method (judges only,
humans only, PPI, or PPI++ with each chatbot's λ fixed), each chatbot's estimate is the
method's estimate on all its conversations (:mod:`.features`). Two chatbots ``a`` and ``b``
are compared by the difference of their estimates, with:

* **the paired cluster bootstrap** when some cluster (a persona; or a persona and repetition
  index) holds conversations of both: each of B resamples draws the clusters that hold either
  chatbot's conversations, with replacement, as many as there are; a drawn cluster brings the
  conversations of both, and both estimates are recomputed from the drawn conversations (PPI
  re-estimated in every resample, the prediction-powered bootstrap of Zrnic 2024). What a
  persona does to every chatbot (a hard persona pulls every score down) cancels in the
  difference, so the interval is narrower than an unpaired one when persona effects are strong;
* **the unpaired cluster bootstrap** when no cluster holds conversations of both (the design
  does not pair them): each chatbot's clusters are resampled on their own, ``a``'s first, from
  the same generator.

What the interval is about follows from the clusters: resampling personas treats them as a
sample of the personas the chatbots could meet (VERA-MH's hundred); resampling persona x
repetition cells keeps the persona cards fixed (AMHART's eight designed cards) and measures the
conversations' variation on them. ``bench/leaderboard_coverage.py`` prints the coverage of both.

The interval is the small-sample t interval of :mod:`.interval`: the difference ± t_{G-1} ·
sqrt(G/(G - 1)) · SE*, SE* the standard deviation of the resampled differences and G the
number of clusters drawn (Hesterberg 2015; Cameron & Miller 2015, sec. VI); unpaired, the two
chatbots' corrected variances add and t takes Welch's degrees of freedom. The percentile
interval this replaces was too narrow for the VERA-MH score with about 30 personas: with three
identical chatbots, 30 personas x 2 repetitions, its coverage was 0.917 and Holm's familywise
error 0.086 (bench/leaderboard_coverage.py, vera_null, before this interval); the BCa interval
(Efron 1987) reduces to the percentile one when the resampled differences are symmetric about
the estimate, as they are when the chatbots do not differ, so it cannot widen it. Hesterberg's
expanded percentile interval widens it as this one does, but a test read off the resamples'
tails cannot give a p-value below 2 P(T_{G-1} <= Φ⁻¹(1/(B + 1)) sqrt((G - 1)/G)), about 0.002
with 25 personas and 5,000 resamples: with 28 pairs (8 chatbots) Holm's first threshold,
0.05/28, would be out of reach; the t p-value has no such floor. Its cost: the interval is
symmetric, so a skewed difference (strong persona effects, vera_strong) is covered a little
less often than nominal (0.930 there). The two-sided p-value 2 P(T_df >= |difference| / SE) is the test that inverts the
interval (below alpha exactly when the (1 - alpha) interval leaves 0 out); the p-value of every
pair that can be tested goes into Holm's step-down procedure over the pairs (the family: the
pairs of this score, method and set of conversations); ``a`` scores higher than ``b`` when
Holm's adjusted p-value is below alpha, else "no difference shown". Every pair's resamples come
from a generator seeded with ``seed`` alone, so one pair's figures do not depend on which other
chatbots are compared. A chatbot's own interval (``score_intervals``) is the same t interval of
its own clusters' resamples.

Minimums, below which the pair is "cannot decide yet: <reason>" and left out of the family:
each chatbot's conversations with a score in at least ``min_clusters`` clusters (for humans
only and PPI: rated ones), and at most 10% of the resamples undefined.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from itertools import combinations

import numpy as np

from ..bootstrap import make_rng, resample_weights
from ..data import StatsInputError
from .features import ChatbotRows, Unit, chatbot_rows, estimate_from_sums, score_from_means, terms
from .interval import small_sample_t_interval
from .multiplicity import holm
from .results import (
    DEFAULT_ALPHA,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MAX_UNDEFINED_SHARE,
    METHODS,
    MIN_CLUSTERS,
    PROCEDURES,
    ChatbotScore,
    Comparison,
    Method,
    PairComparison,
    ScoreKind,
)

__all__ = ["compare_chatbots"]

FLAT = 1e-9


class _Chatbot:
    """A chatbot's rows summed per cluster, for the method at hand."""

    def __init__(
        self, name: str, rows: ChatbotRows, order: Mapping[Hashable, int], score: ScoreKind, method: Method, lam: float
    ) -> None:
        self.name = name
        self.score = score
        self.rows = rows
        self.lam = lam
        self.method = method
        used, rated = terms(method)
        mask = np.zeros(len(rows.clusters), dtype=bool)
        for term in used:
            mask |= rows.member[term]
        rated_mask = np.zeros(len(rows.clusters), dtype=bool)
        for term in rated:
            rated_mask |= rows.member[term]
        self.n_conversations = int(mask.sum())
        self.n_rated = int(rated_mask.sum())
        keys = sorted({c for c, m in zip(rows.clusters, mask, strict=True) if m}, key=order.__getitem__)
        self.clusters = keys  # clusters holding a conversation the method uses, in order of first appearance
        self.rated_clusters = {c for c, m in zip(rows.clusters, rated_mask, strict=True) if m}
        self._index = {c: i for i, c in enumerate(keys)}
        self.sums = np.zeros((len(keys), rows.features.shape[1]))
        pick = [i for i, m in enumerate(mask) if m]
        np.add.at(self.sums, [self._index[rows.clusters[i]] for i in pick], rows.features[pick])
        self.estimate = self.theta(self.sums.sum(axis=0, keepdims=True))[0] if keys else float("nan")

    def theta(self, sums: np.ndarray) -> np.ndarray:
        """Return the method's score for each row of summed features."""
        return score_from_means(estimate_from_sums(sums, self.rows.k, self.method, self.lam), self.score)

    def on(self, keys: Sequence[Hashable]) -> np.ndarray:
        """Return the cluster sums laid out on ``keys`` (zero rows for clusters it has no conversation in)."""
        out = np.zeros((len(keys), self.sums.shape[1]))
        for i, key in enumerate(keys):
            j = self._index.get(key)
            if j is not None:
                out[i] = self.sums[j]
        return out


def _value(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _flat(values: np.ndarray) -> bool:
    defined = values[~np.isnan(values)]
    return defined.size > 0 and float(np.ptp(defined)) <= FLAT * max(1.0, float(np.abs(defined).max()))


def _draw(sums: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Return the resampled column sums (B x cols): clusters drawn with replacement, as many as there are."""
    return np.vstack([w @ sums for w in resample_weights(sums.shape[0], n_resamples, rng)])


class _Resampler:
    """Every chatbot's resampled sums on a set of clusters, computed once per set.

    A paired comparison (or a chatbot's own interval) draws its clusters from a generator
    seeded with the seed alone, so its weights depend only on how many clusters there are: all
    the pairs that share a set of clusters (usually all of them) share one draw and one product.
    """

    def __init__(self, bots: Mapping[str, _Chatbot], n_resamples: int, seed: int) -> None:
        self.bots = bots
        self.names = list(bots)
        self.n_resamples = n_resamples
        self.seed = seed
        self._weights: dict[int, np.ndarray] = {}
        self._sums: dict[tuple[Hashable, ...], np.ndarray] = {}
        self._theta: dict[tuple[tuple[Hashable, ...], str], np.ndarray] = {}

    def weights(self, n: int) -> np.ndarray:
        if n not in self._weights:
            self._weights[n] = np.vstack(list(resample_weights(n, self.n_resamples, make_rng(self.seed))))
        return self._weights[n]

    def sums(self, keys: Sequence[Hashable], bot: _Chatbot) -> np.ndarray:
        """Return ``bot``'s resampled sums (B x cols) when the clusters ``keys`` are drawn."""
        key = tuple(keys)
        if key not in self._sums:
            self._sums[key] = self.weights(len(key)) @ np.hstack([self.bots[n].on(key) for n in self.names])
        cols = bot.sums.shape[1]
        i = self.names.index(bot.name)
        return self._sums[key][:, i * cols:(i + 1) * cols]

    def theta(self, keys: Sequence[Hashable], bot: _Chatbot) -> np.ndarray:
        """Return ``bot``'s score in each resample of the clusters ``keys``."""
        key = (tuple(keys), bot.name)
        if key not in self._theta:
            self._theta[key] = bot.theta(self.sums(keys, bot))
        return self._theta[key]


def compare_chatbots(
    units: Sequence[Unit],
    *,
    score: ScoreKind,
    method: Method,
    lam: Mapping[str, float] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = 0.95,
    alpha: float = DEFAULT_ALPHA,
    min_clusters: int = MIN_CLUSTERS,
    cluster_name: tuple[str, str] = ("persona", "personas"),
    score_intervals: bool = True,
) -> Comparison:
    """Return every chatbot's estimate and every pair's difference, interval and Holm decision.

    ``units`` are the conversations (:class:`~stats.leaderboard.features.Unit`), any chatbot
    and order; ``score`` is "amhart" or "vera_mh"; ``method`` "judge_only", "human_only",
    "ppi" (λ = 1) or "ppi_tuned" (each chatbot's λ from ``lam``, fixed in the resamples: the
    full-sample PPI++ value). ``cluster_name`` is (singular, plural) of what a cluster is,
    for the words. With ``score_intervals`` each chatbot also gets the small-sample t interval
    of its own score from the cluster bootstrap (its own clusters resampled, same seed). Module
    docstring: the procedures, their references and the minimums.

    Edge cases: a chatbot with no usable conversation has no estimate (its pairs cannot be
    decided); undefined resamples are counted and left out; an interval whose resamples are
    all the same value is not given (said in words), though the test still decides (p-value
    1 when every difference is 0); an unpaired pair with a chatbot in one cluster only has no
    interval and cannot be decided. Bad labels, probabilities or arguments raise
    StatsInputError.
    """
    if method not in METHODS:
        raise StatsInputError(f"method must be one of {', '.join(METHODS)}; not {method!r}")
    if n_resamples < 1:
        raise StatsInputError("n_resamples must be at least 1")
    if not 0 < confidence < 1 or not 0 < alpha < 1:
        raise StatsInputError("confidence and alpha must lie strictly between 0 and 1")
    if min_clusters < 2:
        raise StatsInputError("min_clusters must be at least 2")
    singular, plural = cluster_name
    keys: list[Hashable] = [u.cluster if u.cluster is not None else ("unit", i) for i, u in enumerate(units)]
    order: dict[Hashable, int] = {}
    for key in keys:
        order.setdefault(key, len(order))
    by_chatbot: dict[str, list[int]] = {}
    for i, u in enumerate(units):
        by_chatbot.setdefault(u.chatbot, []).append(i)
    lams: dict[str, float] = {}
    for name in by_chatbot:
        value = 1.0 if method != "ppi_tuned" else (lam or {}).get(name)
        if value is None or not 0 <= float(value) <= 1:
            raise StatsInputError(f"PPI++ needs a lambda in [0, 1] for {name!r}")
        lams[name] = float(value)
    bots = {
        name: _Chatbot(name, chatbot_rows([units[i] for i in idx], score, clusters=[keys[i] for i in idx]), order, score,
                       method, lams[name])
        for name, idx in sorted(by_chatbot.items())
    }
    if method in ("ppi", "ppi_tuned"):
        for bot in bots.values():
            if bot.rows.ppi_problem:
                raise StatsInputError(f"{bot.name}: {bot.rows.ppi_problem}")
    resampler = _Resampler(bots, n_resamples, seed)
    scores = tuple(_score(bot, score_intervals, resampler, confidence) for bot in bots.values())
    pairs = [_pair(bots[x], bots[y], order, resampler, confidence, min_clusters, method, singular, plural)
             for x, y in combinations(sorted(bots), 2)]
    adjusted = holm([p.p_value if p.decision != "cannot_decide" else None for p in pairs])
    decided = []
    for pair, p_adj in zip(pairs, adjusted, strict=True):
        if p_adj is None:
            decided.append(pair)
            continue
        higher = p_adj < alpha and pair.difference is not None and pair.difference > 0
        decided.append(replace(pair, p_adjusted=p_adj, decision="higher" if higher else "no_difference",
                                verdict=f"{pair.a} scores higher than {pair.b}" if higher else "no difference shown"))
    return Comparison(
        score=score, method=method, scores=scores, pairs=tuple(decided),
        family_size=sum(p is not None for p in adjusted), confidence=confidence, alpha=alpha,
        n_resamples=n_resamples, seed=seed, min_clusters=min_clusters, cluster_name=plural,
        lam=lams if method == "ppi_tuned" else None,
    )


def _score(bot: _Chatbot, intervals: bool, resampler: _Resampler, confidence: float) -> ChatbotScore:
    estimate = _value(bot.estimate)
    base = {"chatbot": bot.name, "estimate": estimate, "confidence": confidence, "n_conversations": bot.n_conversations,
            "n_rated": bot.n_rated, "n_clusters": len(bot.clusters)}
    if not intervals:
        return ChatbotScore(**base, low=None, high=None)
    if estimate is None:
        return ChatbotScore(**base, low=None, high=None, cannot_estimate="cannot be estimated: no conversation with a score")
    if len(bot.clusters) < 2:
        return ChatbotScore(**base, low=None, high=None,
                            cannot_estimate="cannot be estimated: its conversations are all in one cluster, so "
                                            "resampling clusters cannot vary them")
    draws = resampler.theta(bot.clusters, bot)
    ci = small_sample_t_interval(bot.estimate, [(draws, len(bot.clusters))], confidence)
    common = {**base, "n_resamples": resampler.n_resamples, "n_undefined": ci.n_undefined, "note": ci.note}
    if _flat(draws):
        return ChatbotScore(**common, low=None, high=None,
                            cannot_estimate="cannot be estimated: every resample gave the same score (every "
                                            "conversation scored alike), so there is no spread to measure")
    return ChatbotScore(**common, low=ci.low, high=ci.high)


def _pair(
    x: _Chatbot, y: _Chatbot, order: Mapping[Hashable, int], resampler: _Resampler, confidence: float,
    min_clusters: int, method: Method, singular: str, plural: str,
) -> PairComparison:
    # The higher estimate first, so a decision reads "a scores higher than b"; undefined ones last.
    def rank(bot: _Chatbot) -> tuple[int, float, str]:
        return (0, -bot.estimate, bot.name) if np.isfinite(bot.estimate) else (1, 0.0, bot.name)

    a, b = sorted((x, y), key=rank)
    union = sorted(set(a.clusters) | set(b.clusters), key=order.__getitem__)
    shared = set(a.clusters) & set(b.clusters)
    what = "rated conversations" if method != "judge_only" else "conversations"
    if shared:
        design = "paired" if len(shared) == len(union) else "partly paired"
        procedure = PROCEDURES["paired_cluster_bootstrap"]["name"]
        note = (f"paired by {singular}: each of the {len(union)} {plural} holds {what} of both" if design == "paired"
                else f"partly paired: {len(shared)} of the {len(union)} {plural} hold {what} of both, the others of "
                     "one chatbot only")
    else:
        design = "unpaired"
        procedure = PROCEDURES["unpaired_cluster_bootstrap"]["name"]
        note = f"the design does not pair them: no {singular} holds {what} of both chatbots, so each is resampled on its own"
    difference = _value(a.estimate - b.estimate)
    base = {
        "a": a.name, "b": b.name, "estimate_a": _value(a.estimate), "estimate_b": _value(b.estimate),
        "difference": difference, "confidence": confidence, "design": design, "design_note": note,
        "procedure": procedure, "n_clusters": len(union), "n_shared": len(shared), "n_clusters_a": len(a.clusters),
        "n_clusters_b": len(b.clusters), "p_adjusted": None,
    }
    undecided = _undecided(a, b, min_clusters, method, plural)
    if difference is None or len(union) < 2:
        why = undecided or "cannot decide yet: the difference cannot be estimated"
        return PairComparison(**base, low=None, high=None, p_value=None, decision="cannot_decide", verdict=why,
                              n_resamples=0, n_undefined=0, cannot_estimate="cannot be estimated: " + why.split(": ", 1)[-1])
    n_resamples = resampler.n_resamples
    if shared:  # one draw of the clusters for both chatbots: paired
        draws = resampler.theta(union, a) - resampler.theta(union, b)
        samples = [(draws, len(union))]
    else:  # each chatbot's clusters drawn on their own, a's first, from one generator
        lone = next((bot for bot in (a, b) if len(bot.clusters) < 2), None)
        if lone is not None:
            why = (f"{lone.name}'s conversations are all in one {singular}, and the design does not pair them, so "
                   "resampling cannot vary its score")
            return PairComparison(**base, low=None, high=None, p_value=None, decision="cannot_decide",
                                  verdict=undecided or f"cannot decide yet: {why}", n_resamples=0, n_undefined=0,
                                  cannot_estimate=f"cannot be estimated: {why}")
        rng = make_rng(resampler.seed)
        draws_a = a.theta(_draw(a.sums, n_resamples, rng))
        draws_b = b.theta(_draw(b.sums, n_resamples, rng))
        draws = draws_a - draws_b
        samples = [(draws_a, len(a.clusters)), (draws_b, len(b.clusters))]
    ci = small_sample_t_interval(a.estimate - b.estimate, samples, confidence)
    p = ci.p_value
    cannot = None
    if _flat(draws):
        cannot = (f"cannot be estimated: every resample gave the same difference ({difference:+.4g}), so there is no "
                  "spread to measure")
    if undecided is None and ci.n_undefined > MAX_UNDEFINED_SHARE * n_resamples:
        undecided = (f"cannot decide yet: the difference was undefined in {ci.n_undefined} of {n_resamples} resamples "
                     f"(more than {MAX_UNDEFINED_SHARE:.0%}): too few {plural} hold a conversation with a score")
    if undecided is None and p is None:
        undecided = "cannot decide yet: no resample gave a defined difference"
    return PairComparison(
        **base, low=None if cannot else ci.low, high=None if cannot else ci.high, p_value=p,
        std_error=ci.std_error, df=ci.df,
        decision="cannot_decide" if undecided else "no_difference", verdict=undecided or "no difference shown",
        n_resamples=n_resamples, n_undefined=ci.n_undefined, cannot_estimate=cannot, note=ci.note,
    )


def _undecided(a: _Chatbot, b: _Chatbot, min_clusters: int, method: Method, plural: str) -> str | None:
    """Return why the pair cannot be decided (below the minimums), or None."""
    for bot in (a, b):
        if not np.isfinite(bot.estimate):
            return f"cannot decide yet: {bot.name}'s score cannot be estimated (no conversation with a score)"
    for bot in (a, b):
        if method == "judge_only":
            n, what = len(bot.clusters), "a conversation"
        else:
            n, what = len(bot.rated_clusters), "a rated conversation"
        if n < min_clusters:
            return (f"cannot decide yet: only {n} {plural} hold {what} of {bot.name} with a score; a decision needs at "
                    f"least {min_clusters}")
    return None
