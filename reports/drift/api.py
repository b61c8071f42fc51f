"""Judge drift as JSON: the same cached payload the page shows."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from judging.errors import JudgingError
from reports.api import CanReadReports
from reports.drift import selectors, services

PARAMETERS = [
    OpenApiParameter("a_run", int, required=True, description="version A: judge run id (the earlier version)"),
    OpenApiParameter("a_source", str, description='"ensemble" or "judge:<id>" (default: the ensemble, or the only judge)'),
    OpenApiParameter("b_run", int, required=True, description="version B: judge run id"),
    OpenApiParameter("b_source", str, description='"ensemble" or "judge:<id>"'),
    OpenApiParameter("rationales", bool, description="add both versions' rationales to every flip (read on demand; slower on large runs)"),
    OpenApiParameter("study", str, description='study whose human consensus is the reference (default: the readable study with most consensus on the shared conversations; "none" for none)'),
]


class JudgeDriftView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=PARAMETERS, responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        """Two versions on the same conversations: agreement per item, flips with rationales, both vs humans."""
        q = request.query_params
        try:
            a = selectors.version_get(request.user, q.get("a_run"), q.get("a_source"))
            b = selectors.version_get(request.user, q.get("b_run"), q.get("b_source"))
        except JudgingError as exc:
            return Response({"detail": str(exc)}, status=400)
        if a is None or b is None:
            return Response({"detail": "give ?a_run=<judge run id>&b_run=<judge run id>"}, status=400)
        study = selectors.reference_study(request.user, q.get("study"), a.run, b.run)
        data = services.judge_drift(run_a=a.run, source_a=a.source, run_b=b.run, source_b=b.source, study=study)
        if q.get("rationales", "").lower() in ("1", "true", "yes"):
            data = {**data, "flips": services.with_rationales(data.get("flips", []), a.run, a.source, b.run, b.source)}
        return Response(data)


urlpatterns = [path("drift/", JudgeDriftView.as_view(), name="report-drift")]
