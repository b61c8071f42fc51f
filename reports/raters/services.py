"""Rater drift and load: agreement with consensus and time per conversation by queue position.

Per rater, the (non-calibration) queue is split into thirds by position: first, middle and last
(:func:`stats.fatigue.position_thirds`). In each third: how many conversations were rated, the
share of their labels that agree with the human consensus (and Cohen's kappa), and the time per
conversation (median and mean of the active time the rating page recorded). Last third minus
first third, per rater and pooled over raters, comes with a bootstrap interval
(:func:`stats.fatigue.cluster_share_difference`). Sittings (:mod:`annotation.rating.sittings`)
show the load: how many conversations a rater rates in one go, against the study's soft limit.

``order="submitted"`` splits by the order the rater actually submitted in instead (raters may
skip around their queue). The consensus includes each rater's own answer, so the level of
agreement is flattering, more so with few raters per conversation; the change between thirds
is the fatigue signal.
"""

from __future__ import annotations

import statistics
from datetime import timedelta
from typing import Any

from annotation.models import Study
from annotation.rating.sittings import split_sittings
from reports.judge_assisted.selectors import study_human_labels
from reports.raters import selectors
from reports.services import cached
from stats.agreement import cohen_kappa
from stats.data import NA_CATEGORY, is_na_label
from stats.fatigue import cluster_share_difference, position_thirds

THIRDS = ("first", "middle", "last")
ORDERS = ("queue", "submitted")
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260122


def rater_drift(*, study: Study, order: str = "queue") -> dict[str, Any]:
    """Return the rater drift and load report of a study (cached per data state)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}")
    return cached(f"raters:{study.pk}:{order}", selectors.data_version(study), lambda: _compute(study, order))


def _norm(label: str) -> str:
    return NA_CATEGORY if is_na_label(label) else label.strip().casefold()


def _cell(entries: list[selectors.QueueEntry], consensus: dict[int, dict[str, str | None]]) -> tuple[dict[str, Any], list[int], list[int]]:
    """Return a third's figures and its per-label agreement (1/0) with each label's rating id."""
    done = [e for e in entries if e.submitted]
    correct, clusters, pairs = [], [], []
    for entry in done:
        reference = consensus.get(entry.conversation_id, {})
        for key, label in entry.labels.items():
            truth = reference.get(key)
            if truth is None:
                continue
            same = _norm(label) == _norm(truth)
            correct.append(int(same))
            clusters.append(entry.assignment_id)
            pairs.append((_norm(label), _norm(truth)))
    seconds = [e.seconds for e in done if e.seconds > 0]
    kappa = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]).kappa if pairs else None
    figures = {
        "n_assigned": len(entries),
        "n_submitted": len(done),
        "n_labels": len(correct),
        "agreement": sum(correct) / len(correct) if correct else None,
        "kappa": kappa,
        "median_seconds": statistics.median(seconds) if seconds else None,
        "mean_seconds": statistics.fmean(seconds) if seconds else None,
        "n_timed": len(seconds),
    }
    return figures, correct, clusters


def _split(queue: list[selectors.QueueEntry], order: str) -> list[list[selectors.QueueEntry]]:
    if order == "submitted":
        queue = sorted((e for e in queue if e.submitted), key=lambda e: (e.submitted_at, e.assignment_id))
    thirds: list[list[selectors.QueueEntry]] = [[], [], []]
    for entry, third in zip(queue, position_thirds(len(queue)), strict=True):
        thirds[third].append(entry)
    return thirds


def _difference(first: tuple[list[int], list[int]], last: tuple[list[int], list[int]], seed: int) -> dict[str, Any]:
    result = cluster_share_difference(first[0], first[1], last[0], last[1], n_resamples=BOOTSTRAP_RESAMPLES, seed=seed)
    return result.as_dict()


def _sittings(queue: list[selectors.QueueEntry], study: Study) -> dict[str, Any]:
    times = [e.submitted_at for e in queue if e.submitted]
    sittings = split_sittings(times, timedelta(minutes=max(1, study.sitting_gap_minutes)))
    sizes = [len(s) for s in sittings]
    return {
        "n_sittings": len(sizes),
        "longest": max(sizes) if sizes else None,
        "mean": statistics.fmean(sizes) if sizes else None,
        "over_limit": sum(1 for n in sizes if study.sitting_limit and n > study.sitting_limit),
    }


def _compute(study: Study, order: str) -> dict[str, Any]:
    queues = selectors.study_rater_queues(study)
    consensus = study_human_labels(study)
    payload: dict[str, Any] = {
        "study": study.pk,
        "order": order,
        "thirds": list(THIRDS),
        "sitting_limit": study.sitting_limit,
        "sitting_gap_minutes": study.sitting_gap_minutes,
        "n_consensus_conversations": len(consensus),
        "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED,
                      "method": "percentile bootstrap, ratings resampled within each third"},
        "raters": [],
    }
    if not queues:
        payload["empty"] = "No rater has an assignment in this study yet."
        return payload
    pooled: list[tuple[list[int], list[int]]] = [([], []), ([], []), ([], [])]
    pooled_entries: list[list[selectors.QueueEntry]] = [[], [], []]
    for n, (name, queue) in enumerate(sorted(queues.items())):
        thirds = _split(queue, order)
        cells, raw = [], []
        for third, entries in zip(THIRDS, thirds, strict=True):
            figures, correct, clusters = _cell(entries, consensus)
            cells.append({"third": third, **figures})
            raw.append((correct, clusters))
        for i in range(3):
            pooled[i][0].extend(raw[i][0])
            pooled[i][1].extend(raw[i][1])
            pooled_entries[i].extend(thirds[i])
        overall, _, _ = _cell(queue, consensus)
        payload["raters"].append({
            "rater": name,
            "overall": overall,
            "thirds": cells,
            "last_minus_first": _difference(raw[0], raw[2], BOOTSTRAP_SEED + n),
            "sittings": _sittings(queue, study),
        })
    payload["pooled"] = {
        "thirds": [{"third": t, **_cell(entries, consensus)[0]} for t, entries in zip(THIRDS, pooled_entries, strict=True)],
        "last_minus_first": _difference(pooled[0], pooled[2], BOOTSTRAP_SEED - 1),
    }
    if not consensus:
        payload["notes"] = ["No human consensus yet: compute consensus on the study page to see agreement by position."]
    return payload


CSV_HEADER = ["rater", "third", "n_assigned", "n_submitted", "n_labels", "agreement_with_consensus", "kappa_with_consensus",
              "median_seconds", "mean_seconds", "n_timed"]


def csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    rows = []
    blocks = [(r["rater"], [*r["thirds"], {"third": "all", **r["overall"]}]) for r in payload.get("raters", [])]
    if payload.get("pooled"):
        blocks.append(("all raters", payload["pooled"]["thirds"]))
    for name, cells in blocks:
        for c in cells:
            rows.append([name, c["third"], c["n_assigned"], c["n_submitted"], c["n_labels"], c["agreement"], c["kappa"],
                         c["median_seconds"], c["mean_seconds"], c["n_timed"]])
    return rows
