"""Create many in-app accounts at once from a CSV of usernames, emails and roles.

Columns ``username,email,roles`` (roles separated by ``;``, ``|`` or spaces: clinician,
coordinator, researcher, admin), optionally ``first_name,last_name``. All-or-nothing with
every problem located by line and column. Passwords are never printed: accounts get an
unusable password (an administrator sets one, or the person uses password reset) unless the
caller asks for random initial passwords, which are returned to be written to a private file.
"""

from __future__ import annotations

import csv
import io
import re
import secrets
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from core.bounded import BoundedCsv
from core.first_login import require_password_change
from core.problems import ImportRejected, Problem
from core.roles import Role

COLUMNS = ("username", "email", "roles")
_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")


@dataclass(frozen=True)
class AccountsResult:
    created: tuple[str, ...]
    dry_run: bool
    passwords: dict[str, str]  # username -> initial password, only when asked for


def accounts_create_from_csv(*, text: str, file: str, dry_run: bool = False, initial_passwords: bool = False) -> AccountsResult:
    """Create one account per row with its roles (Django groups); raise ImportRejected on any problem."""
    reader = BoundedCsv(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))), file)
    header = {(n or "").strip().lower(): n for n in reader.fieldnames or []}
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise ImportRejected([Problem("missing column; the header must be username,email,roles[,first_name,last_name]", file, 1, c) for c in missing])
    rows = [(reader.line_num, {k: (r.get(v) or "").strip() for k, v in header.items()}) for r in reader]
    users = get_user_model().objects
    taken = set(users.filter(username__in=[r["username"] for _, r in rows]).values_list("username", flat=True))
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    plan: list[tuple[dict[str, str], list[str]]] = []
    for line, r in rows:
        before = len(problems)
        name = r["username"]
        if not _USERNAME.match(name):
            problems.append(Problem(f"'{name}' is not a valid username (letters, digits and @.+-_ only)", file, line, "username"))
        elif name in taken:
            problems.append(Problem(f"an account '{name}' already exists", file, line, "username"))
        elif name in seen:
            problems.append(Problem(f"'{name}' is already on line {seen[name]}", file, line, "username"))
        seen.setdefault(name, line)
        if r["email"]:
            try:
                validate_email(r["email"])
            except ValidationError:
                problems.append(Problem(f"'{r['email']}' is not an email address", file, line, "email"))
        roles = [x for x in re.split(r"[;|\s]+", r["roles"].lower()) if x]
        unknown = [x for x in roles if x not in Role.values]
        if unknown:
            problems.append(Problem(f"unknown role(s) {', '.join(unknown)}; roles are {', '.join(Role.values)}", file, line, "roles"))
        elif not roles:
            problems.append(Problem("give at least one role", file, line, "roles"))
        if len(problems) == before:
            plan.append((r, roles))
    if not rows and not problems:
        problems.append(Problem("the file has a header but no accounts", file, 1))
    if problems:
        raise ImportRejected(problems)
    if dry_run:
        return AccountsResult(tuple(r["username"] for r, _ in plan), True, {})
    return _create(plan, initial_passwords)


@transaction.atomic
def _create(plan: list[tuple[dict[str, str], list[str]]], initial_passwords: bool) -> AccountsResult:
    groups = {g.name: g for g in Group.objects.filter(name__in=Role.values)}
    for role in Role.values:
        if role not in groups:
            groups[role] = Group.objects.create(name=role)
    passwords: dict[str, str] = {}
    for r, roles in plan:
        user = get_user_model()(username=r["username"], email=r["email"], first_name=r.get("first_name", "")[:150], last_name=r.get("last_name", "")[:150])
        if initial_passwords:
            passwords[user.username] = secrets.token_urlsafe(12)
            user.set_password(passwords[user.username])
        else:
            user.set_unusable_password()
        if Role.ADMIN in roles:
            user.is_staff = True
        user.save()
        if initial_passwords:  # set by someone else: its owner chooses their own at first login
            require_password_change(user, reason="initial password from an account list")
        user.groups.set([groups[x] for x in roles])
    return AccountsResult(tuple(r["username"] for r, _ in plan), False, passwords)
