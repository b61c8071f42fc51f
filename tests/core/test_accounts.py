import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from core.accounts import accounts_create_from_csv
from core.problems import ImportRejected
from core.roles import user_roles

pytestmark = pytest.mark.django_db


def test_many_rater_accounts_are_created_with_their_roles():
    text = "username,email,roles\nrater01,r1@example.org,clinician\nlead,lead@example.org,coordinator;researcher\n"
    result = accounts_create_from_csv(text=text, file="u.csv")
    assert result.created == ("rater01", "lead") and result.passwords == {}
    lead = get_user_model().objects.get(username="lead")
    assert user_roles(lead) == {"coordinator", "researcher"} and not lead.has_usable_password()


def test_every_bad_row_is_reported_and_nothing_is_created(outsider):
    text = "username,email,roles\nok1,ok@example.org,clinician\nbad name,x@example.org,clinician\nok2,not-an-email,clinician\nok3,,nurse\nok1,,clinician\n"
    text += f"{outsider.username},,clinician\n"
    with pytest.raises(ImportRejected) as rejected:
        accounts_create_from_csv(text=text, file="u.csv")
    assert [(p.line, p.column) for p in rejected.value.problems] == [(3, "username"), (4, "email"), (5, "roles"), (6, "username"), (7, "username")]
    assert not get_user_model().objects.filter(username="ok1").exists()


def test_the_command_writes_initial_passwords_to_a_private_file_never_to_the_screen(tmp_path, capsys):
    users = tmp_path / "users.csv"
    users.write_text("username,email,roles\nrater02,,clinician\n")
    secrets_file = tmp_path / "pw.csv"
    call_command("create_users", str(users), "--passwords-out", str(secrets_file))
    out = capsys.readouterr().out
    password = secrets_file.read_text().splitlines()[1].split(",")[1]
    assert password not in out and (secrets_file.stat().st_mode & 0o777) == 0o600
    assert get_user_model().objects.get(username="rater02").check_password(password)
    with pytest.raises(CommandError, match="exists"):
        call_command("create_users", str(users), "--passwords-out", str(secrets_file))
