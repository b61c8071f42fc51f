"""Simulation pages under /corpus/: batches with live progress, and the user-agent prompts."""

from django.urls import path

from simulation import views

app_name = "simulation"

urlpatterns = [
    path("simulations/", views.batch_list, name="batch-list"),
    path("simulations/new/", views.batch_create, name="batch-create"),
    path("simulations/new/count/", views.batch_count, name="batch-count"),
    path("simulations/<str:code>/", views.batch_detail, name="batch-detail"),
    path("simulations/<str:code>/progress/", views.batch_progress, name="batch-progress"),
    path("simulations/<str:code>/cancel/", views.batch_cancel, name="batch-cancel"),
    path("simulations/<str:code>/resume/", views.batch_resume, name="batch-resume"),
    path("prompts/", views.prompt_template_list, name="prompt-template-list"),
    path("prompts/new/", views.prompt_template_new, name="prompt-template-create"),
    path("prompts/<int:pk>/", views.prompt_template_detail, name="prompt-template-detail"),
]
