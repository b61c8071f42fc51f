from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from core.admin import DestinationCheckedAdmin
from judging.models import (
    EnsembleLabel,
    Judge,
    JudgeLabel,
    JudgeResult,
    JudgeRun,
    LLMCacheEntry,
    PromptTemplate,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by the services only: the admin may look, never change."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PromptTemplate)
class PromptTemplateAdmin(ReadOnlyAdmin):
    list_display = ["key", "version", "name", "mode", "is_builtin", "created_at"]
    list_filter = ["mode", "is_builtin"]


@admin.register(Judge)
class JudgeAdmin(DestinationCheckedAdmin):
    list_display = ["name", "mode", "model", "provider", "instrument", "prompt", "created_at"]
    list_filter = ["mode", "provider"]
    search_fields = ["name", "model"]
    # Runs snapshot the judge when they are created; editing changes only later runs.
    readonly_fields = ["mode", "instrument", "prompt", "created_at", "created_by"]


@admin.register(JudgeRun)
class JudgeRunAdmin(ReadOnlyAdmin):
    list_display = ["id", "name", "instrument", "status", "n_done", "n_failed", "n_total", "n_cached", "cost_usd", "created_at", "shared"]
    list_filter = ["status", "mode"]


@admin.register(JudgeResult)
class JudgeResultAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "judge", "conversation", "instance", "status", "error_kind", "n_calls", "n_cached"]
    list_filter = ["status", "error_kind"]
    list_select_related = ["run", "judge", "conversation"]


@admin.register(JudgeLabel)
class JudgeLabelAdmin(ReadOnlyAdmin):
    list_display = ["result", "kind", "item_key", "label", "status"]
    list_filter = ["kind", "status"]


@admin.register(EnsembleLabel)
class EnsembleLabelAdmin(ReadOnlyAdmin):
    list_display = ["run", "conversation", "item_key", "label", "provenance"]
    list_filter = ["provenance"]


@admin.register(LLMCacheEntry)
class LLMCacheEntryAdmin(ReadOnlyAdmin):
    list_display = ["key", "model", "created_at"]
    search_fields = ["key", "request_hash", "model"]
