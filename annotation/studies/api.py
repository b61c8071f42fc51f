"""REST endpoints for coordinators: studies, assignments, rotation, progress and consensus.

Same rules as the pages: a coordinator sees and changes only the studies they coordinate
(another study answers 404), admins see all, a researcher member of a study may read it, and
every other user gets 403. Service errors map to their status through ``api_errors``.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch
from django.urls import path
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.routers import SimpleRouter
from rest_framework.views import APIView

from annotation.consensus import selectors as consensus_reads
from annotation.consensus.jobs import consensus_marker, consensus_request, job_state, shown_job
from annotation.consensus.services import consensus_adjudicate
from annotation.models import MemberRole, Study, StudyMembership
from annotation.studies import progress as progress_reads
from annotation.studies import selectors as reads
from annotation.studies.load import study_set_evidence
from annotation.studies.serializers import (
    AdjudicateSerializer,
    AssignmentSerializer,
    AssignRequestSerializer,
    ConsensusCountsSerializer,
    ConsensusLabelSerializer,
    ConsensusStateSerializer,
    DesignSerializer,
    EvidenceSettingSerializer,
    MovedSerializer,
    ProgressSerializer,
    RaterAddSerializer,
    ReassignSerializer,
    RemovedWorkDecideSerializer,
    RemovedWorkResultSerializer,
    RemovedWorkRowSerializer,
    RemoveRaterSerializer,
    StudyCreateSerializer,
    StudySerializer,
)
from annotation.studies.services import (
    DISCARD,
    KEEP,
    MOVE,
    RemovedWorkDecision,
    assignment_reassign,
    removed_work_decide,
    study_add_rater,
    study_assign,
    study_create,
    study_remove_rater,
    study_set_alt_test_epsilon,
)
from core.roles import Role, has_any_role
from corpus.conversations.selectors import conversation_ids_for_selection

READ_ACTIONS = {"list", "retrieve", "assignments", "progress", "consensus", "consensus_job"}
USER_ID = OpenApiParameter("user_id", int, OpenApiParameter.PATH, description="id of the rater")
CONSENSUS_ID = OpenApiParameter("consensus_id", int, OpenApiParameter.PATH, description="id of the consensus label")


class AltTestEpsilonSerializer(serializers.Serializer):
    epsilon = serializers.FloatField(min_value=0, max_value=0.5, help_text="0.2 expert raters, 0.15 skilled raters, 0.1 crowd workers")


class IsStudyStaff(BasePermission):
    """Coordinators and admins; researchers only read (object access is checked by selectors)."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if has_any_role(request.user, {Role.COORDINATOR, Role.ADMIN}):
            return True
        return has_any_role(request.user, {Role.RESEARCHER}) and getattr(view, "action", None) in READ_ACTIONS


def _design(study: Study, seed: int | None) -> dict[str, Any]:
    design = reads.study_design(study)
    names = [r.membership.user.get_username() for r in design.raters]
    overlap = [
        {"rater_a": names[i], "rater_b": names[j], "shared": cell.n, "too_few": cell.too_few}
        for i, row in enumerate(design.raters)
        for j, cell in enumerate(row.cells)
        if i < j
    ]
    load = [
        {"rater": r.membership.user_id, "username": names[i], "label": r.membership.rater_label,
         "active": r.membership.active, "load": r.load, "calibration": r.calibration}
        for i, r in enumerate(design.raters)
    ]
    n = sum(r.load + r.calibration for r in design.raters)
    return {"seed": seed, "n_assignments": n, "min_overlap": design.min_overlap, "load": load, "overlap": overlap}


class StudyViewSet(mixins.ListModelMixin, mixins.CreateModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Studies the user coordinates: create, list, assign, rotate raters, progress, consensus."""

    permission_classes = [IsStudyStaff]
    serializer_class = StudySerializer
    queryset = Study.objects.none()  # for the schema; the selectors apply the access rules

    def get_queryset(self):  # type: ignore[no-untyped-def]
        members = Prefetch("memberships", queryset=StudyMembership.objects.filter(role=MemberRole.RATER).select_related("user"))
        return reads.coordinator_study_list(self.request.user, write=False).prefetch_related(members).order_by("-created_at")

    def get_object(self) -> Study:
        pk = self.kwargs["pk"]
        return reads.study_get_for_coordinator(self.request.user, pk=int(pk) if str(pk).isdigit() else 0,
                                               write=self.action not in READ_ACTIONS)

    @extend_schema(request=StudyCreateSerializer, responses={201: StudySerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Create a study from a selection of conversations; the caller becomes its coordinator."""
        data = StudyCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        ids, record = conversation_ids_for_selection(**v["selection"], user=request.user)
        study = study_create(
            name=v["name"], description=v["description"], instrument=v["instrument"], section=v["section"],
            conversation_ids=ids, created_by=request.user, coordinators=[request.user], raters=v["raters"],
            raters_per_conversation=v["raters_per_conversation"], composition=v["composition"] or None,
            tie_policy=v["tie_policy"], senior_rater=v["senior"], selection=record,
            calibration=v["calibration_map"] or None, min_ratings_for_consensus=v["min_ratings_for_consensus"],
        )
        return Response(StudySerializer(reads.study_get_for_coordinator(request.user, pk=study.pk)).data, status=201)

    @extend_schema(request=AssignRequestSerializer, responses={200: DesignSerializer})
    @action(detail=True, methods=["post"])
    def assign(self, request: Request, pk: str) -> Response:
        """Assign k raters per conversation (balanced, seeded); returns load and pair overlap."""
        study = self.get_object()
        data = AssignRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = study_assign(study=study, actor=request.user, seed=data.validated_data["seed"])
        return Response(DesignSerializer(_design(study, result["seed"])).data)

    @extend_schema(
        parameters=[OpenApiParameter("rater", int), OpenApiParameter("status", str)],
        responses={200: AssignmentSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def assignments(self, request: Request, pk: str) -> Response:
        """List the study's assignments (filter by ?rater=ID and ?status=...)."""
        study = self.get_object()
        qs = study.assignments.select_related("conversation", "rater").order_by("rater__username", "is_calibration", "position")
        if request.query_params.get("rater", "").isdigit():
            qs = qs.filter(rater_id=int(request.query_params["rater"]))
        if request.query_params.get("status"):
            qs = qs.filter(status=request.query_params["status"])
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(AssignmentSerializer(page, many=True).data)

    @extend_schema(request=AltTestEpsilonSerializer, responses={200: StudySerializer})
    @action(detail=True, methods=["post"], url_path="alt-test-epsilon")
    def alt_test_epsilon(self, request: Request, pk: str) -> Response:
        """Set the alt-test margin epsilon of the judges-vs-humans verdict.

        Calderon, Reichart & Dror (ACL 2025): 0.2 for expert raters (the default: clinicians),
        0.15 for skilled raters, 0.1 for crowd workers; smaller when raters agree poorly.
        """
        study = self.get_object()
        data = AltTestEpsilonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        study_set_alt_test_epsilon(study=study, epsilon=data.validated_data["epsilon"], actor=request.user)
        return Response(StudySerializer(reads.study_get_for_coordinator(request.user, pk=study.pk)).data)

    @extend_schema(request=EvidenceSettingSerializer, responses={200: StudySerializer})
    @action(detail=True, methods=["post"], url_path="evidence")
    def evidence(self, request: Request, pk: str) -> Response:
        """Set whether raters cite the transcript turns behind their answers, and whether they must (audited)."""
        study = self.get_object()
        data = EvidenceSettingSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        study_set_evidence(study=study, mode=data.validated_data["evidence_mode"],
                           required=data.validated_data["evidence_required"], actor=request.user)
        return Response(StudySerializer(reads.study_get_for_coordinator(request.user, pk=study.pk)).data)

    @extend_schema(request=RaterAddSerializer, responses={200: MovedSerializer})
    @action(detail=True, methods=["post"])
    def raters(self, request: Request, pk: str) -> Response:
        """Add a rater (a clinician-group user); unstarted work is rebalanced onto them."""
        study = self.get_object()
        data = RaterAddSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        user = reads.rater_candidates().filter(pk=v["user"]).first()
        if user is None:
            raise serializers.ValidationError({"user": "not a user of the clinician group"})
        moved = study_add_rater(study=study, user=user, label=v["label"], actor=request.user, reason=v["reason"], rebalance=v["rebalance"])
        return Response({"moved": AssignmentSerializer(moved, many=True).data})

    @extend_schema(request=RemoveRaterSerializer, responses={200: MovedSerializer}, parameters=[USER_ID])
    @action(detail=True, methods=["post"], url_path=r"raters/(?P<user_id>[0-9]+)/remove")
    def remove_rater(self, request: Request, pk: str, user_id: str) -> Response:
        """Remove a rater who drops out (reason required); their unstarted work is redistributed.

        Their work in progress (and, with ``redistribute: false``, their unstarted work) waits
        for a decision: see ``removed-work``.
        """
        study = self.get_object()
        rater = reads.study_rater_get(study, user_id=int(user_id))
        data = RemoveRaterSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        moved = study_remove_rater(study=study, rater=rater, actor=request.user, reason=data.validated_data["reason"],
                                   redistribute=data.validated_data["redistribute"])
        return Response({"moved": AssignmentSerializer(moved, many=True).data})

    @extend_schema(methods=["GET"], responses={200: RemovedWorkRowSerializer(many=True)})
    @extend_schema(methods=["POST"], request=RemovedWorkDecideSerializer, responses={200: RemovedWorkResultSerializer})
    @action(detail=True, methods=["get", "post"], url_path="removed-work")
    def removed_work(self, request: Request, pk: str) -> Response:
        """List what removed raters still hold, or decide: keep with them, move, or discard (reason required).

        Without ``assignments`` the decision applies to everything awaiting one. A move without
        ``to_rater`` goes to the least loaded active rater who does not hold the conversation.
        """
        study = self.get_object()
        if request.method == "GET":
            return Response(RemovedWorkRowSerializer(reads.removed_work(study).rows, many=True).data)
        data = RemovedWorkDecideSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        ids = v["assignments"] or [row.assignment.pk for row in reads.removed_work(study).awaiting]
        decision = RemovedWorkDecision(v["decision"], v["to_rater"] if v["decision"] == MOVE else None)
        counts = removed_work_decide(study=study, decisions=dict.fromkeys(ids, decision), actor=request.user, reason=v["reason"])
        rows = reads.removed_work(study).rows
        return Response({"kept": counts[KEEP], "moved": counts[MOVE], "discarded": counts[DISCARD],
                         "removed_work": RemovedWorkRowSerializer(rows, many=True).data})

    @extend_schema(responses={200: ProgressSerializer})
    @action(detail=True, methods=["get"])
    def progress(self, request: Request, pk: str) -> Response:
        """Progress per rater and per conversation, with stale assignments marked."""
        progress = progress_reads.study_progress(self.get_object())
        return Response(ProgressSerializer(progress).data)

    @extend_schema(request=None, responses={200: ConsensusCountsSerializer, 202: ConsensusCountsSerializer})
    @action(detail=True, methods=["post"], url_path="consensus/compute")
    def consensus_compute(self, request: Request, pk: str) -> Response:
        """Queue the consensus for a background worker (adjudicated labels are kept).

        202 with the job while it is queued or computing (poll ``consensus/job/``); 200 with
        the counts when it is already done (Celery in place). Asking again while a job waits or
        runs returns that job.
        """
        study = self.get_object()
        job = consensus_request(study=study, actor=request.user)
        state = job_state(job)
        if job.status != "ready":
            return Response({"counts": {}, "job": state}, status=202)
        return Response({"counts": job.counts, "job": state, "summary": consensus_reads.consensus_summary(study).as_dict()})

    @extend_schema(responses={200: ConsensusStateSerializer})
    @action(detail=True, methods=["get"], url_path="consensus/job")
    def consensus_job(self, request: Request, pk: str) -> Response:
        """The consensus job's progress, and whether the stored labels are up to date."""
        marker = consensus_marker(self.get_object())
        job = shown_job(marker)
        return Response({
            "job": job_state(job) if job is not None else None,
            "computed_at": marker["computed_at"].isoformat() if marker["computed_at"] else None,
            "computed_by": marker["by"], "up_to_date": marker["up_to_date"],
        })

    @extend_schema(
        parameters=[OpenApiParameter("queue", bool, description="only the adjudication queue, most disputed first")],
        responses={200: ConsensusLabelSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def consensus(self, request: Request, pk: str) -> Response:
        """List the consensus labels (or, with ?queue=true, the adjudication queue)."""
        study = self.get_object()
        queue = request.query_params.get("queue", "").lower() in ("1", "true", "yes")
        # The queue is the coordinators' work (test-set items included); the list is an export: a locked test set is withheld.
        qs = consensus_reads.adjudication_queue(study) if queue else consensus_reads.consensus_exportable(study)
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(ConsensusLabelSerializer(page, many=True).data)

    @extend_schema(request=AdjudicateSerializer, responses={200: ConsensusLabelSerializer}, parameters=[CONSENSUS_ID])
    @action(detail=True, methods=["post"], url_path=r"consensus/(?P<consensus_id>[0-9]+)/adjudicate")
    def adjudicate(self, request: Request, pk: str, consensus_id: str) -> Response:
        """Record the adjudicator's final label of one item, with the reason."""
        study = self.get_object()
        data = AdjudicateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        entry = consensus_adjudicate(
            consensus_id=int(consensus_id), study=study, label=data.validated_data["label"],
            reason=data.validated_data["reason"], actor=request.user,
        )
        return Response(ConsensusLabelSerializer(entry).data)


class AssignmentReassignView(APIView):
    """Move one unsubmitted assignment to another active rater of its study (reason required)."""

    permission_classes = [IsStudyStaff]

    @extend_schema(request=ReassignSerializer, responses={200: AssignmentSerializer})
    def post(self, request: Request, pk: int) -> Response:
        assignment = reads.assignment_get_for_manager(request.user, pk=pk)
        data = ReassignSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        new_rater = reads.rater_candidates().filter(pk=data.validated_data["new_rater"]).first()
        if new_rater is None:
            raise serializers.ValidationError({"new_rater": "not a user of the clinician group"})
        moved = assignment_reassign(assignment=assignment, new_rater=new_rater, actor=request.user, reason=data.validated_data["reason"])
        return Response(AssignmentSerializer(moved).data)


router = SimpleRouter()
router.register("studies", StudyViewSet, basename="coordinator-study")

urlpatterns: list = [
    *router.urls,
    path("assignments/<int:pk>/reassign/", AssignmentReassignView.as_view(), name="coordinator-assignment-reassign"),
]
