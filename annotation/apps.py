from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Studies and blind rating"

    def ready(self) -> None:
        # Studies show on the home page and are a way to pick conversations for a judge run;
        # the pages that offer them live lower down and learn of studies only through these.
        from django.db.models import Q

        import annotation.tasks  # noqa: F401  # the tasks and the workers' reminder check, in every process
        from annotation.home import home_studies
        from annotation.models import Study
        from annotation.studies.selectors import study_list_for_user
        from core.home import HomeSection, home_section_register
        from corpus.conversations.collections import ConversationCollection, collection_register

        home_section_register(HomeSection("studies", "annotation/_home_studies.html", home_studies))
        collection_register(
            ConversationCollection(
                key="study",
                label="Study",
                # Only the studies the user may read: a researcher who is not a member may not judge
                # (and so list) a study's conversations, nor learn its name from the form.
                choices=lambda user: (
                    Study.objects.all() if user is None else Study.objects.filter(pk__in=study_list_for_user(user).values("pk"))
                ).order_by("-created_at"),
                conversation_filter=lambda study_id: Q(study_links__study_id=study_id),
            )
        )
        self._visibility()

    @staticmethod
    def _visibility() -> None:
        """Least privilege (core.visibility): the members of a study see what it uses.

        A study uses the conversations it holds, their chatbots, persona sets and simulation
        batches, the judge runs that labelled any of them and the runs its sampling or active
        plan draws from. Members are its coordinators and researchers (as in
        ``study_list_for_user``); raters see only their blind pages.
        """
        from django.db.models import Q

        from annotation.models import (
            ActivePlan,
            MemberRole,
            SamplingPlan,
            StudyConversation,
            StudyMembership,
        )
        from core.visibility import grant_register
        from corpus.models import Conversation, Persona
        from judging.models import JudgeResult
        from simulation.models import SimulationRun

        def studies(user):  # type: ignore[no-untyped-def]
            return StudyMembership.objects.filter(
                user_id=user.pk, role__in=[MemberRole.COORDINATOR, MemberRole.RESEARCHER]
            ).values("study_id")

        def held(user):  # type: ignore[no-untyped-def]
            return StudyConversation.objects.filter(study_id__in=studies(user)).values("conversation_id")

        grant_register("corpus.conversation", "study", lambda user: Q(pk__in=held(user)))
        grant_register("corpus.target", "study", lambda user: Q(
            pk__in=Conversation.objects.filter(pk__in=held(user), target_id__isnull=False).values("target_id")))
        grant_register("corpus.personaset", "study", lambda user: Q(
            pk__in=Persona.objects.filter(conversations__in=held(user)).values("persona_set_id")))
        grant_register("simulation.simulationbatch", "study", lambda user: Q(
            pk__in=SimulationRun.objects.filter(conversation_id__in=held(user)).values("batch_id")))
        grant_register("judging.judgerun", "study", lambda user: (
            Q(pk__in=JudgeResult.objects.filter(conversation_id__in=held(user)).values("run_id"))
            | Q(pk__in=SamplingPlan.objects.filter(study_id__in=studies(user)).values("judge_run_id"))
            | Q(pk__in=ActivePlan.objects.filter(study_id__in=studies(user)).values("judge_run_id"))
        ))
