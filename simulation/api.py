"""REST endpoints for simulation batches and prompt templates.

Researchers and admins create, cancel and resume batches and store templates; coordinators
read; clinicians and users without a role get 403. Service errors map to 400/409 through
``core.api_errors``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response

from core.permissions import CanViewCorpus
from simulation import selectors as reads
from simulation.batches import (
    simulation_batch_cancel,
    simulation_batch_create,
    simulation_batch_resume,
)
from simulation.errors import SimulationError
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun
from simulation.preflight import batch_preflight, batch_resume_preflight
from simulation.preflight import enabled as preflight_enabled
from simulation.prompts import (
    TemplateError,
    prompt_template_create,
    prompt_templates_ensure_builtin,
)
from simulation.serializers import (
    BatchProgressSerializer,
    BatchResumeSerializer,
    SimulationBatchCreateSerializer,
    SimulationBatchDetailSerializer,
    SimulationBatchSerializer,
    SimulationPromptCreateSerializer,
    SimulationPromptSerializer,
    SimulationRunSerializer,
)


class CanRunSimulations(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return reads.can_run_simulations(request.user)


WRITE_ACTIONS = {"create", "cancel", "resume"}


class SimulationBatchViewSet(
    mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Simulation batches: personas x chatbots x repetitions, one task per conversation."""

    lookup_field = "code"
    queryset = SimulationBatch.objects.none()

    def get_permissions(self):  # type: ignore[no-untyped-def]
        return [CanRunSimulations()] if self.action in WRITE_ACTIONS else [CanViewCorpus()]

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return reads.batch_list_for_user(self.request.user)

    def get_object(self) -> SimulationBatch:
        return reads.batch_get_for_user(self.request.user, code=self.kwargs["code"])

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        if self.action == "create":
            return SimulationBatchCreateSerializer
        return SimulationBatchDetailSerializer if self.action != "list" else SimulationBatchSerializer

    @extend_schema(request=SimulationBatchCreateSerializer, responses={201: SimulationBatchDetailSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Start a batch: every conversation is planned and queued at once."""
        data = SimulationBatchCreateSerializer(data=request.data, user=request.user)
        data.is_valid(raise_exception=True)
        spec = data.to_spec()
        if preflight_enabled():
            report = batch_preflight(spec).seen_by(request.user)
            if not report.ok:
                return Response({"detail": report.message(), "preflight": [c.as_dict() for c in report.checks]},
                                status=status.HTTP_400_BAD_REQUEST)
        batch = simulation_batch_create(spec=spec, created_by=request.user)
        batch = reads.batch_get_for_user(request.user, code=batch.code)
        return Response(SimulationBatchDetailSerializer(batch).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: BatchProgressSerializer})
    @action(detail=True, methods=["get"])
    def progress(self, request: Request, code: str) -> Response:
        """Counts by status, tokens, cost so far and the estimated time left."""
        return Response(reads.batch_progress(self.get_object()).as_dict())

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=SimulationRun.Status.values, description="Only runs in this state")],
        responses={200: SimulationRunSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def runs(self, request: Request, code: str) -> Response:
        """The planned conversations of the batch with their state, error and transcript code."""
        state = request.query_params.get("status")
        runs = reads.batch_runs(self.get_object(), status=state if state in SimulationRun.Status.values else None)
        page = self.paginate_queryset(runs)
        return self.get_paginated_response(SimulationRunSerializer(page, many=True).data)

    @extend_schema(request=None, responses={200: SimulationBatchDetailSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, code: str) -> Response:
        """Stop the batch: queued conversations will not start, running ones stop before their next call."""
        batch = reads.batch_get_for_user(request.user, code=code, act=True)
        try:
            simulation_batch_cancel(batch_id=batch.pk)
        except SimulationError as exc:
            exc.status = 409  # type: ignore[attr-defined]
            raise
        return Response(SimulationBatchDetailSerializer(self.get_object()).data)

    @extend_schema(request=BatchResumeSerializer, responses={200: SimulationBatchDetailSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, code: str) -> Response:
        """Resume the batch: conversations continue after their last saved message.

        First the launch check: the user-agent and the chatbots of the runs to resume each answer one
        small call; a model that fails is a 400 naming it, and nothing is resumed.
        """
        batch = reads.batch_get_for_user(request.user, code=code, act=True)
        data = BatchResumeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        include_failed = data.validated_data["include_failed"]
        if preflight_enabled():
            report = batch_resume_preflight(batch, include_failed=include_failed).seen_by(request.user)
            if not report.ok:
                return Response({"detail": report.message("nothing was resumed"), "preflight": [c.as_dict() for c in report.checks]},
                                status=status.HTTP_400_BAD_REQUEST)
        simulation_batch_resume(batch_id=batch.pk, include_failed=include_failed)
        return Response(SimulationBatchDetailSerializer(self.get_object()).data)


class SimulationPromptViewSet(mixins.CreateModelMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Versioned, immutable prompt templates (no update or delete: store a new version)."""

    queryset = PromptTemplate.objects.none()
    serializer_class = SimulationPromptSerializer

    def get_permissions(self):  # type: ignore[no-untyped-def]
        return [CanRunSimulations()] if self.action == "create" else [CanViewCorpus()]

    def get_queryset(self):  # type: ignore[no-untyped-def]
        prompt_templates_ensure_builtin()
        return reads.prompt_template_list_for_user(self.request.user)

    @extend_schema(request=SimulationPromptCreateSerializer, responses={201: SimulationPromptSerializer, 200: SimulationPromptSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Store a template; the same key with a new text becomes its next version."""
        data = SimulationPromptCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            template, created = prompt_template_create(**data.validated_data, created_by=request.user)
        except TemplateError as exc:
            raise SimulationError(str(exc)) from exc
        return Response(SimulationPromptSerializer(template).data, status=201 if created else 200)


# The view sets are registered on the API's root router in evalsite/urls.py, so /api/v1/ lists them.
