"""Judges against humans, with cluster-bootstrap intervals and a leave-one-out comparison.

Every figure is a percent agreement or a Cohen's kappa (Cohen 1960) computed from a confusion
table summed over (conversation, item) instances; intervals are percentile intervals of the
cluster bootstrap of :mod:`stats.bootstrap` (whole conversations are drawn, with all their
items: Davison & Hinkley 1997, section 3.8), every figure on the same resamples.

* Judge against the human consensus, pooled and per item; judge against each single rater.
* Rater pairs: a pair that shares fewer than ``min_shared_conversations`` conversations is left
  out of the human range (its kappa rests on too few independent conversations to bound
  anything) and listed. The range is descriptive; the comparison below replaces the old
  "inside the human envelope" test, which a constant judge could pass.
* Leave one rater out: on the instances rater ``r`` labelled, with at least one other rater,
  the judge and ``r`` are each compared with the *other* raters, pair by pair (the same other
  labels on both sides). ``(judge vs others) - (r vs others)`` gets an interval, per rater
  and as the mean over raters; an interval wholly below 0 says the judge agrees with the
  raters less than they agree with each other. The pooled-pairs kappa of a side is Cohen's
  kappa of the table of all its (other rater's label, candidate's label) pairs.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .agreement import _kappa_from_tables
from .bootstrap import (
    CLUSTERS_METHOD,
    Batched,
    ConfidenceInterval,
    cluster_codes,
    make_rng,
    percentile_interval,
    resample_weights,
    sum_by_cluster,
)

MIN_SHARED_CONVERSATIONS = 10

Row = tuple[Hashable, Hashable, Hashable, Any]
Instance = tuple[Hashable, Hashable]


def _agreement(sums: np.ndarray, q: int) -> np.ndarray:
    tables = sums.reshape(-1, q, q)
    n = tables.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, np.trace(tables, axis1=1, axis2=2) / n, np.nan)


def _kappa(sums: np.ndarray, q: int) -> np.ndarray:
    return _kappa_from_tables(sums.reshape(-1, q, q))[0]


def _none(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


@dataclass(frozen=True)
class Figure:
    """Agreement and kappa of one comparison with their intervals."""

    rater: str
    reference: str
    n: int
    n_conversations: int
    percent_agreement: float | None
    cohen_kappa: float | None
    agreement_ci: ConfidenceInterval | None
    kappa_ci: ConfidenceInterval | None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "rater": self.rater,
            "reference": self.reference,
            "n": self.n,
            "n_conversations": self.n_conversations,
            "percent_agreement": self.percent_agreement,
            "cohen_kappa": self.cohen_kappa,
            "agreement_ci": self.agreement_ci.as_dict() if self.agreement_ci else None,
            "kappa_ci": self.kappa_ci.as_dict() if self.kappa_ci else None,
        }


@dataclass(frozen=True)
class Difference:
    """(judge vs others) - (rater vs others) for one measure, with its interval."""

    judge: float | None
    rater: float | None
    difference: float | None
    ci: ConfidenceInterval | None

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping; ``reading`` says where the interval lies."""
        return {
            "judge": self.judge,
            "rater": self.rater,
            "difference": self.difference,
            "ci": self.ci.as_dict() if self.ci else None,
            "reading": _reading(self.ci),
        }


def _reading(ci: ConfidenceInterval | None) -> str:
    if ci is None or ci.low is None or ci.high is None:
        return "undefined"
    if ci.low == ci.high:
        return "undefined"  # a collapsed interval (one conversation) bounds nothing
    if ci.high < 0:
        return "judge below the raters"
    if ci.low > 0:
        return "judge above the raters"
    return "no clear difference"


@dataclass(frozen=True)
class JudgeHumanFigures:
    """Every judge-vs-human figure of one label set, with the parameters behind them."""

    vs_consensus: tuple[Figure, ...]
    vs_consensus_items: dict[Hashable, tuple[Figure, ...]]
    vs_raters: tuple[Figure, ...]
    human_pairs: tuple[Figure, ...]
    human_range: dict[str, Any]
    leave_one_out: dict[str, dict[str, Any]]
    parameters: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "vs_consensus": [f.as_dict() for f in self.vs_consensus],
            "vs_consensus_items": {str(k): [f.as_dict() for f in v] for k, v in self.vs_consensus_items.items()},
            "vs_raters": [f.as_dict() for f in self.vs_raters],
            "human_pairs": [f.as_dict() for f in self.human_pairs],
            "human_range": self.human_range,
            "leave_one_out": self.leave_one_out,
            "parameters": self.parameters,
        }


class _Builder:
    """Collect statistics as unit-weighted features over one list of instances."""

    def __init__(self, instances: list[Instance], q: int) -> None:
        self.instances = instances
        self.index = {k: i for i, k in enumerate(instances)}
        self.q = q
        self.statistics: dict[str, Batched] = {}

    def table(self, reference: Mapping[Instance, int], rater: Mapping[Instance, int]) -> np.ndarray:
        """Return per-instance one-hot (reference label, rater label) rows: instances x q*q."""
        out = np.zeros((len(self.instances), self.q * self.q))
        for key, a in reference.items():
            b = rater.get(key)
            if b is not None:
                out[self.index[key], a * self.q + b] += 1
        return out

    def add_pair(self, name: str, features: np.ndarray) -> None:
        """Register agreement and kappa of a q*q table feature block."""
        q = self.q
        self.statistics[f"{name}|agreement"] = Batched(features, lambda s: (_agreement(s, q),))
        self.statistics[f"{name}|kappa"] = Batched(features, lambda s: (_kappa(s, q),))


def _conversations(keys: Sequence[Instance]) -> int:
    return len({k[0] for k in keys})


def judge_human_figures(
    humans: Sequence[Row],
    judges: Sequence[Row],
    consensus: Mapping[Instance, Any],
    *,
    labels: Sequence[Any],
    n_resamples: int,
    seed: int,
    confidence: float = 0.95,
    min_shared_conversations: int = MIN_SHARED_CONVERSATIONS,
) -> JudgeHumanFigures:
    """Return every judge-vs-human figure of one label set with cluster-bootstrap intervals.

    ``humans`` and ``judges`` are long rows (unit, rater or judge, item, label) already in the
    labels' spelling (a label outside ``labels`` and None are missing); ``consensus`` maps
    (unit, item) to the human reference label. Instances are (unit, item) pairs and clusters
    the units. All intervals come from one set of ``n_resamples`` cluster resamples drawn
    from ``seed``. See the module docstring for the leave-one-out comparison.
    """
    code = {label: i for i, label in enumerate(labels)}
    q = len(code)

    def by_name(rows: Sequence[Row]) -> dict[str, dict[Instance, int]]:
        out: dict[str, dict[Instance, int]] = {}
        for unit, name, item, label in rows:
            if label in code:
                out.setdefault(str(name), {})[(unit, item)] = code[label]
        return out

    people, machines = by_name(humans), by_name(judges)
    reference = {k: code[v] for k, v in consensus.items() if v in code}
    instances = sorted({*reference, *(k for m in people.values() for k in m), *(k for m in machines.values() for k in m)},
                       key=lambda k: (str(k[0]), str(k[1])))
    parameters = {
        "resamples": n_resamples,
        "seed": seed,
        "confidence": confidence,
        "method": CLUSTERS_METHOD,
        "cluster": "conversation",
        "min_shared_conversations": min_shared_conversations,
    }
    if not instances:
        return JudgeHumanFigures((), {}, (), (), {"n_pairs": 0, "excluded": []}, {}, parameters)
    build = _Builder(instances, q)
    points: dict[str, tuple[int, int]] = {}  # name -> (n labels, n conversations)

    def add(name: str, ref: Mapping[Instance, int], mine: Mapping[Instance, int]) -> None:
        shared = [k for k in ref if k in mine]
        points[name] = (len(shared), _conversations(shared))
        build.add_pair(name, build.table(ref, mine))

    items = list(dict.fromkeys(k[1] for k in instances))
    for judge, labels_of in machines.items():
        add(f"consensus|{judge}", reference, labels_of)
        for item in items:
            add(f"item|{item}|{judge}", {k: v for k, v in reference.items() if k[1] == item}, labels_of)
        for rater, theirs in people.items():
            add(f"rater|{judge}|{rater}", theirs, labels_of)
    names = sorted(people)
    for a_index, a in enumerate(names):
        for b in names[a_index + 1:]:
            if any(k in people[b] for k in people[a]):
                add(f"pair|{a}|{b}", people[b], people[a])
    loo_meta = _leave_one_out(build, people, machines, min_shared_conversations)
    intervals = _cluster_intervals(build.statistics, n_resamples=n_resamples, seed=seed, confidence=confidence,
                                   clusters=[k[0] for k in instances]) if n_resamples else {}

    def figure(name: str, rater: str, ref: str) -> Figure:
        n, n_conv = points[name]
        agreement, kappa = (build.statistics[f"{name}|{s}"].estimate()[0] for s in ("agreement", "kappa"))
        return Figure(rater, ref, n, n_conv, _none(agreement), _none(kappa),
                      intervals.get(f"{name}|agreement"), intervals.get(f"{name}|kappa"))

    vs_consensus = tuple(figure(f"consensus|{j}", j, "consensus") for j in machines if points[f"consensus|{j}"][0])
    vs_items = {
        item: tuple(figure(f"item|{item}|{j}", j, "consensus") for j in machines if points[f"item|{item}|{j}"][0])
        for item in items
    }
    vs_raters = tuple(figure(f"rater|{j}|{r}", j, r) for j in machines for r in people if points[f"rater|{j}|{r}"][0])
    pairs = tuple(figure(name, name.split("|")[1], name.split("|")[2]) for name in points if name.startswith("pair|"))
    included = [p for p in pairs if p.n_conversations >= min_shared_conversations]
    excluded = [
        {"rater": p.rater, "reference": p.reference, "n_conversations": p.n_conversations, "n": p.n}
        for p in pairs if p.n_conversations < min_shared_conversations
    ]
    kappas = [p.cohen_kappa for p in included if p.cohen_kappa is not None]
    agreements = [p.percent_agreement for p in included if p.percent_agreement is not None]
    human_range = {
        "kappa_min": min(kappas) if kappas else None,
        "kappa_max": max(kappas) if kappas else None,
        "agreement_min": min(agreements) if agreements else None,
        "agreement_max": max(agreements) if agreements else None,
        "n_pairs": len(included),
        "excluded": excluded,
        "min_shared_conversations": min_shared_conversations,
    }
    leave_one_out = {
        judge: _loo_results(build, meta, intervals, judge) for judge, meta in loo_meta.items()
    }
    return JudgeHumanFigures(vs_consensus, vs_items, vs_raters, pairs, human_range, leave_one_out, parameters)


def _cluster_intervals(
    statistics: Mapping[str, Batched],
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    clusters: Sequence[Hashable],
) -> dict[str, ConfidenceInterval]:
    """Return percentile intervals of the cluster bootstrap, as ``stats.bootstrap.bootstrap_intervals``.

    The same draws (``resample_weights`` over the clusters from one seeded generator, summed
    features per cluster) and the same percentile rule; only the product ``weights @
    features`` is taken once for every statistic's block side by side, since hundreds of
    figures here share a few hundred conversations (agreement and kappa share one block).
    """
    names = list(statistics)
    blocks: dict[int, tuple[int, int]] = {}
    matrices: list[np.ndarray] = []
    width = 0
    for name in names:
        features = statistics[name].features
        if id(features) not in blocks:
            blocks[id(features)] = (width, width + features.shape[1])
            matrices.append(np.asarray(features, dtype=float))
            width += features.shape[1]
    big = np.hstack(matrices)
    codes, n_draw = cluster_codes(clusters)
    if n_draw < big.shape[0]:
        big = np.asarray(sum_by_cluster(big, codes, n_draw))
    draws: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for weights in resample_weights(n_draw, n_resamples, make_rng(seed)):
        sums = weights @ big
        for name in names:
            start, stop = blocks[id(statistics[name].features)]
            draws[name].append(statistics[name].finalize(sums[:, start:stop])[0])
    out = {}
    for name, values in draws.items():
        ci = percentile_interval(np.concatenate(values), confidence)
        out[name] = ConfidenceInterval(ci.low, ci.high, ci.confidence, ci.n_resamples, ci.n_undefined, CLUSTERS_METHOD, ci.note)
    return out


def _leave_one_out(
    build: _Builder,
    people: dict[str, dict[Instance, int]],
    machines: dict[str, dict[Instance, int]],
    min_shared: int,
) -> dict[str, dict[str, Any]]:
    """Register the leave-one-out statistics; return, per judge, what each rater's rows hold."""
    q2 = build.q * build.q
    raters_of: dict[Instance, list[str]] = {}
    for rater, labels in people.items():
        for key in labels:
            raters_of.setdefault(key, []).append(rater)
    out: dict[str, dict[str, Any]] = {}
    for judge, machine in machines.items():
        blocks: list[np.ndarray] = []
        per_rater: list[dict[str, Any]] = []
        for rater, labels in people.items():
            features = np.zeros((len(build.instances), 2 * q2))
            used: list[Instance] = []
            for key, own in labels.items():
                mine = machine.get(key)
                others = [people[o][key] for o in raters_of[key] if o != rater]
                if mine is None or not others:
                    continue
                used.append(key)
                row = build.index[key]
                for other in others:
                    features[row, other * build.q + mine] += 1
                    features[row, q2 + other * build.q + own] += 1
            if not used:
                continue
            n_conv = _conversations(used)
            name = f"loo|{judge}|{rater}"
            for measure, fn in (("agreement", _agreement), ("kappa", _kappa)):
                build.statistics[f"{name}|{measure}"] = Batched(
                    features, lambda s, fn=fn: (fn(s[:, :q2], build.q) - fn(s[:, q2:], build.q),)
                )
            in_mean = n_conv >= min_shared
            per_rater.append({"rater": rater, "name": name, "features": features, "n_instances": len(used),
                              "n_conversations": n_conv, "in_mean": in_mean})
            if in_mean:
                blocks.append(features)
        if blocks:
            stacked = np.hstack(blocks)
            k = len(blocks)
            for measure, fn in (("agreement", _agreement), ("kappa", _kappa)):
                def mean_difference(s: np.ndarray, fn: Any = fn, k: int = k) -> tuple[np.ndarray, ...]:
                    parts = s.reshape(s.shape[0], k, 2, q2)
                    diffs = np.column_stack([
                        fn(parts[:, r, 0, :], build.q) - fn(parts[:, r, 1, :], build.q) for r in range(k)
                    ])
                    # undefined for a resample where any rater's difference is (NaN propagates):
                    # a mean over a changing set of raters would not estimate one quantity
                    return (diffs.mean(axis=1),)

                build.statistics[f"loo-mean|{judge}|{measure}"] = Batched(stacked, mean_difference)
        out[judge] = {"per_rater": per_rater, "n_in_mean": len(blocks)}
    return out


def _loo_results(build: _Builder, meta: dict[str, Any], intervals: Mapping[str, ConfidenceInterval], judge: str) -> dict[str, Any]:
    q, q2 = build.q, build.q * build.q
    rows = []
    for entry in meta["per_rater"]:
        sums = entry["features"].sum(axis=0, keepdims=True)
        row: dict[str, Any] = {
            "rater": entry["rater"],
            "n_instances": entry["n_instances"],
            "n_conversations": entry["n_conversations"],
            "in_mean": entry["in_mean"],
        }
        for measure, fn in (("agreement", _agreement), ("kappa", _kappa)):
            mine, theirs = _none(fn(sums[:, :q2], q)[0]), _none(fn(sums[:, q2:], q)[0])
            diff = None if mine is None or theirs is None else mine - theirs
            row[measure] = Difference(mine, theirs, diff, intervals.get(f"{entry['name']}|{measure}")).as_dict()
        rows.append(row)
    mean: dict[str, Any] = {"n_raters": meta["n_in_mean"]}
    for measure in ("agreement", "kappa"):
        name = f"loo-mean|{judge}|{measure}"
        if name in build.statistics:
            value = _none(build.statistics[name].estimate()[0])
            mean[measure] = Difference(None, None, value, intervals.get(name)).as_dict()
        else:
            mean[measure] = Difference(None, None, None, None).as_dict()
    return {"per_rater": rows, "mean": mean}
