from django.contrib import admin

from annotation.models import Study, StudyConversation, StudyMembership
from corpus.models import Instrument, Item


class ItemInline(admin.TabularInline):
    model = Item
    extra = 0
    fields = ["position", "key", "domain", "scale", "na_allowed", "required", "text"]

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False  # an instrument version is immutable

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Instrument)
class InstrumentAdmin(admin.ModelAdmin):
    list_display = ["name", "key", "version", "kind", "is_builtin", "created_at"]
    list_filter = ["kind", "is_builtin"]
    inlines = [ItemInline]
    readonly_fields = ["key", "version", "kind", "content_hash", "flow", "created_at", "created_by"]

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False  # instruments enter through the importer, which validates and versions them


class StudyMembershipInline(admin.TabularInline):
    model = StudyMembership
    extra = 0


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["name", "instrument", "is_demo", "created_at"]
    inlines = [StudyMembershipInline]


admin.site.register(StudyConversation)
