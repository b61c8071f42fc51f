"""The conversations an active plan draws from: the judges' score of each and how unsure they were.

A judge run's (integrity-checked) conversations, each with:

* the judges' score Ŷ_i from the plan's label source (the run's ensemble or one judge): the
  conversation's AMHART score yes/(yes+no) for checklists, or its VERA-MH Best Practice, High
  Potential for Harm and relevant label counts for question flows (the overall score is a
  function of their means). Where the source gave no score (every label missing or not
  applicable) the run's mean is used: any fixed prediction keeps the active estimator
  unbiased (:mod:`stats.active`), it is only less useful;
* its uncertainty u_i, one of two measures the coordinator picks: **ensemble disagreement**,
  the share of its labels where the judges split or found no majority, or the **spread of the
  judges' scores**, the standard deviation of the conversation's score across the run's
  judges. A conversation the source could not score gets the largest uncertainty of the run:
  the judges could not tell, so the clinicians should;
* a planning value r_i of the squared judge error E[(Y_i - Ŷ_i)²] (:mod:`stats.planning`, from
  assumed disagreement rates where the judges agreed and where they split), for the expected
  width after the next batch.

Everything is read in a fixed number of queries (one per judge for the spread).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from annotation.errors import AnnotationError
from annotation.models import SamplingMethod, UncertaintyMeasure
from annotation.sampling.selectors import PlanOptions, Population, plan_population, plan_values
from judging.errors import JudgingError
from judging.models import JudgeRun
from judging.sources import label_source_get, run_label_sources, run_labels
from stats.data import StatsInputError
from stats.ppi import engine
from stats.ppi.scores import VERA_MH, amhart_conversation_scores, vera_mh_counts
from stats.scores import vera_mh_score


@dataclass
class ActivePopulation:
    """The run's conversations as an active plan sees them (arrays aligned with ``ids``)."""

    run: JudgeRun
    source_key: str
    source_name: str
    instrument: str  # "amhart" (checklists) or "vera_mh" (question flows)
    uncertainty_measure: str
    ids: list[int]
    codes: dict[int, str]
    chatbots: dict[int, str]
    judge: np.ndarray  # N x k judges' scores (fallback filled in)
    judge_missing: np.ndarray  # bool: the source gave no score, the fallback stands in
    uncertainty: np.ndarray
    planned_error: np.ndarray  # r_i in score units squared (linearised for VERA-MH)
    planned_score: np.ndarray  # the (linearised) judges' score the planning values use
    gradient: np.ndarray  # linearises a row of means into score units (at the judges' pooled means)
    target: engine.Target
    score_label: str

    def index(self) -> dict[int, int]:
        """Return each conversation id's row."""
        return {cid: i for i, cid in enumerate(self.ids)}

    @property
    def mean_uncertainty(self) -> float:
        return float(self.uncertainty.mean()) if self.uncertainty.size else 0.0


def _judge_scores(population: Population) -> tuple[np.ndarray, np.ndarray]:
    labels = [list(u.labels) for u in population.units]
    try:
        if population.instrument == "vera_mh":
            rows = vera_mh_counts(labels, "judge")
        else:
            rows = amhart_conversation_scores(labels, "judge")[:, None]
    except StatsInputError as exc:
        raise AnnotationError(f"active sampling needs the instrument's usual labels: {exc}") from exc
    missing = np.isnan(rows).any(axis=1)
    if missing.all():
        raise AnnotationError("the judges gave no conversation of this run a score (every label missing or not applicable)")
    filled = rows.copy()
    filled[missing] = rows[~missing].mean(axis=0)
    return filled, missing


def _conversation_score(labels: list[str | None], instrument: str) -> float:
    if instrument == "vera_mh":
        try:
            score = vera_mh_score(labels).score
        except ValueError:
            return float("nan")
        return float("nan") if score is None else float(score)
    value = amhart_conversation_scores([labels], "judge")[0]
    return float(value)


def _spread(run: JudgeRun, population: Population) -> np.ndarray:
    """Return the standard deviation (ddof 0) of each conversation's score across the run's judges."""
    judges = [s for s in run_label_sources(run) if not s.is_ensemble]
    scores = np.full((len(population.units), len(judges)), np.nan)
    for j, source in enumerate(judges):
        labels = run_labels(run, source)
        for i, unit in enumerate(population.units):
            mine = labels.of(unit.id)
            try:
                scores[i, j] = _conversation_score([mine[k] for k in labels.items if k in mine], population.instrument)
            except StatsInputError:
                scores[i, j] = np.nan
    out = np.zeros(len(population.units))
    for i, row in enumerate(scores):
        present = row[~np.isnan(row)]
        out[i] = float(np.std(present)) if present.size >= 2 else 0.0
    return out


def active_population(
    run: JudgeRun, source_key: str | None, uncertainty: str, *, d_agree: float, d_split: float
) -> ActivePopulation:
    """Return the run's conversations with their judges' scores, uncertainty and planning values.

    Raises AnnotationError for a run that is not finished, one with fewer than two judges
    (one judge has no disagreement to measure), an unknown source or measure, or a run whose
    judges scored no conversation.
    """
    if not run.is_finished:
        raise AnnotationError(
            f"run {run.pk} is still {run.get_status_display().lower()}: active sampling rests on every judge's labels, "
            "so wait until the run has finished"
        )
    try:
        source = label_source_get(run, source_key)
    except JudgingError as exc:
        raise AnnotationError(str(exc)) from exc
    if len([s for s in run_label_sources(run) if not s.is_ensemble]) < 2:
        raise AnnotationError(
            "active sampling needs a run with two or more judges: with one judge there is no disagreement to tell the "
            "hard conversations from the easy ones (use a simple random sampling plan instead)"
        )
    if uncertainty not in UncertaintyMeasure.values:
        raise AnnotationError(f"unknown uncertainty measure '{uncertainty}'")
    population = plan_population(run, source)
    if not population.units:
        raise AnnotationError("this judge run has no conversation to sample (none judged, or all flagged by the integrity checks)")
    judge, missing = _judge_scores(population)
    if uncertainty == UncertaintyMeasure.DISAGREEMENT:
        u = np.array([unit.n_split / len(unit.split) if unit.split else 1.0 for unit in population.units])
    else:
        u = _spread(run, population)
    u[missing] = max(float(u.max()), 1e-9) if u.size else 1.0
    values, _ = plan_values(population, PlanOptions(method=SamplingMethod.SIMPLE_RANDOM, n=1, d_agree=d_agree, d_split=d_split))
    residual = np.array([values[unit.id][1] if unit.id in values else np.nan for unit in population.units])
    planned = np.array([values[unit.id][0] if unit.id in values else np.nan for unit in population.units])
    if np.isnan(residual).all():
        residual[:] = 0.0
    residual[np.isnan(residual)] = float(np.nanmean(residual))
    if population.instrument == "vera_mh":
        target = VERA_MH
        gradient = VERA_MH.gradient(judge.mean(axis=0))
        if not np.isfinite(gradient).all():
            raise AnnotationError("the judges found no relevant label in this run: the VERA-MH score is undefined")
        label = "VERA-MH overall score (0-100 points)"
    else:
        target = engine.MEAN
        gradient = np.ones(1)
        label = "AMHART score (yes / (yes + no), mean over conversations)"
    planned[np.isnan(planned)] = (judge @ gradient)[np.isnan(planned)]
    return ActivePopulation(
        run=run, source_key=source.key, source_name=source.name, instrument=population.instrument,
        uncertainty_measure=uncertainty, ids=[u.id for u in population.units],
        codes={u.id: u.code for u in population.units}, chatbots={u.id: u.chatbot for u in population.units},
        judge=judge, judge_missing=missing, uncertainty=u, planned_error=residual, planned_score=planned,
        gradient=gradient, target=target, score_label=label,
    )
