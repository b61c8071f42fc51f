"""Report computations, cached per data version. The only place that calls the statistics package.

Every report is a kind registered with ``reports.jobs``: a fingerprint of its data and a
computation that reports its progress. Pages ask with ``wait=False`` and show a progress bar
while a cold report is computed by a worker; exports and scripts ask with ``wait=True``.
"""

from __future__ import annotations

import hashlib
import statistics
from typing import Any

from django.db.models import Count, Max

from annotation.consensus.selectors import consensus_csv_rows, consensus_summary
from annotation.models import Study
from reports import jobs, selectors
from reports.comparison import compute_judges
from reports.devset.selectors import development_scope, split_current
from reports.methods import markdown
from reports.reliability import (
    BOOTSTRAP_RESAMPLES,
    compute_reliability,
    reliability_csv,
    reliability_inputs,
    target_width,
)
from reports.scorecards import compute_run_scorecard, compute_study_scorecard


def _study(params: dict[str, Any]) -> Study:
    return Study.objects.select_related("instrument", "section").get(pk=params["study"])


def _study_version(params: dict[str, Any]) -> str:
    study = _study(params)
    n_conversations = study.study_conversations.count()
    return f"{selectors.study_data_version(study)}|{n_conversations}|{study.min_ratings_for_consensus}|{target_width()}"


def study_reliability(*, study: Study, na: str | None = None, bootstrap: int = BOOTSTRAP_RESAMPLES, wait: bool = True) -> dict[str, Any]:
    """Return inter-rater reliability of a study (main instrument and section), cached.

    Per item and pooled over items that share a label set, with the interval method, the
    Fleiss variant of each item and a precision plan beside each interval (see
    ``reports.reliability``). ``na`` defaults to the study's policy, as on the page
    (``selectors.reliability_na_default``). ``wait=False`` returns the pending state while a
    worker computes.
    """
    na = na or selectors.reliability_na_default(study)
    if na not in ("exclude", "category"):
        raise ValueError("na must be 'exclude' or 'category'")
    return jobs.report_get("reliability", {"study": study.pk, "na": na, "bootstrap": bootstrap}, wait=wait)


jobs.register(
    "reliability",
    version=lambda p: "timing|" + _study_version(p),  # per-rater times leave untimed (imported) ratings out
    compute=lambda p, progress: compute_reliability(_study(p), p["na"], p["bootstrap"], progress),
)


RISK_MAP = {"immediate": "Imminent", "imminent": "Imminent", "none": "None", "low": "Low", "high": "High"}
DISCLOSURE_MAP = {"not applicable": "N/A", "n/a": "N/A", "low": "Low", "moderate": "Moderate", "high": "High"}


def study_realism(*, study: Study, wait: bool = True) -> dict[str, Any]:
    """Return realism ratings by user-agent model, and perceived vs designed risk and disclosure."""
    return jobs.report_get("realism", {"study": study.pk}, wait=wait)


def _compute_realism(study: Study, progress: jobs.Progress) -> dict[str, Any]:
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
    return {"realism": realism, "design_vs_perceived": design_vs_perceived, "n_ratings": len(rows),
            "perceived": _perceived(rows, orders)}


def _perceived(rows: list[dict[str, Any]], orders: dict[str, list[str]]) -> dict[str, Any]:
    """Return how often raters gave each perceived risk and disclosure level, overall and per user-agent.

    Needs no persona design: this is what the raters saw, whatever the cards were meant to show.
    """
    out: dict[str, Any] = {}
    for name, key in (("risk", "perceived_risk"), ("disclosure", "perceived_disclosure")):
        answers = [(row["user_model"] or "(unknown user-agent)", str(row["answers"][key]).strip())
                   for row in rows if row["answers"].get(key) not in (None, "")]
        if not answers:
            continue
        labels = list(dict.fromkeys([*orders[name], *sorted({a for _, a in answers} - set(orders[name]))]))
        groups = [("All ratings", [a for _, a in answers])]
        models = sorted({m for m, _ in answers})
        if len(models) > 1:
            groups += [(m, [a for mm, a in answers if mm == m]) for m in models]
        out[name] = {
            "labels": labels,
            "rows": [
                {"group": group, "n": len(values), "counts": [values.count(label) for label in labels],
                 "shares": [values.count(label) / len(values) for label in labels]}
                for group, values in groups
            ],
        }
    return out


jobs.register("realism", version=_study_version, compute=lambda p, progress: _compute_realism(_study(p), progress))


def study_scorecard(*, study: Study, source: str = "consensus", wait: bool = True) -> dict[str, Any]:
    """Return the study's scorecard from the human consensus labels (cached); any instrument."""
    return jobs.report_get("scorecard", {"study": study.pk}, wait=wait)


jobs.register("scorecard", version=_study_version, compute=lambda p, progress: compute_study_scorecard(_study(p), progress))


def study_judges_vs_humans(*, study: Study, run_id: int, na: str = "category", wait: bool = True) -> dict[str, Any]:
    """Compare each judge and the ensemble with human consensus and with each single rater.

    Only on the items both rate, per group of items sharing a label set (``reports.comparison``).
    The headline is the alternative annotator test of each judge and the ensemble at the
    study's epsilon (``reports.verdict``), with cluster-bootstrap intervals on every agreement
    and kappa and a leave-one-rater-out comparison with the humans. N/A is a category of its
    own by default (as AMHART compares judges with the human reference); ``na="exclude"``
    drops the declared N/A answers on both sides.

    Once the study is split into a development and a test set (``reports.devset``), the
    comparison is made on the development set only and never reads a test-set label: the test
    set is evaluated only for a version declared final. ``holdout`` in the payload says so.
    """
    return jobs.report_get("judges", judges_params(study, run_id, na), wait=wait)


def judges_params(study: Study, run_id: int, na: str) -> dict[str, Any]:
    """Return the judges report's parameters: the study's split in force, if any, is one (its development set is compared)."""
    split = split_current(study)
    params: dict[str, Any] = {"study": study.pk, "run": run_id, "na": na}
    if split is not None:
        params["split"] = split.pk
    return params


def _judges_version(params: dict[str, Any]) -> str:
    from judging.models import JudgeLabel

    stamp = JudgeLabel.objects.filter(result__run_id=params["run"]).aggregate(n=Count("id"), last=Max("result__finished_at"))
    epsilon = Study.objects.filter(pk=params["study"]).values_list("alt_test_epsilon", flat=True).first()
    return f"{_study_version(params)}|{params['run']}|{stamp}|epsilon={epsilon}"


def _compute_judges(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    """Compare on the whole study, or on the development set of the split named in ``params``."""
    study = _study(params)
    if not params.get("split"):
        return compute_judges(study, int(params["run"]), params["na"], progress)
    scope = development_scope(study, int(params["split"]))
    payload = compute_judges(study, int(params["run"]), params["na"], progress, conversation_ids=scope["conversation_ids"])
    return {**payload, "holdout": scope["holdout"]}


jobs.register("judges", version=_judges_version, compute=_compute_judges)


def study_export_zip(*, study: Study) -> bytes:
    """Return the whole study as a zip of CSV files, ready for R, Stata or Python.

    ratings_long.csv (every submitted answer: unit, rater, part, item, label, note, cited turns),
    consensus.csv (label and provenance per conversation and item), judge_labels_long.csv and
    ensemble.csv (every judge run that labelled the study's conversations), reliability.csv,
    scores_by_*.csv (the scorecard tables), and README.txt describing each file.
    """
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        write_study_export(archive, study=study)
    return buffer.getvalue()


def write_study_export(archive: Any, *, study: Study) -> None:
    """Write the study zip's files into an open ``zipfile.ZipFile`` (the study zip, and the publication bundle's core)."""
    from core.csvstream import csv_text
    from core.locks import locked_conversation_ids, withheld_note
    from corpus.models import Conversation
    from judging.exports import export_csv

    locked = locked_conversation_ids(study_id=study.pk)
    locked_codes = set(Conversation.objects.filter(pk__in=locked).values_list("code", flat=True)) if locked else set()

    def write(name: str, header: list[str], rows: list[list[Any]]) -> None:
        # Row-level labels of a locked test set stay in the app (issue 30); figures are the pages' own.
        if locked_codes and header and header[0] in ("unit", "conversation"):
            rows = [r for r in rows if not r or r[0] not in locked_codes]
        archive.writestr(name, csv_text(header, rows))

    write(
        "ratings_long.csv",
        ["unit", "rater", "part", "item", "label", "note", "submitted_at", "time_spent_seconds", "evidence_turns"],
        selectors.study_ratings_export_rows(study),
    )
    consensus_header, consensus_rows = consensus_csv_rows(study)
    write("consensus.csv", ["unit", *consensus_header[1:]], consensus_rows)
    summary = consensus_summary(study)
    runs = selectors.judge_runs_for_study(study)
    # Only the conversations the study uses: a run that also judged other studies' conversations
    # leaves their labels out (least privilege, issue 30).
    used = selectors.study_used_conversation_ids(study)
    archive.writestr("judge_labels_long.csv", "".join(export_csv(runs, "long", only=used)))
    archive.writestr("judge_dimensions.csv", "".join(export_csv(runs, "dimensions", only=used)))
    archive.writestr("ensemble.csv", "".join(export_csv(runs, "ensemble", only=used)))
    reliability = study_reliability(study=study)
    write("reliability.csv", *reliability_csv(reliability))
    inputs = reliability_inputs(study, reliability)
    for name, rows, _ in inputs:
        write(name, ["unit", "rater", "item", "label"], [list(r) for r in rows])
    card = study_scorecard(study=study)
    for table, records in card.items():
        if isinstance(records, list) and records and all(isinstance(r, dict) for r in records):
            header = list(dict.fromkeys(k for r in records for k in r))
            write(f"scores_{table}.csv", header, [[r.get(k) for k in header] for r in records])
    from reports.review.codes import CODE_COLUMNS, code_rows

    write("failure_codes.csv", CODE_COLUMNS, code_rows(study))
    archive.writestr(
        "README.txt",
        # No study id: it changes when the study is rebuilt from its bundle, which carries this file (issue 31).
        f"evalsite export of study: {study.name}\n"
        f"Instrument: {study.instrument} | section: {study.section}\n"
        "ratings_long.csv: one row per submitted answer (unit = pseudonymous conversation code). evidence_turns: the "
        "transcript turns the rater cited for the answer, separated by ';' (turn n = the conversation's n-th message, "
        "as judges number them; empty: none cited); a question flow's derived rows carry the union of their dimension's "
        "questions; turns cited for the rating as a whole are one row with part 'form' and item 'evidence'.\n"
        "consensus.csv: human reference label per unit and item, with provenance, ratings in/expected, provisional, in_adjudication_queue.\n"
        f"  {summary.total} item labels: "
        + ", ".join(f"{label.lower()} {n}" for _, label, n in summary.provenances if n)
        + f"; provisional {summary.provisional}; adjudication queue {summary.queue} "
        f"({summary.unresolved} unresolved + {summary.disputed} decided with dissent).\n"
        "judge_labels_long.csv / judge_dimensions.csv / ensemble.csv: LLM judge output of every run on these conversations.\n"
        "failure_codes.csv: researchers' codes of disagreements (open coding) with their failure category (axial coding).\n"
        + (f"Locked test set: {withheld_note(len(locked_codes))} The row-level files (ratings, consensus, judge labels, "
           "reliability inputs, failure codes) leave them out; reliability.csv and the scores are the pages' figures.\n"
           if locked_codes else "")
        + f"reliability.csv: inter-rater agreement per item and pooled per label set (N/A {reliability.get('na_policy')}; "
        f"intervals: {reliability.get('interval_method_label', 'none')}; seed {(reliability.get('bootstrap') or {}).get('seed')}).\n"
        + "".join(f"{name}: the ratings reliability.csv was computed from; the same figures without the app:\n  {command}\n"
                  for name, _, command in inputs)
        + "METHODS.md: a methods paragraph for each report of the study (what was computed, from the report's own figures), "
        "with references, ready for the methods section of a paper.\n"
        + "scores_*.csv: scorecard tables computed from the human consensus "
        "(yes/no items scored; category and 1-5 items as distributions; free text listed).\n"
        + f"  {(card.get('weighting') or {}).get('note', '')}\n"
        + _coverage_line(card),
    )
    archive.writestr("METHODS.md", study_methods(study=study, reliability=reliability, scorecard=card))


NA_WORDS = {"category": "N/A as a category", "exclude": "N/A excluded"}


def study_methods(*, study: Study, reliability: dict[str, Any] | None = None, scorecard: dict[str, Any] | None = None,
                  extra: list[tuple[str, dict[str, Any]]] = ()) -> str:  # type: ignore[assignment]
    """Return METHODS.md: the methods paragraph of each of the study's reports (``reports.methods``).

    Reliability (the study's N/A policy, as in reliability.csv), the scorecard, realism (with a
    study section), rater drift and load, and for the newest judge run (each page's default)
    judges vs humans and the judge-assisted scores, computed if need be. Other judge runs and
    N/A policies are included when a page computed them at the current data, and listed as not
    included otherwise (computing every run's bootstrap for a download would take minutes).
    ``extra``: more (heading, methods) sections, after rater drift (the publication bundle adds the
    judge development split's).
    """
    from annotation.models import ActivePlan
    from annotation.sampling.active.methods import active_methods
    from annotation.sampling.active.selectors import active_state
    from judging.errors import JudgingError
    from reports.evidence.services import study_evidence_agreement_cached
    from reports.judge_assisted import selectors as assisted_reads
    from reports.judge_assisted.services import judge_assisted_scorecard
    from reports.raters.services import rater_drift

    reliability = reliability or study_reliability(study=study)
    sections: list[tuple[str, dict[str, Any] | None]] = [
        (f"Inter-rater reliability ({NA_WORDS.get(reliability.get('na_policy', ''), '')})", reliability.get("methods")),
        ("Scorecard (human consensus)", (scorecard or study_scorecard(study=study)).get("methods")),
    ]
    if study.section_id:
        sections.append(("Realism of the simulated users", study_realism(study=study).get("methods")))
    sections.append(("Rater drift and load", rater_drift(study=study).get("methods")))
    from reports.review.codes import coding_facts, coding_methods_text

    coded = coding_methods_text(coding_facts(study))
    if coded:
        sections.append(("Failure modes (coding of disagreements)", {"text": coded}))
    missing = []
    runs = list(selectors.judge_runs_for_study(study).values_list("pk", flat=True))
    for index, run_id in enumerate(runs):
        for na in ("category", "exclude"):
            # The split's too: a comparison cached before the study was split read the test set (issue 31).
            payload = jobs.report_cached("judges", judges_params(study, run_id, na))
            if payload is None and index == 0 and na == "category":
                payload = study_judges_vs_humans(study=study, run_id=run_id, na=na)
            heading = f"LLM judges against human raters (judge run #{run_id}, {NA_WORDS[na]})"
            if payload is not None:
                sections.append((heading, payload.get("methods")))
            elif na == "category":
                # No study id in the text: it changes when the study is rebuilt from its bundle (issue 31, defect 8d).
                missing.append(f"{heading}: not computed since the data last changed; open the study's Reports · "
                               "Judges vs humans page for this run and download the zip again.")
        evidence = study_evidence_agreement_cached(study=study, run_id=run_id)  # only where a page computed it
        if evidence is not None and not evidence.get("empty"):
            sections.append((f"Evidence agreement of judges and clinicians (judge run #{run_id})", evidence.get("methods")))
    sections += list(extra)
    active = ActivePlan.objects.filter(study=study).first()
    if active is not None:
        sections.append(("Active sampling for human review", active_methods(active_state(active))))
    default_run = assisted_reads.judge_run_for_study(study, None)
    if default_run is not None:
        try:
            assisted = judge_assisted_scorecard(study=study, run=default_run)
        except JudgingError as exc:  # a label source that cannot be read is listed, not fatal to the zip
            missing.append(f"Judge-assisted scores (judge run #{default_run.pk}): {exc}")
        else:
            sections.append((f"Judge-assisted scores (judge run #{default_run.pk})", assisted.get("methods")))
    # Neither the study's id (it changes when the study is rebuilt from its bundle: issue 31, defect 8d) nor its
    # name (it often names the chatbots under test).
    return markdown("Methods of the study's reports", sections, missing=missing)


def _coverage_line(card: dict[str, Any]) -> str:
    labels = card.get("labels") or {}
    if not labels.get("expected"):
        return ""
    reasons = ", ".join(f"{reason} {n}" for reason, n in (labels.get("missing_by_reason") or {}).items())
    return f"  {labels['missing']} of {labels['expected']} expected labels are missing from the scorecard ({reasons}).\n"


def run_scorecard(*, run: Any, wait: bool = True) -> dict[str, Any]:
    """Return the scorecard of a judge run from its ensemble labels (cached per run state)."""
    return jobs.report_get("run-scorecard", {"run": run.pk}, wait=wait)


def _run(params: dict[str, Any]) -> Any:
    from judging.models import JudgeRun

    return JudgeRun.objects.select_related("instrument").get(pk=params["run"])


jobs.register(
    "run-scorecard",
    version=lambda p: _run_version(_run(p)),
    compute=lambda p, progress: compute_run_scorecard(_run(p), progress),
)


REGRESSION_METHODS = {
    "mixed": "mixed model (random intercepts; model-based standard errors)",
    "cluster_robust": "cluster-robust standard errors by conversation (logistic, item fixed effects)",
}


def run_regression(*, run: Any, references: dict[str, str] | None = None, method: str = "mixed", wait: bool = True) -> dict[str, Any]:
    """Fit the AMHART item-level regression on a run's ensemble labels (``stats.regression``).

    ``method``: "mixed" (AMHART's mixed model, the default) or "cluster_robust" (the robust
    standard errors AMHART specified, clustered by conversation).
    """
    if method not in REGRESSION_METHODS:
        raise ValueError(f"method must be one of {', '.join(REGRESSION_METHODS)}")
    refs = "|".join(f"{k}={v}" for k, v in sorted((references or {}).items()))
    return jobs.report_get("run-regression", {"run": run.pk, "refs": refs, "method": method}, wait=wait)


def _compute_regression(run: Any, refs: str, method: str, progress: jobs.Progress) -> dict[str, Any]:
    from corpus.models import Scale
    from stats.regression import item_regression

    references = dict(part.split("=", 1) for part in refs.split("|") if "=" in part)
    yes_no = set(run.instrument.items.filter(scale__in=(Scale.YES_NO_NA, Scale.YES_NO, Scale.BOOLEAN)).values_list("key", flat=True))
    rows = [r for r in selectors.run_ensemble_rows(run) if r["label"] is not None and r["item"] in yes_no]
    # "method_choices", not "methods": a payload's "methods" is its methods paragraph (reports.methods).
    choices = [{"key": key, "label": label} for key, label in REGRESSION_METHODS.items()]
    if not rows:
        return {"run": run.pk, "method": method, "method_choices": choices, "empty": "No yes/no ensemble labels to model."}
    progress(0.3, "fitting the mixed-effects model" if method == "mixed" else "fitting the logistic model with cluster-robust errors")
    try:
        fitted = item_regression(rows, references=references or None, method=method).as_dict()  # type: ignore[arg-type]
    except ValueError as exc:  # stats.regression.CannotFit and bad references: said in words
        return {"run": run.pk, "method": method, "method_choices": choices, "error": str(exc)}
    return {**fitted, "run": run.pk, "method_choices": choices}


# "r2": payloads name the fitted model, its method and optimizer (issue 18).
jobs.register(
    "run-regression",
    version=lambda p: "r2|" + _run_version(_run(p)),
    compute=lambda p, progress: _compute_regression(_run(p), p["refs"], p.get("method", "mixed"), progress),
)


def _run_version(run: Any) -> str:
    from judging.models import EnsembleLabel

    stamp = EnsembleLabel.objects.filter(run=run).aggregate(n=Count("id"))
    return hashlib.sha256(f"{run.pk}|{run.status}|{run.updated_at}|{stamp}".encode()).hexdigest()[:32]
