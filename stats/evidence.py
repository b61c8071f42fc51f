"""Evidence agreement: how well the turns a judge cites match the turns clinicians cite.

A judge can give the clinicians' answer for the wrong reasons; comparing the turns each side
cites as evidence makes that visible (DOMAIN.md section 6 "Evidence"; Shankar et al. 2024,
"Who Validates the Validators? Aligning LLM-Assisted Evaluation of LLM Outputs with Human
Preferences", UIST '24: criteria and the outputs graded are inspected together).

**Instance.** One (conversation, item) that the judge labelled and at least one rater of evidence
answered. Who is a rater of evidence is the caller's choice, given as the rater rows (the app:
every answered item of a rating that cites a turn for at least one item, so a rater who cited
nothing for this item is an empty set, while a rating citing no turn at all is left out: its
rater may not have been asked). Turn numbers are 1-based, the same numbering on both sides.
``J`` is the judge's turn set (possibly empty), ``R_1..R_k`` the k raters' sets.

**References.** ``union`` = R_1 ∪ ... ∪ R_k; ``majority`` = turns cited by strictly more than
half of the k raters of that instance (count > k/2: with one rater its own turns, with two
raters the turns both cited, with three those at least two cited).

**Measures** against a reference ``Ref``: precision = |J ∩ Ref| / |J|, recall =
|J ∩ Ref| / |Ref|, Jaccard = |J ∩ Ref| / |J ∪ Ref|. An instance counts for a reference when
the judge cited at least one turn or the reference is non-empty. Precision is undefined when
J is empty, recall when Ref is empty; an instance where both are empty (neither side cited
anything) is left out of all three measures and counted (``n_both_empty``). Each figure is the
macro mean over the instances where it is defined (every instance weighs the same).

**Human-human baseline.** On the same instances, each rater in turn plays the judge against the
other raters of that instance (the union of the others, and the turns cited by strictly more
than half of the k - 1 others), with the same rules; an instance's baseline value is the mean
over the raters for whom it is defined, and the figure the macro mean over instances. An
instance with a single rater has no baseline (no other rater to compare with).

**Intervals.** Percentile cluster bootstrap over conversations (all instances of a drawn
conversation come together; Davison & Hinkley 1997, sec. 3.8), by default 1000 resamples,
seed 20260101, 95%; the judge's figures and the baseline of one table are evaluated on the
same resamples (``stats.bootstrap``). A mean over instances is sum(value) / sum(defined), so
each resample is a ratio of weighted sums; a resample with no defined instance is undefined
and counted in the interval's ``n_undefined``.

Edge cases: no instance gives figures with estimate None and n 0 (no interval); a single
conversation gives a point interval. Figures come per judge, per item and pooled over items,
each with the instances and conversations behind it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .bootstrap import Batched, ConfidenceInterval, bootstrap_intervals

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20260101
REFERENCES = ("union", "majority")
MEASURES = ("precision", "recall", "jaccard")
POOLED = "pooled"

Turns = frozenset[int]


@dataclass(frozen=True)
class SetAgreement:
    """Precision, recall and Jaccard of one turn set against a reference; None where undefined."""

    precision: float | None
    recall: float | None
    jaccard: float | None

    def get(self, measure: str) -> float | None:
        """Return one measure by name."""
        return getattr(self, measure)


def set_agreement(cited: Collection[int], reference: Collection[int]) -> SetAgreement:
    """Return precision |J∩R|/|J|, recall |J∩R|/|R| and Jaccard |J∩R|/|J∪R|.

    Precision is None when ``cited`` is empty, recall when ``reference`` is empty, Jaccard when
    both are (the instance is then left out of every measure).
    """
    j, r = frozenset(cited), frozenset(reference)
    both = len(j & r)
    return SetAgreement(
        both / len(j) if j else None,
        both / len(r) if r else None,
        both / len(j | r) if j | r else None,
    )


def union_of(sets: Iterable[Collection[int]]) -> Turns:
    """Return every turn cited by any of the sets."""
    out: set[int] = set()
    for s in sets:
        out.update(s)
    return frozenset(out)


def majority_of(sets: Sequence[Collection[int]]) -> Turns:
    """Return the turns cited by strictly more than half of the sets (count > k/2)."""
    counts: dict[int, int] = {}
    for s in sets:
        for turn in frozenset(s):
            counts[turn] = counts.get(turn, 0) + 1
    return frozenset(t for t, n in counts.items() if 2 * n > len(sets))


def reference_of(sets: Sequence[Collection[int]], reference: str) -> Turns:
    """Return the ``union`` or ``majority`` reference of the raters' sets."""
    if reference == "union":
        return union_of(sets)
    if reference == "majority":
        return majority_of(sets)
    raise ValueError(f"reference must be one of {REFERENCES}")


def baseline_agreement(raters: Sequence[Collection[int]], reference: str) -> SetAgreement:
    """Return each measure's mean over raters, each rater against the others' reference.

    None for a measure no rater defines (and for every measure with fewer than two raters).
    """
    if len(raters) < 2:
        return SetAgreement(None, None, None)
    each = [
        set_agreement(r, reference_of([o for j, o in enumerate(raters) if j != i], reference))
        for i, r in enumerate(raters)
    ]
    means: list[float | None] = []
    for measure in MEASURES:
        values = [v for v in (e.get(measure) for e in each) if v is not None]
        means.append(sum(values) / len(values) if values else None)
    return SetAgreement(*means)


@dataclass(frozen=True)
class EvidenceInstance:
    """One (conversation, item) with the judge's turns and each rater's turns (rater -> turns)."""

    conversation: str
    item: str
    judge: Turns
    raters: tuple[tuple[str, Turns], ...]

    @property
    def rater_sets(self) -> list[Turns]:
        """Return the raters' turn sets in rater order."""
        return [turns for _, turns in self.raters]


@dataclass(frozen=True)
class Figure:
    """One mean over instances, its interval, and the instances and conversations behind it."""

    estimate: float | None
    interval: ConfidenceInterval | None
    n_instances: int
    n_conversations: int

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "estimate": self.estimate,
            "low": self.interval.low if self.interval else None,
            "high": self.interval.high if self.interval else None,
            "n_instances": self.n_instances,
            "n_conversations": self.n_conversations,
        }


@dataclass(frozen=True)
class ReferenceFigures:
    """Precision, recall and Jaccard against one reference, with what was left out."""

    reference: str
    precision: Figure
    recall: Figure
    jaccard: Figure
    n_both_empty: int  # instances where neither side cited a turn: left out of every measure

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "reference": self.reference,
            **{m: getattr(self, m).as_dict() for m in MEASURES},
            "n_both_empty": self.n_both_empty,
        }


@dataclass(frozen=True)
class ScopeFigures:
    """One table row: an item (or ``pooled``), the judge's figures and the human baseline."""

    scope: str
    n_instances: int
    n_conversations: int
    n_raters: int
    judge: dict[str, ReferenceFigures] = field(default_factory=dict)
    baseline: dict[str, ReferenceFigures] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "scope": self.scope,
            "n_instances": self.n_instances,
            "n_conversations": self.n_conversations,
            "n_raters": self.n_raters,
            "judge": {ref: f.as_dict() for ref, f in self.judge.items()},
            "baseline": {ref: f.as_dict() for ref, f in self.baseline.items()},
        }


@dataclass(frozen=True)
class JudgeEvidenceAgreement:
    """One judge: the pooled row, then one row per item (in the order the items came)."""

    judge: str
    pooled: ScopeFigures
    items: tuple[ScopeFigures, ...]

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {"judge": self.judge, "pooled": self.pooled.as_dict(), "items": [i.as_dict() for i in self.items]}


@dataclass(frozen=True)
class EvidenceAgreement:
    """Every judge's evidence agreement, with the bootstrap settings."""

    judges: tuple[JudgeEvidenceAgreement, ...]
    n_resamples: int
    seed: int | None
    confidence: float

    def as_dict(self) -> dict[str, Any]:
        """Return a JSON-ready mapping."""
        return {
            "judges": [j.as_dict() for j in self.judges],
            "bootstrap": {
                "resamples": self.n_resamples,
                "seed": self.seed,
                "confidence": self.confidence,
                "method": "percentile cluster bootstrap over conversations",
            },
        }


def build_instances(
    judge_rows: Iterable[tuple[str, str, str, Collection[int]]],
    rater_rows: Iterable[tuple[str, str, str, Collection[int]]],
) -> dict[str, list[EvidenceInstance]]:
    """Return each judge's instances from long rows.

    ``judge_rows``: (conversation, judge, item, turns); ``rater_rows``: (conversation, rater,
    item, turns), one per rater answer that carries an evidence list. A (conversation, item)
    without a rater row is no instance. Instances keep the order of the judge rows.
    """
    raters: dict[tuple[str, str], dict[str, Turns]] = {}
    for conversation, rater, item, turns in rater_rows:
        raters.setdefault((conversation, item), {})[rater] = frozenset(int(t) for t in turns)
    out: dict[str, list[EvidenceInstance]] = {}
    for conversation, judge, item, turns in judge_rows:
        others = raters.get((conversation, item))
        bucket = out.setdefault(judge, [])
        if others:
            bucket.append(EvidenceInstance(conversation, item, frozenset(int(t) for t in turns),
                                           tuple(sorted(others.items()))))
    return out


def _ratio(sums: np.ndarray) -> tuple[np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.where(sums[:, 1] > 0, sums[:, 0] / np.where(sums[:, 1] > 0, sums[:, 1], 1), np.nan),)


def _features(values: list[float | None]) -> np.ndarray:
    return np.array([[v if v is not None else 0.0, 0.0 if v is None else 1.0] for v in values], dtype=float).reshape(-1, 2)


def scope_figures(
    scope: str,
    instances: Sequence[EvidenceInstance],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | np.random.Generator | None = DEFAULT_SEED,
    confidence: float = 0.95,
) -> ScopeFigures:
    """Return the judge's and the baseline's figures over these instances (see the module docstring)."""
    conversations = [i.conversation for i in instances]
    values: dict[str, list[float | None]] = {}
    both_empty: dict[str, int] = {}
    for ref in REFERENCES:
        judged = [set_agreement(i.judge, reference_of(i.rater_sets, ref)) for i in instances]
        human = [baseline_agreement(i.rater_sets, ref) for i in instances]
        both_empty[f"judge.{ref}"] = sum(a.jaccard is None for a in judged)
        both_empty[f"baseline.{ref}"] = sum(a.jaccard is None for a, i in zip(human, instances, strict=True)
                                            if len(i.raters) >= 2)
        for m in MEASURES:
            values[f"judge.{ref}.{m}"] = [a.get(m) for a in judged]
            values[f"baseline.{ref}.{m}"] = [a.get(m) for a in human]
    intervals: dict[str, ConfidenceInterval] = {}
    if instances and n_resamples > 0:
        statistics = {name: Batched(_features(v), _ratio) for name, v in values.items() if any(x is not None for x in v)}
        intervals = bootstrap_intervals(statistics, n_resamples=n_resamples, seed=seed, confidence=confidence,
                                        clusters=conversations)

    def figure(name: str) -> Figure:
        defined = [(v, c) for v, c in zip(values[name], conversations, strict=True) if v is not None]
        estimate = sum(v for v, _ in defined) / len(defined) if defined else None
        return Figure(estimate, intervals.get(name), len(defined), len({c for _, c in defined}))

    def side(who: str) -> dict[str, ReferenceFigures]:
        return {
            ref: ReferenceFigures(ref, *(figure(f"{who}.{ref}.{m}") for m in MEASURES), both_empty[f"{who}.{ref}"])
            for ref in REFERENCES
        }

    raters = {name for i in instances for name, _ in i.raters}
    return ScopeFigures(scope, len(instances), len(set(conversations)), len(raters), side("judge"), side("baseline"))


def evidence_agreement(
    judge_rows: Iterable[tuple[str, str, str, Collection[int]]],
    rater_rows: Iterable[tuple[str, str, str, Collection[int]]],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = DEFAULT_SEED,
    confidence: float = 0.95,
) -> EvidenceAgreement:
    """Return each judge's evidence agreement with the raters, per item and pooled, with intervals.

    Rows as in :func:`build_instances`. Every table (a judge's pooled row, each of its items)
    draws its own resamples from ``seed`` (so a table's figures do not depend on which other
    judges or items are present), the judge's and the baseline's on the same resamples. Judges
    come in name order, items in order of first appearance. See the module docstring for the
    instances, references, empty sets and the estimator.
    """
    by_judge = build_instances(judge_rows, rater_rows)
    judges = []
    for judge in sorted(by_judge):
        instances = by_judge[judge]
        items = list(dict.fromkeys(i.item for i in instances))
        kwargs = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
        judges.append(JudgeEvidenceAgreement(
            judge,
            scope_figures(POOLED, instances, **kwargs),  # type: ignore[arg-type]
            tuple(scope_figures(item, [i for i in instances if i.item == item], **kwargs)  # type: ignore[arg-type]
                  for item in items),
        ))
    return EvidenceAgreement(tuple(judges), n_resamples, seed, confidence)
