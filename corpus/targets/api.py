"""REST endpoints of the chatbots under test (read; adding one is a page)."""

from __future__ import annotations

from rest_framework import viewsets

from core.permissions import CanViewCorpus
from corpus.models import Target
from corpus.targets import selectors
from corpus.targets.serializers import TargetSerializer


class TargetViewSet(viewsets.ReadOnlyModelViewSet):
    permission_classes = [CanViewCorpus]
    queryset = Target.objects.none()
    serializer_class = TargetSerializer

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return selectors.target_list_for_user(self.request.user)
