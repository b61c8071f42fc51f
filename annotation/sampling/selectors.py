"""Sampling plans: build a validation study from a judge run, with every inclusion probability.

A coordinator picks which of a judge run's conversations the clinicians rate: a simple random
sample, a sample stratified by chatbot and persona, or one that oversamples the conversations
where the judges disagreed (an ensemble without majority, or a split vote). The plan
(:mod:`stats.sampling`) gives every judged conversation its chance π of being picked; the
picked ones keep theirs on ``StudyConversation.inclusion_prob`` and the plan itself is stored
as a ``SamplingPlan``, so the judge-assisted scores weight each rated conversation by 1/π and
stay unbiased under oversampling.

Before anything is created the page shows what the plan buys: the expected interval width of
the main score (AMHART score or VERA-MH overall score) for the chosen number of conversations,
per chatbot and pooled, from planning values (:mod:`stats.planning`): the judge's own score
spread, and an assumed judge-clinician disagreement per label, larger where the judges split.
When clinicians already rated some of the run's conversations in a study the user may read,
those rates are offered instead of the defaults.

The reads are here (``plan_population``, ``plan_preview``); the one write,
``study_create_from_plan``, is in :mod:`annotation.sampling.services`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.errors import AnnotationError
from annotation.models import ConsensusLabel, SamplingMethod, Study
from judging.errors import JudgingError
from judging.models import JudgeMode, JudgeRun
from judging.sources import LabelSource, RunLabels, label_source_get, run_label_splits, run_labels
from stats.data import StatsInputError, is_na_label
from stats.planning import planning_values
from stats.sampling import (
    SamplingPlan as DrawnPlan,
)
from stats.sampling import (
    expected_plan_width,
    plan_oversample,
    plan_simple_random,
    plan_stratified,
)

DEFAULT_AGREE_DISAGREEMENT = 0.15  # judges unanimous: about AMHART's per-judge disagreement
DEFAULT_SPLIT_DISAGREEMENT = 0.40  # judges split: a dissent is a sign the label is hard
MIN_PREVIOUS_LABELS = 30  # fewer earlier human labels than this and the defaults are kept
DEFAULT_BOOST = 3.0
CONFIDENCE = 0.95
GRID = (25, 50, 100, 200, 400, 800)


@dataclass(frozen=True)
class PlanUnit:
    """One judged conversation that a plan may pick, with what planning needs of it."""

    id: int
    code: str
    chatbot: str
    persona: str
    flagged: bool  # at least the plan's threshold of split or no-majority labels
    labels: tuple[str | None, ...]
    split: tuple[bool, ...]

    @property
    def n_split(self) -> int:
        return sum(self.split)

    @property
    def stratum(self) -> str:
        return f"{self.chatbot} | {self.persona}"


@dataclass(frozen=True)
class Population:
    run: JudgeRun
    source: LabelSource
    instrument: str  # "amhart" (checklists) or "vera_mh" (question flows)
    units: list[PlanUnit]
    threshold: int = 1
    labels: RunLabels | None = None  # the source's labels the units were built from
    splits: dict[tuple[int, str], bool] = field(default_factory=dict)

    @property
    def n_flagged(self) -> int:
        return sum(u.flagged for u in self.units)

    def split_histogram(self) -> list[tuple[str, int]]:
        """Return how many conversations have 0, 1, 2, 3 or more split or no-majority labels."""
        counts = [0, 0, 0, 0]
        for unit in self.units:
            counts[min(unit.n_split, 3)] += 1
        return list(zip(("none", "1", "2", "3 or more"), counts, strict=True))


def plan_population(run: JudgeRun, source: LabelSource, threshold: int = 1) -> Population:
    """Return the run's conversations that a plan draws from (integrity-flagged ones left out).

    A conversation counts as one where the judges disagreed when at least ``threshold`` of
    its labels had a split vote or no majority: with many items and a few judges, nearly
    every conversation has one split label, so the threshold lets the oversampling target
    the conversations with the most disagreement.
    """
    labels = run_labels(run, source)
    splits = run_label_splits(run)
    units = []
    for cid, conversation in labels.conversations.items():
        mine = labels.of(cid)
        keys = [k for k in labels.items if k in mine]
        split = tuple(splits.get((cid, k), False) for k in keys)
        units.append(
            PlanUnit(
                id=cid, code=conversation.code, chatbot=conversation.chatbot, persona=conversation.persona,
                flagged=sum(split) >= max(1, threshold),
                labels=tuple(mine[k] for k in keys), split=split,
            )
        )
    kind = "vera_mh" if run.mode == JudgeMode.FLOW else "amhart"
    return Population(run, source, kind, units, max(1, threshold), labels, splits)


@dataclass(frozen=True)
class PlanOptions:
    """What the coordinator chose: method, size, seed and the planning values."""

    method: str
    n: int
    seed: int | None = None
    boost: float = DEFAULT_BOOST
    allocation: str = "proportional"
    d_agree: float = DEFAULT_AGREE_DISAGREEMENT
    d_split: float = DEFAULT_SPLIT_DISAGREEMENT
    min_split: int = 1  # oversampling: split or no-majority labels that flag a conversation


def _draw(population: Population, options: PlanOptions, n: int, seed: int) -> DrawnPlan:
    units = population.units
    ids = [u.id for u in units]
    if options.method == SamplingMethod.SIMPLE_RANDOM:
        return plan_simple_random(ids, n, seed)
    if options.method == SamplingMethod.STRATIFIED:
        return plan_stratified(ids, [u.stratum for u in units], n, seed, allocation=options.allocation)  # type: ignore[arg-type]
    if options.method == SamplingMethod.OVERSAMPLE:
        if not population.n_flagged and population.threshold == 1:
            raise AnnotationError(
                "no conversation of this run has a label where the judges disagreed (a single judge, or every vote "
                "unanimous): choose a simple random or stratified plan"
            )
        if not population.n_flagged:
            raise AnnotationError(
                f"no conversation of this run has {population.threshold} or more labels where the judges disagreed: "
                "lower the threshold, or choose a simple random or stratified plan"
            )
        if population.n_flagged == len(units):
            raise AnnotationError(
                f"every conversation has {population.threshold} or more labels where the judges disagreed, so there is "
                "nothing to oversample: raise the threshold, or choose a simple random or stratified plan"
            )
        return plan_oversample(ids, [u.flagged for u in units], n, seed, boost=options.boost,
                               strata=[u.chatbot for u in units])
    raise AnnotationError(f"unknown sampling method '{options.method}'")


def draw_plan(population: Population, options: PlanOptions, *, n: int | None = None, seed: int | None = None) -> DrawnPlan:
    """Draw the plan (the picked conversations and every π); raise AnnotationError if impossible."""
    if not population.units:
        raise AnnotationError("this judge run has no conversation to sample (none judged, or all flagged by the integrity checks)")
    size = options.n if n is None else n
    if size > len(population.units):
        raise AnnotationError(
            f"the run has {len(population.units)} conversations to sample from: choose at most {len(population.units)}"
        )
    try:
        return _draw(population, options, options.n if n is None else n, options.seed if seed is None else seed or 0)
    except StatsInputError as exc:
        raise AnnotationError(str(exc)) from exc


def _stratum_label(key: Hashable) -> str:
    if isinstance(key, tuple):  # oversampling: (chatbot, flagged)
        return f"{key[0]} · {'judges disagreed' if key[1] else 'judges agreed'}"
    if isinstance(key, bool):
        return "judges disagreed" if key else "judges agreed"
    return "all conversations" if key is None else str(key)


def strata_rows(plan: DrawnPlan) -> list[dict[str, Any]]:
    """Return the plan's strata as JSON-ready rows (label, size, sample size, π)."""
    return [
        {"key": _stratum_label(s.key), "population": s.population, "sample_size": s.sample_size,
         "inclusion_prob": s.inclusion_prob}
        for s in plan.strata
    ]


def unit_strata(plan: DrawnPlan, population: Population) -> dict[int, str]:
    """Return each unit's stratum label as the plan defined it."""
    if plan.method == "simple_random":
        return {u.id: "all conversations" for u in population.units}
    if plan.method.startswith("stratified"):
        return {u.id: u.stratum for u in population.units}
    return {u.id: _stratum_label((u.chatbot, u.flagged)) for u in population.units}


@dataclass(frozen=True)
class Width:
    """Expected interval widths of the main score for one group of conversations."""

    group: str
    population: int
    expected_rated: float
    ppi_width: float | None
    human_only_width: float | None
    effective_n: float | None
    note: str = ""  # why a width is missing ("cannot be estimated: ...")
    two_phase_width: float | None = None  # the two-phase difference estimator's, for the API
    tuned_width: float | None = None  # PPI++ at the planning values' best λ
    tuned_lam: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _width(group: str, units: list[PlanUnit], probs: dict[Hashable, float], values: dict[int, tuple[float, float]]) -> Width:
    scored = [u for u in units if u.id in values]
    expected = round(sum(probs[u.id] for u in units), 2)
    if len(scored) < 2:
        return Width(group, len(units), expected, None, None, None,
                     "cannot be estimated: fewer than two conversations with a judge score")
    scores = np.array([values[u.id][0] for u in scored])
    var_y = float(np.var(scores, ddof=1))
    planned = expected_plan_width(
        {u.id: probs[u.id] for u in scored}, var_y=var_y,
        residual_var={u.id: values[u.id][1] for u in scored}, confidence=CONFIDENCE,
    )
    flat = var_y <= 1e-12 * max(1.0, float(np.abs(scores).max()))
    note = (
        "cannot be estimated: the judges give every one of these conversations the same score, so there is no spread "
        "to plan a humans-only interval (or what the judges are worth) with" if flat else ""
    )
    return Width(
        group, len(units), expected,
        planned.ppi_width if planned.ppi_width > 0 else None,
        None if flat else planned.human_only_width,
        None if flat else planned.effective_n,
        note if flat or planned.ppi_width > 0 else "cannot be estimated: no spread in the planning values",
        planned.two_phase_width,
        planned.tuned_width if planned.tuned_width else None,
        planned.tuned_lam,
    )


def plan_values(population: Population, options: PlanOptions) -> tuple[dict[int, tuple[float, float]], str]:
    """Return each scoreable unit's (judge score, expected squared error), and what the score is."""
    units = population.units
    disagreement = [[options.d_split if s else options.d_agree for s in u.split] for u in units]
    try:
        planned = planning_values([list(u.labels) for u in units], disagreement, instrument=population.instrument)  # type: ignore[arg-type]
    except StatsInputError as exc:
        raise AnnotationError(f"planning needs the instrument's usual labels: {exc}") from exc
    values = {
        u.id: (float(score), float(r))
        for u, score, r in zip(units, planned.scores, planned.residual, strict=True)
        if score == score  # NaN: no score, the conversation cannot count
    }
    return values, planned.note


def plan_widths(population: Population, plan: DrawnPlan, values: dict[int, tuple[float, float]]) -> tuple[Width, list[Width]]:
    """Return the plan's expected widths pooled and per chatbot."""
    by_chatbot: dict[str, list[PlanUnit]] = defaultdict(list)
    for unit in population.units:
        by_chatbot[unit.chatbot].append(unit)
    pooled = _width("all chatbots", population.units, plan.inclusion_prob, values)
    per_chatbot = [_width(name, group, plan.inclusion_prob, values) for name, group in sorted(by_chatbot.items())]
    return pooled, per_chatbot


@dataclass(frozen=True)
class PreviousDisagreement:
    """How often the run's labels disagreed with earlier human consensus on the same conversations."""

    d_agree: float | None
    n_agree: int
    d_split: float | None
    n_split: int
    studies: tuple[str, ...]


def _same(a: str, b: str) -> bool:
    if is_na_label(a) and is_na_label(b):
        return True
    return a.strip().casefold() == b.strip().casefold()


def previous_disagreement(population: Population, studies: Iterable[Study]) -> PreviousDisagreement:
    """Return the judge-human disagreement rates on consensus labels of ``studies`` (readable ones).

    Only main-instrument labels with both a judge label and a resolved consensus count; split
    and unanimous labels are counted apart (a single judge has no splits).
    """
    labels = population.labels or run_labels(population.run, population.source)
    splits = population.splits
    study_ids = [s.pk for s in studies]
    rows = (
        ConsensusLabel.objects.filter(study_id__in=study_ids, conversation_id__in=population.run.results.values("conversation_id"))
        .exclude(label="")
        .exclude(item_key__startswith="section:")
        .values_list("study__name", "conversation_id", "item_key", "label")
    )
    tally = {False: [0, 0], True: [0, 0]}  # split -> [disagreements, compared]
    names: set[str] = set()
    for study_name, cid, key, human in rows:
        judge = labels.of(cid).get(key)
        if judge is None:
            continue
        split = splits.get((cid, key), False)
        tally[split][0] += not _same(judge, human)
        tally[split][1] += 1
        names.add(study_name)
    rate = {k: (v[0] / v[1] if v[1] else None) for k, v in tally.items()}
    return PreviousDisagreement(rate[False], tally[False][1], rate[True], tally[True][1], tuple(sorted(names)))


@dataclass
class PlanPreview:
    """Everything the page shows before the study is created."""

    population: Population
    options: PlanOptions
    plan: DrawnPlan
    strata: list[dict[str, Any]]
    pooled: Width
    per_chatbot: list[Width]
    what: str
    grid: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def width_notes(self) -> list[str]:
        """Return, per group, why an expected width cannot be estimated (for the page)."""
        return [f"{w.group}: {w.note}." for w in [*self.per_chatbot, self.pooled] if w.note]

    def as_dict(self) -> dict[str, Any]:
        opts = self.options
        return {
            "run": self.population.run.pk,
            "source": self.population.source.key,
            "method": opts.method,
            "n": opts.n,
            "seed": opts.seed,
            "boost": opts.boost if opts.method == SamplingMethod.OVERSAMPLE else None,
            "allocation": opts.allocation if opts.method == SamplingMethod.STRATIFIED else None,
            "population": len(self.population.units),
            "n_flagged": self.population.n_flagged,
            "disagreement_threshold": self.population.threshold if opts.method == SamplingMethod.OVERSAMPLE else None,
            "split_histogram": dict(self.population.split_histogram()),
            "planning": {"disagreement_where_judges_agreed": opts.d_agree, "disagreement_where_judges_split": opts.d_split,
                         "confidence": CONFIDENCE, "score": self.what},
            "strata": self.strata,
            "expected_width": self.pooled.as_dict(),
            "expected_width_by_chatbot": [w.as_dict() for w in self.per_chatbot],
            "width_by_n": self.grid,
            "warnings": self.warnings,
        }


def plan_preview(run: JudgeRun, source_key: str | None, options: PlanOptions) -> PlanPreview:
    """Draw the plan and compute its expected widths (and a few other sizes) without writing."""
    try:
        source = label_source_get(run, source_key)
    except JudgingError as exc:
        raise AnnotationError(str(exc)) from exc
    population = plan_population(run, source, options.min_split)
    seed = options.seed if options.seed is not None else 0
    plan = draw_plan(population, options, seed=seed)
    values, what = plan_values(population, options)
    pooled, per_chatbot = plan_widths(population, plan, values)
    grid = []
    sizes = sorted({n for n in (*GRID, options.n) if len(plan.strata) <= n <= len(population.units)})
    for n in sizes:
        width = pooled if n == options.n else plan_widths(population, draw_plan(population, options, n=n, seed=seed), values)[0]
        grid.append({"n": n, "ppi_width": width.ppi_width, "tuned_width": width.tuned_width,
                     "human_only_width": width.human_only_width,
                     "chosen": n == options.n})
    warnings = []
    if not run.is_finished:
        warnings.append(f"Run {run.pk} is still {run.get_status_display().lower()}: its labels, and so the plan, may change.")
    thin = [w.group for w in per_chatbot if w.expected_rated < 2]
    if thin:
        warnings.append("Fewer than two rated conversations expected for " + ", ".join(thin)
                        + ": no judge-assisted interval for them. Rate more, or stratify.")
    return PlanPreview(population, options, plan, strata_rows(plan), pooled, per_chatbot, what, grid, warnings)

