"""Report figures as JSON (the same cached payloads the pages show)."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.roles import Role, has_any_role
from reports import selectors, services


class CanReadReports(BasePermission):
    def has_permission(self, request, view) -> bool:  # type: ignore[no-untyped-def]
        return has_any_role(request.user, {Role.RESEARCHER, Role.COORDINATOR, Role.ADMIN})


NA = OpenApiParameter("na", str, enum=["exclude", "category"], description="N/A policy")


def _answer(payload: dict) -> Response:
    """Return a report; while a worker computes a cold one, 202 with its progress (poll again)."""
    if payload.get("pending"):
        return Response(payload, status=202, headers={"Retry-After": "2"})
    return Response(payload)


class StudyReliabilityView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=[NA], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """Inter-rater reliability per item and pooled per label set, with bootstrap intervals.

        The payload names the interval method (``interval_method``, ``interval_method_label``),
        each item's Fleiss variant (``fleiss_variant``) and a precision plan beside each interval.
        202 with ``pending: true`` and ``progress`` while a cold report is being computed.
        """
        study = selectors.study_get_for_reports(request.user, pk=pk)
        na = selectors.reliability_na(study, request.query_params.get("na"))
        return _answer(services.study_reliability(study=study, na=na, wait=False))


class StudyJudgesView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=[NA, OpenApiParameter("run", int, required=True)], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """Each judge and the ensemble against human consensus and each single rater.

        Per label set (``groups``): ``alt_test`` maps each judge and ``ensemble`` to the
        alternative annotator test (Calderon, Reichart & Dror, ACL 2025) at the study's
        ``alt_test_epsilon``: ``epsilon``, ``winning_rate``, ``advantage_probability``,
        ``passed`` (None with ``verdict`` "cannot decide yet: ..." below the paper's minimums),
        ``per_rater`` and ``items`` (per item). Agreement and kappa carry cluster-bootstrap
        intervals (``agreement_ci``, ``kappa_ci``); ``leave_one_out`` gives (judge vs other
        raters) - (rater vs other raters) with intervals; ``human_range`` leaves out and lists
        rater pairs with too few shared conversations. ``parameters`` holds every setting used.
        """
        study = selectors.study_get_for_reports(request.user, pk=pk)
        try:
            run_id = int(request.query_params.get("run", ""))
        except ValueError:
            return Response({"detail": "give ?run=<judge run id>"}, status=400)
        na = "exclude" if request.query_params.get("na") == "exclude" else "category"
        if not selectors.judge_runs_for_study(study).filter(pk=run_id).exists():
            raise Http404("no such judge run for this study")
        return _answer(services.study_judges_vs_humans(study=study, run_id=run_id, na=na, wait=False))


class StudyScorecardView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """Scores per chatbot from the study's human consensus."""
        study = selectors.study_get_for_reports(request.user, pk=pk)
        return _answer(services.study_scorecard(study=study, wait=False))


class RunScorecardView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(
        parameters=[OpenApiParameter("regression", str, enum=list(services.REGRESSION_METHODS),
                                     description="mixed (default): AMHART's mixed model; cluster_robust: logistic with item "
                                                 "fixed effects and standard errors cluster-robust by conversation")],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, pk: int) -> Response:
        """Scores per chatbot from a judge run's ensemble, with the item-level regression.

        ``?regression=cluster_robust`` fits the logistic model with standard errors
        cluster-robust by conversation instead of the mixed model (``mixed``, the default).
        """
        run = selectors.run_get_for_reports(request.user, pk=pk)
        method = request.query_params.get("regression", "mixed")
        if method not in services.REGRESSION_METHODS:
            return Response({"detail": f"regression must be one of {', '.join(services.REGRESSION_METHODS)}"}, status=400)
        payload = services.run_scorecard(run=run, wait=False)
        if payload.get("kind") == "checklist" and payload.get("scored_items"):
            payload = {**payload, "regression": services.run_regression(run=run, method=method)}
        return _answer(payload)

