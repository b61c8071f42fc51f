"""The leaderboards as JSON (the same cached payloads the pages show)."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judging.errors import JudgingError
from reports import selectors as report_reads
from reports.api import CanReadReports
from reports.judge_assisted import selectors as assisted_reads
from reports.leaderboard import services

RUN = OpenApiParameter("run", int, description="judge run (default: the study's sampling-plan run, else the newest)")
SOURCE = OpenApiParameter("source", str, description='"ensemble" or "judge:<id>" (default: the ensemble, or the only judge)')
PAYLOAD = """

Per set of conversations (``strata``: all, then each persona risk level) and method (``method_keys``:
judges only, humans only, PPI, PPI++ as the data allow), ``tables`` hold every chatbot's score with
its interval (``scores``) and every pair of chatbots (``pairs``): the difference ``a`` minus ``b``
with a paired cluster-bootstrap interval (``design`` says paired, partly paired or unpaired, and why),
the bootstrap ``p_value``, Holm's ``p_adjusted`` over the table's pairs and the ``decision``
("higher", "no_difference", or "cannot_decide" with the reason in ``verdict``). ``method_info`` names
each estimator and interval with references; ``parameters`` holds every setting (confidence, alpha,
resamples, seed, clusters, adjustment, minimums) for a methods paragraph. 202 with ``pending: true``
and ``progress`` while a worker computes a cold leaderboard.
"""


def _answer(payload: dict) -> Response:
    if payload.get("pending"):
        return Response(payload, status=202, headers={"Retry-After": "2"})
    return Response(payload)


class StudyLeaderboardView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=[RUN, SOURCE], responses=OpenApiTypes.OBJECT, description=PAYLOAD)
    def get(self, request: Request, pk: int) -> Response:
        """A study's chatbots side by side (humans only; with a judge run also judges only, PPI and PPI++)."""
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        value = request.query_params.get("run", "")
        if value and not value.isdigit():
            return Response({"detail": "run must be a judge run id"}, status=400)
        run = assisted_reads.judge_run_for_study(study, int(value) if value else None)
        try:
            data = services.study_leaderboard(study=study, run=run, source_key=request.query_params.get("source") or None)
        except JudgingError as exc:
            return Response({"detail": str(exc)}, status=400)
        return _answer(data)


class RunLeaderboardView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=[SOURCE], responses=OpenApiTypes.OBJECT, description=PAYLOAD)
    def get(self, request: Request, pk: int) -> Response:
        """A judge run's chatbots side by side, from its judges' labels (judges only)."""
        run = report_reads.run_get_for_reports(request.user, pk=pk)
        try:
            data = services.run_leaderboard(run=run, source_key=request.query_params.get("source") or None)
        except JudgingError as exc:
            return Response({"detail": str(exc)}, status=400)
        return _answer(data)


urlpatterns = [
    path("studies/<int:pk>/leaderboard/", StudyLeaderboardView.as_view(), name="report-leaderboard"),
    path("runs/<int:pk>/leaderboard/", RunLeaderboardView.as_view(), name="report-run-leaderboard"),
]
