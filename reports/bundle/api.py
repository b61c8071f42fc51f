"""The publication bundle over the API: download a study's, import one (all or nothing)."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.roles import Role, has_any_role
from core.uploads import human_bytes, max_upload_bytes
from reports import selectors
from reports.api import CanReadReports
from reports.bundle.build import study_bundle_open
from reports.bundle.importer import bundle_import
from reports.bundle.lock import bundle_refusal
from reports.bundle.views import bundle_download


class BundlePending(serializers.Serializer):
    """The bundle being built (202): poll the same address again after ``Retry-After`` seconds."""

    pending = serializers.BooleanField()
    status = serializers.ChoiceField(choices=["computing", "failed"])
    progress = serializers.FloatField(help_text="0..1")
    stage = serializers.CharField(help_text='What the worker does now: "figures: …", "charts: …", "zip: …"')
    error = serializers.CharField(help_text="Why the build failed (status failed); asked again after a minute, it is retried")
    job = serializers.IntegerField(help_text="The job's id (the page polls /reports/jobs/ID/)")
    started_at = serializers.DateTimeField(allow_null=True)


# Seconds a client waits before asking again while the bundle is built (a build takes seconds to minutes).
RETRY_AFTER = 5


class StudyBundleView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(responses={
        (200, "application/zip"): OpenApiTypes.BINARY,
        202: OpenApiResponse(BundlePending, description="Being built by a worker: ask again after Retry-After seconds"),
        409: OpenApiResponse(OpenApiTypes.OBJECT, description="The study's test set is locked: no bundle (detail says what to do)"),
    })
    def get(self, request: Request, pk: int) -> HttpResponse:
        """The study's publication bundle (zip): transcripts, ratings, judge labels, instrument, personas, codebook,
        methods, figures and a manifest with SHA-256 checksums (``docs/formats.md``, "Publication bundle").

        A worker builds it, never the request: while it does, 202 with the job's ``status``, ``progress`` (0..1)
        and ``stage``, and a ``Retry-After`` header; once built, 200 with the zip (kept until the study's data
        change, so later calls answer at once)."""
        study = selectors.study_get_for_reports(request.user, pk=pk)
        refusal = bundle_refusal(study)
        if refusal:
            return Response({"detail": refusal}, status=409)
        state, stream = study_bundle_open(study=study)
        if stream is None:
            return Response(state, status=202, headers={"Retry-After": str(RETRY_AFTER)})
        return bundle_download(study, stream)


class CanImportBundle(BasePermission):
    """Importing a bundle creates a study: coordinators and administrators."""

    def has_permission(self, request, view) -> bool:  # type: ignore[no-untyped-def]
        return has_any_role(request.user, {Role.COORDINATOR, Role.ADMIN})


class BundleImportRequest(serializers.Serializer):
    file = serializers.FileField()
    dry_run = serializers.BooleanField(default=False)


class BundleImportView(APIView):
    permission_classes = [CanImportBundle]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=BundleImportRequest, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request) -> Response:
        """Rebuild a study from its publication bundle; all or nothing, checksums verified.

        400 with ``problems`` (file, line, column, message) on any problem: nothing is imported.
        The importing coordinator manages the rebuilt study.
        """
        data = BundleImportRequest(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        if upload.size > max_upload_bytes():
            return Response({"detail": f"the bundle is larger than {human_bytes(max_upload_bytes())}"}, status=413)
        coordinators = [request.user] if has_any_role(request.user, {Role.COORDINATOR}) else []
        result = bundle_import(data=upload.read(), file=upload.name, actor=request.user,
                               dry_run=data.validated_data["dry_run"], coordinators=coordinators)
        return Response({"dry_run": result.dry_run, "study": None if result.dry_run else result.study.pk,
                         "conversations": result.n_conversations, "ratings": result.n_ratings,
                         "consensus_labels": result.n_consensus, "judge_runs": len(result.runs), "summary": result.summary()})
