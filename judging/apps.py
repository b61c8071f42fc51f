from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "LLM judges"

    def ready(self) -> None:
        # Register the tasks in every process: services queue them by name (core.enqueue).
        from django.urls import reverse

        import judging.tasks  # noqa: F401
        from core.visibility import shareable_register
        from judging.models import JudgeRun

        # Least privilege (core.visibility): a run's creator may share it from its page.
        shareable_register("judge-run", JudgeRun, lookup="pk", page=lambda r: reverse("judging:run-detail", args=[r.pk]))
