from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: roles, permissions, uploads, errors"

    def ready(self) -> None:
        # Every worker runs the sweeper (core.recovery) when it starts and then periodically;
        # the apps register their kinds of work from their tasks modules.
        import core.recovery  # noqa: F401
        from core import workers  # noqa: F401  # connects the worker heartbeat to Celery's signals
