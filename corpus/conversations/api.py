"""REST endpoints of conversations: list, detail, export, import (unblinded corpus roles)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from core.permissions import CanImport, CanViewCorpus
from core.serializers import ImportRequestSerializer
from core.uploads import read_upload
from corpus.conversations import selectors, services
from corpus.conversations.serializers import (
    ConversationDetailSerializer,
    ConversationImportResponseSerializer,
    ConversationSerializer,
)
from corpus.models import Conversation


class ConversationViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [CanViewCorpus]
    lookup_field = "code"
    queryset = Conversation.objects.none()  # for the schema; get_queryset applies access rules

    def get_queryset(self):  # type: ignore[no-untyped-def]
        params = self.request.query_params
        qs = selectors.conversation_list_for_user(
            self.request.user,
            persona_id=int(params["persona"]) if params.get("persona", "").isdigit() else None,
            target_id=int(params["target"]) if params.get("target", "").isdigit() else None,
            source=params.get("source") or None,
        )
        if self.action == "retrieve":
            qs = qs.prefetch_related("messages")
        return qs

    def get_serializer_class(self):  # type: ignore[no-untyped-def]
        return ConversationDetailSerializer if self.action == "retrieve" else ConversationSerializer

    @extend_schema(
        parameters=[OpenApiParameter("as", str, enum=["jsonl", "csv"], description="Export format")],
        responses={(200, "text/csv"): str},
    )
    @action(detail=False, methods=["get"])
    def export(self, request: Request) -> StreamingHttpResponse:
        """Export the (filtered) conversations as JSONL or CSV (one row per message)."""
        fmt = request.query_params.get("as", "jsonl")
        qs = self.get_queryset()
        if fmt == "csv":
            response = StreamingHttpResponse(selectors.conversations_export_csv(qs), content_type="text/csv")
        else:
            fmt = "jsonl"
            response = StreamingHttpResponse(
                selectors.conversations_export_jsonl(qs), content_type="application/x-ndjson"
            )
        response["Content-Disposition"] = f'attachment; filename="conversations.{fmt}"'
        return response


class ConversationImportView(APIView):
    """Import conversations (JSONL, or a zip of VERA-MH transcripts); all or nothing."""

    permission_classes = [CanImport]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request=ImportRequestSerializer, responses={200: ConversationImportResponseSerializer})
    def post(self, request: Request) -> Response:
        data = ImportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        result = services.conversations_import(
            files=read_upload(upload.name, upload),
            fmt=data.validated_data["format"],
            created_by=request.user,
            dry_run=data.validated_data["dry_run"],
        )
        return Response(
            {
                "dry_run": result.dry_run,
                "total": result.total,
                "created": [c.code for c in result.created],
                "duplicates": result.duplicates,
                "summary": result.summary(),
            }
        )
