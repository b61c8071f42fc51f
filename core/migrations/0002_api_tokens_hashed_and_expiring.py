"""Move API tokens from DRF's authtoken table (raw keys, no expiry) to knox (hashed, expiring).

Each old token becomes a knox token with the same secret, so scripts keep working with the same
``Authorization: Token <key>`` header until it expires (the configured token lifetime, counted
from this migration). Then the old table, which holds the raw keys, is dropped, and its
migration records removed (re-adding ``rest_framework.authtoken`` would recreate it empty).
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.db import migrations
from django.utils import timezone

OLD_TABLE = "authtoken_token"


def move_tokens(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    AuthToken = apps.get_model("knox", "AuthToken")
    ttl = settings.REST_KNOX.get("TOKEN_TTL")
    expiry = timezone.now() + ttl if ttl else None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id FROM {OLD_TABLE}")  # noqa: S608  # a fixed table name
        rows = cursor.fetchall()
    for key, user_id in rows:
        # knox's digest: SHA-512 of the token's UTF-8 bytes; its lookup key: the first 15 characters.
        digest = hashlib.sha512(key.encode("utf-8")).hexdigest()
        AuthToken.objects.get_or_create(digest=digest, defaults={"token_key": key[:15], "user_id": user_id, "expiry": expiry})
    schema_editor.execute(f"DROP TABLE {OLD_TABLE}")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM django_migrations WHERE app = %s", ["authtoken"])


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0001_allowed_api_hosts"),
        ("knox", "0009_extend_authtoken_field"),
    ]

    operations = [migrations.RunPython(move_tokens, migrations.RunPython.noop)]
