"""Evidence agreement of each judge of a run with the study's clinicians, cached per data version.

Per judge, per item and pooled over items: turn-level precision, recall and Jaccard of the
judge's cited turns against the union of the raters' turns and against the turns a majority of
them cited, with cluster-bootstrap intervals over conversations and the human-human baseline
(each rater against the others) beside it; see :mod:`stats.evidence` for the definitions. Once
the study is split into a development and a test set, only development-set conversations are
read (as the judges report does): no test-set rating or judge label.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Max

from annotation.models import Study
from reports import jobs
from reports.devset.selectors import development_scope, split_current
from reports.evidence import selectors
from reports.selectors import study_data_version
from stats.evidence import DEFAULT_RESAMPLES, DEFAULT_SEED, MEASURES, REFERENCES, evidence_agreement

KIND = "evidence_agreement"
CONFIDENCE = 0.95
EMPTY = (
    "No clinician has cited a turn for an item in this study's submitted ratings{scope}, so there is no evidence to "
    "compare with the judges'. Raters mark the turns behind each answer only when the study's setting \"Raters cite "
    "turns\" (Evidence from raters, on the study's page) is \"For each answer\"{mode}; the study's coordinators can "
    "turn it on. Ratings submitted before then have no cited turns."
)
MODE_NOTE = {
    "off": " (it is off)",
    "whole_form": " (it is \"For the whole form\": turns cited for the whole rating cannot be matched to an item)",
}


def _params(study: Study, run_id: int, bootstrap: int) -> dict[str, Any]:
    params: dict[str, Any] = {"study": study.pk, "run": run_id, "bootstrap": bootstrap}
    split = split_current(study)
    if split is not None:
        params["split"] = split.pk
    return params

NO_JUDGE_TURNS = (
    "No judge of this run cited a turn in its {n} labels of these conversations, so there is nothing to compare with "
    "the clinicians' turns. Checklist judges cite the turns behind each answer; judges walking a question flow label "
    "dimensions without citing turns."
)


def study_evidence_agreement(*, study: Study, run_id: int, bootstrap: int = DEFAULT_RESAMPLES,
                             wait: bool = True) -> dict[str, Any]:
    """Return the evidence agreement of each judge of the run with the study's raters (cached).

    On the development set only once the study is split (``holdout`` in the payload says so).
    ``wait=False`` returns the pending state while a worker computes.
    """
    return jobs.report_get(KIND, _params(study, run_id, bootstrap), wait=wait)


def study_evidence_agreement_cached(*, study: Study, run_id: int) -> dict[str, Any] | None:
    """Return the report if a page computed it at the current data, else None (never computes: for the study zip)."""
    return jobs.report_cached(KIND, _params(study, run_id, DEFAULT_RESAMPLES))


def _version(params: dict[str, Any]) -> str:
    from judging.models import JudgeLabel

    study = Study.objects.get(pk=params["study"])
    labels = JudgeLabel.objects.filter(result__run_id=params["run"]).aggregate(
        n=Count("id"), last=Max("result__finished_at"))
    return (f"{study_data_version(study)}|{study.study_conversations.count()}|{params['run']}|{labels}"
            f"|{study.evidence_mode}")


def _compute(params: dict[str, Any], progress: jobs.Progress) -> dict[str, Any]:
    study = Study.objects.select_related("instrument").get(pk=params["study"])
    run_id = int(params["run"])
    scope = development_scope(study, int(params["split"])) if params.get("split") else None
    ids = scope["conversation_ids"] if scope else None
    progress(0.1, "reading the cited turns")
    raters, left_out = selectors.rater_evidence_rows(study, conversation_ids=ids)
    judges = selectors.judge_evidence_rows(study, run_id, conversation_ids=ids)
    payload: dict[str, Any] = {
        "study": study.pk, "run": run_id,
        "items_info": selectors.items_info(study),
        "references": list(REFERENCES), "measures": list(MEASURES),
        "n_rater_answers": len(raters),
        "n_rater_answers_citing": sum(bool(turns) for *_, turns in raters),
        "n_raters": len({rater for _, rater, _, _ in raters}),
        "n_ratings_without_item_turns": left_out,
        "evidence_mode": study.evidence_mode,
        "n_judge_labels": len(judges),
        "n_judge_labels_citing": sum(bool(turns) for *_, turns in judges),
    }
    if scope is not None:
        payload["holdout"] = scope["holdout"]
    if not payload["n_rater_answers_citing"]:
        where = " (development set)" if scope is not None else ""
        return {**payload, "judges": [], "empty": EMPTY.format(scope=where, mode=MODE_NOTE.get(study.evidence_mode, ""))}
    if not payload["n_judge_labels_citing"]:
        return {**payload, "judges": [], "empty": NO_JUDGE_TURNS.format(n=payload["n_judge_labels"])}
    progress(0.3, "bootstrapping over conversations")
    result = evidence_agreement(judges, raters, n_resamples=int(params["bootstrap"]), seed=DEFAULT_SEED,
                                confidence=CONFIDENCE).as_dict()
    result["judges"] = [j for j in result["judges"] if j["pooled"]["n_instances"]]
    if not result["judges"]:
        return {**payload, **result, "empty": "No judge of this run labelled a conversation item that a clinician "
                                              "answered with cited turns."}
    return {**payload, **result}


jobs.register(KIND, version=_version, compute=_compute)


CSV_HEADER = ["judge", "scope", "item_text", "who", "reference", "measure", "estimate", "ci_low", "ci_high",
              "n_instances", "n_conversations", "instances_in_scope", "conversations_in_scope", "raters_in_scope",
              "both_empty_left_out"]


def csv_rows(data: dict[str, Any]) -> list[list[Any]]:
    """Return one CSV row per judge, scope (pooled or item), side (judge or human baseline), reference and measure."""
    info = data.get("items_info") or {}
    rows = []
    for judge in data.get("judges") or []:
        for scope in [judge["pooled"], *judge["items"]]:
            for who in ("judge", "baseline"):
                for ref in REFERENCES:
                    figures = scope[who][ref]
                    for measure in MEASURES:
                        f = figures[measure]
                        rows.append([
                            judge["judge"], scope["scope"], (info.get(scope["scope"]) or {}).get("text", ""),
                            "judge" if who == "judge" else "human baseline", ref, measure, f["estimate"], f["low"],
                            f["high"], f["n_instances"], f["n_conversations"], scope["n_instances"],
                            scope["n_conversations"], scope["n_raters"], figures["n_both_empty"],
                        ])
    return rows


def chart_points(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the dot-and-interval chart's points: each judge's pooled Jaccard and the human baseline's."""
    points = []
    for judge in data.get("judges") or []:
        for ref in REFERENCES:
            for who, name in (("judge", judge["judge"]), ("baseline", "human baseline")):
                f = judge["pooled"][who][ref]["jaccard"]
                if f["estimate"] is not None:
                    points.append({"judge": judge["judge"], "who": name, "reference": ref, "x": f["estimate"],
                                   "low": f["low"] if f["low"] is not None else f["estimate"],
                                   "high": f["high"] if f["high"] is not None else f["estimate"]})
    return points
