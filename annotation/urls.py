from django.urls import path

from . import views

app_name = "annotation"

urlpatterns = [
    path("instruments/", views.instrument_list, name="instrument-list"),
    path("instruments/<int:pk>/", views.instrument_detail, name="instrument-detail"),
    path("import/instruments/", views.instrument_import, name="import-instruments"),
    path("studies/", views.study_list, name="study-list"),
    path("ratings/", views.my_studies, name="my-studies"),
]
