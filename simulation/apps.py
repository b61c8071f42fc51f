from django.apps import AppConfig


class SimulationConfig(AppConfig):
    name = "simulation"
    verbose_name = "Simulation batches"

    def ready(self) -> None:
        # Register the tasks in every process: services queue them by name (core.enqueue).
        import simulation.tasks  # noqa: F401
