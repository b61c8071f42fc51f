"""Active sampling pages: the new study form, the study's page, the next batch, the CSVs."""

from django.urls import path

from annotation.sampling.active import views

urlpatterns = [
    path("studies/new/active/", views.active_study_new, name="study-create-active"),
    path("studies/<int:pk>/active/", views.active_study_page, name="study-active"),
    path("studies/<int:pk>/active/next-batch/", views.active_next_batch, name="study-active-next"),
    path("studies/<int:pk>/active-sampling.csv", views.active_units_csv, name="study-active-csv"),
    path("studies/<int:pk>/active-estimates.csv", views.active_estimates_csv, name="study-active-estimates-csv"),
]
