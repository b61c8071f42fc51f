"""REST endpoints for sampling plans and rater load: preview a plan, create a study with one,
read a study's plan, read or set the study's break prompt (conversations per sitting).

Same rules as the pages: coordinators and admins preview and create (anyone else 403); a
study's plan and its break prompt are read by those who may read the study and changed by those
who manage it (others 404).
"""

from __future__ import annotations

from typing import Any

from django.urls import include, path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.errors import AnnotationError
from annotation.models import SamplingMethod, SamplingPlan
from annotation.sampling.forms import PlanForm
from annotation.sampling.selectors import plan_preview
from annotation.sampling.services import plan_inclusion_rows, study_create_from_plan
from annotation.studies import selectors as reads
from annotation.studies.api import IsStudyStaff
from annotation.studies.load import study_set_sitting_limit
from annotation.studies.serializers import StudyCreateSerializer, StudySerializer
from judging.errors import JudgingError
from judging.sources import label_source_get


class CanCreateStudies(BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return reads.can_create_studies(request.user)


PLAN_PARAMETERS = [
    OpenApiParameter("run", int, required=True, description="judge run the plan draws from"),
    OpenApiParameter("source", str, description='"ensemble" or "judge:<id>"'),
    OpenApiParameter("method", str, enum=list(SamplingMethod.values), required=True),
    OpenApiParameter("plan_size", int, required=True, description="conversations to rate"),
    OpenApiParameter("allocation", str, enum=["proportional", "equal"], description="stratified plans"),
    OpenApiParameter("boost", float, description="oversampling factor for judge disagreement (default 3)"),
    OpenApiParameter("min_split", int, description="oversampling: split or no-majority labels that flag a conversation (default 1)"),
    OpenApiParameter("plan_seed", int, description="seed (default 0 for a preview)"),
    OpenApiParameter("d_agree", float, description="planning value: % disagreement where the judges agreed (default 15)"),
    OpenApiParameter("d_split", float, description="planning value: % disagreement where the judges split (default 40)"),
]


def _plan_data(values: Any) -> dict[str, Any]:
    defaults = {name: field.initial for name, field in PlanForm.base_fields.items() if field.initial is not None}
    return {**defaults, **{k: v for k, v in values.items() if v not in (None, "")}}


def _form_errors(form: PlanForm) -> dict[str, list[str]]:
    return {name: [str(e) for e in errors] for name, errors in form.errors.items()}


class PlanPreviewView(APIView):
    permission_classes = [CanCreateStudies]

    @extend_schema(parameters=PLAN_PARAMETERS, responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        """Draw a plan without creating anything: strata, inclusion probabilities and expected widths."""
        form = PlanForm(_plan_data(request.query_params.dict()), user=request.user)
        if not form.is_valid():
            return Response(_form_errors(form), status=400)
        try:
            preview = plan_preview(form.cleaned_data["run"], form.cleaned_data.get("source") or None, form.plan_options())
        except AnnotationError as exc:
            return Response({"detail": str(exc)}, status=exc.status)
        return Response(preview.as_dict())


class PlanInputSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    source = serializers.CharField(required=False, allow_blank=True, default="")
    method = serializers.ChoiceField(choices=SamplingMethod.choices)
    plan_size = serializers.IntegerField(min_value=1)
    allocation = serializers.ChoiceField(choices=["proportional", "equal"], default="proportional")
    boost = serializers.FloatField(min_value=1, max_value=50, default=3.0)
    plan_seed = serializers.IntegerField(min_value=0, required=False, allow_null=True, default=None)
    min_split = serializers.IntegerField(min_value=1, max_value=100, default=1)
    d_agree = serializers.FloatField(min_value=0, max_value=100, default=15)
    d_split = serializers.FloatField(min_value=0, max_value=100, default=40)


class PlannedStudySerializer(StudyCreateSerializer):
    """A study as ``POST /studies/`` takes it, with a sampling plan instead of a selection and instrument."""

    instrument = None  # type: ignore[assignment]  # the run's
    selection = None  # type: ignore[assignment]  # the plan's
    rater_title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    plan = PlanInputSerializer()

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        form = PlanForm(_plan_data({k: v for k, v in data["plan"].items() if v is not None}), user=getattr(self.context.get("request"), "user", None))
        if not form.is_valid():
            raise serializers.ValidationError({"plan": _form_errors(form)})
        data["plan_form"] = form
        data["instrument"] = form.cleaned_data["run"].instrument
        return super().validate(data)


class PlannedStudyCreateView(APIView):
    permission_classes = [CanCreateStudies]

    @extend_schema(request=PlannedStudySerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        """Create a study whose conversations a sampling plan draws from a judge run; the caller coordinates it."""
        data = PlannedStudySerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        form: PlanForm = v["plan_form"]
        try:
            label_source_get(form.cleaned_data["run"], form.cleaned_data.get("source") or None)
        except JudgingError as exc:
            return Response({"plan": {"source": [str(exc)]}}, status=400)
        study = study_create_from_plan(
            run=form.cleaned_data["run"], source_key=form.cleaned_data.get("source") or None, options=form.plan_options(),
            created_by=request.user, name=v["name"], rater_title=v["rater_title"], description=v["description"],
            section=v["section"], coordinators=[request.user], raters=v["raters"],
            raters_per_conversation=v["raters_per_conversation"], composition=v["composition"] or None,
            tie_policy=v["tie_policy"], senior_rater=v["senior"], calibration=v["calibration_map"] or None,
        )
        study = reads.study_get_for_coordinator(request.user, pk=study.pk)
        return Response({"study": StudySerializer(study).data, "sampling_plan": _plan_payload(study.sampling_plan)}, status=201)


def _plan_payload(plan: SamplingPlan) -> dict[str, Any]:
    return {
        "judge_run": plan.judge_run_id, "source": plan.source, "method": plan.method, "allocation": plan.allocation or None,
        "boost": plan.boost, "disagreement_threshold": plan.planning.get("disagreement_threshold"), "seed": plan.seed, "n": plan.n, "population": plan.population, "strata": plan.strata,
        "planning": plan.planning, "created_at": plan.created_at.isoformat(),
    }


class StudySamplingPlanView(APIView):
    permission_classes = [IsStudyStaff]
    action = "retrieve"  # read-only: researchers who may read the study may read its plan

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """The study's sampling plan and every conversation's stratum and inclusion probability."""
        study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
        plan = SamplingPlan.objects.filter(study=study).first()
        if plan is None:
            return Response({"detail": "this study has no sampling plan"}, status=404)
        header, rows = plan_inclusion_rows(study)
        return Response({**_plan_payload(plan), "conversations": [dict(zip(header, row, strict=True)) for row in rows]})


class SittingLimitSerializer(serializers.Serializer):
    sitting_limit = serializers.IntegerField(min_value=0, max_value=500, help_text="conversations per sitting before a break is suggested (0: never)")
    sitting_gap_minutes = serializers.IntegerField(min_value=1, max_value=24 * 60, help_text="a pause this long starts a new sitting")


class StudySittingLimitView(APIView):
    permission_classes = [IsStudyStaff]

    @property
    def action(self) -> str:  # read for GET (researchers may read), a change otherwise
        return "retrieve" if self.request.method == "GET" else "update"

    @extend_schema(responses=SittingLimitSerializer)
    def get(self, request: Request, pk: int) -> Response:
        """The study's break prompt: conversations per sitting and the pause that starts a new sitting."""
        study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
        return Response({"sitting_limit": study.sitting_limit, "sitting_gap_minutes": study.sitting_gap_minutes})

    @extend_schema(request=SittingLimitSerializer, responses=SittingLimitSerializer)
    def post(self, request: Request, pk: int) -> Response:
        """Set the break prompt (recorded in the audit trail)."""
        study = reads.study_get_for_coordinator(request.user, pk=pk)
        data = SittingLimitSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        study = study_set_sitting_limit(
            study=study, limit=data.validated_data["sitting_limit"], gap_minutes=data.validated_data["sitting_gap_minutes"],
            actor=request.user,
        )
        return Response({"sitting_limit": study.sitting_limit, "sitting_gap_minutes": study.sitting_gap_minutes})


urlpatterns = [
    path("sampling-plans/preview/", PlanPreviewView.as_view(), name="sampling-plan-preview"),
    path("sampling-plans/", PlannedStudyCreateView.as_view(), name="sampling-plan-create"),
    path("studies/<int:pk>/sampling-plan/", StudySamplingPlanView.as_view(), name="study-sampling-plan"),
    path("studies/<int:pk>/sitting-limit/", StudySittingLimitView.as_view(), name="study-sitting-limit"),
    path("", include("annotation.sampling.active.api")),
]
