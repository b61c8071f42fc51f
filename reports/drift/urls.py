from django.urls import path

from reports.drift import views

urlpatterns = [
    path("drift/", views.drift, name="drift"),
    path("drift/<slug:table>.csv", views.drift_csv, name="drift-csv"),
]
