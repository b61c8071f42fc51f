from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: roles, permissions, uploads, errors"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        # First login: the mark of a password someone else set is read into the session at login.
        import core.first_login  # noqa: F401

        # Every worker runs the sweeper (core.recovery) when it starts and then periodically;
        # the apps register their kinds of work from their tasks modules.
        import core.recovery  # noqa: F401

        # The worker heartbeat, connected to Celery's signals (the status page reads it).
        from core import workers  # noqa: F401
        from core.api_hosts import forget_snapshot_on_change

        # A change to the approved API hosts: this process's event loops read the list afresh
        # (core.api_hosts keeps a snapshot for them; other processes within SNAPSHOT_SECONDS).
        post_save.connect(forget_snapshot_on_change, sender="core.AllowedApiHost")
        post_delete.connect(forget_snapshot_on_change, sender="core.AllowedApiHost")
