"""Finding 5: no login throttling. After repeated failures a username is locked out from that
address on every login path (the login page, /admin/login/), with a clear page; an
administrator unlocks it."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import PASSWORD, client_for

pytestmark = pytest.mark.django_db


def _attempts(client: Client, url: str, username: str, n: int) -> list[int]:
    return [client.post(url, {"username": username, "password": f"wrong-{i}"}).status_code for i in range(n)]


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_twenty_wrong_passwords_lock_the_account_even_for_the_right_one(url, admin_user, settings):
    client = Client()
    statuses = _attempts(client, url, admin_user.username, 20)
    limit = settings.AXES_FAILURE_LIMIT
    assert statuses[: limit - 1] == [200] * (limit - 1)  # the form again, with its error
    assert set(statuses[limit:]) == {429}
    right = client.post(url, {"username": admin_user.username, "password": PASSWORD})
    assert right.status_code == 429
    body = right.content.decode()
    assert "Sign-in locked" in body and "administrator" in body and "15 minutes" in body
    assert "_auth_user_id" not in client.session


def test_the_lock_is_per_address_so_the_user_can_still_sign_in_elsewhere(clinician):
    _attempts(Client(REMOTE_ADDR="203.0.113.9"), "/accounts/login/", clinician.username, 8)
    elsewhere = Client(REMOTE_ADDR="198.51.100.7").post("/accounts/login/", {"username": clinician.username, "password": PASSWORD})
    assert elsewhere.status_code == 302


def test_an_administrator_unlocks_from_the_user_admin(clinician, admin_user):
    client = Client()
    _attempts(client, "/accounts/login/", clinician.username, 6)
    assert client.post("/accounts/login/", {"username": clinician.username, "password": PASSWORD}).status_code == 429
    response = client_for(admin_user).post(
        "/admin/auth/user/", {"action": "unlock_sign_in", "_selected_action": [clinician.pk]}, follow=True
    )
    assert "Sign-in unlocked for 1 user" in response.content.decode()
    assert client.post("/accounts/login/", {"username": clinician.username, "password": PASSWORD}).status_code == 302


def test_a_successful_login_clears_earlier_failures(clinician):
    client = Client()
    _attempts(client, "/accounts/login/", clinician.username, 3)
    assert client.post("/accounts/login/", {"username": clinician.username, "password": PASSWORD}).status_code == 302
    client.logout()
    assert _attempts(client, "/accounts/login/", clinician.username, 3) == [200, 200, 200]
