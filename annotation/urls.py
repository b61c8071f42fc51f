from django.urls import include, path

from . import views

app_name = "annotation"

urlpatterns = [
    path("instruments/", views.instrument_list, name="instrument-list"),
    path("instruments/<int:pk>/", views.instrument_detail, name="instrument-detail"),
    path("import/instruments/", views.instrument_import, name="import-instruments"),
    # Raters' pages (dashboard, rating form) and coordinators' pages (studies, progress, consensus).
    path("", include("annotation.rater_urls")),
    path("", include("annotation.coordinator_urls")),
]
