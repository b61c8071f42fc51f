"""Raters' pages. (Being built: dashboard, rating page.)"""

from django.urls import path

from . import views

urlpatterns = [
    path("ratings/", views.home, name="my-studies"),
]
