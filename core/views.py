"""The home page (what each role can do, plus the sections other apps register: core.home), the login
page, API tokens and the status page."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required, login_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponsePermanentRedirect,
)
from django.shortcuts import redirect, render
from django.templatetags.static import static

from core.api_tokens import (
    api_token_create,
    api_token_revoke,
    api_tokens_for_user,
    can_use_api_tokens,
)
from core.database_down import database_failure
from core.errors_views import database_unavailable
from core.home import home_sections
from core.permissions import roles_required
from core.roles import Role, user_roles
from core.status import status_report


def home(request: HttpRequest) -> HttpResponse:
    roles = user_roles(request.user)
    context = {"roles": sorted(roles), "sections": home_sections(request, roles)}
    return render(request, "core/home.html", context)


def api_tokens(request: HttpRequest) -> HttpResponse:
    """The user's API tokens: make one (shown once), see when each expires, revoke."""
    if not can_use_api_tokens(request.user):
        raise Http404("not found")
    new_token = None
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            n = api_token_revoke(user=request.user, token_key=request.POST.get("token_key", ""))
            messages.success(request, "Token revoked." if n else "No such token.")
            return redirect("api-tokens")
        if request.POST.get("action") != "create":  # a stray or malformed body makes no token
            return HttpResponseBadRequest("Choose to make a new token or revoke one.")
        _, new_token = api_token_create(user=request.user)
    context = {
        "tokens": api_tokens_for_user(request.user),
        "new_token": new_token,
        "ttl_days": int(settings.REST_KNOX["TOKEN_TTL"].total_seconds() // 86400),
    }
    return render(request, "core/api_tokens.html", context)


class LoginView(auth_views.LoginView):
    """Django's login page, shown only when the database answers (issue 32).

    Reading the form needs no database, so it showed during an outage and failed once sent:
    the visitor learns at once instead (503, what to do). A sent form that fails is a 503 too
    (``core.middleware.DatabaseUnavailableMiddleware``).
    """

    def get(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        failure = database_failure()
        if failure is not None:
            return database_unavailable(request, failure)
        return super().get(request, *args, **kwargs)


@login_not_required  # who may see it is read from the database: its outage is said to anyone
def status(request: HttpRequest) -> HttpResponse:
    """Say the database does not answer (503, its state only); else the administrators' status page."""
    failure = database_failure()
    if failure is not None:
        return database_unavailable(request, failure)
    return _status_for_admins(request)


@login_required
@roles_required(Role.ADMIN)
def _status_for_admins(request: HttpRequest) -> HttpResponse:
    """For administrators: database, task queue, workers seen in the last minute, stalled work."""
    return render(request, "core/status.html", {"report": status_report()})


@login_not_required
def favicon(request: HttpRequest) -> HttpResponse:
    """Send browsers that ask for /favicon.ico to the app's icon (a 404 was logged on every first visit)."""
    return HttpResponsePermanentRedirect(static("evalsite/favicon.svg"))


def sharing_set(request: HttpRequest, kind: str, key: str) -> HttpResponse:
    """Mark a chatbot, conversation, persona set, batch or judge run shared or private (POST, from its page).

    Its creator or an administrator only (403 for other readers); an object the user may not read
    answers 404 like one that does not exist (core.visibility).
    """
    from django.core.exceptions import PermissionDenied
    from django.views.decorators.http import require_POST

    from core.visibility import SharingError, shareable_get, shared_set

    @require_POST
    def act(request: HttpRequest) -> HttpResponse:
        obj, page = shareable_get(request.user, kind=kind, key=key)
        wanted = request.POST.get("shared")
        if wanted not in ("0", "1"):
            return HttpResponseBadRequest("Choose to share it or to make it private.")
        try:
            shared_set(actor=request.user, obj=obj, shared=wanted == "1")
        except SharingError as exc:
            raise PermissionDenied(str(exc)) from exc
        messages.success(request, "Shared with every coordinator and researcher." if wanted == "1"
                         else "Private again: its creator, the members of the studies that use it and administrators.")
        return redirect(page)

    return act(request)
