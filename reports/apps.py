from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "reports"
    verbose_name = "Reports"

    def ready(self) -> None:
        # Register the task in every process (services queue it by name) and the report kinds.
        import reports.bundle.build  # noqa: F401
        import reports.evidence.services  # noqa: F401
        import reports.leaderboard.services  # noqa: F401
        import reports.services  # noqa: F401
        import reports.tasks  # noqa: F401

        # The locked test sets: exports of the lower layers (consensus CSV, judge run CSV) withhold them.
        from core.locks import register_locked_conversations
        from reports.review.scope import locked_test_sets

        register_locked_conversations(locked_test_sets)
