"""Active sampling, the reads: the batches so far, the estimate now, the next batch and its expected width.

The estimate uses the conversations visited by *complete* batches: batches whose rated
conversations all have a final human consensus (computed, none provisional). A batch still
being rated is left out whole, so the estimate never mixes in a half-rated batch (the
increments of a batch are independent given the batches before it: leaving a whole batch out
keeps the martingale structure of :mod:`stats.active`; it assumes how fast a batch is rated
does not depend on its ratings). The next batch's probabilities depend only on complete
batches too (its τ is re-tuned on their ratings), so they are known before it is drawn.

Estimates are given per chatbot and over all chatbots; the plan stops asking for batches when
the interval the plan's stop rule names is at most the target width, with at least
:data:`MIN_RATED_TO_STOP` rated conversations behind it (the normal interval's minimum here),
or when the budget is spent or every conversation has been visited.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from annotation.errors import AnnotationError
from annotation.models import ActiveBatch, ActivePlan, ActiveStopRule, ActiveUnit, Study
from annotation.sampling.active.population import ActivePopulation, active_population
from annotation.sampling.active.ratings import human_scores, waiting_for_consensus
from annotation.sampling.active.state import (
    MIN_RATED_TO_STOP,
    STATUS_BUDGET,
    STATUS_REACHED,
    STATUS_SAMPLING,
    STATUS_VISITED,
    ActiveState,
    BatchRow,
    GroupRow,
    NextBatch,
)
from stats.active import (
    MIN_TUNE,
    TAU_START,
    ActiveEstimate,
    active_estimate,
    active_probabilities,
    expected_active_width,
    planned_variance,
    tune_mixing,
)

__all__ = ["MIN_RATED_TO_STOP", "POOLED", "ActiveState", "active_plan_get", "active_state", "human_scores"]

POOLED = "all chatbots"


def plan_active_population(plan: ActivePlan) -> ActivePopulation:
    """Return the plan's population, read again from its run (a finished run does not change)."""
    planning = plan.planning or {}
    return active_population(
        plan.judge_run, plan.source, plan.uncertainty,
        d_agree=float(planning.get("d_agree", 0.15)), d_split=float(planning.get("d_split", 0.40)),
    )


def active_plan_get(study: Study) -> ActivePlan:
    """Return the study's active plan or raise AnnotationError (404) when it has none."""
    plan = ActivePlan.objects.filter(study=study).select_related("judge_run", "study").first()
    if plan is None:
        raise AnnotationError("this study was not built by active sampling", status=404)
    return plan


def _estimates(
    population: ActivePopulation, rows: list[tuple[int, float, bool]], human: dict[int, np.ndarray], confidence: float,
    group_of: dict[int, str],
) -> dict[str, ActiveEstimate]:
    """Return the estimate per chatbot and pooled from visited (conversation, π, selected) rows."""
    index = population.index()
    k = population.judge.shape[1]
    grouped: dict[str, list[tuple[int, float, bool]]] = defaultdict(list)
    for row in rows:
        grouped[group_of[row[0]]].append(row)
        grouped[POOLED].append(row)
    out = {}
    for group, members in grouped.items():
        f = np.array([population.judge[index[c]] for c, _, _ in members]).reshape(-1, k)
        y = np.array([human[c] if sel and c in human else np.full(k, np.nan) for c, _, sel in members]).reshape(-1, k)
        out[group] = active_estimate(f, y, [s for _, _, s in members], [p for _, p, _ in members],
                                     target=population.target, confidence=confidence)
    return out


def _empty(population: ActivePopulation, confidence: float) -> ActiveEstimate:
    return active_estimate(np.zeros((0, population.judge.shape[1])), np.zeros((0, population.judge.shape[1])), [], [],
                           target=population.target, confidence=confidence)


def active_state(plan: ActivePlan) -> ActiveState:
    """Return the plan's batches, estimates, next batch, expected widths and status (a fixed number of queries)."""
    population = plan_active_population(plan)
    index = population.index()
    study = plan.study
    batches = list(plan.batches.order_by("number"))
    units = list(
        ActiveUnit.objects.filter(batch__plan=plan).order_by("position")
        .values_list("batch__number", "conversation_id", "position", "uncertainty", "inclusion_prob", "selected")
    )
    human = human_scores(study, population.instrument)
    notes: list[str] = []
    gone = [cid for _, cid, *_ in units if cid not in index]
    if gone:
        notes.append(f"{len(gone)} visited conversation(s) are no longer among the run's judged conversations (flagged by "
                     "the integrity checks since): left out of the estimate.")
    by_batch: dict[int, list[tuple[int, int, float, float, bool]]] = defaultdict(list)
    for number, cid, position, u, pi, selected in units:
        by_batch[number].append((cid, position, u, pi, selected))
    rows_of_batch = []
    for batch in batches:
        members = by_batch.get(batch.number, [])
        chosen = [cid for cid, _, _, _, sel in members if sel]
        rated = sum(cid in human for cid in chosen)
        rows_of_batch.append(BatchRow(batch, rated, rated == len(chosen)))
    complete = {b.batch.number for b in rows_of_batch if b.complete}
    group_of = population.chatbots
    visited = [(cid, pi, sel) for number in sorted(complete) for cid, _, _, pi, sel in by_batch.get(number, []) if cid in index]
    estimates = _estimates(population, visited, human, plan.confidence, group_of)

    # The judge errors seen so far: to re-tune τ and to rescale the planning values.
    rated = [(cid, u, pi) for number in sorted(complete) for cid, _, u, pi, sel in by_batch.get(number, [])
             if sel and cid in index and cid in human and not np.isnan(human[cid]).any()]
    errors = np.array([float((human[c] - population.judge[index[c]]) @ population.gradient) ** 2 for c, _, _ in rated])
    planned = np.array([population.planned_error[index[c]] for c, _, _ in rated])
    weights = np.array([1 / pi for _, _, pi in rated])
    calibration = None
    if len(rated) >= MIN_TUNE and float(weights @ planned) > 0:
        calibration = float(weights @ errors) / float(weights @ planned)
    residual = population.planned_error * (calibration if calibration is not None else 1.0)

    next_batch, stop = _next_batch(plan, population, batches, rated, errors, index)
    # Batches still being rated will be in the estimate by the time the next one is: count them as planned.
    pending = [(cid, pi) for number, members in by_batch.items() if number not in complete
               for cid, _, _, pi, _ in members if cid in index]
    groups_now = sorted({group_of[c] for c in population.ids})
    rows: list[GroupRow] = []
    for group in [*groups_now, POOLED]:
        members = [i for i, c in enumerate(population.ids) if group == POOLED or group_of[c] == group]
        estimate = estimates.get(group) or _empty(population, plan.confidence)
        rows.append(_group_row(plan, population, group, members, estimate, next_batch, residual, visited, pending, index))
    pooled = rows.pop()
    status, text = _status(plan, rows, pooled, stop)
    state = ActiveState(plan, population, rows_of_batch, rows, pooled, next_batch if status == STATUS_SAMPLING else None,
                        status, text, calibration=calibration, notes=notes)
    state.history = _history(population, by_batch, complete, human, plan.confidence, group_of, index)
    state.units = _unit_rows(population, units, human, complete)
    state.waiting_for_consensus = waiting_for_consensus(study, [cid for _, cid, *_, sel in units if sel], human)
    if calibration is not None:
        notes.append(f"Expected widths use the planning values rescaled by {calibration:.2f}, the ratio of the squared "
                     "judge errors seen so far to the planned ones (inverse-probability weighted).")
    return state


def _next_batch(
    plan: ActivePlan, population: ActivePopulation, batches: list[ActiveBatch], rated: list[tuple[int, float, float]],
    errors: np.ndarray, index: dict[int, int],
) -> tuple[NextBatch | None, str]:
    """Return the batch that would be drawn now, or None and why none is (budget, population)."""
    order = list(plan.order)
    start = max((b.visit_end for b in batches), default=0)
    # The next visit_size conversations of the order (skipping any the run no longer holds).
    positions: list[int] = []
    end = start
    while end < len(order) and len(positions) < plan.visit_size:
        if order[end] in index:
            positions.append(end)
        end += 1
    if not positions:
        return None, STATUS_VISITED
    remaining = plan.budget - sum(b.n_selected for b in batches)
    if remaining < 1:
        return None, STATUS_BUDGET
    chunk = [order[p] for p in positions]
    expected = min(len(chunk) * plan.budget / plan.population, float(remaining))
    start = float((plan.planning or {}).get("tau_start", max(TAU_START, plan.floor)))
    tau, tuned_on = tune_mixing(
        [u for _, u, _ in rated], errors, [pi for _, _, pi in rated],
        mean_uncertainty=population.mean_uncertainty, floor=plan.floor, start=start,
    )
    u = np.array([population.uncertainty[index[c]] for c in chunk])
    probs = active_probabilities(u, expected, tau=tau)
    return NextBatch(len(batches) + 1, chunk, positions, u, probs, tau, tuned_on if tuned_on >= MIN_TUNE else 0,
                     float(probs.sum()), end), STATUS_SAMPLING


def _group_row(
    plan: ActivePlan, population: ActivePopulation, group: str, members: list[int], estimate: ActiveEstimate,
    next_batch: NextBatch | None, residual: np.ndarray, visited: list[tuple[int, float, bool]],
    pending: list[tuple[int, float]], index: dict[int, int],
) -> GroupRow:
    scores = population.planned_score[members]
    var_y = float(np.var(scores, ddof=1)) if len(members) >= 2 else 0.0
    mine = set(population.ids[i] for i in members)
    expected_next, n_next, rated_next = None, 0, 0.0
    if next_batch is not None:
        picks = [i for i, c in enumerate(next_batch.ids) if c in mine]
        n_next = len(picks)
        rated_next = float(next_batch.probs[picks].sum()) if picks else 0.0
        extra = planned_variance(var_y, residual[[index[next_batch.ids[i]] for i in picks]], next_batch.probs[picks])

        def planned(rows: list[tuple[int, float]]) -> float:
            return float(planned_variance(var_y, residual[[index[c] for c, _ in rows]], [pi for _, pi in rows]).sum()) if rows else 0.0

        if estimate.spread is not None:
            so_far, n_so_far = estimate.spread * estimate.n_visited, estimate.n_visited
        else:
            seen = [(c, pi) for c, pi, _ in visited if c in mine]
            so_far, n_so_far = planned(seen), len(seen)
        waiting = [(c, pi) for c, pi in pending if c in mine]
        so_far, n_so_far = so_far + planned(waiting), n_so_far + len(waiting)
        expected_next = expected_active_width(visited_variance=so_far, n_visited=n_so_far, next_variance=extra,
                                              confidence=plan.confidence) if n_so_far + n_next else None
    width = estimate.width
    if estimate.cannot_estimate:
        why = estimate.cannot_estimate
    elif estimate.n_rated < MIN_RATED_TO_STOP:
        why = f"only {estimate.n_rated} rated conversations ({MIN_RATED_TO_STOP} needed before the interval may stop the study)"
    elif width is not None and width > plan.target_width:
        why = f"width {width:.3g} is above the target {plan.target_width:.3g}"
    else:
        why = ""
    return GroupRow(group, len(members), estimate, expected_next, n_next, rated_next, not why, why)


def _status(plan: ActivePlan, groups: list[GroupRow], pooled: GroupRow, stop: str) -> tuple[str, str]:
    confidence = f"{plan.confidence:.0%}"
    watched = [pooled] if plan.stop_on == ActiveStopRule.POOLED else groups
    if watched and all(g.reached for g in watched):
        whose = "the interval over all chatbots is" if plan.stop_on == ActiveStopRule.POOLED else "every chatbot's interval is"
        return STATUS_REACHED, (f"Target reached: {whose} at most {plan.target_width:g} wide ({confidence}), with at least "
                                f"{MIN_RATED_TO_STOP} rated conversations behind each. No further batch is needed.")
    if stop == STATUS_BUDGET:
        return stop, (f"The budget of {plan.budget} ratings is spent: no further batch. The target width was not reached; "
                      "the intervals are as narrow as these ratings make them.")
    if stop == STATUS_VISITED:
        return stop, ("Every conversation of the run has been visited: no further batch. The target width was not "
                      "reached; the intervals are as narrow as these ratings make them.")
    if all(g.estimate.n_visited == 0 for g in watched):
        return STATUS_SAMPLING, ("No batch is fully rated yet, so there is no estimate: a batch counts once all its drawn "
                                 "conversations have a final consensus. The widths expected after the next batch count "
                                 "the batches drawn so far as rated.")
    short = [g for g in watched if not g.reached]
    if len(short) > 2:
        return STATUS_SAMPLING, (f"Not there yet: {len(short)} of the {len(watched)} chatbots' intervals cannot stop the study "
                                 "yet (the table below says why for each).")
    return STATUS_SAMPLING, "Not there yet: " + "; ".join(f"{g.group}: {g.why_not}" for g in short) + "."


def _history(
    population: ActivePopulation, by_batch: dict[int, list[tuple[int, int, float, float, bool]]], complete: set[int],
    human: dict[int, np.ndarray], confidence: float, group_of: dict[int, str], index: dict[int, int],
) -> list[dict[str, Any]]:
    """Return, after each complete batch, the widths the complete batches up to it give."""
    out = []
    rows: list[tuple[int, float, bool]] = []
    for number in sorted(complete):
        rows = rows + [(cid, pi, sel) for cid, _, _, pi, sel in by_batch.get(number, []) if cid in index]
        estimates = _estimates(population, rows, human, confidence, group_of)
        out.append({"batch": number, "n_visited": len(rows), "n_rated": estimates[POOLED].n_rated if POOLED in estimates else 0,
                    "widths": {g: e.width for g, e in sorted(estimates.items())}})
    return out


def _unit_rows(
    population: ActivePopulation, units: list[tuple[int, int, int, float, float, bool]], human: dict[int, np.ndarray],
    complete: set[int],
) -> list[dict[str, Any]]:
    index = population.index()
    out = []
    for number, cid, position, u, pi, selected in units:
        row = index.get(cid)
        out.append({
            "conversation": population.codes.get(cid, str(cid)), "chatbot": population.chatbots.get(cid, ""),
            "batch": number, "position": position, "uncertainty": u, "inclusion_prob": pi, "weight": 1 / pi,
            "selected": selected, "rated": bool(selected and cid in human), "batch_complete": number in complete,
            "judge_score": float(population.judge[row] @ population.gradient) if row is not None else None,
            "judge_score_fallback": bool(population.judge_missing[row]) if row is not None else None,
        })
    return out


