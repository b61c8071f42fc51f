"""Judge drift between two versions: flips, agreement per item, and each version against humans.

Version A (the earlier: a previous prompt, model or instrument version) and version B are label
sources of judge runs (:mod:`judging.sources`): a run's ensemble or one of its judges. They are
compared on the conversations both judged: per item, how often B gave A's label (percent
agreement and Cohen's kappa between the versions), and every (conversation, item) whose label
flipped, with both versions' rationales. With a study's human consensus as reference, each
version's agreement with the clinicians per item and pooled, and the difference B − A with a
paired bootstrap interval over conversations (:func:`stats.drift.drift_report`).
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

from django.db.models import Count, Max

from annotation.models import Study
from corpus.models import Item
from judging.models import EnsembleLabel, JudgeLabel, JudgeRun
from judging.sources import LabelSource, RunLabels, label_source_get, run_label_details, run_labels
from reports import jobs
from reports.devset.selectors import split_conversation_ids, split_current
from reports.judge_assisted.selectors import study_human_labels
from reports.models import HoldoutPart
from reports.selectors import study_data_version
from stats.agreement import cohen_kappa
from stats.data import NA_CATEGORY, is_na_label
from stats.drift import drift_report, flip_directions, label_flips, paired_kappa_difference

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260115  # fixed: the same labels always give the same interval
CONFIDENCE = 0.95


def _stamp(run: JudgeRun) -> str:
    labels = JudgeLabel.objects.filter(result__run=run).aggregate(n=Count("id"), last=Max("result__finished_at"))
    ensemble = EnsembleLabel.objects.filter(run=run).aggregate(n=Count("id"))
    return f"{run.pk}|{run.status}|{labels}|{ensemble}"


KIND = "judge_drift"


def judge_drift(
    *, run_a: JudgeRun, source_a: LabelSource, run_b: JudgeRun, source_b: LabelSource, study: Study | None,
) -> dict[str, Any]:
    """Return the drift report of version B against version A (cached per data state)."""
    params = {"run_a": run_a.pk, "source_a": source_a.key, "run_b": run_b.pk, "source_b": source_b.key,
              "study": study.pk if study else 0}
    return jobs.report_get(KIND, params, wait=True)  # computed in the request: these pages have no pending state yet


def _params(params: dict[str, Any]) -> tuple[JudgeRun, LabelSource, JudgeRun, LabelSource, Study | None]:
    runs = JudgeRun.objects.select_related("instrument").in_bulk([params["run_a"], params["run_b"]])
    run_a, run_b = runs[params["run_a"]], runs[params["run_b"]]
    study = Study.objects.filter(pk=params["study"]).first() if params["study"] else None
    return run_a, label_source_get(run_a, params["source_a"]), run_b, label_source_get(run_b, params["source_b"]), study


def _data_version(params: dict[str, Any]) -> str:
    run_a, _, run_b, _, study = _params(params)
    split = split_current(study) if study else None
    version = "|".join([_stamp(run_a), _stamp(run_b), study_data_version(study) if study else "-",
                        f"split={split.pk if split else 0}"])
    return hashlib.sha256(version.encode()).hexdigest()[:32]


def _compute_report(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    progress(0.1, "reading both versions' labels")
    return _compute(*_params(params))


def _version(run: JudgeRun, source: LabelSource) -> dict[str, Any]:
    return {"run": run.pk, "run_name": run.name, "source": source.key, "name": source.name,
            "label": f"run #{run.pk} · {source.name}", "instrument": str(run.instrument)}


def _rows(labels: RunLabels, shared: set[int]) -> dict[tuple[str, str], str]:
    return {
        (labels.conversations[cid].code, key): label
        for cid in shared
        for key, label in labels.of(cid).items()
        if label is not None
    }


def _norm(label: str | None) -> str | None:
    return None if label is None else _norm_text(label)


@lru_cache(maxsize=4096)
def _norm_text(label: str) -> str:
    return NA_CATEGORY if is_na_label(label) else label.strip().casefold()


def _kappa(pairs: list[tuple[str, str]]) -> float | None:
    if not pairs:
        return None
    return cohen_kappa([_norm(x) for x, _ in pairs], [_norm(y) for _, y in pairs]).kappa


def _titles(*runs: JudgeRun) -> dict[str, str]:
    titles: dict[str, str] = {}
    for run in runs:
        for key, number, text, domain in Item.objects.filter(instrument_id=run.instrument_id).values_list("key", "number", "text", "domain"):
            titles.setdefault(key, f"{number}. {text}" if number else text)
            if domain:
                titles.setdefault(domain, domain)
    return titles


def _compute(run_a: JudgeRun, source_a: LabelSource, run_b: JudgeRun, source_b: LabelSource, study: Study | None) -> dict[str, Any]:
    a, b = run_labels(run_a, source_a), run_labels(run_b, source_b)
    judged_a, judged_b = set(a.conversations), set(b.conversations)
    # A study split for judge development: the versions are compared on its development set only.
    # Its test set's conversations are left out altogether (flips included), so revising a judge
    # never shows a held-out conversation.
    split = split_current(study) if study is not None else None
    development = split_conversation_ids(split, HoldoutPart.DEV) if split is not None else None
    n_test_left_out = 0
    if development is not None:
        held_out = split_conversation_ids(split, HoldoutPart.TEST)  # type: ignore[arg-type]
        n_test_left_out = len((judged_a | judged_b) & held_out)
        judged_a, judged_b = judged_a & development, judged_b & development
    shared = judged_a & judged_b
    payload: dict[str, Any] = {
        "a": _version(run_a, source_a),
        "b": _version(run_b, source_b),
        "study": study.pk if study else None,
        "n_shared_conversations": len(shared),
        "n_only_a": len(judged_a - shared),
        "n_only_b": len(judged_b - shared),
        "notes": [],
    }
    if n_test_left_out:
        payload["n_test_left_out"] = n_test_left_out
    if run_a.instrument_id != run_b.instrument_id:
        payload["notes"].append(
            f"The versions used different instruments ({run_a.instrument} and {run_b.instrument}): only items with the "
            "same key are compared."
        )
    if run_a.pk == run_b.pk and source_a.key == source_b.key:
        payload["notes"].append("Both versions are the same labels: nothing can differ.")
    if not shared:
        payload["empty"] = "The two versions share no judged conversation."
        return payload
    rows_a, rows_b = _rows(a, shared), _rows(b, shared)
    titles = _titles(run_a, run_b)
    order = {k: n for n, k in enumerate(dict.fromkeys([*b.items, *a.items]))}
    reference: dict[tuple[str, str], str] = {}
    if study is not None:
        codes = {cid: a.conversations[cid].code for cid in shared}
        # The clinicians' labels of the development set only: the test set's are never read here.
        if split is not None:
            payload["notes"].append(
                f"Human reference: the development set of the study's split {split.number} ({split.n_dev} conversations); "
                f"its {split.n_test} test-set conversations are held out for versions declared final"
                + (f" ({n_test_left_out} of them judged here, left out of this comparison)." if n_test_left_out else ".")
            )
            payload["holdout"] = {"set": "development", "split": split.number, "n_conversations": split.n_dev}
        for cid, items in study_human_labels(study, conversation_ids=development).items():
            if cid in codes:
                reference.update({(codes[cid], key): label for key, label in items.items() if label is not None})
        payload["n_reference"] = len(reference)
        if not reference:
            payload["notes"].append("The study has no human consensus on the shared conversations yet: compute consensus first.")
    humans: dict[Any, Any] = {}
    if reference:
        report = drift_report(rows_a, rows_b, reference, n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED, confidence=CONFIDENCE)
        flips = report.flips
        humans = {item: diff.as_dict() for item, diff in report.per_item.items()}
        humans[None] = report.pooled.as_dict()
        payload["bootstrap"] = {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "confidence": CONFIDENCE,
                                "method": "paired percentile bootstrap over conversations"}
    else:
        flips = label_flips(rows_a, rows_b)
    kappas = _human_kappas(rows_a, rows_b, reference)
    directions, directions_pooled = flip_directions(flips.flips, reference)
    items = []
    for drift in sorted(flips.items, key=lambda d: order.get(d.item, 10**6)):
        items.append({
            "item": drift.item, "title": titles.get(drift.item, drift.item),
            "n_compared": drift.n_compared, "n_same": drift.n_same, "n_flipped": drift.n_flipped,
            "agreement": drift.agreement, "kappa": drift.kappa, "n_only_a": drift.n_only_a, "n_only_b": drift.n_only_b,
            "humans": {**humans[drift.item], **kappas.get(drift.item, {})} if drift.item in humans else None,
            "directions": _directions(directions.get(drift.item), drift.item),
        })
    pooled = flips.pooled
    payload["items"] = items
    payload["pooled"] = {
        "item": None, "title": "All items", "n_compared": pooled.n_compared, "n_same": pooled.n_same,
        "n_flipped": pooled.n_flipped, "agreement": pooled.agreement, "kappa": pooled.kappa,
        "n_only_a": pooled.n_only_a, "n_only_b": pooled.n_only_b,
        "humans": {**humans[None], **kappas.get(None, {})} if None in humans else None,
        "directions": directions_pooled.as_dict(),
    }
    payload["titles"] = {str(i["item"]): i["title"] for i in items}
    payload["flips"] = _flip_rows(flips.flips, a, reference)
    return payload


def _directions(found: Any, item: Any) -> dict[str, Any]:
    if found is None:
        return {"item": item, "n_flipped": 0, "towards": 0, "away": 0, "other": 0, "no_reference": 0, "net": 0}
    return found.as_dict()


def _human_kappas(rows_a: dict, rows_b: dict, reference: dict) -> dict[Any, dict[str, Any]]:
    """Return Cohen's kappa of each version with the humans, on the pairs all three labelled, and B − A.

    The difference has a paired bootstrap interval over conversations (``stats.drift.paired_kappa_difference``,
    the same resamples, seed and confidence as the agreement difference).
    """
    pairs: dict[Any, list[tuple[str, str, str, str]]] = {}
    for key, human in reference.items():
        if key in rows_a and key in rows_b:
            pairs.setdefault(key[1], []).append((key[0], human, rows_a[key], rows_b[key]))
    out: dict[Any, dict[str, Any]] = {}
    for item, rows in [*pairs.items(), (None, [t for ts in pairs.values() for t in ts])]:
        change = paired_kappa_difference(
            [h for _, h, _, _ in rows], [x for _, _, x, _ in rows], [y for _, _, _, y in rows],
            units=[u for u, _, _, _ in rows], n_resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED, confidence=CONFIDENCE,
        )
        out[item] = {
            "kappa_a": _kappa([(h, x) for _, h, x, _ in rows]),
            "kappa_b": _kappa([(h, y) for _, h, _, y in rows]),
            "kappa_difference": change.difference,
            "kappa_interval": change.interval.as_dict(),
        }
    return out


def _flip_rows(flips, a: RunLabels, reference: dict) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Return every flipped label with the humans' label when known (rationales: :func:`with_rationales`)."""
    ids = {c.code: cid for cid, c in a.conversations.items()}
    return [
        {
            "conversation": flip.unit,
            "conversation_id": ids[flip.unit],
            "chatbot": a.conversations[ids[flip.unit]].chatbot,
            "item": flip.item,
            "label_a": flip.label_a,
            "label_b": flip.label_b,
            "human": reference.get((flip.unit, flip.item)),
        }
        for flip in flips
    ]


def with_rationales(
    flips: list[dict[str, Any]], run_a: JudgeRun, source_a: LabelSource, run_b: JudgeRun, source_b: LabelSource,
    *, chunk: int = 2000,
) -> list[dict[str, Any]]:
    """Return the flips with both versions' rationales (a judge's, or each ensemble judge's vote).

    Read on demand for the flips shown or exported, not cached with the report: a drift between
    two noisy versions of a large run can hold tens of thousands of flips. Two queries per chunk.
    """
    out = []
    for start in range(0, len(flips), chunk):
        part = flips[start : start + chunk]
        pairs = [(f["conversation_id"], str(f["item"])) for f in part]
        details_a = run_label_details(run_a, source_a, pairs)
        details_b = run_label_details(run_b, source_b, pairs)
        for flip, pair in zip(part, pairs, strict=True):
            da, db = details_a.get(pair), details_b.get(pair)
            out.append({
                **flip,
                "rationale_a": da.rationale if da else "",
                "rationale_b": db.rationale if db else "",
                "votes_a": [list(v) for v in da.votes] if da else [],
                "votes_b": [list(v) for v in db.votes] if db else [],
            })
    return out


FLIP_HEADER = ["conversation", "chatbot", "item", "label_a", "label_b", "human_consensus", "rationale_a", "rationale_b"]
ITEM_HEADER = [
    "item", "n_compared", "n_same", "n_flipped", "agreement_between_versions", "kappa_between_versions",
    "n_only_a", "n_only_b", "human_agreement_a", "human_agreement_b", "difference_b_minus_a", "ci_low", "ci_high",
    "kappa_with_humans_a", "kappa_with_humans_b", "n_conversations", "n_pairs", "n_a_better", "n_b_better",
    "kappa_difference_b_minus_a", "kappa_ci_low", "kappa_ci_high", "flips_towards_humans", "flips_away_from_humans",
    "flips_neither", "flips_without_consensus",
]


def _rationale(text: str, votes: list[list[Any]]) -> str:
    if votes:
        return " | ".join(f"{judge}: {label or 'no label'}" + (f" ({why})" if why else "") for judge, label, why in votes)
    return text


def flip_csv_rows(flips: list[dict[str, Any]]) -> list[list[Any]]:
    """Return the flips (with rationales, from :func:`with_rationales`) as CSV rows."""
    return [
        [f["conversation"], f["chatbot"], f["item"], f["label_a"], f["label_b"], f["human"] or "",
         _rationale(f["rationale_a"], f["votes_a"]), _rationale(f["rationale_b"], f["votes_b"])]
        for f in flips
    ]


def item_csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    out = []
    for row in [*payload.get("items", []), *([payload["pooled"]] if payload.get("pooled") else [])]:
        h = row.get("humans") or {}
        d = row.get("directions") or {}
        ci = h.get("interval") or {}
        out.append([
            row["item"] if row["item"] is not None else "pooled", row["n_compared"], row["n_same"], row["n_flipped"],
            row["agreement"], row["kappa"], row["n_only_a"], row["n_only_b"], h.get("agreement_a"), h.get("agreement_b"),
            h.get("difference"), ci.get("low"), ci.get("high"), h.get("kappa_a"), h.get("kappa_b"),
            h.get("n_units"), h.get("n_rows"), h.get("n_a_better"), h.get("n_b_better"),
            h.get("kappa_difference"), (h.get("kappa_interval") or {}).get("low"), (h.get("kappa_interval") or {}).get("high"),
            d.get("towards"), d.get("away"), d.get("other"), d.get("no_reference"),
        ])
    return out


jobs.register(KIND, version=_data_version, compute=_compute_report)
