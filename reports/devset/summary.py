"""What the judge development page and API show: versions on the development set, the looks, the methods.

Reads only: the writes (split, declare, evaluate, compute a look) are in ``reports.devset.services``.
``looks_summary`` and ``methods_sentence`` give the count of looks at the test set and the
versions looked at under clear keys (``test_set_looks``, ``methods``) for a study's methods paragraph.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from annotation.models import Study
from judging.sources import ENSEMBLE
from reports.devset import selectors
from reports.devset.services import size_guidance
from reports.models import HoldoutLook, HoldoutSplit, ReportStatus
from reports.selectors import judge_runs_for_study
from reports.services import study_judges_vs_humans

VERSIONS_LIMIT = 30


def _who(user: Any) -> str | None:
    return user.get_username() if user is not None else None


def development_versions(study: Study, *, na: str = "category", wait: bool = False) -> list[dict[str, Any]]:
    """Return every recent judge version's figures against the clinicians on the development set.

    One row per run and source (each judge, the ensemble) and label set: agreement and Cohen's
    kappa with their intervals, and the alternative annotator test's verdict, all on the
    development set (``study_judges_vs_humans`` restricts to it once the study is split). A run
    still being computed by a worker gives one row with ``pending``.
    """
    split = selectors.split_current(study)
    if split is None:
        return []
    book = selectors.JudgeBook()
    declared = {(d.run_id, d.source) for d in selectors.declarations_of(split)}
    rows: list[dict[str, Any]] = []
    for run in judge_runs_for_study(study)[:VERSIONS_LIMIT]:
        data = study_judges_vs_humans(study=study, run_id=run.pk, na=na, wait=wait)
        base = {"run": run.pk, "run_name": run.name}
        if data.get("pending"):
            rows.append({**base, "pending": True, "job": data.get("job"), "progress": data.get("progress")})
            continue
        if data.get("empty") or not data.get("groups"):
            rows.append({**base, "empty": data.get("empty") or "Nothing to compare on the development set."})
            continue
        keys = {name: f"judge:{pk}" for pk, name in run.judges.values_list("pk", "name")}
        keys[ENSEMBLE] = ENSEMBLE
        several = len(data["groups"]) > 1
        for group in data["groups"]:
            heads = {h["judge"]: h for h in group.get("headline") or []}
            for c in group.get("vs_consensus") or []:
                source = keys.get(str(c["rater"]))
                if source is None:
                    continue
                head = heads.get(str(c["rater"])) or {}
                rows.append({
                    **base,
                    "source": source,
                    "label": selectors.version_label(run, source, book)[1],
                    "short": "ensemble" if source == ENSEMBLE else
                    f"{book.name(int(source.split(':')[1]))} v{book.version(int(source.split(':')[1]))}",
                    "label_set": " / ".join(group["labels"]) if several else "",
                    "n": c["n"],
                    "n_conversations": c.get("n_conversations"),
                    "agreement": c["percent_agreement"],
                    "agreement_ci": c.get("agreement_ci"),
                    "kappa": c["cohen_kappa"],
                    "kappa_ci": c.get("kappa_ci"),
                    "alt_test_verdict": head.get("verdict"),
                    "alt_test_passed": head.get("passed"),
                    "winning_rate": head.get("winning_rate"),
                    "advantage_probability": head.get("advantage_probability"),
                    "declared_final": (run.pk, source) in declared,
                })
    return rows


def _split_dict(study: Study, split: HoldoutSplit) -> dict[str, Any]:
    return {
        "number": split.number,
        "seed": split.seed,
        "n_dev": split.n_dev,
        "n_test": split.n_test,
        "population": split.n_dev + split.n_test,
        "method": split.method,
        "strata": split.strata,
        "created_by": _who(split.created_by),
        "created_at": split.created_at.isoformat(),
        "reason": split.reason,
        "guidance": split.guidance,
    }


def _look_dict(look: HoldoutLook) -> dict[str, Any]:
    return {
        "id": look.pk,
        "number": look.number,
        "split": look.split.number,
        "version": look.declaration.label,
        "run": look.declaration.run_id,
        "source": look.declaration.source,
        "declaration": look.declaration_id,
        "looked_by": _who(look.looked_by),
        "looked_at": look.looked_at.isoformat(),
        "when": timezone.localtime(look.looked_at).strftime("%Y-%m-%d %H:%M"),
        "na_policy": look.na_policy,
        "status": look.status,
    }


def looks_summary(study: Study) -> dict[str, Any]:
    """Return the count of looks at the test set in force, the versions looked at, and every look (all splits).

    ``count``/``versions``/``summary`` describe the split in force ("test set evaluated 2 times:
    versions A, B"); ``looks`` lists every look of every split, ``count_all_splits`` counts them.
    """
    split = selectors.split_current(study)
    looks = selectors.looks_of(study)
    current = [lk for lk in looks if split is not None and lk.split_id == split.pk]
    versions = list(dict.fromkeys(lk.declaration.label for lk in current))
    if split is None:
        summary = "No test set yet: the study is not split."
    elif not current:
        summary = "Test set not evaluated yet."
    else:
        summary = (f"Test set evaluated {len(current)} time{'s' if len(current) != 1 else ''}: "
                   f"version{'s' if len(versions) != 1 else ''} {', '.join(versions)}.")
    return {
        "split": split.number if split else None,
        "count": len(current),
        "versions": versions,
        "summary": summary,
        "count_all_splits": len(looks),
        "looks": [_look_dict(lk) for lk in looks],
    }


def methods_sentence(study: Study, summary: dict[str, Any] | None = None) -> str:
    """Return a plain-language methods paragraph on the split and the looks at the test set.

    It names no one (as every methods paragraph): who split the study and who looked is on the
    judge development page, not in a paper's methods (nor in a bundle rebuilt elsewhere, where
    they have no account).
    """
    split = selectors.split_current(study)
    if split is None:
        return ("The study's conversations were not split into a development and a test set: every judge-versus-clinician "
                "figure is measured on the same labels the judges may have been tuned on.")
    summary = summary or looks_summary(study)
    when = split.created_at.date().isoformat()
    text = (f"The study's {split.n_dev + split.n_test} human-rated conversations were split once into a development set of "
            f"{split.n_dev} and a held-out test set of {split.n_test}, by stratified random sampling (chatbot, then persona "
            f"within chatbot, proportional allocation by largest remainder; seed {split.seed}; split {split.number}, made on "
            f"{when}). Judge versions were compared with the clinicians on the "
            "development set only. ")
    if split.number > 1:
        earlier = [lk for lk in summary["looks"] if lk["split"] < split.number]
        text += (f"The study had been split {split.number - 1} time{'s' if split.number > 2 else ''} before; this split was "
                 f"made because: {split.reason or 'no reason recorded'} (the earlier test sets were evaluated "
                 f"{len(earlier)} time{'s' if len(earlier) != 1 else ''}). ")
    if not summary["count"]:
        return text + "The test set has not been evaluated yet."
    looks = [lk for lk in summary["looks"] if lk["split"] == split.number]
    text += (f"The test set was evaluated only for versions declared final, {summary['count']} "
             f"time{'s' if summary['count'] != 1 else ''}: "
             + "; ".join(f"look {lk['number']}, {lk['version']} ({lk['looked_at'][:10]})" for lk in looks)
             + ". Agreement, Cohen's kappa with cluster-bootstrap intervals and the alternative annotator test are "
             "reported on the test set.")
    return text


def development_summary(study: Study) -> dict[str, Any]:
    """Return the judge development state of a study: split, declarations, looks, methods (page and API)."""
    split = selectors.split_current(study)
    summary = looks_summary(study)
    payload: dict[str, Any] = {
        "study": study.pk,
        "split": _split_dict(study, split) if split else None,
        "earlier_splits": [_split_dict(study, s) for s in selectors.splits_of(study)[1:]],
        "guidance": size_guidance(study),
        "declarations": [],
        "test_set_looks": summary,
        "methods": {
            "text": methods_sentence(study, summary),
            "test_set_looks": summary["count"],
            "test_set_versions": summary["versions"],
            "note": "A plain-language sentence for the methods section; the study's methods paragraph module "
                    "(reports.methods) may take these keys.",
        },
    }
    if split is not None:
        payload["split"]["n_outside"] = selectors.outside_split(study, split)
        payload["split"]["n_dev_in_earlier_test"] = selectors.earlier_test_in_dev(split)
        looks_by_declaration: dict[int, list[dict[str, int]]] = {}
        for look in summary["looks"]:
            looks_by_declaration.setdefault(look["declaration"], []).append({"number": look["number"], "id": look["id"]})
        payload["declarations"] = [
            {"id": d.pk, "run": d.run_id, "source": d.source, "version": d.label, "note": d.note,
             "declared_by": _who(d.declared_by), "declared_at": d.declared_at.isoformat(),
             "looks": looks_by_declaration.get(d.pk, [])}
            for d in selectors.declarations_of(split)
        ]
    return payload


def look_payload(look: HoldoutLook) -> dict[str, Any]:
    """Return a stored look for the API: who looked, when, at which version, and the test-set result."""
    return {**_look_dict(look), "progress": look.progress, "stage": look.stage, "error": look.error,
            "result": look.payload if look.status == ReportStatus.READY else None}
