from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        # Register the tasks in every process: services queue them by name (core.enqueue).
        import judging.tasks  # noqa: F401
