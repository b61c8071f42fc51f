"""Getting back into an account: Django's password reset and change, on the app's pages, throttled.

- Reset: a person who forgot their password asks for a link by email (the configured email
  backend: the console by default, SMTP when ``EMAIL_HOST`` is set), recorded with its outcome
  by ``core.emails`` like every message the app sends. The page answers the same whether or
  not an account has that address, and whether or not the message went. Requests are limited
  per client address and per email address (``EVALSITE_LOGIN_FAILURE_LIMIT`` per
  ``EVALSITE_LOGIN_LOCKOUT_MINUTES``, like the login); past the limit the page answers 429 and
  sends nothing.
- Change: a signed-in person changes their password; the current password is checked through
  ``authenticate`` so django-axes counts wrong guesses and locks like a failed login.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import PasswordChangeForm, PasswordResetForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import loader

from core.emails import email_send
from core.first_login import SESSION_KEY, password_chosen
from core.login_throttle import client_ip
from core.models import EmailPurpose
from core.throttle import throttle_hit


def _window() -> timedelta:
    return settings.AXES_COOLOFF_TIME or timedelta(minutes=15)


def _limit() -> int:
    return int(settings.AXES_FAILURE_LIMIT)


class ResetForm(PasswordResetForm):
    """Django's reset form, for accounts without a password too.

    Django skips accounts whose password is unusable (it reads that as "signs in elsewhere").
    Here it means "not set yet": ``create_users`` makes accounts that way and tells people to
    use password reset, so they must get the link.
    """

    def get_users(self, email: str):  # type: ignore[no-untyped-def]
        User = get_user_model()
        field = User.get_email_field_name()
        found = User._default_manager.filter(**{f"{field}__iexact": email, "is_active": True})
        return (user for user in found if (getattr(user, field) or "").casefold() == email.casefold())

    def send_mail(self, subject_template_name: str, email_template_name: str, context: dict[str, Any],
                  from_email: str | None, to_email: str, html_email_template_name: str | None = None) -> None:
        """Send the link through the app's recorder: its outcome (sent, printed, failed) is kept."""
        subject = "".join(loader.render_to_string(subject_template_name, context).splitlines())
        body = loader.render_to_string(email_template_name, context)
        html = loader.render_to_string(html_email_template_name, context) if html_email_template_name else None
        email_send(purpose=EmailPurpose.PASSWORD_RESET, address=to_email, subject=subject, body=body,
                   recipient=context.get("user"), html_body=html, from_email=from_email)


class PasswordResetView(auth_views.PasswordResetView):
    """Send a reset link, at most ``limit`` requests per address and per email in the window."""

    form_class = ResetForm
    template_name = "registration/password_reset_form.html"
    email_template_name = "registration/password_reset_email.txt"
    subject_template_name = "registration/password_reset_subject.txt"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "timeout_days": max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)}

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        email = request.POST.get("email", "").strip().lower()
        by_email = "reset-email:" + hashlib.sha256(email.encode()).hexdigest()
        allowed = throttle_hit(key=f"reset-ip:{client_ip(request)}", limit=_limit(), window=_window())
        if allowed and email:
            allowed = throttle_hit(key=by_email, limit=_limit(), window=_window())
        if not allowed:
            minutes = int(_window().total_seconds() // 60)
            return render(request, "registration/password_reset_throttled.html", {"minutes": minutes}, status=429)
        return super().post(request, *args, **kwargs)


class ThrottledPasswordChangeForm(PasswordChangeForm):
    """Check the current password through ``authenticate``: django-axes counts and locks wrong guesses."""

    def __init__(self, user: Any, *args: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
        self.request = request
        super().__init__(user, *args, **kwargs)

    def clean_old_password(self) -> str:
        old = self.cleaned_data["old_password"]
        username = self.user.get_username()
        if authenticate(self.request, username=username, password=old) is None:
            raise ValidationError(self.error_messages["password_incorrect"], code="password_incorrect")
        return old


class PasswordChangeView(auth_views.PasswordChangeView):
    form_class = ThrottledPasswordChangeForm
    template_name = "registration/password_change_form.html"

    def get_form_kwargs(self) -> dict[str, Any]:
        return {**super().get_form_kwargs(), "request": self.request}

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        return {**super().get_context_data(**kwargs), "first_login": bool(self.request.session.get(SESSION_KEY))}

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        password_chosen(form.user, self.request)
        return response


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    """A reset link's new password is the person's own choice: a first-login mark goes with it."""

    def form_valid(self, form: Any) -> HttpResponse:
        response = super().form_valid(form)
        password_chosen(form.user)
        return response
