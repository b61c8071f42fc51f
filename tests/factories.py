from __future__ import annotations

import factory

from corpus.models import Conversation, Message, Persona, PersonaSet, Target


class PersonaSetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = PersonaSet

    key = factory.Sequence(lambda n: f"set-{n}")
    name = factory.Sequence(lambda n: f"Persona set {n}")
    content_hash = factory.Sequence(lambda n: f"{n:064d}")
    # The test library is shared (every coordinator and researcher reads it, as before issue 30);
    # tests of least privilege make private objects with shared=False.
    shared = True


class PersonaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Persona

    persona_set = factory.SubFactory(PersonaSetFactory)
    key = factory.Sequence(lambda n: f"persona-{n}")
    name = factory.Sequence(lambda n: f"Persona {n}")


class TargetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Target

    code = factory.Sequence(lambda n: f"T-{n:04d}")
    model = factory.Sequence(lambda n: f"provider/model-{n}")
    shared = True


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation
        skip_postgeneration_save = True

    code = factory.Sequence(lambda n: f"C-{n:06d}")
    persona = factory.SubFactory(PersonaFactory)
    target = factory.SubFactory(TargetFactory)
    source = Conversation.Source.IMPORTED
    content_hash = factory.Sequence(lambda n: f"h{n:063d}")
    message_count = 2
    shared = True

    @factory.post_generation
    def messages(self, create, extracted, **kwargs):  # type: ignore[no-untyped-def]
        if not create:
            return
        pairs = extracted or [("user", "I have been feeling low."), ("assistant", "I'm sorry to hear that.")]
        Message.objects.bulk_create(
            Message(conversation=self, turn_index=i, role=r, content=c) for i, (r, c) in enumerate(pairs)
        )
