"""Drill-down lists, the review page and failure modes."""

from django.urls import path

from reports.review import views

urlpatterns = [
    path("studies/<int:pk>/instances/", views.instance_list, name="instances"),
    path("studies/<int:pk>/instances.csv", views.instance_list_csv, name="instances-csv"),
    path("studies/<int:pk>/review/<str:code>/", views.review, name="review"),
    path("studies/<int:pk>/review/<str:code>/codes/", views.code_add, name="review-code-add"),
    path("studies/<int:pk>/failure-modes/", views.failure_modes, name="failure-modes"),
    path("studies/<int:pk>/failure-modes/codes.csv", views.failure_codes_csv, name="failure-codes-csv"),
    path("studies/<int:pk>/failure-modes/counts.csv", views.failure_counts_csv, name="failure-counts-csv"),
    path("studies/<int:pk>/failure-modes/codes/<int:code_id>/remove/", views.code_remove, name="failure-code-remove"),
]
