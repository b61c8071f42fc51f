from django.apps import AppConfig


class SimulationConfig(AppConfig):
    name = "simulation"
    verbose_name = "Simulation batches"

    def ready(self) -> None:
        # Register the tasks in every process: services queue them by name (core.enqueue).
        import simulation.tasks  # noqa: F401

        self._visibility()

    @staticmethod
    def _visibility() -> None:
        """Least privilege (core.visibility): what a batch its reader may see brings along.

        A batch's conversations, chatbots and persona set are visible to whoever may read the
        batch through being its creator or its being shared (study members see a batch through
        the conversations their study holds, not the reverse).
        """
        from django.db.models import Q
        from django.urls import reverse

        from core.visibility import grant_register, shareable_register
        from simulation.models import SimulationBatch, SimulationRun

        def readable_batches(user):  # type: ignore[no-untyped-def]
            return SimulationBatch.objects.filter(Q(created_by_id=user.pk) | Q(shared=True)).values("pk")

        grant_register("corpus.conversation", "simulation-batch", lambda user: Q(
            pk__in=SimulationRun.objects.filter(batch_id__in=readable_batches(user), conversation_id__isnull=False)
            .values("conversation_id")))
        grant_register("corpus.target", "simulation-batch", lambda user: Q(
            pk__in=SimulationBatch.targets.through.objects.filter(simulationbatch_id__in=readable_batches(user)).values("target_id")))
        grant_register("corpus.personaset", "simulation-batch", lambda user: Q(
            pk__in=SimulationBatch.objects.filter(pk__in=readable_batches(user)).values("persona_set_id")))
        shareable_register("batch", SimulationBatch, lookup="code", page=lambda b: reverse("simulation:batch-detail", args=[b.code]))
