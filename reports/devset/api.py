"""Judge development over the API: the split, development-set figures, final versions, looks at the test set.

Same rules as the page: readers of the study's reports read; its coordinators (and admins)
split; researchers (and admins) declare a version final and evaluate the test set. A user who
may read the study but not do the action gets 403; a study the user may not read is 404.
"""

from __future__ import annotations

from django.http import Http404
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.studies.selectors import user_manages_study
from judging.errors import JudgingError
from judging.sources import label_source_get
from reports import selectors as report_reads
from reports.api import CanReadReports
from reports.devset import selectors, services
from reports.devset import summary as reads
from reports.errors import ReportsError

NA = OpenApiParameter("na", str, enum=["category", "exclude"], description="N/A policy of the development-set figures")


def _int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).strip().isdigit():
        raise ReportsError(f"{name} must be a whole number.")
    return int(str(value).strip())


class DevelopmentView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(parameters=[NA], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int) -> Response:
        """The study's split, each judge version on the development set, the final versions and the looks.

        ``split`` (None before the first split): ``seed``, ``n_dev``, ``n_test``, ``strata``, who and
        when; ``development_versions``: agreement, kappa with intervals and the alternative annotator
        test of each version on the development set (``pending`` while a worker computes one);
        ``test_set_looks``: ``count`` and ``versions`` of the looks at the test set in force and
        every look of every split; ``methods``: a plain-language methods sentence with the same counts.
        """
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        na = "exclude" if request.query_params.get("na") == "exclude" else "category"
        payload = reads.development_summary(study)
        payload["development_versions"] = reads.development_versions(study, na=na, wait=False)
        return Response(payload)


class SplitView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int) -> Response:
        """Split the study once: ``n_test`` (required), ``seed`` (optional), ``reason`` (required to split again)."""
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        if not user_manages_study(request.user, study):
            raise PermissionDenied("Only the study's coordinators (and admins) split it.")
        seed = request.data.get("seed")
        split = services.split_make(
            study=study, actor=request.user, n_test=_int(request.data.get("n_test"), "n_test"),
            seed=None if seed in (None, "") else _int(seed, "seed"), reason=str(request.data.get("reason") or ""),
        )
        return Response({"number": split.number, "seed": split.seed, "n_dev": split.n_dev, "n_test": split.n_test,
                         "development": reads.development_summary(study)}, status=201)


class DeclarationsView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int) -> Response:
        """Declare a version final: ``run`` and ``source`` ("ensemble" or "judge:<id>"), optional ``note``.

        201 when recorded, 200 when this version was already declared final under the split in force.
        """
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        if not selectors.user_may_look(request.user):
            raise PermissionDenied("Only researchers (and admins) declare a judge version final.")
        run = selectors.study_run(study, _int(request.data.get("run"), "run"))
        if run is None:
            raise Http404("no such judge run for this study")
        declaration, created = services.final_declare(study=study, run=run, source=str(request.data.get("source") or ""),
                                                      actor=request.user, note=str(request.data.get("note") or ""))
        return Response({"id": declaration.pk, "version": declaration.label, "run": declaration.run_id,
                         "source": declaration.source, "created": created}, status=201 if created else 200)


class LooksView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, pk: int) -> Response:
        """Evaluate a version declared final on the test set: ``run`` and ``source`` (or ``declaration``), ``na``.

        Each new evaluation is a look, recorded and counted (201); the same version on unchanged
        test data returns the stored look (200) and counts nothing. A version not declared final
        is refused (400) and nothing is counted. The result is computed by a worker: poll
        ``looks/<id>/`` until ``status`` is "ready".
        """
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        if not selectors.user_may_look(request.user):
            raise PermissionDenied("Only researchers (and admins) evaluate the test set.")
        split = selectors.split_current(study)
        if split is None:
            raise ReportsError("The study has no test set yet: split it first.")
        if request.data.get("declaration") not in (None, ""):
            declaration = selectors.declaration_get(split, _int(request.data.get("declaration"), "declaration"))
        else:
            run_id, source = _int(request.data.get("run"), "run"), str(request.data.get("source") or "")
            run = selectors.study_run(study, run_id)
            if run is None:
                raise Http404("no such judge run for this study")
            if not source:
                try:
                    source = label_source_get(run, "").key
                except JudgingError as exc:
                    raise ReportsError(str(exc)) from exc
            declaration = selectors.declaration_for(split, run_id, source)
        if declaration is None:
            raise ReportsError("This version is not declared final under the split in force: the test set is evaluated "
                               "only for a version declared final. Nothing was evaluated or counted.")
        na = str(request.data.get("na") or "category")
        look, created = services.test_set_evaluate(study=study, declaration=declaration, actor=request.user, na=na)
        return Response({**reads.look_payload(look), "created": created,
                         "test_set_looks": reads.looks_summary(study)}, status=201 if created else 200)


class LookView(APIView):
    permission_classes = [CanReadReports]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, pk: int, look_id: int) -> Response:
        """One stored look: who, when, which version, and its test-set result (``result``, once ready).

        Reading a look again is not a new look.
        """
        study = report_reads.study_get_for_reports(request.user, pk=pk)
        look = selectors.look_get(study, look_id)
        if look is None:
            raise Http404("no such look")
        return Response(reads.look_payload(look))


urlpatterns = [
    path("studies/<int:pk>/development/", DevelopmentView.as_view(), name="report-development"),
    path("studies/<int:pk>/development/split/", SplitView.as_view(), name="report-development-split"),
    path("studies/<int:pk>/development/declarations/", DeclarationsView.as_view(), name="report-development-declarations"),
    path("studies/<int:pk>/development/looks/", LooksView.as_view(), name="report-development-looks"),
    path("studies/<int:pk>/development/looks/<int:look_id>/", LookView.as_view(), name="report-development-look"),
]
