"""Sampling plans (a study drawn from a judge run) and rater load (the break prompt): pages."""

from django.urls import include, path

from annotation.sampling import views

urlpatterns = [
    path("studies/new/from-run/", views.study_new_from_run, name="study-create-from-run"),
    path("studies/new/from-run/preview/", views.plan_preview_view, name="study-plan-preview"),
    path("studies/<int:pk>/sampling-plan.csv", views.study_plan_csv, name="study-plan-csv"),
    path("studies/<int:pk>/sitting-limit/", views.study_sitting_limit, name="study-sitting-limit"),
    path("", include("annotation.sampling.active.urls")),
]
