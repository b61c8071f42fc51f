"""Corpus pages: conversations, personas, chatbots, instruments, and the importers.

Included at the site root: conversations, personas, chatbots and their importers live under
/corpus/, instruments under /instruments/ and /import/instruments/.
"""

from django.urls import path, re_path

from corpus import views as hub
from corpus.conversations import views as conversations
from corpus.instruments import views as instruments
from corpus.personas import views as personas
from corpus.targets import views as targets

app_name = "corpus"

urlpatterns = [
    path("corpus/conversations/", conversations.conversation_list, name="conversation-list"),
    re_path(
        r"^corpus/conversations/export\.(?P<fmt>jsonl|csv)$",
        conversations.conversation_export,
        name="conversation-export",
    ),
    path("corpus/conversations/link-personas/", conversations.conversation_link_personas, name="conversation-link-personas"),
    path("corpus/conversations/<str:code>/", conversations.conversation_detail, name="conversation-detail"),
    path(
        "corpus/conversations/<str:code>/content-warning/",
        conversations.conversation_content_warning,
        name="conversation-content-warning",
    ),
    path("corpus/personas/", personas.persona_set_list, name="persona-set-list"),
    path("corpus/personas/<int:pk>/", personas.persona_set_detail, name="persona-set-detail"),
    path("corpus/chatbots/", targets.target_list, name="target-list"),
    path("corpus/chatbots/new/", targets.target_create, name="target-create"),
    path("corpus/import/", hub.import_index, name="import-index"),
    path("corpus/import/conversations/", conversations.conversation_import, name="import-conversations"),
    path("corpus/import/personas/", personas.persona_import, name="import-personas"),
    path("instruments/", instruments.instrument_list, name="instrument-list"),
    path("instruments/<int:pk>/", instruments.instrument_detail, name="instrument-detail"),
    path("import/instruments/", instruments.instrument_import, name="import-instruments"),
]
