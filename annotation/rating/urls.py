"""Raters' pages: the dashboard, the rating page, submit and revise."""

from django.urls import path

from annotation.rating import views as rater_views

urlpatterns = [
    path("ratings/", rater_views.my_studies, name="my-studies"),
    path("ratings/<int:pk>/", rater_views.rate, name="rate"),
    path("ratings/<int:pk>/continue/", rater_views.continue_past_warning, name="rate-continue"),
    path("ratings/<int:pk>/submit/", rater_views.submit, name="rate-submit"),
    path("ratings/<int:pk>/revise/", rater_views.revise, name="rate-revise"),
]
