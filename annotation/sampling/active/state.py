"""Active sampling: what the page, API and CSV show (plain data; computed by :mod:`.selectors`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from annotation.models import ActiveBatch, ActivePlan, ActiveStopRule, UncertaintyMeasure
from annotation.sampling.active.population import ActivePopulation
from stats.active import ESTIMATOR, MIN_TUNE, SMALL_N, TAU_START, ActiveEstimate

MIN_RATED_TO_STOP = SMALL_N
STATUS_SAMPLING, STATUS_REACHED, STATUS_BUDGET, STATUS_VISITED = "sampling", "target_reached", "budget_spent", "all_visited"


@dataclass(frozen=True)
class NextBatch:
    """The batch a coordinator would draw now: the conversations it visits and their probabilities."""

    number: int
    ids: list[int]
    positions: list[int]
    uncertainty: np.ndarray
    probs: np.ndarray
    tau: float
    tuned_on: int
    expected: float
    visit_end: int  # the visit order's position after the batch's last conversation

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number, "n_visit": len(self.ids), "expected_ratings": self.expected, "tau": self.tau,
            "tuned_on": self.tuned_on, "min_inclusion_prob": float(self.probs.min()) if self.probs.size else None,
            "max_inclusion_prob": float(self.probs.max()) if self.probs.size else None,
        }


@dataclass
class GroupRow:
    """One chatbot (or all of them): the estimate now, the width expected after the next batch."""

    group: str
    n_population: int
    estimate: ActiveEstimate
    expected_next: float | None
    n_next: int
    expected_rated_next: float
    reached: bool
    why_not: str

    def as_dict(self) -> dict[str, Any]:
        return {"group": self.group, "n_population": self.n_population, **self.estimate.as_dict(),
                "expected_width_after_next_batch": self.expected_next, "next_batch_visits": self.n_next,
                "next_batch_expected_ratings": self.expected_rated_next, "target_reached": self.reached,
                "not_reached_because": self.why_not or None}


@dataclass
class BatchRow:
    batch: ActiveBatch
    n_rated: int
    complete: bool


@dataclass
class ActiveState:
    """Everything the active sampling page, API and CSV show."""

    plan: ActivePlan
    population: ActivePopulation
    batches: list[BatchRow]
    groups: list[GroupRow]
    pooled: GroupRow
    next_batch: NextBatch | None
    status: str
    status_text: str
    history: list[dict[str, Any]] = field(default_factory=list)
    calibration: float | None = None
    notes: list[str] = field(default_factory=list)
    units: list[dict[str, Any]] = field(default_factory=list)
    waiting_for_consensus: int = 0

    @property
    def can_draw(self) -> bool:
        return self.status == STATUS_SAMPLING and self.next_batch is not None

    @property
    def n_selected(self) -> int:
        return sum(b.batch.n_selected for b in self.batches)

    @property
    def n_visited(self) -> int:
        return sum(b.batch.n_visited for b in self.batches)

    @property
    def n_rated(self) -> int:
        return sum(b.n_rated for b in self.batches)

    def parameters(self) -> dict[str, Any]:
        """Return every setting a methods paragraph needs to describe the design."""
        plan = self.plan
        planning = plan.planning or {}
        return {
            "judge_run": plan.judge_run_id, "source": plan.source, "source_name": self.population.source_name,
            "uncertainty": plan.uncertainty, "uncertainty_label": UncertaintyMeasure(plan.uncertainty).label,
            "budget": plan.budget, "batch_size": plan.batch_size, "visit_size": plan.visit_size,
            "population": plan.population, "floor": plan.floor, "tau_start": planning.get("tau_start", TAU_START),
            "tau_tuned_after": MIN_TUNE, "target_width": plan.target_width, "stop_on": plan.stop_on,
            "stop_on_label": ActiveStopRule(plan.stop_on).label, "min_rated_to_stop": MIN_RATED_TO_STOP,
            "confidence": plan.confidence, "seed": plan.seed, "batch_seeds": [b.batch.seed for b in self.batches],
            "assignment_seeds": [b.batch.assignment_seed for b in self.batches],
            "score": planning.get("score"), "score_label": self.population.score_label,
            "d_agree": planning.get("d_agree"), "d_split": planning.get("d_split"),
            "sampling": "Poisson (each visited conversation rated independently with its probability)",
            "visit_order": "a random permutation of the run's conversations from the plan's seed; batch t visits the "
            "next visit_size conversations",
        }

    def as_dict(self, *, with_units: bool = True) -> dict[str, Any]:
        plan = self.plan
        out = {
            "study": plan.study_id, "status": self.status, "status_text": self.status_text,
            "parameters": self.parameters(), "estimator": ESTIMATOR,
            "n_visited": self.n_visited, "n_selected": self.n_selected, "n_rated": self.n_rated,
            "waiting_for_consensus": self.waiting_for_consensus,
            "batches": [
                {"number": b.batch.number, "tau": b.batch.tau, "tuned_on": b.batch.tuned_on,
                 "expected_ratings": b.batch.expected, "n_visited": b.batch.n_visited,
                 "n_selected": b.batch.n_selected, "n_rated": b.n_rated, "complete": b.complete,
                 "seed": b.batch.seed, "assignment_seed": b.batch.assignment_seed,
                 "width_before": b.batch.width_before, "expected_width": b.batch.expected_width,
                 "created_at": b.batch.created_at.isoformat()}
                for b in self.batches
            ],
            "estimates": [g.as_dict() for g in self.groups],
            "pooled": self.pooled.as_dict(),
            "next_batch": self.next_batch.as_dict() if self.next_batch else None,
            "history": self.history,
            "planning_rescaled_by": self.calibration,
            "notes": self.notes,
        }
        if with_units:
            out["conversations"] = self.units
        return out


