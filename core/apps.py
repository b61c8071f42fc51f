from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: roles, permissions, uploads, errors"

    def ready(self) -> None:
        # Every worker runs the sweeper (core.recovery) when it starts and then periodically;
        # the apps register their kinds of work from their tasks modules.
        # A change to the approved API hosts: this process's event loops read the list afresh
        # (core.api_hosts keeps a snapshot for them; other processes within SNAPSHOT_SECONDS).
        from django.db.models.signals import post_delete, post_save

        import core.recovery  # noqa: F401
        from core import workers  # noqa: F401  # connects the worker heartbeat to Celery's signals
        from core.api_hosts import forget_snapshot_on_change

        post_save.connect(forget_snapshot_on_change, sender="core.AllowedApiHost")
        post_delete.connect(forget_snapshot_on_change, sender="core.AllowedApiHost")
