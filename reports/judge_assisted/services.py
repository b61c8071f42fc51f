"""Judge-assisted scorecards: per chatbot and score, PPI and PPI++ beside judge-only and human-only.

The judges (a run's ensemble, or one judge) labelled every conversation of the run; the
clinicians of a study rated some of them. For each chatbot and each score (AMHART score and
every yes/no item's yes-rate; or the VERA-MH overall score and each dimension's score) the
prediction-powered estimate (:mod:`stats.ppi`) corrects the judges' figure over all the
chatbot's judged conversations by the mean human-minus-judge difference on the rated ones, with
an interval that accounts for both. The judge-only interval ignores the judges' errors; the
human-only interval uses the ratings alone: side by side, the researcher sees what the human
sample buys (the correction) and what the judges buy (the effective number of ratings).

Rated conversations are weighted by 1/π when the study was drawn with a sampling plan from
this run's conversations (or from a run that judged exactly the same ones); otherwise they are
treated as a simple random sample of the run's conversations, and the page says so.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from annotation.models import Study
from corpus.models import InstrumentKind
from judging.models import JudgeRun
from judging.sources import LabelSource, label_source_get, run_labels
from reports import jobs
from reports.judge_assisted import selectors
from stats.data import StatsInputError
from stats.ppi import PPIEstimate, ppi_amhart_score, ppi_item_rate, ppi_vera_mh_score

CONFIDENCE = 0.95
METHODS = ("judge_only", "human_only", "ppi", "ppi_tuned")
METHOD_LABELS = {
    "judge_only": "Judges only",
    "human_only": "Humans only",
    "ppi": "Judge-assisted (PPI)",
    "ppi_tuned": "Judge-assisted, power-tuned (PPI++)",
}


KIND = "judge_assisted"


def judge_assisted_scorecard(*, study: Study, run: JudgeRun, source_key: str | None = None) -> dict[str, Any]:
    """Return the judge-assisted scorecard of a study with a run's labels (cached per data state).

    Raises ``judging.errors.JudgingError`` for an unknown label source.
    """
    source = label_source_get(run, source_key)
    return jobs.report_get(KIND, {"study": study.pk, "run": run.pk, "source": source.key}, wait=True)  # computed in the request: these pages have no pending state yet


def _params(params: dict[str, Any]) -> tuple[Study, JudgeRun, LabelSource]:
    study = Study.objects.select_related("instrument", "section").get(pk=params["study"])
    run = JudgeRun.objects.select_related("instrument").get(pk=params["run"])
    return study, run, label_source_get(run, params["source"])


def _version(params: dict[str, Any]) -> str:
    study, run, _ = _params(params)
    return selectors.data_version(study, run)


def _compute_report(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    progress(0.1, "reading the judges' labels and the human consensus")
    return _compute(*_params(params))


def _weights(study: Study, run: JudgeRun, rated: list[int]) -> tuple[dict[int, float] | None, str]:
    """Return the inclusion probabilities to use (None: equal weights) and why."""
    plan = selectors.study_plan(study)
    if plan.plan is None:
        return None, (
            "This study has no recorded sampling plan: its rated conversations are treated as a simple random "
            "sample of the run's conversations. If they were picked otherwise (by persona, by chatbot, by hand), "
            "the judge-assisted and human-only estimates can be biased."
        )
    missing = [cid for cid in rated if cid not in plan.inclusion_prob]
    if missing:
        return None, (
            f"{len(missing)} rated conversation(s) have no recorded inclusion probability: equal weights are used, "
            "as if the sample were simple random."
        )
    waiting = len(plan.inclusion_prob) - len(rated)
    pending = (
        f" {waiting} of the plan's {len(plan.inclusion_prob)} conversations have no consensus yet: the estimate "
        "assumes they would not differ from the rated ones (it firms up as they are rated)."
        if waiting > 0 else ""
    )
    if plan.plan.judge_run_id == run.pk:
        return plan.inclusion_prob, (
            f"Weighted by the study's sampling plan ({plan.plan.get_method_display().lower()} from this run): "
            "each rated conversation counts 1/π times." + pending
        )
    if selectors.same_population(plan.plan.judge_run, run):
        return plan.inclusion_prob, (
            f"Weighted by the study's sampling plan, drawn from run {plan.plan.judge_run_id}, which judged the "
            "same conversations as this run: each rated conversation counts 1/π times." + pending
        )
    return None, (
        f"The study's sampling plan was drawn from run {plan.plan.judge_run_id}, which judged other conversations "
        "than this run: its inclusion probabilities do not apply here, and equal weights are used. "
        f"Choose run {plan.plan.judge_run_id} for weighted estimates."
    )


def _scores(study: Study) -> list[tuple[str, str, str]]:
    """Return (key, label, scale) of every score: the instrument's score, then items or dimensions."""
    items = selectors.score_items(study)
    if study.instrument.kind == InstrumentKind.FLOW:
        return [("vera_mh_score", "VERA-MH overall score", "points")] + [
            (f"dimension:{i.key}", f"VERA-MH score: {i.title}", "points") for i in items
        ]
    return [("amhart_score", "AMHART score (yes / (yes + no), mean over conversations)", "share")] + [
        (f"item:{i.key}", f"Yes-rate: {i.title}", "share") for i in items
    ]


Estimator = Callable[..., PPIEstimate]


def _estimator(score: str, flow: bool) -> tuple[Estimator, Callable[[dict[str, str | None]], Any]]:
    """Return the stats function and how one conversation's labels become its entry."""
    if score in ("amhart_score", "vera_mh_score"):
        return (ppi_vera_mh_score if flow else ppi_amhart_score), (lambda labels: list(labels.values()))
    kind, key = score.split(":", 1)
    return (ppi_vera_mh_score if kind == "dimension" else ppi_item_rate), (lambda labels: labels.get(key))


def _row(
    chatbot: str, score: tuple[str, str, str], flow: bool, human: dict[int, dict[str, str | None]],
    judge: Callable[[int], dict[str, str | None]], rated: list[int], unrated: list[int], pi: dict[int, float] | None,
) -> dict[str, Any]:
    key, label, scale = score
    estimator, entry = _estimator(key, flow)
    row: dict[str, Any] = {"chatbot": chatbot, "score": key, "score_label": label, "scale": scale,
                           "n_labeled": len(rated), "n_unlabeled": len(unrated), "n_total": len(rated) + len(unrated)}
    args = (
        [entry(human[c]) for c in rated],
        [entry(judge(c)) for c in rated],
        [entry(judge(c)) for c in unrated],
    )
    probs = [pi[c] for c in rated] if pi is not None else None
    try:
        classical = estimator(*args, confidence=CONFIDENCE, inclusion_prob=probs)
        tuned = estimator(*args, confidence=CONFIDENCE, inclusion_prob=probs, tuned=True)
    except StatsInputError as exc:
        return {**row, "error": str(exc), **dict.fromkeys(METHODS)}
    return {
        **row,
        "error": None,
        "judge_only": classical.judge_only.as_dict(),
        "human_only": classical.human_only.as_dict(),
        "ppi": classical.ppi.as_dict(),
        "ppi_tuned": tuned.ppi.as_dict(),
        "lam_tuned": tuned.lam,
        "weighted": classical.weighted,
        "n_labeled": classical.n_labeled,
        "n_unlabeled": classical.n_unlabeled,
        "n_total": classical.n_total,
        "n_dropped_labeled": classical.n_dropped_labeled,
        "n_dropped_unlabeled": classical.n_dropped_unlabeled,
        "correction": classical.correction,
        "effective_n": classical.effective_n,
        "effective_n_tuned": tuned.effective_n,
        "notes": list(dict.fromkeys([*classical.notes, *tuned.notes])),
    }


def _compute(study: Study, run: JudgeRun, source: LabelSource) -> dict[str, Any]:
    labels = run_labels(run, source)
    human = selectors.study_human_labels(study)
    flow = study.instrument.kind == InstrumentKind.FLOW
    payload: dict[str, Any] = {
        "study": study.pk,
        "run": run.pk,
        "source": {"key": source.key, "name": source.name},
        "kind": "vera-mh" if flow else "checklist",
        "confidence": CONFIDENCE,
        "judge_term": "all judged conversations (the rated ones included)",
        "methods": METHOD_LABELS,
        "notes": [],
    }
    if run.instrument_id != study.instrument_id:
        payload["notes"].append(
            f"The run used instrument {run.instrument}, the study {study.instrument}: only labels with the same item "
            "keys are compared."
        )
    rated_all = sorted(human)
    rated = [cid for cid in rated_all if cid in labels.conversations]
    payload.update(n_judged=len(labels.conversations), n_rated=len(rated), n_rated_not_judged=len(rated_all) - len(rated))
    if payload["n_rated_not_judged"]:
        payload["notes"].append(
            f"{payload['n_rated_not_judged']} rated conversation(s) were not judged in this run (or failed the integrity "
            "checks) and are left out."
        )
    if not labels.conversations:
        payload["empty"] = "This run has no judged conversation (or all were flagged by the integrity checks)."
        return payload
    if not rated:
        payload["empty"] = "No conversation of this run has a human consensus in this study yet: compute consensus first."
        return payload
    pi, weights_note = _weights(study, run, rated)
    payload["weighted"] = pi is not None
    payload["notes"].insert(0, weights_note)
    groups: dict[str, list[int]] = defaultdict(list)
    for cid, conversation in labels.conversations.items():
        groups[conversation.chatbot].append(cid)
    rated_set = set(rated)
    scores = _scores(study)
    payload["scores"] = [{"key": k, "label": label, "scale": scale} for k, label, scale in scores]
    rows = []
    for chatbot, cids in sorted(groups.items()):
        mine = [c for c in cids if c in rated_set]
        others = [c for c in cids if c not in rated_set]
        for score in scores:
            rows.append(_row(chatbot, score, flow, human, labels.of, mine, others, pi))
    payload["rows"] = rows
    return payload


CSV_HEADER = [
    "chatbot", "score", "method", "estimate", "std_error", "ci_low", "ci_high", "width", "confidence",
    "lambda", "n_labeled", "n_unlabeled", "n_total", "weighted", "correction", "effective_n", "note",
]


def csv_rows(payload: dict[str, Any]) -> list[list[Any]]:
    """Return one CSV row per chatbot, score and method (long form, ready for R or Stata)."""
    out = []
    for row in payload.get("rows", []):
        for method in METHODS:
            est = row.get(method)
            if est is None:
                out.append([row["chatbot"], row["score"], method, None, None, None, None, None, CONFIDENCE,
                            None, row["n_labeled"], row["n_unlabeled"], row["n_total"], None, None, None, row.get("error")])
                continue
            lam = {"ppi": 1.0, "ppi_tuned": row.get("lam_tuned")}.get(method)
            effective = {"ppi": row.get("effective_n"), "ppi_tuned": row.get("effective_n_tuned")}.get(method)
            out.append([
                row["chatbot"], row["score"], method, est["estimate"], est["std_error"], est["low"], est["high"],
                est["width"], est["confidence"], lam, row["n_labeled"], row["n_unlabeled"], row["n_total"],
                row.get("weighted"), row.get("correction") if method == "ppi" else None, effective,
                "; ".join(x for x in [est.get("note"), *row.get("notes", [])] if x),
            ])
    return out


jobs.register(KIND, version=_version, compute=_compute_report)
