"""Rater drift and load: agreement with consensus and time per conversation by queue position.

Per rater, the (non-calibration) queue is split into thirds by position: first, middle and last
(:func:`stats.fatigue.position_thirds`). In each third: how many conversations were rated, the
share of their labels that agree with the human consensus (and Cohen's kappa), the share that
agree with the other raters of the same conversations, and the time per conversation (median
and mean of the active time the rating page recorded). Labels whose consensus is unresolved (a
tie: with two raters per conversation, every disagreement until adjudicated) cannot be compared
with it and are counted; agreement with the other raters needs no consensus and does not count
the rater's own answer. Last third minus
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
from collections.abc import Callable
from datetime import timedelta
from functools import lru_cache
from typing import Any

from annotation.models import Study
from annotation.rating.sittings import split_sittings
from reports import jobs
from reports.judge_assisted.selectors import study_human_labels
from reports.raters import selectors
from stats.agreement import cohen_kappa
from stats.data import NA_CATEGORY, is_na_label
from stats.fatigue import cluster_share_difference, position_thirds

THIRDS = ("first", "middle", "last")
Rows = tuple[list[int], list[int]]  # 0/1 agreement per label, and each label's rating (cluster)
ORDERS = ("queue", "submitted")
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260122


KIND = "rater_drift"


def rater_drift(*, study: Study, order: str = "queue") -> dict[str, Any]:
    """Return the rater drift and load report of a study (cached per data state)."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}")
    return jobs.report_get(KIND, {"study": study.pk, "order": order}, wait=True)  # computed in the request: these pages have no pending state yet


def _study(params: dict[str, Any]) -> Study:
    return Study.objects.select_related("instrument", "section").get(pk=params["study"])


def _compute_report(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    progress(0.1, "reading every rater's queue")
    return _compute(_study(params), params["order"])


@lru_cache(maxsize=4096)
def _norm(label: str) -> str:
    return NA_CATEGORY if is_na_label(label) else label.strip().casefold()


Others = dict[int, list[dict[str, str]]]  # conversation id -> the other raters' labels (per rater)


def _cell(
    entries: list[selectors.QueueEntry], consensus: dict[int, dict[str, str | None]], others: Callable[[selectors.QueueEntry], list[dict[str, str]]],
) -> tuple[dict[str, Any], Rows, Rows]:
    """Return a third's figures and its per-label agreement (1/0, with each label's rating id)
    with the consensus and with the other raters of the same conversations."""
    done = [e for e in entries if e.submitted]
    correct, clusters, pairs = [], [], []
    peer, peer_clusters = [], []
    no_consensus = 0
    for entry in done:
        reference = consensus.get(entry.conversation_id, {})
        for key, label in entry.labels.items():
            for other in others(entry):
                if key in other:
                    peer.append(int(_norm(label) == _norm(other[key])))
                    peer_clusters.append(entry.assignment_id)
            truth = reference.get(key)
            if truth is None:
                no_consensus += 1
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
        "n_no_consensus": no_consensus,
        "agreement": sum(correct) / len(correct) if correct else None,
        "kappa": kappa,
        "n_peer_pairs": len(peer),
        "agreement_with_others": sum(peer) / len(peer) if peer else None,
        "median_seconds": statistics.median(seconds) if seconds else None,
        "mean_seconds": statistics.fmean(seconds) if seconds else None,
        "n_timed": len(seconds),
    }
    return figures, (correct, clusters), (peer, peer_clusters)


def _split(queue: list[selectors.QueueEntry], order: str) -> list[list[selectors.QueueEntry]]:
    if order == "submitted":
        queue = sorted((e for e in queue if e.submitted), key=lambda e: (e.submitted_at, e.assignment_id))
    thirds: list[list[selectors.QueueEntry]] = [[], [], []]
    for entry, third in zip(queue, position_thirds(len(queue)), strict=True):
        thirds[third].append(entry)
    return thirds


def _difference(first: Rows, last: Rows, seed: int) -> dict[str, Any]:
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
    by_conversation: dict[int, list[tuple[str, dict[str, str]]]] = {}
    for name, queue in queues.items():
        for entry in queue:
            if entry.submitted:
                by_conversation.setdefault(entry.conversation_id, []).append((name, entry.labels))

    def others_of(name: str) -> Callable[[selectors.QueueEntry], list[dict[str, str]]]:
        return lambda entry: [labels for who, labels in by_conversation.get(entry.conversation_id, []) if who != name]

    pooled_entries: list[list[tuple[str, selectors.QueueEntry]]] = [[], [], []]
    for n, (name, queue) in enumerate(sorted(queues.items())):
        thirds = _split(queue, order)
        cells, raw, peers = [], [], []
        for third, entries in zip(THIRDS, thirds, strict=True):
            figures, vs_consensus, vs_others = _cell(entries, consensus, others_of(name))
            cells.append({"third": third, **figures})
            raw.append(vs_consensus)
            peers.append(vs_others)
        for i in range(3):
            pooled_entries[i].extend((name, e) for e in thirds[i])
        overall, _, _ = _cell(queue, consensus, others_of(name))
        payload["raters"].append({
            "rater": name,
            "overall": overall,
            "thirds": cells,
            "last_minus_first": _difference(raw[0], raw[2], BOOTSTRAP_SEED + n),
            "last_minus_first_others": _difference(peers[0], peers[2], BOOTSTRAP_SEED + 1000 + n),
            "sittings": _sittings(queue, study),
        })
    pooled_cells, pooled_raw, pooled_peers = [], [], []
    for third, members in zip(THIRDS, pooled_entries, strict=True):
        figures: dict[str, Any] = {}
        consensus_rows: Rows = ([], [])
        peer_rows: Rows = ([], [])
        for name in sorted({who for who, _ in members}):
            part, a, b = _cell([e for who, e in members if who == name], consensus, others_of(name))
            for key, value in part.items():
                figures.setdefault(key, []).append(value)
            consensus_rows[0].extend(a[0])
            consensus_rows[1].extend(a[1])
            peer_rows[0].extend(b[0])
            peer_rows[1].extend(b[1])
        pooled_cells.append({"third": third, **_merge(figures, consensus_rows, peer_rows, members)})
        pooled_raw.append(consensus_rows)
        pooled_peers.append(peer_rows)
    payload["pooled"] = {
        "thirds": pooled_cells,
        "last_minus_first": _difference(pooled_raw[0], pooled_raw[2], BOOTSTRAP_SEED - 1),
        "last_minus_first_others": _difference(pooled_peers[0], pooled_peers[2], BOOTSTRAP_SEED - 2),
    }
    if not consensus:
        payload["notes"] = ["No human consensus yet: compute consensus on the study page to see agreement by position."]
    return payload


def _merge(figures: dict[str, list[Any]], consensus_rows: Rows, peer_rows: Rows, members: list[tuple[str, selectors.QueueEntry]]) -> dict[str, Any]:
    """Return one third's figures over all raters (sums of counts, shares and times recomputed)."""
    seconds = [e.seconds for _, e in members if e.submitted and e.seconds > 0]
    return {
        "n_assigned": sum(figures.get("n_assigned", [])),
        "n_submitted": sum(figures.get("n_submitted", [])),
        "n_labels": len(consensus_rows[0]),
        "n_no_consensus": sum(figures.get("n_no_consensus", [])),
        "agreement": sum(consensus_rows[0]) / len(consensus_rows[0]) if consensus_rows[0] else None,
        "kappa": None,  # per rater only: pooled kappa would mix the raters' own label rates
        "n_peer_pairs": len(peer_rows[0]),
        "agreement_with_others": sum(peer_rows[0]) / len(peer_rows[0]) if peer_rows[0] else None,
        "median_seconds": statistics.median(seconds) if seconds else None,
        "mean_seconds": statistics.fmean(seconds) if seconds else None,
        "n_timed": len(seconds),
    }


CSV_HEADER = ["rater", "third", "n_assigned", "n_submitted", "n_labels", "n_no_consensus", "agreement_with_consensus",
              "kappa_with_consensus", "n_peer_pairs", "agreement_with_other_raters", "median_seconds", "mean_seconds", "n_timed"]


def csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    rows = []
    blocks = [(r["rater"], [*r["thirds"], {"third": "all", **r["overall"]}]) for r in payload.get("raters", [])]
    if payload.get("pooled"):
        blocks.append(("all raters", payload["pooled"]["thirds"]))
    for name, cells in blocks:
        for c in cells:
            rows.append([name, c["third"], c["n_assigned"], c["n_submitted"], c["n_labels"], c["n_no_consensus"], c["agreement"],
                         c["kappa"], c["n_peer_pairs"], c["agreement_with_others"], c["median_seconds"], c["mean_seconds"], c["n_timed"]])
    return rows


jobs.register(KIND, version=lambda params: selectors.data_version(_study(params)), compute=_compute_report)
