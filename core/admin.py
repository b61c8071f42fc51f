"""Admin of the API host allow-list, and the check every admin form with a key or base URL runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from axes.utils import reset as axes_reset
from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import models
from django.http import HttpRequest

from core import api_hosts
from core.first_login import require_password_change
from core.models import AllowedApiHost, EmailRecord
from core.parsers import BoundedJSONField
from core.secrets_policy import api_host_approve, destination_problems, header_env_names


class AllowedApiHostForm(forms.ModelForm):
    """An entry is a host and a port; this machine's model servers are suggested by name."""

    class Meta:
        model = AllowedApiHost
        fields = ["host", "note"]
        help_texts = {
            "host": "A host and port: llm.example.org:8443, *.example.org (port 443 for https), [::1]:8000. "
            "A model server on this machine needs its own port, e.g. "
            + ", ".join(f"{entry} ({name})" for entry, name in api_hosts.LOCAL_MODEL_SERVERS)
            + ". Never a whole machine: localhost without a port allows only ports 80 and 443.",
        }

    def clean_host(self) -> str:
        try:
            return str(api_hosts.parse_entry(self.cleaned_data["host"]))
        except api_hosts.HostEntryError as exc:
            raise forms.ValidationError(str(exc)) from exc


@admin.register(AllowedApiHost)
class AllowedApiHostAdmin(admin.ModelAdmin):
    form = AllowedApiHostForm
    list_display = ["host", "note", "added_by", "added_at"]
    search_fields = ["host", "note"]
    readonly_fields = ["added_by", "added_at"]

    def save_model(self, request: HttpRequest, obj: AllowedApiHost, form: Any, change: bool) -> None:
        if not change:
            obj.added_by = request.user  # type: ignore[assignment]
        super().save_model(request, obj, form, change)


class DestinationCheckedAdmin(admin.ModelAdmin):
    """A model admin whose rows name a key variable and a base URL: the secrets policy applies.

    ``destination_fields`` = (base URL field, key variable field, headers field or "").
    """

    destination_fields: tuple[str, str, str] = ("api_base", "api_key_env", "")
    params_field = "params"
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}, models.JSONField: {"form_class": BoundedJSONField}}

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> type[forms.ModelForm]:
        base = super().get_form(request, obj, change, **kwargs)
        base_field, key_field, headers_field = self.destination_fields

        def clean(form: forms.ModelForm, _super: Callable[[forms.ModelForm], Any] = base.clean) -> Any:
            data = _super(form)
            instance = form.instance

            def value(name: str) -> Any:
                return data.get(name, getattr(instance, name, "")) if name else ""

            problems = destination_problems(
                api_base=value(base_field) or "",
                key_env=value(key_field) or "",
                header_envs=header_env_names(value(headers_field) or {}) if headers_field else (),
                params=value(self.params_field) if self.params_field else None,
                actor=request.user,
            ) + self.more_problems(value)
            if problems:
                raise forms.ValidationError(problems)
            return data

        return type(base.__name__, (base,), {"clean": clean})

    def more_problems(self, value: Callable[[str], Any]) -> list[str]:
        """Return what else the app that owns the model refuses (``value(field)`` reads the form)."""
        return []

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        api_host_approve(url=getattr(obj, self.destination_fields[0], "") or "", actor=request.user, note=f"set on {obj._meta.verbose_name} {obj}")


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class EvalsiteUserAdmin(UserAdmin):
    """Users, with the unlock of a sign-in that login throttling locked (core.login_throttle)."""

    actions = ["unlock_sign_in"]

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change and obj.has_usable_password():  # created with a password someone else chose
            require_password_change(obj, by=request.user, reason="created in the admin with a password")

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = "") -> Any:  # noqa: A002
        response = super().user_change_password(request, id, form_url)
        user = self.get_object(request, id)
        # Set by an administrator for someone else (a redirect means it was saved): theirs to replace.
        if request.method == "POST" and response.status_code == 302 and user is not None and user.pk != request.user.pk \
                and user.has_usable_password():
            require_password_change(user, by=request.user, reason="set by an administrator")
        return response

    @admin.action(description="Unlock sign-in (clear failed login attempts)")
    def unlock_sign_in(self, request: HttpRequest, queryset: Any) -> None:
        cleared = sum(axes_reset(username=user.get_username()) for user in queryset)
        self.message_user(request, f"Sign-in unlocked for {queryset.count()} user(s); {cleared} failed attempt record(s) cleared.")


@admin.register(EmailRecord)
class EmailRecordAdmin(admin.ModelAdmin):
    """The log of every message the app tried to send: read only (it says what happened)."""

    list_display = ["created_at", "purpose", "address", "subject", "outcome", "study_id"]
    list_filter = ["purpose", "outcome"]
    search_fields = ["address", "subject", "error"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
