from django.apps import AppConfig


class SimulationConfig(AppConfig):
    name = "simulation"
    verbose_name = "Personas, targets and conversations"
