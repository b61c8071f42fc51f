"""Checked uploads kept for "Import now": after a clean dry run, the same file imports without a second upload.

A researcher dry-runs a 40 MB file, reads "valid", and should not have to find and upload it
again (nor be left with "Dry run" ticked, so that the next upload silently checks again). So an
import page that finds a file valid in a dry run keeps its bytes here and offers "Import now",
which posts only a token:

- the file is kept in the database (``core.models.StagedUpload``), not on one web server's
  disk, so any web process finds it; never under a path the client names;
- the token is random (``secrets.token_urlsafe``), shown once in the page, stored as its
  SHA-256, and bound to the user who uploaded the file and to one import target
  (``conversations``, ``ratings:study-12``): another user, or the same token on another import
  page, finds nothing;
- "Import now" imports with the options the file was checked with (format, key, ...), read
  from the kept row, not from the request; the import itself checks the file again (all or
  nothing), so a corpus that changed in between cannot let a bad row through;
- a kept file is deleted after its import, replaced when the same user dry-runs another file
  on the same page, and expires after ``EVALSITE_STAGED_UPLOAD_MINUTES`` (default 60); expired
  files are purged whenever a file is kept or claimed.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.utils import timezone
from django.utils.datastructures import MultiValueDict

from core.errors import ServiceError
from core.models import StagedUpload
from core.problems import ImportRejected
from core.uploads import human_bytes

TOKEN_FIELD = "staged"  # the only field "Import now" posts (besides the CSRF token)
NOT_OPTIONS = ("file", "dry_run")  # form fields that are not options of the import


class StagedUploadMissing(ServiceError):
    """The token names no kept file of this user and import page (expired, imported, or not theirs)."""

    status = 410


def staged_upload_minutes() -> int:
    return int(getattr(settings, "EVALSITE_STAGED_UPLOAD_MINUTES", 60))


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def staged_uploads_purge() -> int:
    """Delete every kept file whose time is up; return how many."""
    deleted, _ = StagedUpload.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted


@dataclass(frozen=True)
class StagedToken:
    token: str
    expires_at: datetime


@transaction.atomic
def staged_upload_create(
    *, user: Any, target: str, name: str, data: bytes, options: dict[str, list[str]]
) -> StagedToken:
    """Keep a checked file for this user and import target; return its token (shown once)."""
    staged_uploads_purge()
    # One kept file per user and page: a second dry run replaces the first.
    StagedUpload.objects.filter(user=user, target=target).delete()
    token = secrets.token_urlsafe(32)
    expires_at = timezone.now() + timedelta(minutes=staged_upload_minutes())
    StagedUpload.objects.create(
        token_hash=_hash(token), user=user, target=target, name=name[:255], data=data, size=len(data),
        options=options, expires_at=expires_at,
    )
    return StagedToken(token, expires_at)


def staged_upload_get(*, user: Any, target: str, token: str) -> StagedUpload:
    """Return the user's kept file for this target, or raise ``StagedUploadMissing``."""
    staged_uploads_purge()
    found = None
    if token and getattr(user, "pk", None):
        found = StagedUpload.objects.filter(
            token_hash=_hash(token), user_id=user.pk, target=target, expires_at__gt=timezone.now()
        ).first()
    if found is None:
        raise StagedUploadMissing(
            "The checked file is no longer kept on the server: a file checked in a dry run is kept "
            f"for {staged_upload_minutes()} minutes, for the person who checked it, until it is imported. "
            "Nothing was imported: choose the file again."
        )
    return found


def staged_upload_delete(*, upload_id: int) -> None:
    StagedUpload.objects.filter(pk=upload_id).delete()


# --- the import pages' side ----------------------------------------------------------------


@dataclass(frozen=True)
class ImportInput:
    """What an import page was sent: a new upload, a kept file's token, or nothing yet."""

    data: QueryDict | None  # the form data to bind (None: an unbound form)
    files: MultiValueDict | None
    staged: StagedUpload | None = None  # "Import now": the kept file being imported
    gone: str = ""  # "Import now" with a token that names nothing: why


def import_input(request: HttpRequest, *, target: str) -> ImportInput:
    """Return what to bind the import form to: the upload, or the kept file with its checked options."""
    if request.method != "POST":
        return ImportInput(None, None)
    token = request.POST.get(TOKEN_FIELD, "")
    if not token:
        return ImportInput(request.POST, request.FILES)
    try:
        staged = staged_upload_get(user=request.user, target=target, token=token)
    except StagedUploadMissing as exc:
        return ImportInput(None, None, gone=str(exc))
    data = QueryDict(mutable=True)
    for key, values in (staged.options or {}).items():
        data.setlist(key, [str(v) for v in values])
    files = MultiValueDict({"file": [SimpleUploadedFile(staged.name, bytes(staged.data))]})
    return ImportInput(data, files, staged=staged)


def import_finished(incoming: ImportInput) -> None:
    """Forget the kept file once it has been imported."""
    if incoming.staged is not None:
        staged_upload_delete(upload_id=incoming.staged.pk)


@dataclass(frozen=True)
class ImportNowOffer:
    """What the page shows after a clean dry run: the kept file and the button that imports it."""

    token: str
    name: str
    size: str
    expires_at: datetime
    minutes: int
    options: list[tuple[str, str]]  # (label, value as chosen), for the researcher to see what will happen


def _shown(field: forms.Field, value: Any) -> str:
    if isinstance(field, forms.BooleanField):
        return "yes" if value else "no"
    if isinstance(field, forms.ChoiceField):
        return str(dict(field.choices).get(value, value))  # type: ignore[arg-type]
    return str(value)


def import_now_offer(request: HttpRequest, *, target: str, form: forms.Form) -> dict[str, Any]:
    """Keep the dry-run file of a valid ``form``; return the page context: the offer and a fresh form.

    The fresh form keeps the options the file was checked with and leaves "Dry run" unticked,
    so neither "Import now" nor the next upload is a silent second dry run.
    """
    upload = form.cleaned_data["file"]
    upload.seek(0)
    data = upload.read()
    names = [n for n in form.fields if n not in NOT_OPTIONS]
    options = {n: request.POST.getlist(n) for n in names if n in request.POST}
    kept = staged_upload_create(user=request.user, target=target, name=upload.name, data=data, options=options)
    shown = [
        (str(form.fields[n].label or n.replace("_", " ").capitalize()), _shown(form.fields[n], form.cleaned_data.get(n)))
        for n in names
        if form.cleaned_data.get(n) not in (None, "") or isinstance(form.fields[n], forms.BooleanField)
    ]
    fresh = type(form)(initial={n: form.cleaned_data.get(n) for n in names})
    offer = ImportNowOffer(kept.token, upload.name, human_bytes(len(data)), kept.expires_at, staged_upload_minutes(), shown)
    return {"import_now": offer, "form": fresh}


def import_page(
    request: HttpRequest,
    *,
    target: str,
    form_class: type[forms.Form],
    template: str,
    context: dict[str, Any],
    run: Callable[[dict[str, Any]], dict[str, Any]],
) -> HttpResponse:
    """Serve an import page: bind the upload (or the file a dry run kept), run the import, offer
    "Import now" after a clean dry run, forget the kept file once imported; 400 with the problems.

    ``run(cleaned_data)`` imports (or checks, when ``cleaned_data["dry_run"]``) and returns what
    the page shows of the result; it raises ``ImportRejected`` on any problem, writing nothing.
    """
    incoming = import_input(request, target=target)
    form = form_class(incoming.data, incoming.files)
    context = {**context, "form": form, "gone": incoming.gone}
    if form.is_bound and form.is_valid():
        try:
            context.update(run(form.cleaned_data))
        except ImportRejected as exc:
            context["problems"] = exc.problems
        else:
            if form.cleaned_data["dry_run"]:
                context.update(import_now_offer(request, target=target, form=form))
            else:
                import_finished(incoming)
    bad = context.get("problems") or incoming.gone
    return render(request, template, context, status=400 if bad else 200)
