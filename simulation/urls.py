from django.urls import path, re_path

from . import batch_views, views

app_name = "simulation"

urlpatterns = [
    path("conversations/", views.conversation_list, name="conversation-list"),
    re_path(r"^conversations/export\.(?P<fmt>jsonl|csv)$", views.conversation_export, name="conversation-export"),
    path("conversations/<str:code>/", views.conversation_detail, name="conversation-detail"),
    path("personas/", views.persona_set_list, name="persona-set-list"),
    path("personas/<int:pk>/", views.persona_set_detail, name="persona-set-detail"),
    path("chatbots/", views.target_list, name="target-list"),
    path("chatbots/new/", views.target_create, name="target-create"),
    path("import/", views.import_index, name="import-index"),
    path("import/conversations/", views.conversation_import, name="import-conversations"),
    path("import/personas/", views.persona_import, name="import-personas"),
    path("simulations/", batch_views.batch_list, name="batch-list"),
    path("simulations/new/", batch_views.batch_create, name="batch-create"),
    path("simulations/<str:code>/", batch_views.batch_detail, name="batch-detail"),
    path("simulations/<str:code>/progress/", batch_views.batch_progress, name="batch-progress"),
    path("simulations/<str:code>/cancel/", batch_views.batch_cancel, name="batch-cancel"),
    path("simulations/<str:code>/resume/", batch_views.batch_resume, name="batch-resume"),
    path("prompts/", batch_views.prompt_template_list, name="prompt-template-list"),
    path("prompts/new/", batch_views.prompt_template_new, name="prompt-template-create"),
    path("prompts/<int:pk>/", batch_views.prompt_template_detail, name="prompt-template-detail"),
]
