from django.urls import path

from reports.devset import views

urlpatterns = [
    path("studies/<int:pk>/development/", views.development, name="development"),
    path("studies/<int:pk>/development/split/", views.development_split, name="development-split"),
    path("studies/<int:pk>/development/declare/", views.development_declare, name="development-declare"),
    path("studies/<int:pk>/development/evaluate/", views.development_evaluate, name="development-evaluate"),
    path("studies/<int:pk>/development/looks/<int:look_id>/", views.development_look, name="development-look"),
    path("studies/<int:pk>/development/looks/<int:look_id>/state/", views.development_look_state, name="development-look-state"),
    path("studies/<int:pk>/development/looks/<int:look_id>.csv", views.development_look_csv, name="development-look-csv"),
    path("studies/<int:pk>/development/<slug:table>.csv", views.development_csv, name="development-csv"),
]
