"""REST endpoints of persona sets and their import."""

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
from corpus.models import PersonaSet
from corpus.personas import selectors, services
from corpus.personas.serializers import PersonaImportResponseSerializer, PersonaSetSerializer


class PersonaSetViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [CanViewCorpus]
    queryset = PersonaSet.objects.none()
    serializer_class = PersonaSetSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.persona_set_list_for_user(self.request.user).prefetch_related("personas")


class PersonaImportView(APIView):
    """Import a persona set (VERA-MH TSV or evalsite YAML/JSON); all or nothing unless valid_only."""

    permission_classes = [CanImport]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=ImportRequestSerializer, responses={200: PersonaImportResponseSerializer})
    def post(self, request: Request) -> Response:
        data = ImportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        (name, text), *_ = read_upload(upload.name, upload)
        result = services.personas_import(
            text=text,
            file=name,
            fmt=data.validated_data["format"],
            key=data.validated_data.get("key"),
            name=data.validated_data.get("name"),
            valid_only=data.validated_data["valid_only"],
            dry_run=data.validated_data["dry_run"],
            created_by=request.user,
        )
        return Response(
            {
                "dry_run": data.validated_data["dry_run"],
                "persona_set": result.persona_set.pk if result.persona_set else None,
                "created": result.created,
                "total_rows": result.total_rows,
                "imported_rows": result.imported_rows,
                "skipped": [p.as_dict() for p in result.skipped],
            }
        )
