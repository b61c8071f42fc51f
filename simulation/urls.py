from django.urls import path, re_path

from . import views

app_name = "simulation"

urlpatterns = [
    path("conversations/", views.conversation_list, name="conversation-list"),
    re_path(r"^conversations/export\.(?P<fmt>jsonl|csv)$", views.conversation_export, name="conversation-export"),
    path("conversations/<str:code>/", views.conversation_detail, name="conversation-detail"),
    path("personas/", views.persona_set_list, name="persona-set-list"),
    path("personas/<int:pk>/", views.persona_set_detail, name="persona-set-detail"),
    path("chatbots/", views.target_list, name="target-list"),
    path("import/", views.import_index, name="import-index"),
    path("import/conversations/", views.conversation_import, name="import-conversations"),
    path("import/personas/", views.persona_import, name="import-personas"),
]
