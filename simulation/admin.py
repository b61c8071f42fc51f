from django.contrib import admin

from .models import Conversation, Message, Persona, PersonaSet, Target


class PersonaInline(admin.StackedInline):
    model = Persona
    extra = 0


@admin.register(PersonaSet)
class PersonaSetAdmin(admin.ModelAdmin):
    list_display = ["name", "key", "version", "format", "is_builtin"]
    inlines = [PersonaInline]
    readonly_fields = ["content_hash"]


@admin.register(Target)
class TargetAdmin(admin.ModelAdmin):
    list_display = ["code", "name", "kind", "model", "api_base"]


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    readonly_fields = ["turn_index", "role", "content", "meta"]
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ["code", "external_id", "persona", "target", "source", "integrity_ok", "is_demo"]
    list_filter = ["source", "integrity_ok", "is_demo", "sensitive"]
    list_select_related = ["persona", "target"]
    search_fields = ["code", "external_id"]
    readonly_fields = ["content_hash", "integrity_flags", "message_count"]
    inlines = [MessageInline]
