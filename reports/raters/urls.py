from django.urls import path

from reports.raters import views

urlpatterns = [
    path("studies/<int:pk>/raters/", views.raters, name="raters"),
    path("studies/<int:pk>/raters.csv", views.raters_csv, name="raters-csv"),
]
