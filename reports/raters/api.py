"""Rater drift and load as JSON: the same cached payload the page shows."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from reports import selectors as report_reads
from reports.api import CanReadReports
from reports.raters import services

ORDER = OpenApiParameter("order", str, enum=list(services.ORDERS), description="thirds of the queue order (default) or of the submission order")


class StudyRatersView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=[ORDER], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """Per rater: agreement with consensus and time per conversation by first, middle and last third."""
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        order = request.query_params.get("order", "queue")
        if order not in services.ORDERS:
            return Response({"detail": f"order must be one of {', '.join(services.ORDERS)}"}, status=400)
        return Response(services.rater_drift(study=study, order=order))


urlpatterns = [path("studies/<int:pk>/raters/", StudyRatersView.as_view(), name="report-raters")]
