"""Report computations, cached per data version. The only place that calls the statistics package."""

from __future__ import annotations

import hashlib
import statistics
import time
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import Count, Max

from annotation.models import Study
from corpus.models import InstrumentKind, Scale
from reports import selectors
from reports.models import ReportCache
from stats import agreement_report, reference_agreement

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20260101  # fixed: the same data always gives the same intervals
PREVALENCE_WARNING = 0.85


def cached(key: str, version: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Return the cached payload for ``key`` at ``version``; compute and store it otherwise."""
    hit = ReportCache.objects.filter(key=key, data_version=version).first()
    if hit is not None:
        return {**hit.payload, "_cache": {"hit": True, "computed_at": hit.computed_at.isoformat(), "seconds": hit.seconds}}
    started = time.perf_counter()
    payload = compute()
    seconds = time.perf_counter() - started
    with transaction.atomic():
        entry, _ = ReportCache.objects.update_or_create(
            key=key, defaults={"data_version": version, "payload": payload, "seconds": seconds}
        )
    return {**payload, "_cache": {"hit": False, "computed_at": entry.computed_at.isoformat(), "seconds": seconds}}


def _flags(item: dict[str, Any], threshold: float) -> list[str]:
    flags = []
    kappa = item.get("fleiss_kappa")
    if kappa is not None and kappa < threshold:
        flags.append(f"kappa below the study threshold {threshold:.2f}")
    rates = item.get("base_rates") or {}
    if rates and max(rates.values()) >= PREVALENCE_WARNING:
        top = max(rates, key=rates.get)
        flags.append(
            f"'{top}' is {rates[top]:.0%} of ratings: kappa is misleading at this prevalence, read AC1 and agreement"
        )
    return flags


def _section_levels(study: Study) -> dict[str, tuple[str, list[str] | None]]:
    levels: dict[str, tuple[str, list[str] | None]] = {}
    if study.section is None:
        return levels
    for item in study.section.items.all():
        if item.scale == Scale.ORDINAL_1_5:
            levels[item.key] = ("ordinal", ["1", "2", "3", "4", "5"])
        elif item.scale != Scale.TEXT:
            levels[item.key] = ("nominal", None)
    return levels


def study_reliability(*, study: Study, na: str = "exclude", bootstrap: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Return inter-rater reliability of a study (main instrument and section), cached."""
    if na not in ("exclude", "category"):
        raise ValueError("na must be 'exclude' or 'category'")
    version = selectors.study_data_version(study)
    key = f"reliability:{study.pk}:{na}:{bootstrap}"
    return cached(key, version, lambda: _compute_reliability(study, na, bootstrap))


def _compute_reliability(study: Study, na: str, bootstrap: int) -> dict[str, Any]:
    rows = selectors.study_ratings_long(study, part="main")
    payload: dict[str, Any] = {
        "study": study.pk,
        "na_policy": na,
        "threshold": study.reliability_threshold,
        "n_ratings": len(rows),
        "bootstrap": {"resamples": bootstrap, "seed": BOOTSTRAP_SEED, "method": "percentile, units resampled"},
    }
    if not rows:
        payload["empty"] = "No submitted ratings yet."
        return payload
    order = None
    if study.instrument.kind == InstrumentKind.FLOW:
        from corpus.instruments.flow import LABELS

        order = list(LABELS)
    report = agreement_report(rows, level="nominal", na=na, bootstrap=bootstrap, seed=BOOTSTRAP_SEED, order=order)
    data = report.as_dict()
    for item in [data["pooled"], *data["items"].values()]:
        item["flags"] = _flags(item, study.reliability_threshold)
    item_order = {i.key: i.position for i in study.instrument.items.all()}
    data["items"] = dict(sorted(data["items"].items(), key=lambda kv: item_order.get(kv[0], 10**6)))
    payload["main"] = data
    payload["raters"] = _rater_stats(study, rows, data, na)
    section_rows = selectors.study_ratings_long(study, part="section")
    payload["section"] = {}
    for key, (level, scale_order) in _section_levels(study).items():
        item_rows = [r for r in section_rows if r[2] == key]
        if item_rows:
            sub = agreement_report(item_rows, level=level, na="category", bootstrap=0, order=scale_order)
            payload["section"][key] = sub.items[key].as_dict() if key in sub.items else sub.pooled.as_dict()
    return payload


def _rater_stats(study: Study, rows: list[tuple[str, str, str, str]], data: dict[str, Any], na: str) -> dict[str, Any]:
    """Return per-rater agreement with the others, with consensus, and time per conversation."""
    pairs = data["pooled"].get("cohen_pairs", [])
    names = sorted({r[1] for r in rows})
    matrix = {a: {b: None for b in names} for a in names}
    with_others: dict[str, list[float]] = {n: [] for n in names}
    for pair in pairs:
        a, b, po = str(pair["rater_a"]), str(pair["rater_b"]), pair.get("po")
        if a in matrix and b in matrix and po is not None:
            matrix[a][b] = matrix[b][a] = po
            with_others[a].append(po)
            with_others[b].append(po)
    consensus = selectors.study_consensus_map(study)
    vs_consensus = {}
    if consensus:
        comparison = reference_agreement(rows, consensus, na=na)
        for c in comparison.pooled:
            vs_consensus[str(c.rater)] = {"n": c.n, "percent_agreement": c.percent_agreement, "cohen_kappa": c.cohen_kappa}
    times = selectors.study_time_per_rater(study)
    per_rater = {}
    for name in names:
        spent = times.get(name, [])
        per_rater[name] = {
            "n_conversations": len(spent),
            "agreement_with_others": statistics.fmean(with_others[name]) if with_others[name] else None,
            "vs_consensus": vs_consensus.get(name),
            "median_seconds": statistics.median(spent) if spent else None,
        }
    return {"names": names, "pair_agreement": matrix, "per_rater": per_rater}


RISK_MAP = {"immediate": "Imminent", "imminent": "Imminent", "none": "None", "low": "Low", "high": "High"}
DISCLOSURE_MAP = {"not applicable": "N/A", "n/a": "N/A", "low": "Low", "moderate": "Moderate", "high": "High"}


def study_realism(*, study: Study) -> dict[str, Any]:
    """Return realism ratings by user-agent model, and perceived vs designed risk and disclosure."""
    version = selectors.study_data_version(study)
    return cached(f"realism:{study.pk}", version, lambda: _compute_realism(study))


def _compute_realism(study: Study) -> dict[str, Any]:
    from stats import confusion_matrix

    rows = selectors.study_section_with_design(study)
    by_model: dict[str, dict[str, list[float]]] = {}
    pairs: dict[str, list[tuple[str | None, str | None]]] = {"risk": [], "disclosure": []}
    for row in rows:
        model = row["user_model"] or "(unknown user-agent)"
        for key in ("realism_user", "realism_clinical"):
            value = row["answers"].get(key)
            if value not in (None, ""):
                by_model.setdefault(model, {}).setdefault(key, []).append(float(value))
        design_risk = RISK_MAP.get(str(row["design"].get("risk", "")).strip().lower())
        design_disclosure = DISCLOSURE_MAP.get(str(row["design"].get("disclosure", "")).strip().lower())
        if design_risk and row["answers"].get("perceived_risk"):
            pairs["risk"].append((design_risk, row["answers"]["perceived_risk"]))
        if design_disclosure and row["answers"].get("perceived_disclosure"):
            pairs["disclosure"].append((design_disclosure, row["answers"]["perceived_disclosure"]))
    realism = [
        {
            "user_model": model,
            **{
                f"{key}_{stat}": value
                for key, values in sorted(scores.items())
                for stat, value in (("mean", statistics.fmean(values)), ("sd", statistics.stdev(values) if len(values) > 1 else None), ("n", len(values)))
            },
        }
        for model, scores in sorted(by_model.items())
    ]
    orders = {"risk": ["None", "Low", "High", "Imminent"], "disclosure": ["Low", "Moderate", "High", "N/A"]}
    design_vs_perceived = {}
    for name, items in pairs.items():
        if not items:
            continue
        matrix = confusion_matrix([d for d, _ in items], [p for _, p in items], labels=orders[name])
        design_vs_perceived[name] = {
            "labels": list(matrix.labels),
            "counts": [list(map(int, r)) for r in matrix.counts],
            "n": matrix.n,
            "percent_agreement": matrix.percent_agreement,
            "kappa": matrix.kappa.kappa if matrix.kappa is not None else None,
        }
    return {"realism": realism, "design_vs_perceived": design_vs_perceived, "n_ratings": len(rows)}


def study_scorecard(*, study: Study, source: str = "consensus") -> dict[str, Any]:
    """Return the study's scorecard from the human consensus labels (cached)."""
    from stats.scorecard import amhart_scorecard, vera_mh_scorecard

    def compute() -> dict[str, Any]:
        rows = selectors.study_consensus_rows(study)
        if study.instrument.kind == InstrumentKind.FLOW:
            return {"kind": "vera-mh", "source": source, **vera_mh_scorecard(rows)}
        return {"kind": "checklist", "source": source, **amhart_scorecard(rows)}

    return cached(f"scorecard:{study.pk}:{source}", selectors.study_data_version(study), compute)


def study_judges_vs_humans(*, study: Study, run_id: int, na: str = "category") -> dict[str, Any]:
    """Compare each judge and the ensemble with human consensus and with each single rater.

    Also returns the humans' own pairwise agreement so a reader sees whether a judge sits
    inside the human envelope. N/A is a category of its own by default (as AMHART compares
    judges with the human reference); ``na="exclude"`` drops N/A on both sides.
    """
    from judging.models import JudgeLabel

    stamp = JudgeLabel.objects.filter(result__run_id=run_id).aggregate(n=Count("id"), last=Max("result__finished_at"))
    version = f"{selectors.study_data_version(study)}|{run_id}|{stamp}"
    key = f"judges:{study.pk}:{run_id}:{na}"
    return cached(key, hashlib.sha256(version.encode()).hexdigest()[:32], lambda: _compute_judges(study, run_id, na))


def _compute_judges(study: Study, run_id: int, na: str) -> dict[str, Any]:
    from stats import rater_pair_agreement

    judges, ensemble, warnings = selectors.judge_rows_for_study(study, run_id)
    humans = selectors.study_ratings_long(study, part="main")
    consensus = selectors.study_consensus_map(study)
    payload: dict[str, Any] = {"run": run_id, "na_policy": na, "warnings": warnings, "n_consensus": len(consensus)}
    if not judges:
        payload["empty"] = "This run has no labels for the study's conversations."
        return payload
    order = None
    if study.instrument.kind == InstrumentKind.FLOW:
        from corpus.instruments.flow import LABELS

        order = list(LABELS)
    if consensus:
        vs = reference_agreement([*judges, *ensemble], consensus, na=na, labels=order, reference_name="consensus")
        payload["vs_consensus"] = {
            "pooled": [c.as_dict() for c in vs.pooled],
            "items": {str(item): [c.as_dict() for c in comps] for item, comps in vs.items.items()},
            "labels": [str(x) for x in vs.labels],
        }
    if humans:
        pairs = rater_pair_agreement(judges, humans, na=na, labels=order)
        payload["vs_raters"] = [c.as_dict() for c in pairs.pooled]
        human_pairs = rater_pair_agreement(humans, humans, na=na, labels=order)
        envelope = [
            c.as_dict() for c in human_pairs.pooled if str(c.rater) < str(c.reference) and c.n > 0
        ]
        payload["human_pairs"] = envelope
        kappas = [c["cohen_kappa"] for c in envelope if c["cohen_kappa"] is not None]
        agreements = [c["percent_agreement"] for c in envelope if c["percent_agreement"] is not None]
        payload["human_envelope"] = {
            "kappa_min": min(kappas) if kappas else None,
            "kappa_max": max(kappas) if kappas else None,
            "agreement_min": min(agreements) if agreements else None,
            "agreement_max": max(agreements) if agreements else None,
        }
        per_judge: dict[str, list[dict[str, Any]]] = {}
        for c in payload["vs_raters"]:
            per_judge.setdefault(c["rater"], []).append(c)
        payload["judge_vs_raters_mean"] = {
            judge: {
                "kappa": _mean([c["cohen_kappa"] for c in comps]),
                "agreement": _mean([c["percent_agreement"] for c in comps]),
            }
            for judge, comps in per_judge.items()
        }
    return payload


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def study_export_zip(*, study: Study) -> bytes:
    """Return the whole study as a zip of CSV files, ready for R, Stata or Python.

    ratings_long.csv (every submitted answer: unit, rater, part, item, label, note),
    consensus.csv (label and provenance per conversation and item), judge_labels_long.csv and
    ensemble.csv (every judge run that labelled the study's conversations), reliability.csv,
    scores_by_*.csv (the scorecard tables), and README.txt describing each file.
    """
    import io
    import zipfile

    from core.csvstream import csv_text
    from judging.exports import export_csv

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:

        def write(name: str, header: list[str], rows: list[list[Any]]) -> None:
            archive.writestr(name, csv_text(header, rows))

        write(
            "ratings_long.csv",
            ["unit", "rater", "part", "item", "label", "note", "submitted_at", "time_spent_seconds"],
            selectors.study_ratings_export_rows(study),
        )
        write(
            "consensus.csv",
            ["unit", "item", "label", "provenance", "n_ratings", "disagreement", "adjudicated_by", "reason"],
            selectors.study_consensus_export_rows(study),
        )
        runs = selectors.judge_runs_for_study(study)
        archive.writestr("judge_labels_long.csv", "".join(export_csv(runs, "long")))
        archive.writestr("judge_dimensions.csv", "".join(export_csv(runs, "dimensions")))
        archive.writestr("ensemble.csv", "".join(export_csv(runs, "ensemble")))
        reliability = study_reliability(study=study)
        main = reliability.get("main") or {}
        columns = ["n_units", "n_raters", "n_ratings", "percent_agreement", "fleiss_kappa", "fleiss_p0", "fleiss_pe", "cohen_kappa_mean", "krippendorff_alpha", "gwet_ac1"]
        rows = [["pooled", *[(main.get("pooled") or {}).get(c) for c in columns]]] if main else []
        rows += [[item, *[values.get(c) for c in columns]] for item, values in (main.get("items") or {}).items()]
        write("reliability.csv", ["item", *columns], rows)
        card = study_scorecard(study=study)
        for table, records in card.items():
            if isinstance(records, list) and records:
                header = list(dict.fromkeys(k for r in records for k in r))
                write(f"scores_{table}.csv", header, [[r.get(k) for k in header] for r in records])
        archive.writestr(
            "README.txt",
            f"evalsite export of study {study.pk}: {study.name}\n"
            f"Instrument: {study.instrument} | section: {study.section}\n"
            "ratings_long.csv: one row per submitted answer (unit = pseudonymous conversation code).\n"
            "consensus.csv: human reference label per unit and item, with provenance.\n"
            "judge_labels_long.csv / judge_dimensions.csv / ensemble.csv: LLM judge output of every run on these conversations.\n"
            f"reliability.csv: inter-rater agreement per item and pooled (N/A {reliability.get('na_policy')}).\n"
            "scores_*.csv: scorecard tables computed from the human consensus.\n",
        )
    return buffer.getvalue()


def run_scorecard(*, run: Any) -> dict[str, Any]:
    """Return the scorecard of a judge run from its ensemble labels (cached per run state)."""
    from stats.scorecard import amhart_scorecard, vera_mh_scorecard

    def compute() -> dict[str, Any]:
        rows = selectors.run_ensemble_rows(run)
        if run.mode == "flow":
            return {"kind": "vera-mh", "source": f"judge run {run.pk} ensemble", **vera_mh_scorecard(rows)}
        return {"kind": "checklist", "source": f"judge run {run.pk} ensemble", **amhart_scorecard(rows)}

    return cached(f"run-scorecard:{run.pk}", _run_version(run), compute)


def run_regression(*, run: Any, references: dict[str, str] | None = None) -> dict[str, Any]:
    """Fit the AMHART item-level mixed-effects regression on a run's ensemble labels."""
    from stats.regression import item_regression

    def compute() -> dict[str, Any]:
        rows = [r for r in selectors.run_ensemble_rows(run) if r["label"] is not None]
        if not rows:
            return {"empty": "No ensemble labels to model."}
        try:
            return item_regression(rows, references=references or None).as_dict()
        except ValueError as exc:
            return {"error": str(exc)}

    refs = "|".join(f"{k}={v}" for k, v in sorted((references or {}).items()))
    return cached(f"run-regression:{run.pk}:{refs}", _run_version(run), compute)


def _run_version(run: Any) -> str:
    from judging.models import EnsembleLabel

    stamp = EnsembleLabel.objects.filter(run=run).aggregate(n=Count("id"))
    return hashlib.sha256(f"{run.pk}|{run.status}|{run.updated_at}|{stamp}".encode()).hexdigest()[:32]
