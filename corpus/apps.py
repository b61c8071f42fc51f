from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    verbose_name = "Corpus: personas, chatbots, conversations, instruments"

    def ready(self) -> None:
        # Least privilege (core.visibility): the built-in persona cards are the installation's
        # library; chatbots, conversations and persona sets can be shared from their pages.
        from django.db.models import Q
        from django.urls import reverse

        from core.visibility import grant_register, shareable_register
        from corpus.models import Conversation, PersonaSet, Target

        grant_register("corpus.personaset", "builtin", lambda user: Q(is_builtin=True))
        shareable_register("chatbot", Target, lookup="code", page=lambda t: reverse("corpus:target-list") + f"#chatbot-{t.code}")
        shareable_register(
            "conversation", Conversation, lookup="code", page=lambda c: reverse("corpus:conversation-detail", args=[c.code])
        )
        shareable_register(
            "persona-set", PersonaSet, lookup="pk", page=lambda s: reverse("corpus:persona-set-detail", args=[s.pk])
        )
