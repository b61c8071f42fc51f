"""Coordinators' pages. (Being built: studies, progress, consensus.)"""

from django.urls import path

from . import views

urlpatterns = [
    path("studies/", views.home, name="study-list"),
]
