from django.urls import path

from reports.revise import views

urlpatterns = [
    path("studies/<int:pk>/development/revise/", views.devset_revise, name="devset-revise"),
]
