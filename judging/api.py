"""REST endpoints for judges, prompt templates and judge runs (researchers, admins; coordinators read).

Clinicians and users without a role get 404 on everything here, like on the pages.
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from core.locks import withheld_note
from judging import selectors, services
from judging.errors import JudgingError
from judging.exports import FORMATS, export_csv, withheld_count
from judging.launch import judges_preflight, run_retry_preflight
from judging.models import Judge, JudgeRun, PromptTemplate
from judging.serializers import (
    JudgeRunCreateSerializer,
    JudgeRunProgressSerializer,
    JudgeRunSerializer,
    JudgeSerializer,
    PromptTemplateSerializer,
    RetryResponseSerializer,
)
from simulation.preflight import enabled as preflight_enabled


class JudgingPermission(BasePermission):
    """Read: coordinators, researchers, admins. Write: researchers and admins. Others: 404."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if not getattr(request.user, "is_authenticated", False):
            return False  # DRF answers 401/403 and asks to authenticate
        if not selectors.can_view_judging(request.user):
            raise NotFound()
        return request.method in SAFE_METHODS or selectors.can_manage_judging(request.user)


def _refused(exc: JudgingError) -> Response:
    return Response({"detail": str(exc)}, status=exc.status)


class PromptTemplateViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Immutable prompt templates; posting changed text under a key stores its next version."""

    permission_classes = [JudgingPermission]
    serializer_class = PromptTemplateSerializer
    queryset = PromptTemplate.objects.none()

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.prompt_list_for_user(self.request.user)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = PromptTemplateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            prompt, created = services.prompt_create(**data.validated_data, created_by=request.user)
        except JudgingError as exc:
            return _refused(exc)
        return Response(
            PromptTemplateSerializer(prompt).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class JudgeViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """LLM judges. The mode follows the instrument; the API key stays in the environment."""

    permission_classes = [JudgingPermission]
    serializer_class = JudgeSerializer
    queryset = Judge.objects.none()

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.judge_list_for_user(self.request.user)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = JudgeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            judge = services.judge_create(**data.validated_data, created_by=request.user)
        except JudgingError as exc:
            return _refused(exc)
        return Response(JudgeSerializer(judge).data, status=status.HTTP_201_CREATED)


class JudgeRunViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """Judge runs: judges x conversations x instances, with progress, cost and exports."""

    permission_classes = [JudgingPermission]
    serializer_class = JudgeRunSerializer
    queryset = JudgeRun.objects.none()

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.run_list_for_user(self.request.user)

    @extend_schema(request=JudgeRunCreateSerializer, responses={201: JudgeRunSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = JudgeRunCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            ids, selection = selectors.conversation_ids_for_judging(
                batch_ids=v["batch_ids"],
                persona_set_ids=v["persona_set_ids"],
                study_id=v["study_id"],
                codes=v["codes"],
                include_flagged=v["include_flagged"],
                user=request.user,
            )
            judges = selectors.judges_by_reference(v["judges"])
            if preflight_enabled():
                report = judges_preflight(judges).seen_by(request.user)
                if not report.ok:
                    return Response({"detail": report.message(), "preflight": [c.as_dict() for c in report.checks]},
                                    status=status.HTTP_400_BAD_REQUEST)
            run = services.judge_run_create(
                judges=judges,
                conversation_ids=ids,
                selection=selection,
                instances=v["instances"],
                independent_instances=v["independent_instances"],
                use_cache=v["use_cache"],
                name=v["name"],
                created_by=request.user,
            )
        except JudgingError as exc:
            return _refused(exc)
        run.refresh_from_db()
        return Response(JudgeRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: JudgeRunProgressSerializer})
    @action(detail=True, methods=["get"])
    def progress(self, request: Request, pk: str | None = None) -> Response:
        """Return the run's status, progress, calls, cached calls, tokens and cost."""
        run = self.get_object()
        return Response(JudgeRunProgressSerializer(run).data)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "as",
                str,
                enum=list(FORMATS),
                description="long: one row per label; dimensions: VERA-MH per-dimension results "
                "with the answered path; ensemble: majority labels with votes and rule",
            )
        ],
        responses={(200, "text/csv"): OpenApiTypes.STR},
    )
    @action(detail=True, methods=["get"])
    def labels(self, request: Request, pk: str | None = None) -> StreamingHttpResponse | Response:
        """Export the run's labels as CSV."""
        run = self.get_object()
        fmt = request.query_params.get("as", "long")
        if fmt not in FORMATS:
            return Response({"detail": f"'as' must be one of {', '.join(FORMATS)}"}, status=400)
        response = StreamingHttpResponse(export_csv(JudgeRun.objects.filter(pk=run.pk), fmt), content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="judge-run-{run.pk}-{fmt}.csv"'
        withheld = withheld_count(JudgeRun.objects.filter(pk=run.pk))
        if withheld:
            response["X-Evalsite-Withheld"] = withheld_note(withheld)
        return response

    @extend_schema(request=None, responses={200: JudgeRunSerializer, 409: OpenApiResponse(description="Already finished")})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel a run: pending judgements are skipped (its creator, its study's members, admins)."""
        try:
            run = self.get_object()
            selectors.run_require_act(request.user, run)
            run = services.judge_run_cancel(run=run)
        except JudgingError as exc:
            return _refused(exc)
        return Response(JudgeRunSerializer(run).data)

    @extend_schema(request=None, responses={
        200: RetryResponseSerializer, 409: OpenApiResponse(description="Nothing to retry"),
        400: OpenApiResponse(description="A judge fails the launch check: nothing was scheduled"),
    })
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str | None = None) -> Response:
        """Schedule the failed judgements of a finished run again, after the launch check of their judges."""
        run = self.get_object()
        selectors.run_require_act(request.user, run)
        if preflight_enabled():
            report = run_retry_preflight(run).seen_by(request.user)
            if not report.ok:
                return Response({"detail": report.message("nothing was scheduled again"), "preflight": [c.as_dict() for c in report.checks]},
                                status=status.HTTP_400_BAD_REQUEST)
        try:
            n = services.judge_run_retry_failed(run=run)
        except JudgingError as exc:
            return _refused(exc)
        return Response({"scheduled": n})
