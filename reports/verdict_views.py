"""The verdict part of the judges-vs-humans page: the epsilon setting, its plot and CSV tables."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.errors import AnnotationError
from annotation.studies.services import ALT_TEST_EPSILON_MAX, study_set_alt_test_epsilon
from core.csvstream import csv_response
from core.permissions import roles_required
from core.roles import Role
from reports import selectors, services
from stats.alt_test import EPSILON_GUIDANCE

REPORT_ROLES = (Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN)


def verdict_context(data: dict[str, Any] | None, study: Any) -> dict[str, Any]:
    """Return the page's extras: the epsilon form's guidance and the leave-one-out plot data."""
    plot = []
    for index, group in enumerate((data or {}).get("groups", [])):
        for judge, loo in (group.get("leave_one_out") or {}).items():
            kappa = loo["mean"]["kappa"]
            ci = kappa.get("ci") or {}
            if kappa.get("difference") is None or ci.get("low") is None or ci.get("low") == ci.get("high"):
                continue  # an undefined or collapsed interval is said in words, never drawn
            plot.append({"group": index, "judge": judge, "x": kappa["difference"], "low": ci["low"], "high": ci["high"],
                         "n": loo["mean"]["n_raters"]})
    return {
        "epsilon": study.alt_test_epsilon,
        "epsilon_max": ALT_TEST_EPSILON_MAX,
        "epsilon_guidance": EPSILON_GUIDANCE,
        "loo_plot": json.dumps(plot),
    }


@require_POST
@roles_required(*REPORT_ROLES)
def judges_epsilon(request: HttpRequest, pk: int) -> HttpResponse:
    """Set the study's alt-test epsilon (coordinators, researchers and admins who read it)."""
    study = selectors.study_get_for_reports(request.user, pk=pk)
    back = reverse("reports:judges", args=[study.pk])
    query = {k: request.POST[k] for k in ("run", "na") if request.POST.get(k)}
    try:
        epsilon = float(request.POST.get("epsilon", ""))
        study_set_alt_test_epsilon(study=study, epsilon=epsilon, actor=request.user)
    except ValueError:
        messages.error(request, "Epsilon must be a number, e.g. 0.2.")
    except AnnotationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Alt-test epsilon set to {epsilon:g}; the verdict is recomputed.")
    return redirect(f"{back}?{urlencode(query)}#verdict" if query else f"{back}#verdict")


def _ci(ci: dict[str, Any] | None) -> list[Any]:
    return [None, None] if not ci else [ci.get("low"), ci.get("high")]


def _alt_test_rows(data: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["label_set", "judge", "scope", "verdict", "passed", "epsilon", "q", "winning_rate", "advantage_probability",
              "n_instances", "n_raters_tested", "n_raters_won", "raters_excluded", "majority_label", "majority_share",
              "constant_judge_verdict", "constant_judge_winning_rate", "constant_judge_passes"]
    rows = []
    for group in data.get("groups", []):
        labels = " / ".join(group["labels"])
        baseline = group.get("baseline") or {}
        for judge, test in (group.get("alt_test") or {}).items():
            for scope, t in [("pooled", test), *test["items"].items()]:
                b = (baseline.get("pooled") if scope == "pooled" else (baseline.get("items") or {}).get(scope)) or {}
                rows.append([labels, judge, scope, t["verdict"], t["passed"], t["epsilon"], t["q"], t["winning_rate"],
                             t["advantage_probability"], t["n_instances"], len(t["per_rater"]),
                             sum(1 for r in t["per_rater"] if r["judge_wins"]),
                             "; ".join(f"{e['rater']} ({e['reason']})" for e in t["excluded_raters"]),
                             b.get("label", "(each item's)" if b else None), b.get("majority_share"), b.get("verdict"),
                             b.get("winning_rate"), b.get("passed") is True if b else None])
    return header, rows


def _alt_test_rater_rows(data: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["label_set", "judge", "scope", "rater", "n_instances", "rho_judge", "rho_rater", "t_statistic", "p_value",
              "p_adjusted_by", "decision"]
    rows = []
    for group in data.get("groups", []):
        labels = " / ".join(group["labels"])
        for judge, test in (group.get("alt_test") or {}).items():
            for scope, t in [("pooled", test), *test["items"].items()]:
                for r in t["per_rater"]:
                    rows.append([labels, judge, scope, r["rater"], r["n_instances"], r["rho"], r["rho_rater"],
                                 r["t_statistic"], r["p_value"], r["p_adjusted"], r["decision"]])
    return header, rows


def _leave_one_out_rows(data: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["label_set", "judge", "rater", "n_instances", "n_conversations", "in_mean",
              "agreement_judge_vs_others", "agreement_rater_vs_others", "agreement_difference", "agreement_difference_ci_low",
              "agreement_difference_ci_high", "kappa_judge_vs_others", "kappa_rater_vs_others", "kappa_difference",
              "kappa_difference_ci_low", "kappa_difference_ci_high", "reading_kappa"]
    rows = []
    for group in data.get("groups", []):
        labels = " / ".join(group["labels"])
        for judge, loo in (group.get("leave_one_out") or {}).items():
            entries = [*loo["per_rater"], {"rater": "mean over raters", "n_instances": None, "n_conversations": None,
                                            "in_mean": None, **loo["mean"]}]
            for r in entries:
                a, k = r["agreement"], r["kappa"]
                rows.append([labels, judge, r["rater"], r["n_instances"], r["n_conversations"], r["in_mean"],
                             a["judge"], a["rater"], a["difference"], *_ci(a["ci"]), k["judge"], k["rater"], k["difference"],
                             *_ci(k["ci"]), k["reading"]])
    return header, rows


TABLES = {"alt-test": _alt_test_rows, "alt-test-raters": _alt_test_rater_rows, "leave-one-out": _leave_one_out_rows}


@roles_required(*REPORT_ROLES)
def judges_table_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    """Download one of the verdict's tables as CSV (same payload as the page and the API)."""
    study = selectors.study_get_for_reports(request.user, pk=pk)
    if table not in TABLES:
        raise Http404("no such table")
    value = request.GET.get("run")
    run_id = int(value) if value and value.isdigit() else None
    if not run_id or not selectors.judge_runs_for_study(study).filter(pk=run_id).exists():
        raise Http404("choose a judge run of this study")
    na = "exclude" if request.GET.get("na") == "exclude" else "category"
    data = services.study_judges_vs_humans(study=study, run_id=run_id, na=na)
    header, rows = TABLES[table](data)
    return csv_response(f"study-{study.pk}-run-{run_id}-{table}.csv", header, rows)  # type: ignore[return-value]
