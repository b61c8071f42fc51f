"""REST endpoints for raters: their assignments, autosaved answers, submission and revision.

Only the assigned rater reaches an assignment: anyone else gets 404, as on the pages.
Session authentication keeps CSRF on; token authentication works for scripts.
"""

from __future__ import annotations

from typing import Any

from django.urls import path
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.generics import ListAPIView
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.errors import AnnotationError
from annotation.rating import selectors as rater_selectors
from annotation.rating import services
from annotation.rating.serializers import (
    AnswerRequestSerializer,
    AnswerResponseSerializer,
    AssignmentDetailSerializer,
    OpenResponseSerializer,
    QueueEntrySerializer,
    RaterErrorSerializer,
    RatingSerializer,
    ReviseRequestSerializer,
    SubmitRequestSerializer,
)
from core.roles import Role, has_any_role
from corpus.models import InstrumentKind

TAGS = ["my assignments"]
ERRORS = {code: RaterErrorSerializer for code in (400, 404, 409, 410, 423)}


class IsRater(BasePermission):
    """Answer 404 to logged-in users who are not raters: nothing about assignments leaks."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if not has_any_role(request.user, {Role.CLINICIAN}):
            raise NotFound()
        return True


def _error(exc: AnnotationError) -> Response:
    """Answer a refused request with its message and the safe details (revision, missing items)."""
    body: dict[str, Any] = {"detail": str(exc)}
    for key in ("revision", "missing", "missing_evidence"):
        if key in exc.details:
            body[key] = exc.details[key]
    return Response(body, status=exc.status)


class RaterAPIView(APIView):
    permission_classes = [IsAuthenticated, IsRater]


class MyAssignmentList(ListAPIView):
    """List the rater's own assignments, study by study, in the rater's order."""

    permission_classes = [IsAuthenticated, IsRater]
    serializer_class = QueueEntrySerializer

    def get_queryset(self) -> list[rater_selectors.QueueEntry]:  # type: ignore[override]
        return rater_selectors.rater_queue_entries(self.request.user)

    @extend_schema(tags=TAGS)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)


class MyAssignmentDetail(RaterAPIView):
    @extend_schema(tags=TAGS, responses={200: AssignmentDetailSerializer, 404: RaterErrorSerializer})
    def get(self, request: Request, pk: int) -> Response:
        """Return the blinded conversation, the items, the rater's answers and the revision."""
        page = rater_selectors.rating_page(rater_selectors.assignment_get_for_rater(request.user, pk))
        return Response(AssignmentDetailSerializer(AssignmentDetailSerializer.from_page(page)).data)


class MyAssignmentOpen(RaterAPIView):
    @extend_schema(tags=TAGS, request=None, responses={200: OpenResponseSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Open (or resume) the rating: the assignment starts. The rating page posts this on load."""
        assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
        try:
            rating = services.rating_open(assignment_id=assignment.pk, user=request.user)
        except AnnotationError as exc:
            return _error(exc)
        assignment.refresh_from_db(fields=["status"])
        return Response(OpenResponseSerializer({"status": assignment.status, "revision": rating.revision}).data)


class MyAssignmentAnswer(RaterAPIView):
    @extend_schema(tags=TAGS, request=AnswerRequestSerializer, responses={200: AnswerResponseSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Save one answer of a draft rating; 409 when the rating changed since expected_revision.

        410 when a coordinator withdrew the assignment from this rater (moved or discarded it).
        """
        withdrawn = rater_selectors.assignment_withdrawn_for_rater(request.user, pk)
        if withdrawn is not None:
            return Response(
                {"detail": "this conversation was withdrawn from you by the study coordinator", "withdrawn": True},
                status=410,
            )
        assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
        data = AnswerRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            rating = services.rating_save_answer(assignment_id=assignment.pk, user=request.user, **data.validated_data)
        except AnnotationError as exc:
            return _error(exc)
        instrument = assignment.study.instrument
        flow = (
            rater_selectors.flow_state(instrument.flow, rating.answers).as_dict()
            if instrument.kind == InstrumentKind.FLOW
            else None
        )
        body = {"revision": rating.revision, "status": rating.status, "answers": rating.answers, "flow": flow}
        return Response(AnswerResponseSerializer(body).data)


class MyAssignmentSubmit(RaterAPIView):
    @extend_schema(tags=TAGS, request=SubmitRequestSerializer, responses={200: RatingSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Submit the rating; submitting again returns it unchanged. 400 names unanswered items."""
        assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
        data = SubmitRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            rating = services.rating_submit(
                assignment_id=assignment.pk, user=request.user,
                expected_revision=data.validated_data.get("expected_revision"),
            )
        except AnnotationError as exc:
            return _error(exc)
        return Response(RatingSerializer(rating).data)


class MyAssignmentRevise(RaterAPIView):
    @extend_schema(tags=TAGS, request=ReviseRequestSerializer, responses={200: RatingSerializer, **ERRORS})
    def post(self, request: Request, pk: int) -> Response:
        """Change answers of a submitted rating; needs a reason, kept with the new revision."""
        assignment = rater_selectors.assignment_get_for_rater(request.user, pk)
        data = ReviseRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            rating = services.rating_revise(
                assignment_id=assignment.pk, user=request.user,
                changes=data.validated_data["changes"], reason=data.validated_data["reason"],
            )
        except AnnotationError as exc:
            return _error(exc)
        return Response(RatingSerializer(rating).data)


urlpatterns = [
    path("my/assignments/", MyAssignmentList.as_view(), name="my-assignment-list"),
    path("my/assignments/<int:pk>/", MyAssignmentDetail.as_view(), name="my-assignment-detail"),
    path("my/assignments/<int:pk>/open/", MyAssignmentOpen.as_view(), name="my-assignment-open"),
    path("my/assignments/<int:pk>/answers/", MyAssignmentAnswer.as_view(), name="my-assignment-answers"),
    path("my/assignments/<int:pk>/submit/", MyAssignmentSubmit.as_view(), name="my-assignment-submit"),
    path("my/assignments/<int:pk>/revise/", MyAssignmentRevise.as_view(), name="my-assignment-revise"),
]
