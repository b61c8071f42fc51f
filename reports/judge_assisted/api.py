"""The judge-assisted scorecard as JSON (the same cached payload the page shows)."""

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
from reports.judge_assisted import selectors, services

RUN = OpenApiParameter("run", int, description="judge run (default: the study's sampling-plan run, else the newest)")
SOURCE = OpenApiParameter("source", str, description='"ensemble" or "judge:<id>" (default: the ensemble, or the only judge)')


class StudyJudgeAssistedView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=[RUN, SOURCE], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """Per chatbot and score: PPI and PPI++ estimates with intervals, beside judge-only and human-only."""
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        value = request.query_params.get("run", "")
        if value and not value.isdigit():
            return Response({"detail": "run must be a judge run id"}, status=400)
        run = selectors.judge_run_for_study(study, int(value) if value else None)
        if run is None:
            return Response({"detail": "no judge run labelled this study's conversations"}, status=404)
        try:
            data = services.judge_assisted_scorecard(study=study, run=run, source_key=request.query_params.get("source") or None)
        except JudgingError as exc:
            return Response({"detail": str(exc)}, status=400)
        return Response(data)


urlpatterns = [
    path("studies/<int:pk>/judge-assisted/", StudyJudgeAssistedView.as_view(), name="report-judge-assisted"),
]
