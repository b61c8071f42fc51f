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
