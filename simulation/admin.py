from collections.abc import Callable
from typing import Any

from django.contrib import admin

from core.admin import DestinationCheckedAdmin
from corpus.models import Conversation, Message, Persona, PersonaSet, Target
from corpus.targets.http_config import header_problems
from simulation.models import PromptTemplate, SimulationBatch, SimulationRun


class PersonaInline(admin.StackedInline):
    model = Persona
    extra = 0


@admin.register(PersonaSet)
class PersonaSetAdmin(admin.ModelAdmin):
    list_display = ["name", "key", "version", "format", "is_builtin", "shared"]
    inlines = [PersonaInline]
    readonly_fields = ["content_hash"]


@admin.register(Target)
class TargetAdmin(DestinationCheckedAdmin):
    list_display = ["code", "name", "kind", "model", "api_base", "shared"]
    destination_fields = ("api_base", "api_key_env", "http_headers")

    def more_problems(self, value: Callable[[str], Any]) -> list[str]:
        headers = value("http_headers") or {}
        return header_problems(headers) if isinstance(headers, dict) else ["the headers must be a JSON object"]


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    readonly_fields = ["turn_index", "role", "content", "meta"]
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["code", "external_id", "persona", "target", "source", "integrity_ok", "is_demo", "shared"]
    list_filter = ["source", "integrity_ok", "is_demo", "sensitive"]
    list_select_related = ["persona", "target"]
    search_fields = ["code", "external_id"]
    readonly_fields = ["content_hash", "integrity_flags", "message_count"]
    inlines = [MessageInline]


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    """Read-only: a template never changes; store a new version from the Prompt templates page."""

    list_display = ["key", "version", "kind", "name", "is_builtin", "created_at"]
    list_filter = ["kind", "is_builtin"]

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


class SimulationRunInline(admin.TabularInline):
    model = SimulationRun
    extra = 0
    can_delete = False
    fields = ["persona", "target", "repetition", "status", "messages_done", "attempts", "error_kind", "conversation"]
    readonly_fields = fields


@admin.register(SimulationBatch)
class SimulationBatchAdmin(DestinationCheckedAdmin):
    destination_fields = ("user_api_base", "user_api_key_env", "")
    params_field = "user_params"
    list_display = ["code", "name", "protocol", "status", "user_model", "created_at", "shared"]
    list_filter = ["protocol", "status"]
    readonly_fields = ["config"]
    inlines = [SimulationRunInline]
