"""REST endpoints for instruments (and, in the rating issue, studies and ratings)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.permissions import CanImport, CanViewCorpus
from core.serializers import ImportRequestSerializer
from core.uploads import read_upload
from corpus.instruments import selectors, services
from corpus.instruments.serializers import (
    InstrumentDetailSerializer,
    InstrumentImportResponseSerializer,
    InstrumentSerializer,
)
from corpus.models import Instrument


class InstrumentViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [CanViewCorpus]
    queryset = Instrument.objects.none()  # for the schema; get_queryset applies access rules

    def get_queryset(self):  # type: ignore[no-untyped-def]
        qs = selectors.instrument_list_for_user(self.request.user)
        return qs.prefetch_related("items") if self.action == "retrieve" else qs

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        return InstrumentDetailSerializer if self.action == "retrieve" else InstrumentSerializer


class InstrumentImportView(APIView):
    """Import an instrument (evalsite YAML/JSON) or a VERA-MH rubric TSV; all or nothing."""

    permission_classes = [CanImport]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=ImportRequestSerializer, responses={200: InstrumentImportResponseSerializer})
    def post(self, request: Request) -> Response:
        data = ImportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        (name, text), *_ = read_upload(upload.name, upload)
        instrument, created = services.instrument_import(
            text=text,
            file=name,
            fmt=data.validated_data["format"],
            key=data.validated_data.get("key"),
            name=data.validated_data.get("name"),
            created_by=request.user,
            dry_run=data.validated_data["dry_run"],
        )
        return Response(
            {
                "dry_run": data.validated_data["dry_run"],
                "instrument": instrument.pk if instrument else None,
                "version": instrument.version if instrument else None,
                "created": created,
            }
        )
