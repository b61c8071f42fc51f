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
        from core.home import HomeSection, home_section_register
        from corpus.conversations.collections import ConversationCollection, collection_register

        home_section_register(HomeSection("studies", "annotation/_home_studies.html", home_studies))
        collection_register(
            ConversationCollection(
                key="study",
                label="Study",
                choices=lambda: Study.objects.order_by("-created_at"),
                conversation_filter=lambda study_id: Q(study_links__study_id=study_id),
            )
        )
