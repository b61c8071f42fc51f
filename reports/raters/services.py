"""Rater drift and load: agreement with the other raters and time per conversation by queue position.

Each label of a rater is compared with the **leave-one-out consensus**: the consensus of the
*other* raters of the same conversation and item, never containing the rater's own answer
(:func:`stats.fatigue.leave_one_out_consensus`). It is the others' unique modal label; a tie
among the others is no consensus (counted, never broken), and with fewer than
:data:`stats.fatigue.MIN_OTHER_RATERS` other answers (fewer than 3 raters on the conversation)
there is none either: the figure is hidden and the page says why. (A consensus containing the
rater's own answer agrees with it by construction: with two raters, every cell read 100%.)
Agreement with the other raters, pair by pair, needs no consensus and is shown beside it.

Per rater, the (non-calibration) queue is split into thirds by position: first, middle and last
(:func:`stats.fatigue.position_thirds`). In each third: how many conversations were rated, the
share of labels that agree with the leave-one-out consensus (and Cohen's kappa), the share that
agree with each other rater, and the time per conversation (median and mean of the active time
the rating page recorded). Last third minus first third, per rater and pooled over raters,
comes with a bootstrap interval (:func:`stats.fatigue.cluster_share_difference`). Sittings
(:mod:`annotation.rating.sittings`) show the load: how many conversations a rater rates in one
go, against the study's soft limit.

Ratings without timing data (imported from a file: no active time recorded, ``submitted_at``
the moment of the import, positions the file's order) have no order in which they were rated,
no time and no sittings: they count in each rater's overall agreement only, never in the
thirds, the drift or the load, and the report says "no timing data".

``order="submitted"`` splits by the order the rater actually submitted in instead (raters may
skip around their queue).
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
from reports.raters import selectors
from stats.agreement import cohen_kappa
from stats.data import NA_CATEGORY, is_na_label
from stats.fatigue import (
    MIN_OTHER_RATERS,
    LeftOut,
    cluster_share_difference,
    leave_one_out_consensus,
    position_thirds,
)

THIRDS = ("first", "middle", "last")
Rows = tuple[list[int], list[int]]  # 0/1 agreement per label, and each label's rating (cluster)
ORDERS = ("queue", "submitted")
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260122
CONFIDENCE = 0.95
CONSENSUS = {
    "method": "leave-one-out",
    "min_raters": MIN_OTHER_RATERS + 1,
    "definition": (
        "each label is compared with the consensus of the other raters of the same conversation and item, "
        "never including the rater's own answer: the label given by more of the others than any other label. "
        "A tie among the others is no consensus (left out and counted), and a conversation item answered by "
        f"fewer than {MIN_OTHER_RATERS + 1} raters has none (one other rater is a pair, not a consensus). "
        "N/A is a label like the others."
    ),
}
NO_TIMING = (
    "No timing data: {n} rating(s) were imported from a file, so there is no order in which they were rated, "
    "no time per conversation and no sittings. They count in each rater's overall agreement only, never in "
    "the thirds, the drift or the load."
)


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


LooMap = dict[tuple[int, str, str], LeftOut]  # (conversation id, rater, item) -> the others' consensus
Others = Callable[[selectors.QueueEntry], list[dict[str, str]]]


def _agreement_note(n_labels: int, n_tie: int, n_too_few: int) -> str | None:
    """Return why there is no agreement with the leave-one-out consensus (None when there is)."""
    if n_labels:
        return None
    if not n_tie and not n_too_few:
        return "no rated label yet"
    reasons = []
    if n_too_few:
        reasons.append(f"fewer than {MIN_OTHER_RATERS + 1} raters on these conversations ({n_too_few} labels)")
    if n_tie:
        reasons.append(f"the other raters tie ({n_tie} labels)")
    return "hidden: " + "; ".join(reasons)


def _times(entries: list[selectors.QueueEntry]) -> dict[str, Any]:
    seconds = [e.seconds for e in entries if e.submitted and e.timed]
    return {
        "median_seconds": statistics.median(seconds) if seconds else None,
        "mean_seconds": statistics.fmean(seconds) if seconds else None,
        "n_timed": len(seconds),
        "n_untimed": sum(1 for e in entries if e.submitted and not e.timed),
    }


def _cell(entries: list[selectors.QueueEntry], name: str, loo: LooMap, others: Others) -> tuple[dict[str, Any], Rows, Rows]:
    """Return a group's figures and its per-label agreement (1/0, with each label's rating id)
    with the leave-one-out consensus and with each other rater of the same conversations."""
    done = [e for e in entries if e.submitted]
    correct, clusters, pairs = [], [], []
    peer, peer_clusters = [], []
    n_tie = n_too_few = 0
    for entry in done:
        for key, label in entry.labels.items():
            for other in others(entry):
                if key in other:
                    peer.append(int(_norm(label) == _norm(other[key])))
                    peer_clusters.append(entry.assignment_id)
            reference = loo.get((entry.conversation_id, name, key))
            if reference is None or reference.status == "too_few":
                n_too_few += 1
                continue
            if reference.status == "tie":
                n_tie += 1
                continue
            same = _norm(label) == reference.label
            correct.append(int(same))
            clusters.append(entry.assignment_id)
            pairs.append((_norm(label), reference.label))
    kappa = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs]).kappa if pairs else None
    figures = {
        "n_assigned": len(entries),
        "n_submitted": len(done),
        "n_labels": len(correct),
        "n_no_consensus": n_tie + n_too_few,
        "n_tie": n_tie,
        "n_too_few_raters": n_too_few,
        "agreement": sum(correct) / len(correct) if correct else None,
        "kappa": kappa,
        "agreement_note": _agreement_note(len(correct), n_tie, n_too_few),
        "n_peer_pairs": len(peer),
        "agreement_with_others": sum(peer) / len(peer) if peer else None,
        **_times(entries),
    }
    return figures, (correct, clusters), (peer, peer_clusters)


def _split(queue: list[selectors.QueueEntry], order: str) -> list[list[selectors.QueueEntry]]:
    """Return the thirds of the rater's timed work (work still to do counts in the queue order)."""
    if order == "submitted":
        queue = sorted((e for e in queue if e.submitted and e.timed), key=lambda e: (e.submitted_at, e.assignment_id))
    else:
        queue = [e for e in queue if e.timed or not e.submitted]
    thirds: list[list[selectors.QueueEntry]] = [[], [], []]
    for entry, third in zip(queue, position_thirds(len(queue)), strict=True):
        thirds[third].append(entry)
    return thirds


def _difference(first: Rows, last: Rows, seed: int) -> dict[str, Any]:
    result = cluster_share_difference(first[0], first[1], last[0], last[1], n_resamples=BOOTSTRAP_RESAMPLES, seed=seed,
                                      confidence=CONFIDENCE)
    return result.as_dict()


def _sittings(queue: list[selectors.QueueEntry], study: Study) -> dict[str, Any]:
    times = [e.submitted_at for e in queue if e.submitted and e.timed]
    sittings = split_sittings(times, timedelta(minutes=max(1, study.sitting_gap_minutes)))
    sizes = [len(s) for s in sittings]
    return {
        "n_sittings": len(sizes),
        "longest": max(sizes) if sizes else None,
        "mean": statistics.fmean(sizes) if sizes else None,
        "over_limit": sum(1 for n in sizes if study.sitting_limit and n > study.sitting_limit),
    }


def _leave_one_out(queues: dict[str, list[selectors.QueueEntry]]) -> tuple[LooMap, dict[int, list[tuple[str, dict[str, str]]]]]:
    """Return the leave-one-out consensus of every submitted label, and each conversation's raters."""
    by_conversation: dict[int, list[tuple[str, dict[str, str]]]] = {}
    for name, queue in queues.items():
        for entry in queue:
            if entry.submitted:
                by_conversation.setdefault(entry.conversation_id, []).append((name, entry.labels))
    loo: LooMap = {}
    for cid, raters in by_conversation.items():
        for key in dict.fromkeys(k for _, labels in raters for k in labels):
            given = {name: _norm(labels[key]) for name, labels in raters if labels.get(key) not in (None, "")}
            for name, left_out in leave_one_out_consensus(given).items():
                loo[(cid, name, key)] = left_out
    return loo, by_conversation


def _compute(study: Study, order: str) -> dict[str, Any]:
    queues = selectors.study_rater_queues(study)
    payload: dict[str, Any] = {
        "study": study.pk,
        "order": order,
        "thirds": list(THIRDS),
        "consensus": CONSENSUS,
        "sitting_limit": study.sitting_limit,
        "sitting_gap_minutes": study.sitting_gap_minutes,
        "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "confidence": CONFIDENCE,
                      "method": "percentile bootstrap, ratings resampled within each third"},
        "raters": [],
    }
    if not queues:
        payload["empty"] = "No rater has an assignment in this study yet."
        return payload
    loo, by_conversation = _leave_one_out(queues)
    done = [e for queue in queues.values() for e in queue if e.submitted]
    n_untimed = sum(1 for e in done if not e.timed)
    payload["timing"] = {"n_timed": len(done) - n_untimed, "n_untimed": n_untimed,
                         "note": NO_TIMING.format(n=n_untimed) if n_untimed else None}

    def others_of(name: str) -> Others:
        return lambda entry: [labels for who, labels in by_conversation.get(entry.conversation_id, []) if who != name]

    pooled_entries: list[list[tuple[str, selectors.QueueEntry]]] = [[], [], []]
    for n, (name, queue) in enumerate(sorted(queues.items())):
        overall, _, _ = _cell(queue, name, loo, others_of(name))
        timed = any(e.timed for e in queue if e.submitted) or not any(e.submitted for e in queue)
        row: dict[str, Any] = {"rater": name, "overall": overall, "timed": timed, "thirds": [],
                               "last_minus_first": None, "last_minus_first_others": None, "sittings": None}
        if timed:
            thirds = _split(queue, order)
            raw, peers = [], []
            for third, entries in zip(THIRDS, thirds, strict=True):
                figures, vs_consensus, vs_others = _cell(entries, name, loo, others_of(name))
                row["thirds"].append({"third": third, **figures})
                raw.append(vs_consensus)
                peers.append(vs_others)
            for i in range(3):
                pooled_entries[i].extend((name, e) for e in thirds[i])
            row["last_minus_first"] = _difference(raw[0], raw[2], BOOTSTRAP_SEED + n)
            row["last_minus_first_others"] = _difference(peers[0], peers[2], BOOTSTRAP_SEED + 1000 + n)
            row["sittings"] = _sittings(queue, study)
        payload["raters"].append(row)
    payload["pooled"] = {"overall": _pooled([(name, e) for name, queue in queues.items() for e in queue], loo, others_of),
                         "thirds": [], "last_minus_first": None, "last_minus_first_others": None}
    if payload["timing"]["n_timed"]:
        pooled_raw, pooled_peers = [], []
        for third, members in zip(THIRDS, pooled_entries, strict=True):
            figures, consensus_rows, peer_rows = _pooled_rows(members, loo, others_of)
            payload["pooled"]["thirds"].append({"third": third, **figures})
            pooled_raw.append(consensus_rows)
            pooled_peers.append(peer_rows)
        payload["pooled"]["last_minus_first"] = _difference(pooled_raw[0], pooled_raw[2], BOOTSTRAP_SEED - 1)
        payload["pooled"]["last_minus_first_others"] = _difference(pooled_peers[0], pooled_peers[2], BOOTSTRAP_SEED - 2)
    return payload


def _pooled(members: list[tuple[str, selectors.QueueEntry]], loo: LooMap, others_of: Callable[[str], Others]) -> dict[str, Any]:
    return _pooled_rows(members, loo, others_of)[0]


def _pooled_rows(
    members: list[tuple[str, selectors.QueueEntry]], loo: LooMap, others_of: Callable[[str], Others],
) -> tuple[dict[str, Any], Rows, Rows]:
    """Return one group's figures over all raters (counts summed, shares and times recomputed)."""
    counts: dict[str, int] = {}
    consensus_rows: Rows = ([], [])
    peer_rows: Rows = ([], [])
    for name in sorted({who for who, _ in members}):
        part, a, b = _cell([e for who, e in members if who == name], name, loo, others_of(name))
        for key in ("n_assigned", "n_submitted", "n_tie", "n_too_few_raters"):
            counts[key] = counts.get(key, 0) + part[key]
        consensus_rows[0].extend(a[0])
        consensus_rows[1].extend(a[1])
        peer_rows[0].extend(b[0])
        peer_rows[1].extend(b[1])
    n_tie, n_too_few = counts.get("n_tie", 0), counts.get("n_too_few_raters", 0)
    agree = consensus_rows[0]
    figures = {
        "n_assigned": counts.get("n_assigned", 0),
        "n_submitted": counts.get("n_submitted", 0),
        "n_labels": len(agree),
        "n_no_consensus": n_tie + n_too_few,
        "n_tie": n_tie,
        "n_too_few_raters": n_too_few,
        "agreement": sum(agree) / len(agree) if agree else None,
        "kappa": None,  # per rater only: pooled kappa would mix the raters' own label rates
        "agreement_note": _agreement_note(len(agree), n_tie, n_too_few),
        "n_peer_pairs": len(peer_rows[0]),
        "agreement_with_others": sum(peer_rows[0]) / len(peer_rows[0]) if peer_rows[0] else None,
        **_times([e for _, e in members]),
    }
    return figures, consensus_rows, peer_rows


CSV_HEADER = ["rater", "third", "n_assigned", "n_submitted", "n_labels", "n_tie", "n_too_few_raters",
              "agreement_with_consensus_of_others", "kappa_with_consensus_of_others", "n_peer_pairs",
              "agreement_with_other_raters", "median_seconds", "mean_seconds", "n_timed", "n_untimed"]


def csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    """Return the CSV rows: each rater's thirds (when timed) and overall, then all raters."""
    rows = []
    blocks = [(r["rater"], [*r["thirds"], {"third": "all", **r["overall"]}]) for r in payload.get("raters", [])]
    if payload.get("pooled"):
        blocks.append(("all raters", [*payload["pooled"]["thirds"], {"third": "all", **payload["pooled"]["overall"]}]))
    for name, cells in blocks:
        for c in cells:
            rows.append([name, c["third"], c["n_assigned"], c["n_submitted"], c["n_labels"], c["n_tie"], c["n_too_few_raters"],
                         c["agreement"], c["kappa"], c["n_peer_pairs"], c["agreement_with_others"], c["median_seconds"],
                         c["mean_seconds"], c["n_timed"], c["n_untimed"]])
    return rows


# "loo": payloads of this shape (leave-one-out consensus, timing data) replace older cached ones.
jobs.register(KIND, version=lambda params: "loo|" + selectors.data_version(_study(params)), compute=_compute_report)
