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
        from corpus.models import Conversation, Persona, PersonaSet, Target

        grant_register("corpus.personaset", "builtin", lambda user: Q(is_builtin=True))

        # A conversation its reader may read through being its importer or its being shared brings
        # its chatbot and persona set (an import makes them without naming a creator).
        def readable_conversations(user):  # type: ignore[no-untyped-def]
            return Conversation.objects.filter(Q(created_by_id=user.pk) | Q(shared=True))

        grant_register("corpus.target", "conversation", lambda user: Q(
            pk__in=readable_conversations(user).filter(target_id__isnull=False).values("target_id")))
        grant_register("corpus.personaset", "conversation", lambda user: Q(
            pk__in=Persona.objects.filter(conversations__in=readable_conversations(user).values("pk")).values("persona_set_id")))
        shareable_register("chatbot", Target, lookup="code", page=lambda t: reverse("corpus:target-list") + f"#chatbot-{t.code}")
        shareable_register(
            "conversation", Conversation, lookup="code", page=lambda c: reverse("corpus:conversation-detail", args=[c.code])
        )
        shareable_register(
            "persona-set", PersonaSet, lookup="pk", page=lambda s: reverse("corpus:persona-set-detail", args=[s.pk])
        )
