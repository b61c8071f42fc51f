from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Core: roles, permissions, uploads, errors"

    def ready(self) -> None:
        from core import workers  # noqa: F401  # connects the worker heartbeat to Celery's signals
