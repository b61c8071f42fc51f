from django.urls import path

from reports.judge_assisted import views

urlpatterns = [
    path("studies/<int:pk>/judge-assisted/", views.judge_assisted, name="judge-assisted"),
    path("studies/<int:pk>/judge-assisted.csv", views.judge_assisted_csv, name="judge-assisted-csv"),
]
