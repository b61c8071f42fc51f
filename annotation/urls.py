"""Annotation pages: the raters' (dashboard, rating form) and the coordinators' (studies, consensus)."""

from django.urls import include, path

app_name = "annotation"

urlpatterns = [
    path("", include("annotation.rating.urls")),
    path("", include("annotation.studies.urls")),
    path("", include("annotation.sampling.urls")),
    path("", include("annotation.reminders.urls")),
    path("", include("annotation.flags.urls")),
]
