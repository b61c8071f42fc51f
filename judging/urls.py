from django.urls import path, re_path

from judging import views

app_name = "judging"

urlpatterns = [
    path("", views.judge_list, name="judge-list"),
    path("judges/new/", views.judge_create, name="judge-create"),
    path("judges/<int:pk>/", views.judge_detail, name="judge-detail"),
    path("judges/<int:pk>/clone/", views.judge_clone, name="judge-clone"),
    path("prompts/", views.prompt_list, name="prompt-list"),
    path("prompts/new/", views.prompt_create, name="prompt-create"),
    path("prompts/<int:pk>/", views.prompt_detail, name="prompt-detail"),
    path("runs/", views.run_list, name="run-list"),
    path("runs/new/", views.run_create, name="run-create"),
    path("runs/new/count/", views.run_count, name="run-count"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/progress/", views.run_progress, name="run-progress"),
    path("runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:pk>/retry/", views.run_retry, name="run-retry"),
    re_path(r"^runs/(?P<pk>\d+)/export/(?P<fmt>long|dimensions|ensemble)\.csv$", views.run_export, name="run-export"),
    path("runs/<int:pk>/conversations/<str:code>/", views.run_conversation, name="run-conversation"),
]
