"""Scorecards for any instrument: from a study's human consensus or a judge run's ensemble.

* yes/no items (``yes_no_na``, ``yes_no``, ``boolean``) are scored as AMHART scores them:
  yes / (yes + no) per conversation, N/A left out, cells the mean over conversations;
* category and 1-5 items are described as label distributions per chatbot (with the mean and
  median of a 1-5 item);
* free-text items are listed (study scorecards: each rater's text);
* a question flow (VERA-MH) gets its scores by dimension and overall.

Every scorecard counts the labels it expected and the ones it has, and says why the others are
missing (no consensus yet, too few ratings, unresolved, no majority among judges), so a page
never hides that half its labels are absent.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from corpus.instruments.labels import ItemLabels, UnknownAnswer, instrument_labels
from corpus.models import Instrument, InstrumentKind, Scale
from reports import selectors
from reports.jobs import Progress
from reports.methods.facts import consensus_facts, ensemble_facts, instrument_facts
from stats.scorecard import amhart_scorecard, label_distributions, vera_mh_scorecard

SCORED_SCALES = (Scale.YES_NO_NA, Scale.YES_NO, Scale.BOOLEAN)
DESCRIBED_SCALES = (Scale.CATEGORIES, Scale.ORDINAL_1_5)


def _respell(rows: list[dict[str, Any]], labels: dict[str, ItemLabels]) -> tuple[list[dict[str, Any]], int]:
    """Return rows with labels in their item's spelling; labels the item lacks become missing."""
    bad = 0
    for row in rows:
        spec = labels.get(row["item"])
        if spec is None or row["label"] is None:
            continue
        try:
            row["label"] = spec.normalise(row["label"])
        except UnknownAnswer:
            row["label"] = None
            bad += 1
    return rows, bad


def scorecard(
    rows: list[dict[str, Any]], instrument: Instrument, progress: Progress, weights: dict[str, float] | None = None
) -> dict[str, Any]:
    """Return the scorecard of long-form label rows (``reports.selectors.design_row``) for an instrument.

    ``weights`` (conversation code -> 1/π) makes the scores Hájek estimates under a sampling plan
    (:mod:`stats.scorecard`); the category and 1-5 distributions stay counts of the rated conversations.
    """
    labels = instrument_labels(instrument)
    rows, n_off_scale = _respell(rows, labels)
    info = {k: {"text": v.text, "number": v.number, "scale": v.scale} for k, v in labels.items()}
    labelled = [r for r in rows if r["label"] is not None]
    counts = {"n_conversations": len({r["conversation"] for r in labelled}), "n_chatbots": len({r["chatbot"] for r in labelled}),
              "instrument": instrument_facts(instrument)}
    if instrument.kind == InstrumentKind.FLOW:
        progress(0.5, "VERA-MH scores by dimension")
        card = vera_mh_scorecard(rows, weights)
        return {"kind": "vera-mh", "items_info": info, "n_off_scale": n_off_scale, **counts, **card}
    scored = [k for k, v in labels.items() if v.scale in SCORED_SCALES]
    described = {k: v for k, v in labels.items() if v.scale in DESCRIBED_SCALES}
    out: dict[str, Any] = {
        "kind": "checklist", "items_info": info, "n_off_scale": n_off_scale, **counts,
        "scored_items": scored, "described_items": list(described),
        "text_items": [k for k, v in labels.items() if v.is_text],
    }
    score_rows = [r for r in rows if r["item"] in set(scored)]
    progress(0.4, "scores of the yes/no items")
    if score_rows:
        out.update(amhart_scorecard(score_rows, weights))
        out.pop("empty", None)
    progress(0.7, "label distributions of the category and 1-5 items")
    if described:
        out.update(label_distributions(
            [r for r in rows if r["item"] in described],
            {k: v.labels for k, v in described.items()},
            ordinal=[k for k, v in described.items() if v.scale == Scale.ORDINAL_1_5],
            na_labels={k: v.na_labels for k, v in described.items()},
        ))
    if not rows:
        out["empty"] = True
    return out


def _coverage(expected: int, rows: list[dict[str, Any]], reasons: Counter[str], provisional: int = 0) -> dict[str, Any]:
    present = sum(1 for r in rows if r["label"] is not None)
    missing = max(0, expected - present)
    accounted = sum(reasons.values())
    if missing > accounted:
        reasons["not rated or not computed yet"] += missing - accounted
    return {
        "expected": expected,
        "present": present,
        "missing": missing,
        "missing_by_reason": dict(reasons),
        "provisional": provisional,
    }


def compute_study_scorecard(study: Any, progress: Progress) -> dict[str, Any]:
    """Return the study's scorecard from the human consensus (free text: the raters' answers)."""
    progress(0.1, "reading the consensus labels")
    rows = selectors.study_consensus_rows(study)
    status: Counter[str] = Counter()
    provisional = 0
    for r in rows:
        provenance, is_provisional = r.pop("provenance"), r.pop("provisional")
        if r["label"] is None:
            status[provenance] += 1
        elif is_provisional:
            provisional += 1
    weights, weighting = selectors.study_inclusion_weights(study)
    card = scorecard(rows, study.instrument, progress, weights)
    card["weighting"] = weighting
    card["consensus_rule"] = consensus_facts(study)
    n_items = len([k for k, v in instrument_labels(study.instrument).items() if not v.is_text])
    n_conversations = study.study_conversations.filter(is_calibration=False).count()
    reasons: Counter[str] = Counter()
    names = {"too_few": "too few ratings", "unresolved": "unresolved (needs adjudication)"}
    for provenance, n in status.items():
        reasons[names.get(provenance, provenance)] += n
    card["labels"] = _coverage(n_conversations * n_items, rows, reasons, provisional)
    card["source"] = "consensus"
    if not card["labels"]["present"]:
        card["empty"] = True
    if card.get("text_items"):
        progress(0.9, "free-text answers")
        card["text_answers"] = selectors.study_text_answers(study, card["text_items"])
    return card


def compute_run_scorecard(run: Any, progress: Progress) -> dict[str, Any]:
    """Return a judge run's scorecard from its ensemble labels (flagged conversations left out)."""
    progress(0.1, "reading the ensemble labels")
    rows, provenances, n_flagged = selectors.run_ensemble_rows_with_status(run)
    card = scorecard(rows, run.instrument, progress)
    reasons: Counter[str] = Counter()
    names = {"no_majority": "no majority among the judges", "tie": "judges tied", "no_ratings": "no judge labelled it"}
    for provenance, n in provenances.items():
        reasons[names.get(provenance, provenance)] += n
    card["labels"] = _coverage(len(rows), rows, reasons)
    card["labels"]["conversations_left_out"] = n_flagged
    card["source"] = f"judge run {run.pk} ensemble"
    card["ensemble"] = ensemble_facts(run)
    if not card["labels"]["present"]:
        card["empty"] = True
    return card
