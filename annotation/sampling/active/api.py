"""REST endpoints for active sampling: create a study, read its state, draw its next batch.

Same rules as the pages: coordinators and admins create (anyone else 403); a study's active
sampling is read by those who may read the study, and its next batch drawn by those who manage
it (others 404, or 403 for a role that may not use study endpoints at all). The state carries
every parameter a methods paragraph needs: the estimator with its reference, the sampling rule,
the floor, the budget and batch sizes, each batch's τ and seeds.
"""

from __future__ import annotations

from typing import Any

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.errors import AnnotationError
from annotation.models import ActiveStopRule, UncertaintyMeasure
from annotation.sampling.active.forms import ActiveDesignForm
from annotation.sampling.active.methods import active_methods
from annotation.sampling.active.selectors import active_plan_get, active_state
from annotation.sampling.active.services import active_batch_draw, active_study_create
from annotation.sampling.api import CanCreateStudies
from annotation.studies import selectors as reads
from annotation.studies.api import IsStudyStaff
from annotation.studies.serializers import StudyCreateSerializer, StudySerializer
from judging.errors import JudgingError
from judging.sources import label_source_get


class ActiveDesignSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    source = serializers.CharField(required=False, allow_blank=True, default="")
    uncertainty = serializers.ChoiceField(choices=UncertaintyMeasure.choices, default=UncertaintyMeasure.DISAGREEMENT)
    budget = serializers.IntegerField(min_value=1)
    batch_size = serializers.IntegerField(min_value=1)
    floor = serializers.FloatField(min_value=1, max_value=100, default=20, help_text="percent")
    target_width = serializers.FloatField(min_value=0.0001)
    stop_on = serializers.ChoiceField(choices=ActiveStopRule.choices, default=ActiveStopRule.EACH_CHATBOT)
    plan_seed = serializers.IntegerField(min_value=0, required=False, allow_null=True, default=None)
    d_agree = serializers.FloatField(min_value=0, max_value=100, default=15, help_text="percent")
    d_split = serializers.FloatField(min_value=0, max_value=100, default=40, help_text="percent")


class ActiveStudySerializer(StudyCreateSerializer):
    """A study as ``POST /studies/`` takes it, with an active sampling design instead of a selection and instrument."""

    instrument = None  # type: ignore[assignment]  # the run's
    selection = None  # type: ignore[assignment]  # the batches'
    rater_title = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    active = ActiveDesignSerializer()

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        values = {k: v for k, v in data["active"].items() if v is not None}
        form = ActiveDesignForm(values, user=getattr(self.context.get("request"), "user", None))
        if not form.is_valid():
            raise serializers.ValidationError({"active": {k: [str(e) for e in v] for k, v in form.errors.items()}})
        data["design_form"] = form
        data["instrument"] = form.cleaned_data["run"].instrument
        return super().validate(data)


class ActiveStudyCreateView(APIView):
    permission_classes = [CanCreateStudies]

    @extend_schema(request=ActiveStudySerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        """Create a study that grows by active sampling from a judge run; draws and assigns batch 1."""
        data = ActiveStudySerializer(data=request.data, context={"request": request})
        data.is_valid(raise_exception=True)
        v = data.validated_data
        form: ActiveDesignForm = v["design_form"]
        try:
            label_source_get(form.cleaned_data["run"], form.cleaned_data.get("source") or None)
            study = active_study_create(
                run=form.cleaned_data["run"], source_key=form.cleaned_data.get("source") or None, options=form.options(),
                created_by=request.user, name=v["name"], rater_title=v["rater_title"], description=v["description"],
                section=v["section"], coordinators=[request.user], raters=v["raters"],
                raters_per_conversation=v["raters_per_conversation"], composition=v["composition"] or None,
                tie_policy=v["tie_policy"], senior_rater=v["senior"],
            )
        except JudgingError as exc:
            return Response({"active": {"source": [str(exc)]}}, status=400)
        except AnnotationError as exc:
            return Response({"detail": str(exc)}, status=exc.status)
        study = reads.study_get_for_coordinator(request.user, pk=study.pk)
        state = active_state(study.active_plan)
        return Response({"study": StudySerializer(study).data, "active_sampling": state.as_dict(with_units=False)}, status=201)


UNITS = OpenApiParameter("units", bool, description="include every visited conversation (default true)")


class StudyActiveSamplingView(APIView):
    permission_classes = [IsStudyStaff]

    @property
    def action(self) -> str:  # read for GET (researchers who may read the study), a change otherwise
        return "retrieve" if self.request.method == "GET" else "update"

    @extend_schema(parameters=[UNITS], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """The study's active sampling: parameters, batches, estimates now and after the next batch, status.

        ``methods``: a methods paragraph (``title``, ``text``, ``references``) written from the same state.
        """
        study = reads.study_get_for_coordinator(request.user, pk=pk, write=False)
        try:
            state = active_state(active_plan_get(study))
        except AnnotationError as exc:
            return Response({"detail": str(exc)}, status=exc.status)
        units = request.query_params.get("units", "true").lower() not in ("0", "false", "no")
        return Response({**state.as_dict(with_units=units), "methods": active_methods(state)})


class ActiveNextBatchView(APIView):
    permission_classes = [IsStudyStaff]
    action = "update"

    @extend_schema(request=None, responses={201: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT})
    def post(self, request: Request, pk: int) -> Response:
        """Draw and assign the next batch; 409 with the reason once the target is reached or the budget spent."""
        study = reads.study_get_for_coordinator(request.user, pk=pk)
        try:
            batch = active_batch_draw(study=study, actor=request.user)
        except AnnotationError as exc:
            return Response({"detail": str(exc)}, status=exc.status)
        state = active_state(batch.plan)
        drawn = next(b for b in state.as_dict(with_units=False)["batches"] if b["number"] == batch.number)
        return Response({"batch": drawn, "active_sampling": state.as_dict(with_units=False)}, status=201)


urlpatterns = [
    path("active-sampling/", ActiveStudyCreateView.as_view(), name="active-sampling-create"),
    path("studies/<int:pk>/active-sampling/", StudyActiveSamplingView.as_view(), name="study-active-sampling"),
    path("studies/<int:pk>/active-sampling/next-batch/", ActiveNextBatchView.as_view(), name="study-active-next-batch"),
]
