"""Researchers' report pages. Every figure comes from reports.services (cached)."""

from __future__ import annotations

import csv
import io
import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from annotation.permissions import roles_required
from annotation.roles import Role

from . import selectors, services

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)
STAT_COLUMNS = [
    ("n_units", "Units"),
    ("n_raters", "Raters"),
    ("n_ratings", "Ratings"),
    ("percent_agreement", "Agreement"),
    ("fleiss_kappa", "Fleiss κ"),
    ("fleiss_p0", "P0"),
    ("fleiss_pe", "Pe"),
    ("cohen_kappa_mean", "Mean Cohen κ"),
    ("krippendorff_alpha", "Krippendorff α"),
    ("gwet_ac1", "Gwet AC1"),
]


@roles_required(*REPORT_ROLES)
def report_index(request: HttpRequest) -> HttpResponse:
    return render(request, "reports/index.html", {"studies": selectors.study_list_for_reports(request.user)})


def _na(request: HttpRequest) -> str:
    return "category" if request.GET.get("na") == "category" else "exclude"


@roles_required(*REPORT_ROLES)
def reliability(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_reliability(study=study, na=_na(request))
    heatmap = None
    if data.get("raters"):
        names = data["raters"]["names"]
        matrix = data["raters"]["pair_agreement"]
        heatmap = json.dumps(
            {
                "z": [[matrix[a][b] if a != b else None for b in names] for a in names],
                "x": names,
                "y": names,
            }
        )
    return render(
        request,
        "reports/reliability.html",
        {"study": study, "data": data, "columns": STAT_COLUMNS, "na": _na(request), "heatmap": heatmap},
    )


@roles_required(*REPORT_ROLES)
def reliability_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_reliability(study=study, na=_na(request))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    ci_names = ["percent_agreement", "fleiss_kappa", "krippendorff_alpha", "gwet_ac1"]
    writer.writerow(["item", *[c for c, _ in STAT_COLUMNS], *[f"{c}_ci_low" for c in ci_names], *[f"{c}_ci_high" for c in ci_names], "base_rates", "flags", "notes"])
    main = data.get("main") or {}
    rows = [("pooled", main.get("pooled"))] + list((main.get("items") or {}).items())
    for name, item in rows:
        if not item:
            continue
        cis = [item.get(f"{c}_ci") or [None, None] for c in ci_names]
        writer.writerow(
            [name, *[item.get(c) for c, _ in STAT_COLUMNS], *[ci[0] for ci in cis], *[ci[1] for ci in cis],
             json.dumps(item.get("base_rates", {})), "; ".join(item.get("flags", [])), "; ".join(item.get("notes", []))]
        )
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-reliability-{_na(request)}.csv"'
    return response


@roles_required(*REPORT_ROLES)
def realism(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_realism(study=study)
    heatmaps = {
        name: json.dumps({"z": block["counts"], "x": block["labels"], "y": block["labels"]})
        for name, block in data["design_vs_perceived"].items()
    }
    return render(request, "reports/realism.html", {"study": study, "data": data, "heatmaps": heatmaps})


@roles_required(*REPORT_ROLES)
def realism_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_realism(study=study)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    columns = sorted({k for row in data["realism"] for k in row} - {"user_model"})
    writer.writerow(["user_model", *columns])
    for row in data["realism"]:
        writer.writerow([row["user_model"], *[row.get(c) for c in columns]])
    for name, block in data["design_vs_perceived"].items():
        writer.writerow([])
        writer.writerow([f"{name}: designed (rows) vs perceived (columns)", *block["labels"]])
        for label, counts in zip(block["labels"], block["counts"], strict=True):
            writer.writerow([label, *counts])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-realism.csv"'
    return response


@roles_required(*REPORT_ROLES)
def scorecard(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    data = services.study_scorecard(study=study)
    csv_base = reverse("reports:scorecard", args=[study.pk])
    return render(request, "reports/scorecard.html", {"study": study, "data": data, "chart": _score_chart(data), "csv_base": csv_base})


@roles_required(*REPORT_ROLES)
def scorecard_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    return _rows_csv(services.study_scorecard(study=study).get(table), f"study-{study.pk}-{table}.csv")


@roles_required(*REPORT_ROLES)
def judges(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    runs = list(selectors.judge_runs_for_study(study)[:50])
    run_id = _int(request.GET.get("run")) or (runs[0].pk if runs else None)
    na = "exclude" if request.GET.get("na") == "exclude" else "category"
    data = services.study_judges_vs_humans(study=study, run_id=run_id, na=na) if run_id else None
    matrices = {}
    if data and data.get("vs_consensus"):
        for comparison in data["vs_consensus"]["pooled"]:
            confusion = comparison["confusion"]
            matrices[comparison["rater"]] = {"z": confusion["counts"], "labels": confusion["labels"]}
    return render(
        request,
        "reports/judges.html",
        {"study": study, "runs": runs, "run_id": run_id, "na": na, "data": data, "matrices": json.dumps(matrices)},
    )


@roles_required(*REPORT_ROLES)
def judges_csv(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    run_id = _int(request.GET.get("run"))
    if not run_id:
        from django.http import Http404

        raise Http404("choose a run")
    na = "exclude" if request.GET.get("na") == "exclude" else "category"
    data = services.study_judges_vs_humans(study=study, run_id=run_id, na=na)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["comparison", "item", "rater", "reference", "n", "percent_agreement", "cohen_kappa"])
    consensus = data.get("vs_consensus") or {}
    for c in consensus.get("pooled", []):
        writer.writerow(["vs_consensus", "pooled", c["rater"], c["reference"], c["n"], c["percent_agreement"], c["cohen_kappa"]])
    for item, comps in consensus.get("items", {}).items():
        for c in comps:
            writer.writerow(["vs_consensus", item, c["rater"], c["reference"], c["n"], c["percent_agreement"], c["cohen_kappa"]])
    for c in data.get("vs_raters", []):
        writer.writerow(["judge_vs_rater", "pooled", c["rater"], c["reference"], c["n"], c["percent_agreement"], c["cohen_kappa"]])
    for c in data.get("human_pairs", []):
        writer.writerow(["rater_vs_rater", "pooled", c["rater"], c["reference"], c["n"], c["percent_agreement"], c["cohen_kappa"]])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-run-{run_id}-judges.csv"'
    return response


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


@roles_required(*REPORT_ROLES)
def study_export(request: HttpRequest, pk: int) -> HttpResponse:
    study = selectors.study_get_for_reports(request.user, pk=pk)
    response = HttpResponse(services.study_export_zip(study=study), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-export.zip"'
    return response


@roles_required(*REPORT_ROLES)
def run_scorecard(request: HttpRequest, pk: int) -> HttpResponse:
    run = selectors.run_get_for_reports(request.user, pk=pk)
    data = services.run_scorecard(run=run)
    references = {k: v for k in ("chatbot", "diagnosis", "severity", "sex") if (v := request.GET.get(f"ref_{k}"))}
    regression = services.run_regression(run=run, references=references) if data.get("kind") == "checklist" else None
    return render(
        request,
        "reports/scorecard.html",
        {"study": None, "run": run, "data": data, "chart": _score_chart(data), "regression": regression,
         "csv_base": reverse("reports:run-scorecard", args=[run.pk])},
    )


@roles_required(*REPORT_ROLES)
def run_scorecard_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    run = selectors.run_get_for_reports(request.user, pk=pk)
    if table == "regression":
        rows = services.run_regression(run=run).get("terms", [])
    else:
        rows = services.run_scorecard(run=run).get(table)
    return _rows_csv(rows, f"run-{run.pk}-{table}.csv")


def _rows_csv(rows: object, filename: str) -> HttpResponse:
    from django.http import Http404

    if not isinstance(rows, list):
        raise Http404("no such table")
    buffer = io.StringIO()
    columns = list(dict.fromkeys(k for row in rows for k in row))
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _score_chart(data: dict) -> str | None:
    if data.get("empty"):
        return None
    if data.get("kind") == "checklist":
        rows, x = data["by_chatbot_persona"], "persona"
        y = "mean_score"
    else:
        rows, x = data["by_chatbot_dimension"], "dimension"
        y = "score"
    chatbots = sorted({r["chatbot"] for r in rows})
    return json.dumps([
        {"type": "bar", "name": cb, "x": [r[x] for r in rows if r["chatbot"] == cb], "y": [r[y] for r in rows if r["chatbot"] == cb]}
        for cb in chatbots
    ])
