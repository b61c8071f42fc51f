"""Flags: the rater's "flag this conversation" and the coordinator's queue."""

from django.urls import path

from annotation.flags import views

urlpatterns = [
    path("ratings/<int:pk>/flag/", views.flag_conversation, name="rate-flag"),
    path("studies/<int:pk>/flags/", views.study_flags, name="study-flags"),
    path("studies/<int:pk>/flags.csv", views.study_flags_csv, name="study-flags-csv"),
    path("studies/<int:pk>/flags/<int:flag_id>/resolve/", views.flag_resolve_view, name="study-flag-resolve"),
    path("studies/<int:pk>/flags/notices/", views.flag_notices_view, name="study-flag-notices"),
]
